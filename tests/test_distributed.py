"""Data-parallel training under torchrun: real gloo ranks as subprocesses, on the CPU."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pufferlib import cli
from pufferlib.checkpoint import read_checkpoint, run_dirs

ROOT = Path(__file__).resolve().parent.parent
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
QUIET = ["--train.device", "cpu", "--train.dashboard", "plain", "--train.print-interval", "1000"]


def torchrun(*args, **kwargs):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([*TORCHRUN, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, **kwargs)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_ranks_train_one_policy_and_only_rank_0_reports(tmp_path):
    run = torchrun("-m", "pufferlib.cli", "train", "puffer_squared", "--vec.num-envs", "512",
                   "--train.data-dir", str(tmp_path), *QUIET)
    out, _ = run.communicate()
    assert run.returncode == 0, out
    assert out.count("Training puffer_squared on cpu x 2 ranks") == 1  # rank 0 alone prints
    assert "Solved: the final policy holds" in out
    [run_dir] = run_dirs(tmp_path, "puffer_squared")  # rank 0 alone writes a run folder
    checkpoint = read_checkpoint(run_dir)
    # Each epoch counts both ranks' steps; every update checked that the ranks' weights agree.
    assert checkpoint["global_step"] == checkpoint["epoch"] * 2 * 512 * 32

    # The checkpoint resumes on one process as well.
    config = cli.apply_flags(checkpoint["config"], ["--train.total-timesteps", str(checkpoint["global_step"] + 65536)])
    resumed = cli.train("puffer_squared", config, resume=str(run_dir))
    assert resumed.world.size == 1 and resumed.global_step >= checkpoint["global_step"] + 65536


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_dead_rank_stops_every_rank_and_keeps_the_checkpoint(tmp_path):
    run = torchrun("-m", "pufferlib.cli", "train", "puffer_squared", "--vec.num-envs", "64", "--train.total-timesteps",
                   "1e9", "--train.checkpoint-interval", "1", "--train.data-dir", str(tmp_path), *QUIET)
    deadline = time.time() + 120
    while time.time() < deadline and not list(tmp_path.glob("*/checkpoint.pt")):
        time.sleep(0.2)
    workers = psutil.Process(run.pid).children(recursive=True)
    assert len(workers) >= 2, "torchrun started no workers"
    os.kill(workers[-1].pid, signal.SIGKILL)
    out, _ = run.communicate(timeout=60)  # the other rank does not hang on a collective
    assert run.returncode != 0
    assert not any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE for worker in workers)
    read_checkpoint(run_dirs(tmp_path, "puffer_squared")[-1])  # loadable


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


@pytest.mark.timeout(120)
def test_ranks_with_different_configs_refuse_to_start(tmp_path):
    script = tmp_path / "mismatch.py"
    script.write_text(MISMATCH)
    run = torchrun(str(script))
    out, _ = run.communicate()
    assert run.returncode != 0
    assert "rank 0: ranks were started with different configs" in out
    assert "rank 1: ranks were started with different configs" in out


def test_distributed_on_without_torchrun_is_a_clear_error(capsys, monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["train", "puffer_squared", "--train.distributed", "on", *QUIET]) == 2
    assert "needs torchrun's variables" in capsys.readouterr().err
