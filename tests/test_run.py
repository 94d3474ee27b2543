"""A run's lifecycle as users drive it: train, stop (SIGTERM, what timeout, docker stop and Slurm
send), resume, extend. Each ends with a checkpoint that resumes, and an extended run's learning
rate moves. Checkpoints leave training as it was, a crashed run resumes past its last checkpoint,
a larger budget stretches the rest of the schedule, the summary scores the final policy, a disk
that is read-only or full is a one-line error, and the CPU clock counts the env workers' time."""

import dataclasses
import json
import os
import signal
import subprocess
import threading
import time

import gymnasium
import numpy as np
import pytest
import torch
from conftest import unavailable
from helpers import config_for, make_trainer, run_epochs

from pufferlib import cli, pufferl, run, vector
from pufferlib.checkpoint import CheckpointError, read_checkpoint, run_dirs, save_atomic
from pufferlib.config import apply_flags, load_config
from pufferlib.emulation import GymnasiumPufferEnv
from pufferlib.pufferl import NonFiniteError
from pufferlib.run import CpuClock, TrainingRun

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
        run.train_settings = dataclasses.replace(run.train_settings, checkpoint_minutes=1e-6)
        assert run.checkpoint_due()
        run.save_checkpoint()
        assert read_checkpoint(run.run_dir)["epoch"] == 1
        run.train_settings = dataclasses.replace(run.train_settings, checkpoint_minutes=60)
        assert run.epoch() and not run.checkpoint_due()  # an hour has not passed since the last one
        run.train_settings = dataclasses.replace(run.train_settings, checkpoint_interval=2)
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


def metric_lines(run_dir):
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k not in ("time", "sps") and not k.startswith("timing/")} for row in rows]


@pytest.mark.parametrize("batch_size", ["auto", "32"])  # 32: two env objects, each stepped in a thread
def test_checkpoints_do_not_change_training(tmp_path, batch_size):
    runs = []
    for interval in (0, 3):
        config = config_for("puffer_squared", "--vec.num-envs", "64", "--train.total-timesteps", "40_000",
                            "--vec.batch-size", batch_size,
                            "--train.checkpoint-interval", str(interval), data_dir=tmp_path / str(interval))
        runs.append(run.train("puffer_squared", config))
    plain, checkpointed = runs
    assert metric_lines(plain.run_dir) == metric_lines(checkpointed.run_dir)
    assert all(torch.equal(a, b) for a, b in zip(plain.policy.parameters(), checkpointed.policy.parameters()))


@pytest.mark.parametrize("batch_size", ["auto", "32"])
def test_resume_after_a_crash_rewrites_the_metrics_past_the_checkpoint(tmp_path, monkeypatch, batch_size):
    config = config_for("puffer_squared", "--vec.num-envs", "64", "--train.total-timesteps", "20_480",
                        "--vec.batch-size", batch_size, "--train.checkpoint-interval", "3", data_dir=tmp_path)
    uninterrupted = run.train("puffer_squared", config)

    # A crash in epoch 5, after the checkpoint of epoch 3 and the metrics of epoch 4.
    train_epoch = pufferl.PuffeRL.train

    def crash_in_epoch_5(trainer):
        if trainer.epoch == 4:
            raise RuntimeError("the machine went down")
        train_epoch(trainer)

    monkeypatch.setattr(pufferl.PuffeRL, "train", crash_in_epoch_5)
    with pytest.raises(RuntimeError, match="went down"):
        run.train("puffer_squared", config)
    monkeypatch.undo()
    crashed = run_dirs(tmp_path, "puffer_squared")[-1]
    assert [row["epoch"] for row in metric_lines(crashed)] == [1, 2, 3, 4]
    assert read_checkpoint(crashed)["epoch"] == 3

    resumed = run.train("puffer_squared", read_checkpoint(crashed)["config"], resume=str(crashed))
    assert [row["epoch"] for row in metric_lines(resumed.run_dir)] == list(range(1, uninterrupted.epoch + 1))
    # squared saves its env state: the resumed run is the uninterrupted one, bit for bit.
    assert metric_lines(resumed.run_dir) == metric_lines(uninterrupted.run_dir)


def test_a_larger_total_stretches_the_rest_of_the_schedule(tmp_path):
    config = config_for("puffer_squared", "--vec.num-envs", "64", "--train.total-timesteps", "20_480")  # 10 epochs
    trainer = make_trainer(config)
    run_epochs(trainer, 4)
    trainer.save_checkpoint(tmp_path / "checkpoint.pt")
    assert trainer.progress() == pytest.approx(0.4)
    longer = make_trainer(apply_flags(config, ["--train.total-timesteps", "40_960"]))  # 20 epochs now
    longer.load_checkpoint(read_checkpoint(tmp_path / "checkpoint.pt"))
    assert longer.progress() == pytest.approx(0.4)
    run_epochs(longer, 1)
    assert longer.losses["learning_rate"] == pytest.approx(pufferl.cosine_lr(config["train"]["learning_rate"], 0.4))
    run_epochs(longer, 7)
    assert longer.progress() == pytest.approx(0.4 + 0.6 * 8 / 16)


