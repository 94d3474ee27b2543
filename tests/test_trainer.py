"""PuffeRL, the algorithm (pufferlib.pufferl): the advantage kernel, prioritized replay, the update
(its learning-rate scaling, graphs and non-finite checks), time limits bootstrapped, and learning."""

import gymnasium
import numpy as np
import pytest
import torch
from helpers import config_for, make_trainer, run_epochs

import pufferlib
from pufferlib import assemble, cli, pufferl, run, vector
from pufferlib.checkpoint import read_checkpoint
from pufferlib.evaluate import SolveCheck

# -- the advantage kernel ------------------------------------------------------------------------


def reference_advantages(values, rewards, dones, truncations, ratio, gamma, lam, rho_clip, c_clip):
    """The V-trace / GAE recursion written as the plain double loop it is defined by."""
    segments, steps = values.shape
    advantages = np.zeros((segments, steps))
    for s in range(segments):
        running = 0.0
        for t in reversed(range(steps - 1)):
            nonterminal = 1.0 - dones[s, t + 1]
            rho, c = min(ratio[s, t], rho_clip), min(ratio[s, t], c_clip)
            if truncations[s, t + 1]:  # cut by a time limit: the state it was cut in is worth about V_t
                bootstrap = values[s, t]
            else:
                bootstrap = values[s, t + 1] * nonterminal
            delta = rho * (rewards[s, t + 1] + gamma * bootstrap - values[s, t])
            running = delta + gamma * lam * c * nonterminal * running
            advantages[s, t] = running
    return advantages


def classic_gae(values, rewards, dones, gamma, lam):
    """CleanRL's GAE, with its own indexing (reward and done stored with the action that caused
    them); equal to the kernel when all importance ratios are 1."""
    rewards_out, dones_out = rewards[:, 1:], dones[:, 1:]
    segments, steps = values.shape
    advantages = np.zeros((segments, steps))
    last = 0.0
    for t in reversed(range(steps - 1)):
        delta = rewards_out[:, t] + gamma * values[:, t + 1] * (1 - dones_out[:, t]) - values[:, t]
        last = delta + gamma * lam * (1 - dones_out[:, t]) * last
        advantages[:, t] = last
    return advantages


@pytest.mark.parametrize("clipped", [False, True])
@pytest.mark.parametrize("steps", [1, 2, 7, 64])
def test_advantage_kernel_matches_reference(clipped, steps):
    rng = np.random.default_rng(steps)
    shape = (37, steps)
    values, rewards = rng.normal(size=shape), rng.normal(size=shape)
    dones = (rng.random(shape) < 0.15).astype(np.float64)
    truncations = dones * (rng.random(shape) < 0.5)
    ratio = np.exp(rng.normal(scale=0.5, size=shape))
    rho_clip, c_clip = (1.0, 0.9) if clipped else (1e9, 1e9)
    expected = reference_advantages(values, rewards, dones, truncations, ratio, 0.97, 0.9, rho_clip, c_clip)
    as_tensor = lambda x: torch.as_tensor(x, dtype=torch.float32)  # noqa: E731
    got = pufferl.compute_advantages(
        as_tensor(values), as_tensor(rewards), as_tensor(dones), as_tensor(truncations), as_tensor(ratio), 0.97, 0.9,
        rho_clip, c_clip,
    )
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-4, atol=1e-4)


def test_advantage_kernel_is_gae_on_policy():
    rng = np.random.default_rng(0)
    shape = (16, 32)
    values, rewards = rng.normal(size=shape), rng.normal(size=shape)
    dones = (rng.random(shape) < 0.1).astype(np.float64)
    as_tensor = lambda x: torch.as_tensor(x, dtype=torch.float32)  # noqa: E731
    got = pufferl.compute_advantages(
        as_tensor(values), as_tensor(rewards), as_tensor(dones), torch.zeros(shape), torch.ones(shape), 0.99, 0.95, 1.0, 1.0
    )
    np.testing.assert_allclose(got.numpy(), classic_gae(values, rewards, dones, 0.99, 0.95), rtol=1e-4, atol=1e-4)


# -- prioritized replay --------------------------------------------------------------------------


