"""Data-parallel training under torchrun: real gloo ranks as subprocesses, on the CPU."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch

from pufferlib import cli
from pufferlib.checkpoint import read_checkpoint, run_dirs
from pufferlib.config import apply_flags, load_config
from pufferlib.run import train

ROOT = Path(__file__).resolve().parent.parent
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
QUIET = ["--train.device", "cpu", "--train.dashboard", "plain", "--train.print-interval", "1000"]


LAUNCHED = []  # every launcher and hand-started rank of the running test


@pytest.fixture(autouse=True)
def no_rank_outlives_its_test():
    """Whatever a test's outcome (a timeout included), the processes it started and their
    children are killed when it ends, so none holds cores or ports for the tests after it."""
    yield
    while LAUNCHED:
        process = LAUNCHED.pop()
        try:
            launcher = psutil.Process(process.pid)
            tree = [launcher, *launcher.children(recursive=True)]
        except psutil.NoSuchProcess:
            tree = []
        for member in tree:
            try:
                member.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(tree, timeout=10)
        process.wait(timeout=10)


def launch(command, env):
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    LAUNCHED.append(process)
    return process


def torchrun(*args, launcher=TORCHRUN, env=None):
    return launch([*launcher, *args], {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", **(env or {})})


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_ranks_train_one_policy_and_only_rank_0_reports(tmp_path):
    run = torchrun("-m", "pufferlib.cli", "train", "puffer_squared", "--vec.num-envs", "1024",
                   "--train.data-dir", str(tmp_path), *QUIET)
    out, _ = run.communicate()
    assert run.returncode == 0, out
    assert out.count("Training puffer_squared on cpu x 2 ranks") == 1  # rank 0 alone prints
    assert "Solved: the final policy holds" in out
    [run_dir] = run_dirs(tmp_path, "puffer_squared")  # rank 0 alone writes a run folder
    checkpoint = read_checkpoint(run_dir)
    # Each epoch counts both ranks' steps; every update checked that the ranks' weights agree.
    assert checkpoint["global_step"] == checkpoint["epoch"] * 2 * 1024 * 32

    # The checkpoint resumes on one process as well.
    config = apply_flags(checkpoint["config"], ["--train.total-timesteps", str(checkpoint["global_step"] + 65536)])
    resumed = train("puffer_squared", config, resume=str(run_dir))
    assert resumed.world.size == 1 and resumed.global_step >= checkpoint["global_step"] + 65536


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_dead_rank_stops_every_rank_and_keeps_the_checkpoint(tmp_path):
    # Collectives would wait 10 minutes for the dead rank: ending within a minute is the ranks' doing.
    run = torchrun("-m", "pufferlib.cli", "train", "puffer_squared", "--vec.num-envs", "64", "--train.total-timesteps",
                   "1e9", "--train.checkpoint-interval", "1", "--train.distributed-timeout", "600",
                   "--train.data-dir", str(tmp_path), *QUIET)
    deadline = time.time() + 120
    while time.time() < deadline and not list(tmp_path.glob("*/checkpoint.pt")):
        time.sleep(0.2)
    workers = psutil.Process(run.pid).children(recursive=True)
    assert len(workers) >= 2, "torchrun started no workers"
    os.kill(workers[-1].pid, signal.SIGKILL)
    out, _ = run.communicate(timeout=60)  # the other rank does not hang on a collective
    assert run.returncode != 0
    assert "Signal 9 (SIGKILL) received by PID" in out  # torchrun names the rank that died
    assert not any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE for worker in workers)
    read_checkpoint(run_dirs(tmp_path, "puffer_squared")[-1])  # loadable


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_rank_that_raises_stops_every_rank_with_its_error(tmp_path):
    """Rank 0 cannot make the run folder while rank 1 waits for its name in a collective."""
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    run = torchrun("-m", "pufferlib.cli", "train", "puffer_squared", "--vec.num-envs", "64",
                   "--train.distributed-timeout", "600", "--train.data-dir", str(not_a_folder), *QUIET)
    out, _ = run.communicate(timeout=60)  # not the 600 s a collective would wait
    assert run.returncode != 0
    assert f"puffer: error: cannot create the run folder {not_a_folder}/puffer_squared_" in out
    assert "SIGABRT" not in out and "terminate called" not in out


def torchrun_node(port, node_rank, *args):
    """One node of a two-node job, started as on its own machine: it meets the other at node 0's
    127.0.0.1:PORT, and its ranks talk over the interface named for gloo."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
                "--node-rank", str(node_rank), "--master-addr", "127.0.0.1", "--master-port", str(port)]
    return torchrun(*args, launcher=launcher, env={"GLOO_SOCKET_IFNAME": "lo"})


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_nodes_meet_at_the_rendezvous_and_train_one_policy(tmp_path):
    port = free_port()
    command = ["-m", "pufferlib.cli", "train", "puffer_squared", "--vec.num-envs", "64", *QUIET]
    nodes = [torchrun_node(port, node, *command, "--train.total-timesteps", "40000", "--train.data-dir", str(tmp_path))
             for node in range(2)]
    outs = [node.communicate(timeout=240)[0] for node in nodes]
    for node, out in zip(nodes, outs):
        assert node.returncode == 0, out
    assert sum(out.count("Training puffer_squared on cpu x 2 ranks") for out in outs) == 1
    [run_dir] = run_dirs(tmp_path, "puffer_squared")
    checkpoint = read_checkpoint(run_dir)
    assert checkpoint["global_step"] == checkpoint["epoch"] * 2 * 64 * 32 >= 40000


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_rank_dying_on_one_node_stops_the_other_node(tmp_path):
    port = free_port()
    # Collectives would wait 10 minutes for the dead rank: ending within a minute is the ranks' doing.
    nodes = [torchrun_node(port, node, "-m", "pufferlib.cli", "train", "puffer_squared", "--vec.num-envs", "64",
                           "--train.total-timesteps", "1e9", "--train.checkpoint-interval", "1",
                           "--train.distributed-timeout", "600", "--train.data-dir", str(tmp_path), *QUIET)
             for node in range(2)]
    deadline = time.time() + 120
    while time.time() < deadline and not list(tmp_path.glob("*/checkpoint.pt")):
        time.sleep(0.2)
    [worker] = psutil.Process(nodes[1].pid).children(recursive=True)
    os.kill(worker.pid, signal.SIGKILL)
    for node in nodes:
        node.communicate(timeout=60)
        assert node.returncode != 0
    read_checkpoint(run_dirs(tmp_path, "puffer_squared")[-1])