def test_extending_a_finished_run_anneals_over_the_new_budget(tmp_path):
    """A finished run's schedule has run out; given a larger total it starts again where a run
    planned with that total would be, so the extension learns instead of stepping at rate 0."""
    config = config_for("puffer_squared", "--vec.num-envs", "64", "--train.total-timesteps", "4096")  # 2 epochs
    trainer = make_trainer(config)
    run_epochs(trainer, trainer.total_epochs)
    trainer.save_checkpoint(tmp_path / "checkpoint.pt")
    assert trainer.progress() == 1.0
    longer = make_trainer(apply_flags(config, ["--train.total-timesteps", "8192"]))  # 4 epochs now
    longer.load_checkpoint(read_checkpoint(tmp_path / "checkpoint.pt"))
    assert longer.total_epochs == 4 and longer.progress() == pytest.approx(0.5)
    rates = []
    for _ in range(2):
        weights = [p.detach().clone() for p in longer.policy.parameters()]
        run_epochs(longer, 1)
        rates.append(longer.losses["learning_rate"])
        assert not all(torch.equal(a, b) for a, b in zip(weights, longer.policy.parameters()))
    base = config["train"]["learning_rate"]
    assert rates == pytest.approx([pufferl.cosine_lr(base, 0.5), pufferl.cosine_lr(base, 0.75)])
    assert longer.progress() == 1.0
    trainer.close()
    longer.close()


def mount_tmpfs(folder, options):
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True).returncode:
        unavailable("needs root (and mount) to make a small or read-only tmpfs")


def test_unwritable_and_full_disks_are_one_line_errors(tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    assert cli.main(["train", "puffer_squared", "--train.data-dir", str(a_file / "runs")]) == 2
    assert "puffer: error: cannot create the run folder" in capsys.readouterr().err

    read_only, full = tmp_path / "read-only", tmp_path / "full"
    mount_tmpfs(read_only, "ro,size=64k")
    mount_tmpfs(full, "size=256k")
    try:
        assert cli.main(["train", "puffer_squared", "--train.data-dir", str(read_only)]) == 2
        assert "Read-only file system" in capsys.readouterr().err
        path = full / "checkpoint.pt"
        save_atomic({"weights": torch.zeros(1000)}, path)
        before = path.read_bytes()
        with pytest.raises(CheckpointError, match="No space left on device"):
            save_atomic({"weights": torch.zeros(100_000)}, path)
        assert path.read_bytes() == before and sorted(p.name for p in full.iterdir()) == ["checkpoint.pt"]
    finally:
        subprocess.run(["umount", str(read_only)])
        subprocess.run(["umount", str(full)])


def test_the_summary_reports_the_final_policy_on_fresh_episodes(tmp_path, capsys):
    config = config_for("puffer_squared", "--train.total-timesteps", "65_536", data_dir=tmp_path)
    trainer = run.train("puffer_squared", config)
    out = capsys.readouterr().out
    final = trainer.final_score
    assert final["episodes"] >= config["base"]["solve_episodes"]
    assert f"Final policy on {final['episodes']:.0f} fresh episodes" in out
    assert ("Solved: the final policy holds" in out) == (final["score"] >= 1.0)


class BusyEnv(gymnasium.Env):
    """Spends ``busy`` CPU seconds in every step."""

    observation_space = gymnasium.spaces.Box(0, 1, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, busy):
        self.busy = busy

    def reset(self, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        until = time.process_time() + self.busy
        while time.process_time() < until:
            pass
        return np.zeros(1, np.float32), 0.0, False, False, {}


def test_the_cpu_clock_counts_the_env_workers_processes():
    envs = vector.make(lambda buf=None: GymnasiumPufferEnv(env=BusyEnv(0.005), buf=buf), backend=vector.Multiprocessing,
                       num_envs=2, num_workers=2, spin=0)  # spin 0: this process blocks while the workers step
    try:
        envs.reset(seed=0)
        clock, own_start = CpuClock(envs), time.process_time()
        for _ in range(40):
            envs.step(np.zeros(2, np.int64))
        workers = clock() - (time.process_time() - own_start)
    finally:
        envs.close()
    assert workers >= 0.9 * 2 * 40 * 0.005  # two workers, 40 busy steps each
