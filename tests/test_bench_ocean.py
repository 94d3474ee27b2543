"""scripts/bench_ocean.py's command line: env names short or registered, unknown ones refused with
the valid list before anything is measured."""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_ocean.py"


@pytest.mark.parametrize("flag, value, valid", [
    ("--games", "pongg", "Did you mean puffer_pong? Valid: breakout, connect4, pong, snake, or none"),
    ("--envs", "squared,bogus", "Valid: bandit, breakout, connect4, craftax"),
])
def test_unknown_env_names_are_refused_with_the_valid_ones(flag, value, valid):
    result = subprocess.run([sys.executable, str(SCRIPT), flag, value], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"bench_ocean.py: error: {flag}: unknown env '{value.split(',')[-1]}'") and valid in last, last
    assert result.stdout == ""


@pytest.mark.slow
def test_short_and_registered_names_measure_the_same_games():
    command = [sys.executable, str(SCRIPT), "--envs", "none", "--counts", "16", "--seconds", "0.01", "--craftax-envs", "0"]
    for games in ("pong,puffer_connect4", "puffer_pong,connect4"):
        result = subprocess.run([*command, "--games", games], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        rows = [line.split()[0] for line in result.stdout.splitlines() if line.startswith("puffer_")]
        assert rows == ["puffer_pong", "puffer_connect4"], result.stdout


def test_peer_without_its_build_names_the_build_script(tmp_path):
    missing = tmp_path / "venv" / "bin" / "python"
    command = [sys.executable, str(SCRIPT), "--envs", "none", "--counts", "16", "--seconds", "0.01", "--games", "none",
               "--craftax-envs", "0", "--peer", "pufferlib3", "--peer-python", str(missing)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"--peer-python {missing} does not exist" in result.stderr
    assert f"python scripts/build_pufferlib3.py --dir {tmp_path}" in result.stderr


def test_bad_rounds_and_peer_games_are_usage_errors():
    for flags, message in [(["--rounds", "0"], "--rounds must be at least 1, got 0"),
                           (["--peer-games", "craftax"], "--peer-games: unknown env 'craftax'")]:
        result = subprocess.run([sys.executable, str(SCRIPT), *flags], capture_output=True, text=True, timeout=120)
        assert result.returncode == 2 and message in result.stderr, result.stderr


def test_build_refuses_an_sdist_that_is_not_pypis(tmp_path):
    forged = tmp_path / "pufferlib-3.0.0.tar.gz"
    forged.write_bytes(b"not the release")
    build = SCRIPT.parent / "build_pufferlib3.py"
    result = subprocess.run([sys.executable, str(build), "--dir", str(tmp_path / "scratch"), "--sdist", str(forged)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "not PyPI's pufferlib-3.0.0.tar.gz" in result.stderr and "--sdist" in result.stderr
    assert not (tmp_path / "scratch" / "venv").exists()
