"""Every vector backend trains every env family through `puffer train`: Serial, Multiprocessing,
native and Ray, each with an Ocean env, a Gymnasium env and a PettingZoo env, for a few epochs.
A run counts only if its batches filled: the checkpoint it leaves has trained the whole budget.

The native backend steps batched (Ocean) envs only; for the other families it is a one-line
usage error that leaves no run folder. Ray runs inside a private network namespace, as in
tests/test_vector.py: the outer test re-runs this file's Ray cells there, where one local
cluster serves them all.
"""

import json
import shutil
import tempfile

import pytest
from conftest import IN_RAY_NAMESPACE, run_ray_tests_privately

from pufferlib import cli, vector
from pufferlib.checkpoint import read_checkpoint, run_dirs
from pufferlib.environments import classic_control

# family: (env, envs, agents per env); each epoch is envs x agents x HORIZON steps.
FAMILIES = {"ocean": ("puffer_squared", 4, 1), "gymnasium": ("CartPole-v1", 4, 1), "pettingzoo": ("tictactoe", 4, 2)}
BACKENDS = ("serial", "multiprocessing", "native", "ray")
HORIZON = 16
EPOCHS = 3
BATCHED_FAMILIES = {"ocean"}


def train_flags(backend, family, data_dir):
    env_name, num_envs, agents = FAMILIES[family]
    budget = EPOCHS * num_envs * agents * HORIZON
    flags = [
        "train", env_name, "--vec.backend", backend, "--vec.num-envs", str(num_envs),
        "--train.total-timesteps", str(budget), "--train.horizon", str(HORIZON),
        "--train.minibatch-size", str(num_envs * agents * HORIZON // 2), "--train.update-epochs", "1",
        "--train.device", "cpu", "--train.dashboard", "off", "--train.data-dir", str(data_dir),
    ]
    if backend in ("multiprocessing", "ray"):
        flags += ["--vec.num-workers", "2"]
    return env_name, budget, flags


def cells(backends):
    return [
        pytest.param(backend, family, id=f"{backend}-{family}", marks=[pytest.mark.ray] if backend == "ray" else [])
        for backend in backends
        for family in FAMILIES
    ]


def assert_trains_the_whole_budget(backend, family, data_dir):
    env_name, budget, flags = train_flags(backend, family, data_dir)
    assert cli.main(flags) == 0
    [run] = run_dirs(data_dir, env_name)
    checkpoint = read_checkpoint(run / "checkpoint.pt")
    assert checkpoint["global_step"] == budget
    assert checkpoint["epoch"] == checkpoint["total_epochs"] == EPOCHS
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    assert steps and steps[-1] == budget and steps == sorted(steps), steps


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend, family", cells(["serial", "multiprocessing", "native"]))
def test_every_backend_trains_every_family(backend, family, tmp_path, capsys):
    if backend == "native" and family not in BATCHED_FAMILIES:
        _, _, flags = train_flags(backend, family, tmp_path)
        assert cli.main(flags) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("puffer: error: the native backend needs a batched env_creator"), last
        assert "use Serial, Multiprocessing or Ray" in last
        assert list(tmp_path.iterdir()) == []
        return
    assert_trains_the_whole_budget(backend, family, tmp_path)


@pytest.mark.ray
@pytest.mark.timeout(300)
@pytest.mark.skipif(IN_RAY_NAMESPACE, reason="this is the outer runner")
def test_ray_cells_in_a_private_network_namespace():
    run_ray_tests_privately(__file__, "-m ray", passed=len(FAMILIES) + 1, timeout=290)


@pytest.fixture(scope="module")
def ray_cluster():
    """One local cluster for every Ray cell (the backend uses a cluster it finds running, and
    leaves it running), with a CPU for each of training's two actors and no more: the envs that
    score the final policy step in the training process, not on actors of their own."""
    import ray

    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.mark.timeout(120)
@pytest.mark.skipif(not IN_RAY_NAMESPACE, reason="run by test_ray_cells_in_a_private_network_namespace")
@pytest.mark.parametrize("backend, family", cells(["ray"]))
def test_ray_trains_every_family(backend, family, tmp_path, ray_cluster):
    assert_trains_the_whole_budget(backend, family, tmp_path)
    assert ray_cluster.is_initialized()


@pytest.mark.ray
@pytest.mark.timeout(120)
@pytest.mark.skipif(not IN_RAY_NAMESPACE, reason="run by test_ray_cells_in_a_private_network_namespace")
def test_ray_actors_without_a_free_cpu_are_a_clear_error(ray_cluster):
    cpus = int(ray_cluster.cluster_resources()["CPU"])
    creator = classic_control.env_creator("CartPole-v1")
    holding = vector.make(creator, backend="ray", num_envs=cpus, num_workers=cpus)
    try:
        with pytest.raises(vector.WorkerTimeoutError, match=rf"did not start within 20 s. The cluster has 0 of its {cpus} CPUs free"):
            vector.make(creator, backend="ray", num_envs=1, num_workers=1, timeout=1)
    finally:
        holding.close()
