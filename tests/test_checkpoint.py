"""Checkpoints: a resumed trainer continues exactly as the uninterrupted one, on this device's
optimizer; a damaged or foreign file is refused in one line that never advises loading it in a way
that could run the code it holds; writes are atomic; "latest" is the newest run of that env."""

import os
import pickle
import shutil

import pytest
import torch
from helpers import config_for, make_trainer, run_epochs

from pufferlib.checkpoint import CheckpointError, read_checkpoint, resolve_checkpoint, save_atomic, write_atomic


def test_a_truncated_checkpoint_is_refused_saying_so(tmp_path):
    save_atomic({"format": "pufferl-checkpoint-1", "weights": list(range(1000))}, tmp_path / "whole.pt")
    (tmp_path / "cut.pt").write_bytes((tmp_path / "whole.pt").read_bytes()[:200])
    with pytest.raises(CheckpointError, match=r"cut\.pt is not a readable checkpoint \(corrupt, truncated") as error:
        read_checkpoint(tmp_path / "cut.pt")
    assert "\n" not in str(error.value)


def test_a_pickle_that_holds_code_is_refused_without_advice_to_run_it(tmp_path):
    path = tmp_path / "foreign.pt"
    path.write_bytes(pickle.dumps({"run": print}))
    with pytest.raises(CheckpointError, match="holds objects other than tensors") as error:
        read_checkpoint(path)
    assert "weights_only" not in str(error.value) and "\n" not in str(error.value)


def test_a_torch_file_of_another_program_is_not_taken_for_a_checkpoint(tmp_path):
    save_atomic({"model": {}}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="is not a PuffeRL checkpoint"):
        read_checkpoint(tmp_path / "other.pt")


def test_an_atomic_write_that_fails_leaves_the_previous_file(tmp_path):
    write_atomic(tmp_path / "config.json", "before")
    with pytest.raises(CheckpointError, match="the previous file, if any, is intact"):
        write_atomic(tmp_path / "config.json" / "below-a-file", "after")
    assert (tmp_path / "config.json").read_text() == "before"


def optimizer_tensors(optimizer):
    state = optimizer.state_dict()
    flat = []

    def walk(node):
        if isinstance(node, torch.Tensor):
            flat.append(node)
        elif isinstance(node, dict):
            for key in sorted(node, key=str):
                walk(node[key])
        elif isinstance(node, (list, tuple)):
            for item in node:
                walk(item)

    walk(state)
    return flat


@pytest.mark.parametrize("flags", [["--train.optimizer", "adam"], ["--train.optimizer", "muon", "--base.rnn", "lstm"]])
def test_resume_continues_exactly(tmp_path, flags):
    config = config_for("puffer_squared", "--vec.num-envs", "64", "--train.minibatch-size", "512", *flags)
    path = tmp_path / "checkpoint.pt"

    uninterrupted = make_trainer(config)
    run_epochs(uninterrupted, 2)
    uninterrupted.save_checkpoint(path)
    saved_weights = [p.detach().clone() for p in uninterrupted.policy.parameters()]
    saved_optimizer = [t.clone() for t in optimizer_tensors(uninterrupted.optimizer)]
    run_epochs(uninterrupted, 3)

    resumed = make_trainer(config)
    resumed.load_checkpoint(read_checkpoint(path))
    assert all(torch.equal(a, b) for a, b in zip(saved_weights, resumed.policy.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(saved_optimizer, optimizer_tensors(resumed.optimizer)))
    assert (resumed.epoch, resumed.global_step) == (2, 2 * resumed.batch_size)
    run_epochs(resumed, 3)

    assert resumed.global_step == uninterrupted.global_step
    assert all(torch.equal(a, b) for a, b in zip(uninterrupted.policy.parameters(), resumed.policy.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(optimizer_tensors(uninterrupted.optimizer), optimizer_tensors(resumed.optimizer)))
    uninterrupted.close()
    resumed.close()


def test_a_checkpoint_from_another_device_keeps_this_devices_optimizer_flags():
    """A GPU run's optimizer is fused and capturable (a CUDA graph needs it); resumed on a CPU it
    must step as a CPU optimizer, and a CPU run resumed on a GPU must become capturable."""
    config = config_for("puffer_squared", "--train.optimizer", "muon", "--policy.num-layers", "2")
    trainer = make_trainer(config)
    run_epochs(trainer, 1)
    checkpoint = trainer.state_dict()
    for part in checkpoint["optimizer"].values():
        for group in part["param_groups"]:
            if "fused" in group:  # Adam's groups (Muon has neither flag)
                group.update(fused=True, capturable=True)
    resumed = make_trainer(config)
    resumed.load_checkpoint(checkpoint)
    assert all(not group.get("fused") and not group.get("capturable") for group in resumed.optimizer.param_groups)
    run_epochs(resumed, 1)
    assert all(torch.isfinite(p).all() for p in resumed.policy.parameters())
    trainer.close()
    resumed.close()


def test_corrupt_and_mismatched_checkpoints_are_clear_errors(tmp_path):
    config = config_for("puffer_squared", "--vec.num-envs", "32")
    trainer = make_trainer(config)
    path = tmp_path / "checkpoint.pt"
    trainer.save_checkpoint(path)
    trainer.close()

    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="corrupt, truncated"):
        read_checkpoint(truncated)
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(os.urandom(4096))
    with pytest.raises(CheckpointError, match="corrupt, truncated"):
        read_checkpoint(garbage)
    with pytest.raises(CheckpointError, match="No checkpoint"):
        read_checkpoint(tmp_path / "missing.pt")

    bigger = make_trainer(config_for("puffer_squared", "--vec.num-envs", "32", "--policy.hidden-size", "32"))
    with pytest.raises(CheckpointError, match="different model.*shape"):
        bigger.load_checkpoint(read_checkpoint(path))
    bigger.close()
    recurrent = make_trainer(config_for("puffer_squared", "--vec.num-envs", "32", "--base.rnn", "lstm"))
    with pytest.raises(CheckpointError, match="does not fit"):
        recurrent.load_checkpoint(read_checkpoint(path))
    recurrent.close()
    other_env = make_trainer(config_for("puffer_squared", "--vec.num-envs", "32", "--env.size", "7"))
    with pytest.raises(CheckpointError, match="observation_space"):
        other_env.load_checkpoint(read_checkpoint(path))
    other_env.close()


def test_checkpoint_writes_are_atomic(tmp_path):
    path = tmp_path / "checkpoint.pt"
    save_atomic({"a": torch.ones(3)}, path)
    save_atomic({"a": torch.zeros(3)}, path)
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]  # no temporary left behind
    assert torch.equal(torch.load(path)["a"], torch.zeros(3))


def test_latest_is_the_newest_run_of_that_env(tmp_path):
    for name in ("puffer_squared_20260101-000000", "puffer_squared_20260102-000000", "puffer_bandit_20260103-000000"):
        (tmp_path / name).mkdir()
        save_atomic({"format": "x"}, tmp_path / name / "checkpoint.pt")
    os.utime(tmp_path / "puffer_squared_20260101-000000" / "checkpoint.pt", (2e9, 2e9))
    assert resolve_checkpoint("latest", tmp_path, "puffer_squared").parent.name == "puffer_squared_20260101-000000"
    assert resolve_checkpoint("latest", tmp_path, "puffer_bandit").parent.name == "puffer_bandit_20260103-000000"
    shutil.rmtree(tmp_path / "puffer_bandit_20260103-000000")
    with pytest.raises(CheckpointError, match="No runs of puffer_bandit"):
        resolve_checkpoint("latest", tmp_path, "puffer_bandit")
