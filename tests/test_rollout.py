"""Filling the batch from the env (pufferlib.rollout): padded agents and pooled backends, an env
behind device hooks against the same env on the host, the memory each segment starts from, CUDA
graphs of the host rollout, and the compiled acting step."""

import gymnasium
import numpy as np
import pytest
import torch
from helpers import HookedSquared, config_for, make_trainer, run_epochs
from torch._dynamo.utils import counters as dynamo_counters

import pufferlib
from pufferlib import assemble, pufferl, vector
from pufferlib.exceptions import APIUsageError


class PaddedEnv(pufferlib.PufferEnv):
    """Agent i observes i; agent 0 is padding (mask False) for ever. Reward 1 for action 1."""

    def __init__(self, num_agents=4, buf=None):
        self.single_observation_space = gymnasium.spaces.Box(0, 100, (1,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(2)
        self.num_agents = num_agents
        super().__init__(buf)
        self.observations[:, 0] = np.arange(num_agents)
        self.masks[0] = False

    def reset(self, seed=0):
        return self.observations, []

    def step(self, actions):
        self.rewards[:] = np.asarray(actions) == 1
        return self.observations, self.rewards, self.terminals, self.truncations, []


def test_padded_agents_take_no_rows_and_the_batch_still_fills():
    config = config_for("puffer_bandit", "--train.horizon", "4", "--train.batch-size", "16", "--train.minibatch-size", "8")
    env = vector.make(PaddedEnv, backend="Serial")
    trainer = pufferl.PuffeRL(config, env, assemble.make_policy(env, config))
    trainer.collect()
    assert trainer.global_step == 16
    observed = trainer.buffer.observations[..., 0]
    assert not (observed == 0).any()  # agent 0 never stored
    assert all(len(set(row.tolist())) == 1 for row in observed)  # each row is one agent's steps
    trainer.train()


class AllPadding(PaddedEnv):
    """Every agent is padding: no step stores anything."""

    def __init__(self, num_agents=4, buf=None):
        super().__init__(num_agents, buf)
        self.masks[:] = False


def test_a_rollout_whose_agents_are_all_padding_stops_with_an_error_instead_of_spinning():
    config = config_for("puffer_bandit", "--train.horizon", "4", "--train.batch-size", "16", "--train.minibatch-size", "8")
    env = vector.make(AllPadding, backend="Serial")
    trainer = pufferl.PuffeRL(config, env, assemble.make_policy(env, config))
    with pytest.raises(APIUsageError, match="batches in a row held no live agent"):
        trainer.collect()
    trainer.close()


def test_async_pool_backend_fills_the_batch():
    config = config_for(
        "puffer_squared", "--vec.backend", "Serial", "--vec.num-envs", "8", "--vec.num-workers", "4",
        "--vec.batch-size", "4", "--train.horizon", "8", "--train.minibatch-size", "32",
    )
    trainer = make_trainer(config)
    assert trainer.num_agents == 8
    run_epochs(trainer, 3)
    assert trainer.global_step == 3 * trainer.batch_size
    # Every row holds one agent's consecutive steps: each observation shows that agent's grid.
    assert torch.all(trainer.buffer.observations.sum(-1) > 0)
    trainer.close()


@pytest.mark.parametrize("flags", [[], ["--base.rnn", "lstm"], ["--train.batch-size", "1024"]])
def test_device_hook_rollout_matches_the_host_rollout(flags):
    config = config_for("puffer_squared", "--vec.num-envs", "16", "--train.horizon", "16", "--train.minibatch-size", "128",
                        "--env.size", "5", *flags)
    host = make_trainer(config)
    hooked_env = HookedSquared(16, **config["env"])
    hooked = pufferl.PuffeRL(config, hooked_env, assemble.make_policy(hooked_env, config))
    assert hooked.env_on_device and not host.env_on_device
    for _ in range(3):
        host.collect()
        hooked.collect()
        for name in ("observations", "actions", "logprobs", "rewards", "dones", "values"):
            assert torch.equal(getattr(host.buffer, name), getattr(hooked.buffer, name)), name
        for a, b in zip((*host.buffer.start_state, *host.state), (*hooked.buffer.start_state, *hooked.state)):
            assert torch.equal(a, b)
        host.train()
        hooked.train()
        assert host.losses == hooked.losses
    assert host.global_step == hooked.global_step
    # Logs are fetched once per epoch instead of every log_interval steps: the same statistics.
    assert hooked.env_stats["episodes"] > 0 and set(hooked.env_stats) == set(host.env_stats)


@pytest.mark.parametrize("rnn", ["lstm", "mingru"])
def test_replaying_a_collected_batch_gives_what_the_agents_acted_with(rnn):
    """Each segment keeps the memory its first step acted from, cleared where an episode had just
    ended: replayed from it as the update replays it, the batch gives back the log-probabilities
    and values of the acting steps. Two segments per agent, so that a later batch's rows start
    mid-episode with memory to carry, and some start just after an episode ended."""
    trainer = make_trainer(config_for("puffer_squared", "--base.rnn", rnn, "--vec.num-envs", "32", "--train.horizon", "8",
                                      "--train.batch-size", str(32 * 8 * 2)))
    for _ in range(3):
        trainer.collect()
    buffer = trainer.buffer
    assert buffer.dones[:, 0].any() and not buffer.dones[:, 0].all()
    assert all(s.abs().sum() > 0 for s in buffer.start_state)
    with torch.no_grad():
        logits, values = trainer.policy(buffer.observations, buffer.start_state, buffer.dones.bool())
        _, logprobs, _ = pufferlib.pytorch.sample_logits(logits, action=buffer.actions.reshape(-1, *buffer.actions.shape[2:]))
    torch.testing.assert_close(logprobs.reshape(buffer.logprobs.shape), buffer.logprobs, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(values.float().reshape(buffer.values.shape), buffer.values, atol=1e-5, rtol=1e-5)
    trainer.close()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("env_name, flags", [
    ("puffer_squared", ["--base.rnn", "mingru"]),
    ("puffer_squared", ["--base.rnn", "mingru", "--vec.batch-size", "128"]),
    ("puffer_craftax_compact", ["--vec.batch-size", "128", "--vec.num-threads", "2"]),
    ("puffer_craftax_compact", ["--env.reset-pool-size", "64"]),
])
def test_graphed_host_env_rollout_equals_the_eager_rollout(env_name, flags):
    """An env on the host stepped whole or in fixed halves: each step's policy and buffer write
    replayed as one CUDA graph per batch of agents, between the copies of the env's buffers in and
    the actions out, give the eager rollout's batches bit for bit, recurrent memory included."""
    flags = ["--train.device", "cuda", "--vec.num-envs", "256", "--train.horizon", "16", "--train.minibatch-size", "1024",
             *flags]
    graphed = make_trainer(config_for(env_name, *flags, "--train.cudagraphs", "true"))
    eager = make_trainer(config_for(env_name, *flags, "--train.cudagraphs", "false"))
    assert graphed.rollout.graph_rollout and not eager.rollout.graph_rollout
    for _ in range(3):  # the first batch warms up and captures the graphs, the next ones replay them
        graphed.collect()
        eager.collect()
        batches = graphed.num_agents // graphed.vecenv.agents_per_batch
        # The first column of a segment and the others; a step of every agent has both for each
        # of the two memories it alternates between.
        assert len(graphed.rollout.step_graphs) == (4 if batches == 1 else 2 * batches)
        for name in ("observations", "actions", "logprobs", "rewards", "dones", "truncations", "values"):
            assert torch.equal(getattr(graphed.buffer, name), getattr(eager.buffer, name)), name
        for mine, theirs in zip((*graphed.buffer.start_state, *graphed.state), (*eager.buffer.start_state, *eager.state)):
            assert torch.equal(mine, theirs)
    graphed.close()
    eager.close()


@pytest.mark.slow
def test_trainers_of_many_shapes_in_one_process_all_act_compiled():
    """torch.compile caches compiled code per function, not per trainer, and by default keeps 8
    versions of each: a sweep or a test session that builds more trainers of other shapes must
    still compile the later ones' steps rather than silently run them eagerly."""
    for n in range(1, 11):
        trainer = make_trainer(config_for("puffer_squared", "--train.compile", "true", "--vec.num-envs", str(8 * n),
                                          "--train.horizon", "4", "--train.minibatch-size", str(32 * n)))
        graphs = dynamo_counters["stats"]["unique_graphs"]
        obs = torch.zeros((8 * n, *trainer.buffer.observations.shape[2:]), dtype=trainer.buffer.observations.dtype)
        trainer.rollout.act(obs, torch.zeros(8 * n, dtype=torch.bool))
        assert dynamo_counters["stats"]["unique_graphs"] > graphs, f"the trainer of {8 * n} envs acted eagerly"
        trainer.close()
