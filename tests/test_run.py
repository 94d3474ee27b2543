"""A run's lifecycle as users drive it: train, stop (SIGTERM, what timeout, docker stop and Slurm
send), resume, extend. Each ends with a checkpoint that resumes, and an extended run's learning
rate moves."""

import json
import os
import signal
import threading
import time

import pytest

from pufferlib import cli
from pufferlib.checkpoint import read_checkpoint, run_dirs
from pufferlib.config import apply_flags, load_config
from pufferlib.pufferl import NonFiniteError
from pufferlib.run import TrainingRun

QUIET = ["--train.dashboard", "off", "--train.device", "cpu", "--vec.num-envs", "64"]


def send_once_started(folder, signum):
    """Sends ``signum`` to this process once a run under ``folder`` has logged an epoch."""

    def send():
        deadline = time.time() + 60
        while time.time() < deadline and not any(p.stat().st_size for p in folder.glob("*/metrics.jsonl")):
            time.sleep(0.05)
        os.kill(os.getpid(), signum)

    thread = threading.Thread(target=send)
    thread.start()
    return thread


def metrics_of(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_sigterm_saves_the_last_whole_epoch_and_the_run_resumes_from_it(tmp_path, capsys):
    handler_before = signal.getsignal(signal.SIGTERM)
    sender = send_once_started(tmp_path, signal.SIGTERM)
    code = cli.main(["train", "puffer_squared", "--train.total-timesteps", "100_000_000",
                     "--train.data-dir", str(tmp_path), *QUIET])
    sender.join()
    assert code == 143  # the shell's code for SIGTERM: schedulers see the job was stopped
    assert signal.getsignal(signal.SIGTERM) is handler_before
    [run_dir] = run_dirs(tmp_path, "puffer_squared")
    out = capsys.readouterr().out
    assert "Stopped by SIGTERM at step" in out and f"puffer train puffer_squared --resume {run_dir}" in out
    checkpoint = read_checkpoint(run_dir)
    assert checkpoint["global_step"] == checkpoint["epoch"] * 64 * 32 > 0  # whole epochs only

    budget = checkpoint["global_step"] + 2 * 64 * 32
    assert cli.main(["train", "puffer_squared", "--resume", str(run_dir), "--train.total-timesteps", str(budget),
                     "--train.data-dir", str(tmp_path), *QUIET]) == 0
    assert read_checkpoint(run_dir)["global_step"] == budget
    assert [row["epoch"] for row in metrics_of(run_dir)] == list(range(1, budget // (64 * 32) + 1))


def test_extending_a_finished_run_trains_on_with_a_learning_rate_that_moves(tmp_path, capsys):
    flags = ["--train.data-dir", str(tmp_path), *QUIET, "--train.dashboard", "plain"]
    assert cli.main(["train", "puffer_squared", "--train.total-timesteps", str(4 * 64 * 32), *flags]) == 0
    [run_dir] = run_dirs(tmp_path, "puffer_squared")
    capsys.readouterr()
    assert cli.main(["train", "puffer_squared", "--resume", "latest", "--train.total-timesteps", str(8 * 64 * 32), *flags]) == 0
    assert "Extending the run from 8.2k to 16.4k steps" in capsys.readouterr().out
    extension = metrics_of(run_dir)[4:]
    assert [row["epoch"] for row in extension] == [5, 6, 7, 8]
    rates = [row["losses/learning_rate"] for row in extension]
    assert all(rate > 0 for rate in rates[:-1]) and rates == sorted(rates, reverse=True)


def test_checkpoints_follow_the_clock_as_well_as_the_epoch_count(tmp_path):
    config = apply_flags(load_config("puffer_squared"), ["--train.data-dir", str(tmp_path), "--train.total-timesteps", "1e6",
                                                         "--train.checkpoint-interval", "0", *QUIET])
    config["train"]["checkpoint_minutes"] = 0
    run = TrainingRun("puffer_squared", config)
    try:
        assert run.epoch() and not run.checkpoint_due()  # neither interval is set
        run.train_config["checkpoint_minutes"] = 1e-6
        assert run.checkpoint_due()
        run.save_checkpoint()
        assert read_checkpoint(run.run_dir)["epoch"] == 1
        run.train_config["checkpoint_minutes"] = 60
        assert run.epoch() and not run.checkpoint_due()  # an hour has not passed since the last one
        run.train_config["checkpoint_interval"] = 2
        assert run.checkpoint_due()  # the second epoch
    finally:
        run.close()


def test_a_non_finite_update_says_what_the_last_checkpoint_holds(tmp_path, monkeypatch):
    config = apply_flags(load_config("puffer_squared"), ["--train.data-dir", str(tmp_path), *QUIET])
    run = TrainingRun("puffer_squared", config)
    try:
        def diverge():
            raise NonFiniteError("non-finite loss at step 2048")

        monkeypatch.setattr(run.trainer, "train", diverge)
        with pytest.raises(NonFiniteError, match=r"step 2048 \(no checkpoint was written before it\)"):
            run.epoch()
        run.save_checkpoint()
        step = run.trainer.global_step
        with pytest.raises(NonFiniteError, match=rf"the last checkpoint \(.*checkpoint\.pt\) holds step {step}\)"):
            run.epoch()
    finally:
        run.close()
