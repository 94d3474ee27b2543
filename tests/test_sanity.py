"""The sanity suite's script: a run counts as solved only if its final policy holds the target,
and a failed run says why."""

import re
import subprocess
import sys

import pytest
from conftest import ROOT, SUBPROCESS_ENV, result_of

SANITY = ROOT / "scripts" / "sanity.py"


def sanity(*args):
    return subprocess.run([sys.executable, str(SANITY), *args], capture_output=True, text=True, env=SUBPROCESS_ENV, cwd=ROOT)


@pytest.mark.slow
def test_a_run_too_short_to_solve_is_reported_with_its_final_score_against_the_target():
    # Three epochs of the bandit (256 envs x 16 steps each) are far too few to find the paying arm.
    result = sanity("--envs", "puffer_bandit", "--train.total-timesteps", "12288")
    assert result.returncode == 1, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("| puffer_bandit"))
    assert "| 0/1 |" in row
    why = re.search(r"Not solved: puffer_bandit --train.total-timesteps 12288 seed 42: final score (\d\.\d+) on (\d+) "
                    r"fresh episodes, short of 0\.9900 \(1 within 0\.01\); fresh episodes never confirmed the target", result.stdout)
    assert why, result.stdout
    assert float(why.group(1)) < 0.99 and int(why.group(2)) >= 100
    assert "training episodes peaked at" in result.stdout and "entropy at the end" in result.stdout
    assert "puffer train: Not solved: the final policy scores" in result.stdout


def test_an_env_outside_the_suite_is_a_usage_error():
    result = sanity("--envs", "puffer_breakout")
    assert result.returncode == 2
    assert "puffer_breakout is not a sanity env" in result.stderr and "puffer_memory" in result.stderr


MEMORY_CASES = {"default": [], "delay 2": ["--env.delay", "2"], "length 4": ["--env.length", "4"]}
TRAIN_AND_SCORE = """
import json, sys
from pufferlib.run import solve_target, train
from pufferlib.config import apply_flags, load_config
config = apply_flags(load_config("puffer_memory"), sys.argv[1:])
trainer = train("puffer_memory", config)
print("RESULT", json.dumps(dict(final_score=trainer.final_score, target=1.0 - config["base"]["solve_tolerance"])))
"""


@pytest.fixture(scope="module")
def memory_runs(side_runs, tmp_path_factory):
    """The shipped memory config's full runs, side by side: each holds one core for minutes."""
    return {case: side_runs(TRAIN_AND_SCORE, "--base.seed", 1, "--train.data-dir", tmp_path_factory.mktemp("memory"),
                            "--train.dashboard", "off", *flags)
            for case, flags in MEMORY_CASES.items()}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(MEMORY_CASES))
def test_memory_holds_its_solve_to_the_end_of_training(memory_runs, case):
    """The shipped memory config, at its default, with a delay before recall and with four bits,
    ends training with a final policy that holds the target on fresh episodes (it used to solve,
    then collapse)."""
    result = result_of(memory_runs[case])
    assert result["final_score"]["score"] >= result["target"], result
