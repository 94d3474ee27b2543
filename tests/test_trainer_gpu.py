"""The trainer with an env on the GPU (device hooks): no host synchronization per step, and the
same rollout as with the C env on the host. Skips without a CUDA GPU and the CUDA Craftax build."""

import pytest
import torch

import pufferlib.vector
from pufferlib import assemble, pufferl
from pufferlib.config import apply_flags, load_config

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (this torch sees none)"),
]


def craftax_config(*flags):
    config = load_config("puffer_craftax_compact")
    return apply_flags(config, [
        "--train.device", "cuda", "--vec.num-envs", "256", "--train.horizon", "16", "--train.minibatch-size", "1024",
        "--env.reset-pool-size", "64", "--train.dashboard", "plain", *flags,
    ])


def make_trainer(config):
    vecenv = assemble.make_vecenv(config["base"]["env_name"], config)
    return pufferl.PuffeRL(config, vecenv, assemble.make_policy(vecenv, config))


@pytest.fixture(scope="module")
def gpu_env_built():
    try:
        import ocean.craftax.gpu  # noqa: F401
    except ImportError as error:
        pytest.skip(f"the CUDA Craftax is not built ({error})")


def test_page_locked_host_buffers_give_the_same_batch():
    """An in-process env feeding a policy on the GPU writes page-locked buffers, whose copies to the
    device run asynchronously: the batches are still those of ordinary buffers, bit for bit."""
    config = apply_flags(load_config("puffer_squared"), [
        "--train.device", "cuda", "--vec.num-envs", "4096", "--train.horizon", "16", "--train.minibatch-size", "16384",
    ])
    pinned = assemble.make_vecenv("puffer_squared", config)
    plain = pufferlib.vector.make(
        assemble.env_family(config).env_creator("puffer_squared"), backend="native", num_envs=4096,
        env_kwargs={**config["env"], "num_threads": config["vec"]["num_threads"]}, seed=config["base"]["seed"],
    )
    assert all(torch.from_numpy(buffer).is_pinned() for buffer in pinned.buffers.values())
    assert not any(torch.from_numpy(buffer).is_pinned() for buffer in plain.buffers.values())
    trainers = [pufferl.PuffeRL(config, vecenv, assemble.make_policy(vecenv, config)) for vecenv in (pinned, plain)]
    for _ in range(2):
        for trainer in trainers:
            trainer.collect()
        for name in ("observations", "actions", "rewards", "dones"):
            assert torch.equal(getattr(trainers[0].buffer, name), getattr(trainers[1].buffer, name)), name
        for trainer in trainers:
            trainer.train()
    for trainer in trainers:
        trainer.close()


@pytest.mark.parametrize("policy", ["CraftaxCompact", "CraftaxCells"])
def test_rollout_issues_no_host_synchronization(gpu_env_built, monkeypatch, policy):
    """Either of Craftax's policies; CraftaxCells' table then learns through its kernels' gradient
    in the compiled, graphed update."""
    trainer = make_trainer(craftax_config("--vec.device", "cuda", "--base.policy", f"ocean.craftax.policy:{policy}"))
    inner = getattr(trainer.policy, "policy", trainer.policy)  # inside the rnn, where there is one
    assert trainer.env_on_device and type(inner).__name__ == policy
    trainer.collect()  # warm-up: compilation and CUDA graph capture may synchronize
    monkeypatch.setattr(trainer.vecenv, "gpu_sync_logs", lambda: None)  # the one sync per epoch, by design
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        trainer.collect()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    if policy == "CraftaxCells":
        table = inner.cell_embedding.detach().clone()
        for _ in range(5):  # past the eager warm-up minibatches, into the update's CUDA graph
            trainer.train()
            trainer.collect()
        assert not torch.equal(inner.cell_embedding, table) and torch.isfinite(inner.cell_embedding).all()
    trainer.close()


@pytest.mark.parametrize("flags", [[], ["--base.rnn", "mingru", "--rnn.hidden-size", "256"]])
def test_gpu_env_rollout_equals_the_host_env_rollout(gpu_env_built, flags):
    """Same seeds, same policy, same device: the GPU env's batch is the C env's, bit for bit."""
    host = make_trainer(craftax_config(*flags))
    device = make_trainer(craftax_config("--vec.device", "cuda", *flags))
    assert device.env_on_device and not host.env_on_device
    for _ in range(2):
        host.collect()
        device.collect()
        for name in ("observations", "actions", "rewards", "dones", "values", "logprobs"):
            assert torch.equal(getattr(host.buffer, name), getattr(device.buffer, name)), name
        host.train()
        device.train()
    host.close()
    device.close()


@pytest.mark.parametrize("horizon", [16, 15])  # odd: a segment ends in the other memory, which gets a graph too
def test_whole_segment_graphs_give_the_step_by_step_batch(gpu_env_built, horizon):
    """An env with device hooks: each segment of every agent (policy, sampling, buffer write and
    env step, ``horizon`` times) replayed as one CUDA graph gives the batch of the eager
    step-by-step rollout from the same seeds, bit for bit, recurrent memory included; two segments
    per agent and batch, and an update between batches."""
    flags = ["--vec.device", "cuda", "--base.rnn", "mingru", "--rnn.hidden-size", "128", "--policy.hidden-size", "128",
             "--train.horizon", str(horizon), "--train.batch-size", str(256 * horizon * 2),
             "--train.minibatch-size", str(64 * horizon)]
    graphed = make_trainer(craftax_config(*flags, "--train.cudagraphs", "true"))
    stepped = make_trainer(craftax_config(*flags, "--train.cudagraphs", "false"))
    assert graphed.rollout.graph_rollout and not stepped.rollout.graph_rollout
    for _ in range(3):  # the first batch warms up and captures the graphs, the next ones replay them
        graphed.collect()
        stepped.collect()
        assert len(graphed.rollout.segment_graphs) == 1 + horizon % 2 and not graphed.rollout.step_graphs
        for name in ("observations", "actions", "logprobs", "rewards", "dones", "truncations", "values"):
            assert torch.equal(getattr(graphed.buffer, name), getattr(stepped.buffer, name)), name
        for mine, theirs in zip((*graphed.buffer.start_state, *graphed.state), (*stepped.buffer.start_state, *stepped.state)):
            assert torch.equal(mine, theirs)
        # One update, taken on as it is: the rollouts are compared, not the updates.
        graphed.train()
        stepped.policy.load_state_dict(graphed.policy.state_dict())
        stepped.generator.set_state(graphed.generator.get_state())
    graphed.close()
    stepped.close()


def test_training_on_the_gpu_env_logs_episodes(gpu_env_built):
    config = craftax_config("--vec.device", "cuda", "--vec.num-envs", "1024", "--train.horizon", "64",
                            "--train.minibatch-size", "16384")
    trainer = make_trainer(config)
    for _ in range(40):
        trainer.collect()
        trainer.train()
    assert trainer.env_stats.get("episodes", 0) > 0 and 0 <= trainer.env_stats["score"] <= 100
    trainer.close()
