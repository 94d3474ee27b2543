"""Checkpoint files: a damaged or foreign file is refused in one line that never advises loading
it in a way that could run the code it holds."""

import pickle

import pytest

from pufferlib.checkpoint import CheckpointError, read_checkpoint, save_atomic, write_atomic


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
