"""scripts/bench_craftax_cpu.py: its command line (bad options refused before anything is measured)
and the records it makes from the rounds' rates (no timing here)."""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
SCRIPT = SCRIPTS / "bench_craftax_cpu.py"
sys.path.insert(0, str(SCRIPTS))


def run_script(*flags):
    return subprocess.run([sys.executable, str(SCRIPT), *flags], capture_output=True, text=True, timeout=120)


def test_help_names_the_games_and_the_options():
    result = run_script("--help")
    assert result.returncode == 0, result.stderr
    for text in ("--games", "--envs", "--seconds", "--rounds", "--record", "CraftaxClassicSymbolicEnv", "CraftaxPixelsEnv"):
        assert text in result.stdout, text


@pytest.mark.parametrize("flags, message", [
    (["--games", "classic,pixel"], "--games: unknown game 'pixel'; valid: classic, pixels (comma-separated)"),
    (["--games", ""], "--games: unknown game ''; valid: classic, pixels (comma-separated)"),
    (["--envs", "0"], "--envs must be at least 1, got 0"),
    (["--seconds", "0"], "--seconds must be positive, got 0.0"),
    (["--rounds", "0"], "--rounds must be at least 1, got 0"),
    (["--envs", "many"], "argument --envs: invalid int value: 'many'"),
])
def test_a_bad_option_is_a_usage_error(flags, message):
    result = run_script(*flags)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"bench_craftax_cpu.py: error: {message}"
    assert result.stdout == ""


def test_each_c_row_is_recorded_beside_the_reference_of_the_same_rounds():
    import bench_craftax_cpu
    import results
    from bench_ocean import threads_setting

    rates = {1: [300.0, 500.0, 400.0], 2: [600.0, 900.0, 800.0], "jax": [10.0, 20.0, 10.0]}
    records = bench_craftax_cpu.game_records(bench_craftax_cpu.GAMES["pixels"], 64, rates, "0.10.2")
    frames = "64 envs, 130 x 110 x 3 float frames, reset pool off"
    assert [record["setting"] for record in records] == [f"{frames}, 1 thread", f"{frames}, {threads_setting(2)}"]
    one_thread = records[0]
    assert one_thread["area"] == "craftax-cpu" and one_thread["what"] == "puffer_craftax_pixels against the JAX reference"
    assert one_thread["value"] == 400.0 and one_thread["runs"] == [300.0, 500.0, 400.0]
    assert one_thread["peer"]["value"] == 10.0 and one_thread["peer"]["runs"] == [10.0, 20.0, 10.0]
    assert "Craftax-Pixels" in one_thread["peer"]["what"]
    assert results.ratio(one_thread) == 40.0 and results.ratio(records[1]) == 80.0
    assert one_thread["note"].startswith("ratio per round 25.00-40.00x")
