"""scripts/craftax_parity.py: any difference from the JAX reference fails the run, a generated world
included, and the rng check covers both 32-bit words of its keys."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import unavailable

from ocean.craftax import parity

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "craftax_parity.py"
WORLD_LINE = "env 1 (seed 1) step 40: world generated from reset key [7, 9] differs in map"
STEP_LINE = "env 0 (seed 0) step 3: reward (reference 1.0, C 0.0)"


def load_script():
    spec = importlib.util.spec_from_file_location("craftax_parity_script", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def run_script(script, monkeypatch, *argv):
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *argv])
    return script.main()


@pytest.mark.parametrize(
    "worlds, divergences, code",
    [([], [], 0), ([WORLD_LINE], [], 1), ([], [STEP_LINE], 1)],
    ids=["identical", "a generated world differs", "a step differs"],
)
def test_steps_exits_non_zero_on_any_difference_and_prints_it(monkeypatch, capsys, worlds, divergences, code):
    script = load_script()
    statistics = {"episodes": 2, "deepest": np.zeros(2, np.int64), "steps": 50, "reset_worlds": worlds}
    monkeypatch.setattr(script, "check_steps", lambda *args: (divergences, statistics))
    assert run_script(script, monkeypatch, "steps", "--seeds", "2", "--steps", "50") == code
    out = capsys.readouterr().out
    assert all(line in out for line in worlds + divergences), out
    assert f"{len(worlds)} generated worlds differed" in out


def test_rng_check_keys_use_both_words():
    keys = parity.rng_check_keys(64, np.random.default_rng(0))
    assert keys.shape == (64, 2) and keys.dtype == np.uint32
    assert (keys[:, 0] >= 2**31).any() and (keys[:, 1] >= 2**31).any()
    assert len(np.unique(keys[:, 0])) > 60


def require_reference():
    try:
        import craftax  # noqa: F401
        import jax  # noqa: F401
    except ImportError as error:
        unavailable(f"craftax/jax reference not installed ({error}); pip install -r requirements-craftax.txt")


@pytest.mark.reference
def test_rng_check_passes_on_keys_with_high_words(monkeypatch, capsys):
    require_reference()
    assert run_script(load_script(), monkeypatch, "rng", "--keys", "8") == 0
    assert "rng: 8 cases, 0 divergences" in capsys.readouterr().out


@pytest.mark.reference
def test_a_world_generated_from_another_key_fails_the_steps_check(monkeypatch, capsys):
    require_reference()
    # Every C world is generated from the key beside the right one: world generation regressed.
    right_key = parity.world_key_from
    monkeypatch.setattr(parity, "world_key_from", lambda reset_key: right_key(reset_key ^ np.uint32(1)))
    assert run_script(load_script(), monkeypatch, "steps", "--seeds", "1", "--steps", "2", "--state-every", "0") == 1
    out = capsys.readouterr().out
    assert "world generation: env 0 (seed 0) step 0: world generated from reset key" in out, out
    assert "1 generated worlds differed and were resynchronised" in out and "0 divergences" in out, out