MISMATCH = """
import os, sys
from pufferlib.config import ConfigError, apply_flags, load_config
from pufferlib.distributed import make_world
config = apply_flags(load_config("puffer_squared"), ["--train.learning-rate", str(0.01 * (1 + int(os.environ["RANK"])))])
try:
    make_world(config, "cpu")
except ConfigError as error:
    print(f"rank {os.environ['RANK']}: {error}")
    sys.exit(3)
"""


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_ranks_with_different_configs_refuse_to_start(tmp_path):
    script = tmp_path / "mismatch.py"
    script.write_text(MISMATCH)
    run = torchrun(str(script))
    out, _ = run.communicate()
    assert run.returncode != 0
    assert "rank 0: ranks were started with different configs" in out
    assert "rank 1: ranks were started with different configs" in out
    assert "terminate called" not in out  # each rank left its process group before exiting (no SIGABRT)


def test_distributed_on_without_torchrun_is_a_clear_error(capsys, monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["train", "puffer_squared", "--train.distributed", "on", *QUIET]) == 2
    assert "needs torchrun's variables" in capsys.readouterr().err


def launch_by_hand(ranks, port, *flags):
    """Processes started the way a launcher other than torchrun would: each with the variables
    given for it in ``ranks`` ({"RANK": ..., "WORLD_SIZE": ...}); their outputs."""
    processes = [
        launch([sys.executable, "-m", "pufferlib.cli", "train", "puffer_squared", "--vec.num-envs", "8", *QUIET, *flags],
               {**os.environ, "OMP_NUM_THREADS": "1", "LOCAL_RANK": variables["RANK"], "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port), **variables})
        for variables in ranks
    ]
    return [(process.communicate(timeout=90)[0], process.returncode) for process in processes]


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("sizes", [("3", "3"), ("2", "3")], ids=["fewer-ranks-than-WORLD_SIZE", "WORLD_SIZE-differs"])
def test_a_wrong_world_size_is_one_clear_error_on_every_rank(tmp_path, sizes):
    ranks = [{"RANK": str(rank), "WORLD_SIZE": size} for rank, size in enumerate(sizes)]
    results = launch_by_hand(ranks, free_port(), "--train.distributed-timeout", "2", "--train.data-dir", str(tmp_path))
    for rank, (out, returncode) in enumerate(results):
        assert returncode == 2, out
        assert f"puffer: error: rank {rank} of WORLD_SIZE {sizes[rank]} could not start with the other ranks" in out
        assert "Every rank needs the same WORLD_SIZE" in out
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "variables, message",
    [
        ({"RANK": "1"}, "missing WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (set: RANK=1)"),
        ({"RANK": "0", "WORLD_SIZE": "two", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"},
         "WORLD_SIZE='two': torchrun's WORLD_SIZE is a whole number"),
        ({"RANK": "2", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"},
         "RANK=2 is outside WORLD_SIZE=2: ranks are numbered 0 to 1"),
        ({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
          "MASTER_PORT": "29500"}, "LOCAL_RANK=2 with LOCAL_WORLD_SIZE=2"),
        ({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "70000"},
         "MASTER_PORT=70000 is not a TCP port"),
    ],
    ids=["RANK-alone", "WORLD_SIZE-not-a-number", "RANK-outside", "LOCAL_RANK-outside", "MASTER_PORT-out-of-range"],
)
def test_torchrun_variables_set_wrongly_are_a_clear_error(capsys, monkeypatch, variables, message):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["train", "puffer_squared", *QUIET]) == 2
    assert message in capsys.readouterr().err


LEAVE_THE_GROUP = """
import os
from pufferlib.distributed import TorchrunWorld
def threads():
    return sorted(open(f"/proc/self/task/{task}/comm").read().strip() for task in os.listdir("/proc/self/task"))
alone = threads()
world = TorchrunWorld("cpu", 30)
import torch._dynamo  # a training run imports it on first use, after the group exists
world.sum(1)
world.close()
print(alone, threads())
assert threads() == alone, "the group's threads outlived close()"
"""


@pytest.mark.slow
def test_closing_the_world_stops_the_groups_threads_before_the_interpreter_exits():
    # A gloo thread still running while the interpreter exits can abort the process (SIGABRT).
    variables = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    run = subprocess.run([sys.executable, "-c", LEAVE_THE_GROUP], cwd=ROOT, env={**os.environ, **variables},
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_distributed_off_trains_alone_whatever_the_variables_say(monkeypatch, tmp_path):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "two")
    trainer = train("puffer_squared", apply_flags(load_config("puffer_squared"), [
        "--train.distributed", "off", "--vec.num-envs", "8", "--train.total-timesteps", "512",
        "--train.data-dir", str(tmp_path), *QUIET]))
    assert trainer.world.size == 1 and trainer.global_step >= 512


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_resume_with_another_number_of_ranks_trains_to_the_budget(tmp_path):
    flags = ["--vec.num-envs", "64", "--train.data-dir", str(tmp_path), *QUIET]  # 2048 steps a rank per epoch
    alone = train("puffer_squared", apply_flags(load_config("puffer_squared"),
                                                        [*flags, "--train.total-timesteps", "8192"]))
    assert alone.global_step == 8192

    run = torchrun("-m", "pufferlib.cli", "train", "puffer_squared", *flags, "--resume", "--train.total-timesteps", "16384")
    out, _ = run.communicate()
    assert run.returncode == 0, out
    assert read_checkpoint(alone.run_dir)["global_step"] == 16384  # two epochs of two ranks

    config = apply_flags(read_checkpoint(alone.run_dir)["config"], ["--train.total-timesteps", "24576"])
    assert train("puffer_squared", config, resume=str(alone.run_dir)).global_step == 24576  # four of one


GPU_ENV_RANK = """
import os
from pufferlib import assemble, pufferl
from pufferlib.config import apply_flags, load_config
from pufferlib.distributed import make_world
config = apply_flags(load_config("puffer_craftax_compact"), [
    "--train.device", "cuda", "--vec.device", "cuda", "--vec.num-envs", "1024", "--train.horizon", "32",
    "--train.minibatch-size", "4096", "--train.dashboard", "off"])
world = make_world(config, "cuda")
world.place(config)
vecenv = assemble.make_vecenv("puffer_craftax_compact", config)
trainer = pufferl.PuffeRL(config, vecenv, assemble.make_policy(vecenv, config), world)
for _ in range(3):  # train() checks after each epoch that every rank holds the same weights
    trainer.collect()
    trainer.train()
assert trainer.device == f"cuda:{world.local_rank}" and str(trainer.vecenv.device) == trainer.device
print(f"rank {world.rank}: {trainer.global_step} steps on {trainer.device}")
trainer.close()
world.close()
"""


def two_gpus(test):
    return pytest.mark.gpu(pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")(test))


@two_gpus
@pytest.mark.timeout(300)
def test_two_gpus_each_step_their_own_gpu_envs_and_agree_on_the_weights(tmp_path):
    pytest.importorskip("ocean.craftax.gpu", reason="the CUDA Craftax is not built")
    script = tmp_path / "gpu_env_rank.py"
    script.write_text(GPU_ENV_RANK)
    run = torchrun(str(script))
    out, _ = run.communicate(timeout=280)
    assert run.returncode == 0, out
    assert "rank 0: 196608 steps on cuda:0" in out and "rank 1: 196608 steps on cuda:1" in out


@two_gpus
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_gpus_train_squared_to_the_optimum(tmp_path):
    run = torchrun("-m", "pufferlib.cli", "train", "puffer_squared", "--vec.num-envs", "1024", "--train.device", "cuda",
                   "--train.dashboard", "plain", "--train.print-interval", "1000", "--train.data-dir", str(tmp_path))
    out, _ = run.communicate(timeout=580)
    assert run.returncode == 0, out
    assert "Training puffer_squared on cuda:0 x 2 ranks" in out
    assert "Solved: the final policy holds" in out