def test_prioritized_sampling_follows_priorities():
    generator = torch.Generator().manual_seed(0)
    advantages = torch.randn(24, 8) * torch.linspace(0.1, 3, 24).unsqueeze(1)
    alpha = 0.7
    priority = (advantages.abs().sum(1) + 1e-6) ** alpha
    probs = priority / priority.sum()
    draws = 40_000
    counts = torch.zeros(24)
    for _ in range(draws):
        index, _ = pufferl.prioritized_sample(advantages, 1, alpha, 0.5, generator)
        counts[index] += 1
    # Binomial standard error is below 0.0025 for every segment; 0.01 is four of them.
    assert (counts / draws - probs).abs().max() < 0.01


def test_prioritized_importance_weights_and_annealing():
    generator = torch.Generator().manual_seed(1)
    advantages = torch.randn(50, 4)
    probs = (advantages.abs().sum(1) + 1e-6) ** 0.8
    probs /= probs.sum()
    for beta in (0.2, 0.6, 1.0):
        index, weights = pufferl.prioritized_sample(advantages, 10, 0.8, beta, generator)
        assert len(set(index.tolist())) == 10  # distinct segments in a minibatch
        torch.testing.assert_close(weights.squeeze(1), (50 * probs[index]) ** -beta)
    # With beta = 1 the weighted mean over the sampling distribution is the uniform mean.
    values = torch.randn(50)
    unbiased = (probs * (50 * probs) ** -1.0 * values).sum()
    torch.testing.assert_close(unbiased, values.mean())


def test_uniform_replay_when_alpha_is_zero():
    index, weights = pufferl.prioritized_sample(torch.randn(30, 5), 30, 0.0, 0.4, torch.Generator().manual_seed(2))
    assert sorted(index.tolist()) == list(range(30))
    assert torch.all(weights == 1)


# -- learning ------------------------------------------------------------------------------------


def solves(config, max_epochs):
    """Trains until the env's own solve check passes (its optimal score, less the tolerance its
    .ini allows, over 100+ training episodes, then confirmed on fresh ones); returns whether it
    did within max_epochs."""
    trainer = make_trainer(config)
    base = config["base"]
    check = SolveCheck(base["solve_metric"], run.solve_target(config, trainer.vecenv), base["solve_tolerance"], base["solve_episodes"])
    scoring_env = assemble.make_vecenv(base["env_name"], config)
    try:
        for epoch in range(max_epochs):
            trainer.collect()
            trainer.train()
            if check.candidate(trainer.episode_stats) and check.confirm(trainer, scoring_env, epoch, base["score_max_steps"])[0]:
                return True
        return False
    finally:
        trainer.close()
        scoring_env.close()


@pytest.mark.slow
def test_learns_bandit():
    assert solves(config_for("puffer_bandit"), max_epochs=100)


@pytest.mark.slow
def test_learns_squared_to_the_optimal_score():
    config = config_for("puffer_squared")
    assert config["base"]["solve_tolerance"] <= 0.001
    assert solves(config, max_epochs=150)


@pytest.mark.slow
@pytest.mark.parametrize("flags", [["--base.rnn", "lstm", "--rnn.num-layers", "1"], ["--base.rnn", "mingru"]])
def test_recurrent_policies_learn_memory(flags):
    assert solves(config_for("puffer_memory", *flags), max_epochs=150)


@pytest.mark.slow
def test_memoryless_policy_cannot_solve_memory():
    """The memory test means something: without recurrence the same budget is not enough."""
    assert not solves(config_for("puffer_memory", "--base.rnn", "none"), max_epochs=40)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("rnn", ["none", "mingru"])
def test_gpu_path_learns_and_resumes(tmp_path, rnn):
    """bf16 autocast, torch.compile and CUDA graphs (the GPU defaults) still learn squared, and a
    checkpoint written there loads back."""
    config = config_for("puffer_squared", "--train.device", "cuda", "--base.rnn", rnn)
    assert solves(config, max_epochs=150)
    trainer = make_trainer(config)
    run_epochs(trainer, 1)
    trainer.save_checkpoint(tmp_path / "checkpoint.pt")
    resumed = make_trainer(config)
    resumed.load_checkpoint(read_checkpoint(tmp_path / "checkpoint.pt"))
    assert all(torch.equal(a, b) for a, b in zip(trainer.policy.parameters(), resumed.policy.parameters()))
    run_epochs(resumed, 1)
    trainer.close()
    resumed.close()


@pytest.mark.parametrize("optimizer", ["adam", "muon"])
def test_scaling_a_steps_change_equals_stepping_with_the_scaled_rate(optimizer):
    """The update steps with the base learning rate and scales the change by the schedule's rate
    over it (so a CUDA graph of the step serves every epoch): the same as stepping at that rate."""
    def trained(learning_rate, scale):
        torch.manual_seed(0)
        config = config_for("puffer_squared", "--train.optimizer", optimizer, "--train.learning-rate", str(learning_rate),
                            "--policy.num-layers", "2")
        trainer = make_trainer(config)
        trainer.lr_scale.fill_(scale)
        trainer.collect()
        trainer.minibatch_update()
        trainer.close()
        return [p.detach() for p in trainer.policy.parameters()]

    for scaled, direct in zip(trained(0.01, 0.25), trained(0.0025, 1.0)):
        torch.testing.assert_close(scaled, direct, rtol=1e-5, atol=1e-7)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("compile", ["false", "true"])
def test_graphed_update_replays_the_eager_update(compile):
    """The whole minibatch (advantages, replay sampling, loss, backward, clipping, optimizer) as one
    CUDA graph gives the update's weights, statistics and replay ratios run without the graph, from
    the same batch, compiled or not."""
    flags = ["--train.device", "cuda", "--train.precision", "float32", "--train.compile", compile, "--base.rnn", "mingru",
             "--vec.num-envs", "256", "--train.minibatch-size", "1024", "--train.optimizer", "muon"]
    eager = make_trainer(config_for("puffer_squared", *flags, "--train.cudagraphs", "false"))
    graphed = make_trainer(config_for("puffer_squared", *flags, "--train.cudagraphs", "true"))
    assert graphed.total_minibatches > graphed.GRAPH_WARMUP + 1
    for _ in range(3):  # the first epoch captures the graph, the next ones only replay it
        eager.collect()
        for name in ("observations", "actions", "logprobs", "rewards", "dones", "truncations", "values"):
            getattr(graphed.buffer, name).copy_(getattr(eager.buffer, name))
        for mine, theirs in zip(graphed.buffer.start_state, eager.buffer.start_state):
            mine.copy_(theirs)
        graphed.generator.set_state(eager.generator.get_state())  # the rollout drew from it
        eager.train()
        graphed.train()
        assert graphed.update_graph is not None
        torch.testing.assert_close(graphed.ratio, eager.ratio, rtol=1e-4, atol=1e-5)
        for mine, theirs in zip(graphed.policy.parameters(), eager.policy.parameters()):
            torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-5)
        assert graphed.losses == pytest.approx(eager.losses, rel=1e-3, abs=1e-5)
    eager.close()
    graphed.close()


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("env_name", ["puffer_squared", "puffer_memory"])
def test_gpu_speedups_learn_as_fp32_eager_does(env_name):
    """bf16 autocast, torch.compile and CUDA graphs solve what fp32 eager on the same GPU solves,
    in the same epoch budget."""
    plain = ["--train.precision", "float32", "--train.compile", "false", "--train.cudagraphs", "false"]
    fast = ["--train.precision", "bfloat16", "--train.compile", "true", "--train.cudagraphs", "true"]
    for flags in (plain, fast):
        assert solves(config_for(env_name, "--train.device", "cuda", *flags), max_epochs=250), flags


def test_seeded_runs_are_reproducible():
    results = []
    for _ in range(2):
        trainer = make_trainer(config_for("puffer_squared", "--vec.num-envs", "128", "--train.optimizer", "muon", "--policy.num-layers", "2"))
        for _ in range(3):
            trainer.collect()
            trainer.train()
        results.append([p.detach().clone() for p in trainer.policy.parameters()])
        trainer.close()
    assert all(torch.equal(a, b) for a, b in zip(*results))


# -- training you can trust ------------------------------------------------------------------


class NaNRewards(pufferlib.PufferEnv):
    """A one-step game whose reward is NaN."""

    def __init__(self, buf=None):
        self.single_observation_space = gymnasium.spaces.Box(0, 1, (1,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(2)
        self.num_agents = 8
        super().__init__(buf)

    def reset(self, seed=0):
        return self.observations, []

    def step(self, actions):
        self.rewards[:] = np.nan
        self.terminals[:] = True
        return self.observations, self.rewards, self.terminals, self.truncations, []


def test_non_finite_updates_stop_training_and_name_the_cause(tmp_path):
    config = config_for("puffer_bandit", "--train.horizon", "4", "--train.minibatch-size", "32")
    env = vector.make(NaNRewards, backend="Serial")
    trainer = pufferl.PuffeRL(config, env, assemble.make_policy(env, config))
    weights = [p.detach().clone() for p in trainer.policy.parameters()]
    trainer.collect()
    with pytest.raises(pufferl.NonFiniteError, match="non-finite rewards at step 32"):
        trainer.train()
    assert all(torch.equal(a, b) for a, b in zip(weights, trainer.policy.parameters()))  # no step was taken

    code = cli.main(["train", "puffer_squared", "--train.learning-rate", "1e30", "--train.data-dir", str(tmp_path),
                     "--train.checkpoint-interval", "1", "--train.dashboard", "plain", "--train.device", "cpu"])
    assert code == 1
    for path in tmp_path.glob("*/*.pt"):
        assert all(torch.isfinite(t).all() for t in read_checkpoint(path)["model"].values())


@pytest.mark.parametrize("compile", ["false", pytest.param("true", marks=pytest.mark.slow)])
def test_a_non_finite_minibatch_halts_the_update_where_it_happens(compile):
    config = config_for("puffer_squared", "--train.horizon", "8", "--train.minibatch-size", "256", "--vec.num-envs", "128",
                        "--train.compile", compile)

    def trainer_whose_minibatch_turns_nan(call):
        env = assemble.make_vecenv("puffer_squared", config)
        trainer = pufferl.PuffeRL(config, env, assemble.make_policy(env, config))
        loss, calls = trainer.minibatch_loss, [0]

        def poisoned(*args):
            calls[0] += 1
            value, ratio, stats = loss(*args)
            return (value * float("nan") if calls[0] == call else value), ratio, stats

        trainer.minibatch_loss = poisoned
        trainer.collect()
        return trainer

    poisoned = trainer_whose_minibatch_turns_nan(3)
    assert poisoned.total_minibatches == 4
    with pytest.raises(pufferl.NonFiniteError, match="non-finite grad_norm at step 1024 \\(epoch 0, minibatch 3 of 4\\)"):
        poisoned.train()
    two_minibatches = trainer_whose_minibatch_turns_nan(None)
    two_minibatches.total_minibatches = 2
    two_minibatches.train()
    for halted, reference in zip(poisoned.policy.parameters(), two_minibatches.policy.parameters()):
        assert torch.equal(halted, reference)  # the third minibatch and the fourth changed nothing
    poisoned.vecenv.close()
    two_minibatches.vecenv.close()


class TimeLimitOnly(pufferlib.PufferEnv):
    """Reward 1 every step, an unchanging observation, and no ending but a time limit of 5 steps:
    with the time limit bootstrapped, every state is worth 1 / (1 - gamma)."""

    def __init__(self, buf=None):
        self.single_observation_space = gymnasium.spaces.Box(0, 1, (1,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(2)
        self.num_agents = 4
        super().__init__(buf)
        self.steps = 0

    def reset(self, seed=0):
        self.steps = 0
        return self.observations, []

    def step(self, actions):
        self.steps += 1
        self.rewards[:] = 1.0
        self.truncations[:] = self.steps % 5 == 0
        return self.observations, self.rewards, self.terminals, self.truncations, []


def test_truncated_episodes_bootstrap_instead_of_ending():
    config = config_for("puffer_bandit", "--train.horizon", "16", "--train.minibatch-size", "64", "--train.gamma", "0.9")
    env = vector.make(TimeLimitOnly, backend="Serial")
    trainer = pufferl.PuffeRL(config, env, assemble.make_policy(env, config))
    trainer.collect()
    buffer = trainer.buffer
    assert buffer.truncations[0].tolist() == [0, 0, 0, 0, 0, 1] + [0, 0, 0, 0, 1] * 2  # steps 5, 10, 15
    assert torch.equal(buffer.dones, buffer.truncations)
    # With the value function at its true value, 1 / (1 - gamma), every advantage is zero: a
    # truncation continues the sum of rewards rather than ending it.
    values = torch.full_like(buffer.values, 1 / (1 - 0.9))
    advantages = pufferl.compute_advantages(values, buffer.rewards, buffer.dones, buffer.truncations,
                                            torch.ones_like(values), 0.9, 0.95, 1.0, 1.0)
    assert torch.allclose(advantages, torch.zeros_like(advantages), atol=1e-4)
    cut = pufferl.compute_advantages(values, buffer.rewards, buffer.dones, torch.zeros_like(values),
                                     torch.ones_like(values), 0.9, 0.95, 1.0, 1.0)
    assert cut[0, 4] == pytest.approx(1 - 1 / (1 - 0.9), abs=1e-4)  # ending there would lose the future
