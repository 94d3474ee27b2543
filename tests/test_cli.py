"""What a user meets at the command line and at the library's edges: one error style, help with
descriptions, eval output off a terminal, train, resume, eval and plot one after another, and
Ctrl-C."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import config_for

import ocean
import pufferlib
from pufferlib import cli, run
from pufferlib.checkpoint import read_checkpoint, run_dirs
from pufferlib.config import (
    apply_config_file,
    apply_flags,
    config_file_path,
    env_config_files,
    load_config,
)
from pufferlib.exceptions import APIUsageError, ParameterError, did_you_mean

ROOT = Path(__file__).resolve().parent.parent
# Subprocesses import this tree's pufferlib whatever their working folder.
SUBPROCESS_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}

# (argv, what stderr must say, what it must not): each a user error, answered in one line, exit 2.
BAD_INPUTS = [
    (["train", "puffer_squared", "--vec.num-envs", "-5"], "--vec.num-envs -5", None),
    (["train", "puffer_squared", "--env.size", "0"], "size must be between 3 and 255, got 0", None),
    (["train", "puffer_squared", "--env.sise", "9"], "Did you mean --env.size?", None),
    (["train", "puffer_squared", "--train.data-dir", "/proc/puffer-runs"], "cannot create the run folder", None),
    (["train", "puffer_squared", "--train.learning-rate", "fast"], "expected a number", None),
    (["train", "puffer_squared", "--train.neptune", "1"], "Unknown flag --train.neptune", "Did you mean"),
    (["train", "puffer_squared", "--train.hidden-size", "32"], "Did you mean --policy.hidden-size?", None),
    (["train", "puffer_memory", "--rnn.hidden-size", "128"], "--policy.hidden-size 128 --rnn.hidden-size 128", None),
    (["train", "nonexistent"], "No config for env 'nonexistent'", "Did you mean"),
    (["train", "puffer_breakot"], "Did you mean puffer_breakout?", None),
    (["trian", "puffer_squared"], "Did you mean train?", None),
    (["train"], "puffer train needs an env", None),
    ([], "a command is required", None),
    (["eval", "puffer_squared", "--train.learning-rate", "0.1"], "does not apply to puffer eval", None),
    (["train", "puffer_squared", "--resume", "--load-model-path", "x"], "pick one", None),
    (["train", "puffer_craftax_compact", "--vec.device", "gpu"], "--vec.device 'gpu': expected cpu, cuda or cuda:N", None),
]
if not torch.cuda.is_available():
    BAD_INPUTS.append((["train", "puffer_craftax_compact", "--vec.device", "cuda"], "sees no CUDA device; --vec.device cpu", None))


@pytest.mark.parametrize("argv, says, not_says", BAD_INPUTS, ids=[" ".join(a) or "(nothing)" for a, _, _ in BAD_INPUTS])
def test_user_errors_are_one_line_with_exit_2(argv, says, not_says, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # runs that fail to start must leave no folder here
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("puffer: error: ") and says in last, err
    assert "Traceback" not in err
    if not_says:
        assert not_says not in err
    assert not (tmp_path / "experiments").exists() or not any((tmp_path / "experiments").iterdir())


def test_a_failed_start_leaves_no_run_folder(tmp_path, capsys):
    flags = ["--train.data-dir", str(tmp_path), "--train.total-timesteps", "1000"]
    assert cli.main(["train", "puffer_squared", "--env.size", "0", *flags]) == 2
    assert cli.main(["train", "puffer_squared", "--base.rnn", "gru", *flags]) == 2
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_itself_exits_2_without_a_traceback(tmp_path):
    result = subprocess.run([sys.executable, "-m", "pufferlib.cli", "train", "puffer_squared", "--env.size", "0"],
                            capture_output=True, text=True, cwd=tmp_path, env=SUBPROCESS_ENV)
    assert result.returncode == 2
    assert result.stderr.strip() == "puffer: error: puffer_squared: size must be between 3 and 255, got 0"


@pytest.mark.skipif(torch.cuda.is_available(), reason="asks for a GPU that this machine has")
def test_bench_script_on_a_cpu_machine_asked_for_cuda_is_a_usage_error():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_train.py"), "sps", "--device", "cuda"],
                            capture_output=True, text=True, env=SUBPROCESS_ENV)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("bench_train.py: error: --train.device cuda") and "Traceback" not in result.stderr


@pytest.mark.slow
def test_bench_script_reports_how_busy_the_env_threads_were():
    """Batches stepped off the main thread: the line after the rates gives the stepping threads'
    busy share of the rollouts and a batch's step; one batch in the caller's thread: no line."""
    bench = [sys.executable, str(ROOT / "scripts" / "bench_train.py"), "sps", "--num-envs", "64", "--seconds", "0.3",
             "--warmup", "1"]
    result = subprocess.run(bench + ["--vec.batch-size", "32"], capture_output=True, text=True, env=SUBPROCESS_ENV,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"  2 stepping threads busy (\d+\.\d)% of the rollouts; a batch's step (\d+\.\d+) ms "
                         r"\(median of (\d+)\)", line)
    assert match, line
    assert 0 < float(match[1]) <= 100 and float(match[2]) > 0 and int(match[3]) > 0
    result = subprocess.run(bench, capture_output=True, text=True, env=SUBPROCESS_ENV, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "stepping thread" not in result.stdout and "training " in result.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_bench_script_compares_two_trainers_in_one_process():
    """--against: both trainers' rows, then their ratio; the peer with twice the update epochs
    does the same rollout per epoch and twice the minibatches."""
    bench = [sys.executable, str(ROOT / "scripts" / "bench_train.py"), "sps", "--num-envs", "64", "--seconds", "0.3",
             "--warmup", "1"]
    result = subprocess.run(bench + ["--against", "--train.update-epochs 2"], capture_output=True, text=True,
                            env=SUBPROCESS_ENV, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-3].startswith("puffer_squared, this run: training ")
    assert lines[-2].startswith("puffer_squared, against '--train.update-epochs 2': training ")
    assert lines[-1].startswith("  ratio (this run / against): training ")
    result = subprocess.run(bench + ["--against", "--train.horizont 8"], capture_output=True, text=True,
                            env=SUBPROCESS_ENV, timeout=300)
    assert result.returncode == 2 and "Did you mean --train.horizon?" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_bench_script_compares_against_another_trainer_file(tmp_path):
    """--against-trainer: the peer is built by another pufferl.py's PuffeRL (here this revision's
    own file, imported a second time); a file that is not one is a clear error."""
    bench = [sys.executable, str(ROOT / "scripts" / "bench_train.py"), "sps", "--num-envs", "64", "--seconds", "0.3",
             "--warmup", "1"]
    trainer_file = str(ROOT / "pufferlib" / "pufferl.py")
    result = subprocess.run(bench + ["--against-trainer", trainer_file], capture_output=True, text=True,
                            env=SUBPROCESS_ENV, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-2].startswith(f"puffer_squared, against {trainer_file}: training ")
    assert lines[-1].startswith("  ratio (this run / against): training ")
    not_a_trainer = tmp_path / "other.py"
    not_a_trainer.write_text("VALUE = 1\n")
    for path, message in ((tmp_path / "missing.py", "cannot import it"), (not_a_trainer, "defines no PuffeRL")):
        result = subprocess.run(bench + ["--against-trainer", str(path)], capture_output=True, text=True,
                                env=SUBPROCESS_ENV, timeout=300)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_help_version_and_per_command_flags(capsys):
    assert cli.main(["--help"]) == 0
    assert "usage: puffer COMMAND" in capsys.readouterr().out
    assert cli.main(["--version"]) == 0
    assert pufferlib.__version__ in capsys.readouterr().out

    assert cli.main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--train.learning-rate 0.005" in out and "The optimizer's step size" in out
    assert "--resume" in out and "--eval." not in out

    assert cli.main(["eval", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--eval.episodes" in out and "--load-model-path" in out
    assert "--train.learning-rate" not in out and "--resume" not in out

    assert cli.main(["bench", "puffer_squared", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--bench.seconds" in out and "Seconds each measurement runs" in out and "--eval." not in out
    assert "--env.size 11" in out  # the env's own values


def test_suggestions_only_for_close_names():
    assert did_you_mean("nonexistent", ocean.ENVS, ignore_prefix="puffer_") == ""
    assert did_you_mean("breakot", ocean.ENVS, ignore_prefix="puffer_") == " Did you mean puffer_breakout?"
    with pytest.raises(ParameterError) as error:
        ocean.env_creator("nonexistent")
    assert "Did you mean" not in str(error.value)


def test_resuming_a_finished_run_says_it_is_complete(tmp_path, capsys):
    flags = ["--train.data-dir", str(tmp_path), "--train.dashboard", "plain", "--vec.num-envs", "64"]
    assert cli.main(["train", "bandit", "--train.total-timesteps", "1024", *flags]) == 0
    [run] = run_dirs(tmp_path, "puffer_bandit")
    metrics = (run / "metrics.jsonl").read_text()
    capsys.readouterr()
    assert cli.main(["train", "bandit", "--resume", "latest", *flags]) == 0
    out = capsys.readouterr().out
    assert "is complete: it trained 1.0k of its 1.0k steps" in out and "--train.total-timesteps N" in out
    assert "SPS" not in out
    assert (run / "metrics.jsonl").read_text() == metrics


def test_eval_into_a_file_is_plain_text_with_each_episode_to_its_end(tmp_path, capsys):
    flags = ["--train.data-dir", str(tmp_path)]
    assert cli.main(["train", "squared", "--train.total-timesteps", "1024", "--vec.num-envs", "32",
                     "--train.dashboard", "off", "--env.size", "5", *flags]) == 0
    capsys.readouterr()
    assert cli.main(["eval", "squared", "--eval.fps", "0", "--eval.episodes", "2", *flags]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out  # no clear-screen or colour codes off a terminal
    assert out.count("Episode 1 of 2: return") == out.count("Episode 2 of 2: return") == 1
    assert "Mean return of agent 0 over 2 episodes" in out
    assert "episode 3 of 2" not in out  # the next episode's first frame is not shown after the last
    # Off a terminal only each episode's final frame is printed: a 5x5 board is 5 lines.
    assert len(out.splitlines()) <= 2 * (5 + 2) + 6
    # The env's own statistics count every episode it played, the last ones included.
    assert re.search(r"Env episode statistics \(all agents, ([2-9]|\d\d+) episodes\)", out), out


def test_an_ocean_env_keeps_the_frame_that_ends_an_episode():
    env = ocean.make("puffer_squared", size=5)
    env.keep_final_frames()
    env.reset(3)
    assert env.final_frame(0) == ""
    for _ in range(20):
        grid = env.observations[0].reshape(5, 5)
        (agent,), (target,) = np.argwhere(grid == 1), np.argwhere(grid == 2)
        rows, cols = target - agent
        env.actions[0] = 1 if rows > 0 else 2 if rows < 0 else 4 if cols > 0 else 3  # down, up, right, left
        env.step(env.actions)
        if env.terminals[0]:
            break
    assert env.rewards[0] == 1.0
    final = re.sub(r"\x1b\[[0-9;]*m", "", env.final_frame(0)).split()
    assert final[target[0]][target[1]] == "@" and "*" not in "".join(final)  # the agent on its target
    assert "*" in re.sub(r"\x1b\[[0-9;]*m", "", env.render(0))  # the next episode, target ahead


# The library's edges.


def test_misspelled_parameters_fail_at_construction_with_a_suggestion():
    from ocean.craftax import Craftax

    with pytest.raises(TypeError, match=r"unexpected keyword argument 'sise'\. Did you mean size\?"):
        ocean.make("puffer_squared", sise=11)
    with pytest.raises(TypeError, match=r"Craftax\(\) got an unexpected keyword argument 'foo'"):
        Craftax(num_envs=1, foo=3)
    with pytest.raises(ParameterError, match="size must be between 3 and 255, got 0"):
        ocean.make("puffer_squared", size=0)


def test_craftax_seeds_render_and_close():
    from ocean.craftax import Craftax, CraftaxCompact, binding

    env = Craftax(num_envs=2)
    for seed in (1.5, -1, 2**64, True, "3"):
        with pytest.raises(ParameterError, match=r"seed must be an integer in \[0, 2\*\*64\)"):
            env.reset(seed)
    with pytest.raises(APIUsageError, match="call reset"):
        env.render(0)
    # Env i of a batch seeded with s starts from the key (high word, low word) of s + i, which is
    # PRNGKey(s + i) of JAX with 64-bit seeds (docs/craftax.md).
    observations, _ = env.reset(2**32 + 5)
    for i, key in enumerate(([1, 5], [1, 6])):
        _, reset_key = binding.split(np.array(key, np.uint32), 2)
        world = binding.World(binding.split(reset_key, 2)[1])
        assert np.array_equal(world.observation(), observations[i])
    env.actions[:] = 6  # sleep
    for _ in range(300):
        env.step(env.actions)
    env.actions[:] = 35  # read_book, ignored by a sleeping player
    env.step(env.actions)
    text = env.render(0)
    if "(sleeping)" in text:
        assert "last action noop (chose read_book)" in text
    assert "Zm melee mob" in text and "-> your shot" in text
    env.close()
    for use in (lambda: env.reset(0), lambda: env.step(env.actions), lambda: env.render(0)):
        with pytest.raises(APIUsageError, match="after close"):
            use()
    assert CraftaxCompact.memory_per_env() < Craftax.memory_per_env()
    assert CraftaxCompact.memory_per_env() == binding.STATE_BYTES + binding.LAYOUT["compact_obs_bytes"]


def test_an_env_ships_recipes_that_config_takes_by_name(capsys):
    recipe = config_file_path("puffer_craftax_compact", "gpu")
    assert recipe.parent == Path(ocean.__file__).parent / "craftax"
    assert recipe not in env_config_files().values()  # a recipe serves no env of its own
    # The recipe is these flags: the stock recipe's geometry, CraftaxCells, and the learning records'
    # gamma and lambda (BENCHMARKS.md).
    recorded = apply_flags(load_config("puffer_craftax_compact"), [
        "--base.policy", "ocean.craftax.policy:CraftaxCells",
        "--vec.device", "cuda", "--train.device", "cuda", "--vec.num-envs", "8192", "--base.rnn", "mingru",
        "--rnn.hidden-size", "256", "--rnn.num-layers", "3", "--policy.hidden-size", "256",
        "--train.optimizer", "muon", "--train.learning-rate", "0.003", "--train.horizon", "128",
        "--train.minibatch-size", "32768", "--train.gamma", "0.995", "--train.gae-lambda", "0.9",
    ])
    assert apply_config_file(load_config("puffer_craftax_compact"), recipe) == recorded
    assert cli.main(["train", "craftax_compact", "--help"]) == 0
    assert "recipes (--config NAME): gpu" in capsys.readouterr().out
    assert cli.main(["train", "craftax_compact", "--config", "gpus"]) == 2
    assert "--config gpus: no such file, and not a recipe of puffer_craftax_compact (its recipes: gpu)" in capsys.readouterr().err
    assert cli.main(["train", "squared", "--config", "gpu"]) == 2
    assert "not a recipe of puffer_squared (it ships no recipes)" in capsys.readouterr().err


def test_help_and_list_answer_without_loading_torch():
    """torch takes seconds to import: the commands that only read configs never load it."""
    code = ("import sys\nfrom pufferlib import cli\n"
            "for argv in (['--help'], ['list'], ['train', '--help'], ['train', 'puffer_squared', '--help'],"
            " ['eval', 'puffer_squared', '--help'], ['sweep', '--help'], ['train', 'puffer_squared', '--train.gamma', '2']):\n"
            "    cli.main(argv)\n"
            "print(sorted(name for name in ('torch', 'numpy', 'optuna') if name in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=SUBPROCESS_ENV, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


# Training from the command line: train, resume, eval and plot; Ctrl-C and SIGINT.


def test_cli_reports_flag_errors(capsys):
    assert cli.main(["train", "puffer_squared", "--train.learning-rat", "0.1"]) == 2
    assert "Did you mean --train.learning-rate" in capsys.readouterr().err
    assert cli.main(["trian", "puffer_squared"]) == 2
    assert "Did you mean train" in capsys.readouterr().err
    assert cli.main(["train", "puffer_squared", "--help"]) == 0
    assert "--train.learning-rate" in capsys.readouterr().out


def test_train_resume_eval_and_plot_from_the_cli(tmp_path, capsys):
    flags = ["--train.data-dir", str(tmp_path), "--train.dashboard", "plain", "--vec.num-envs", "64"]
    # bandit.ini: horizon 16, so 64 envs make batches of 1024 steps.
    assert cli.main(["train", "bandit", "--train.total-timesteps", "2048", *flags]) == 0
    out = capsys.readouterr().out
    assert "Finished" in out and "Checkpoint:" in out
    [run] = run_dirs(tmp_path, "puffer_bandit")
    assert len((run / "metrics.jsonl").read_text().splitlines()) == 2

    # --resume with a larger budget continues the same run from where it stopped.
    assert cli.main(["train", "bandit", "--resume", "latest", "--train.total-timesteps", "4096", *flags]) == 0
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [line["epoch"] for line in lines] == [1, 2, 3, 4]
    assert read_checkpoint(run)["global_step"] == 4096

    assert cli.main(["eval", "bandit", "--load-model-path", "latest", "--eval.fps", "0", "--eval.episodes", "2", *flags[:2]]) == 0
    assert "Mean return of agent 0 over 2 episodes" in capsys.readouterr().out

    assert cli.main(["plot", str(run), "--metric", "env/score"]) == 0
    assert (run / "env_score.png").stat().st_size > 0
    # An env name finds its newest run under the folder train was given.
    assert cli.main(["plot", "bandit", *flags[:2], "--output", str(tmp_path / "by_name.png")]) == 0
    assert (tmp_path / "by_name.png").stat().st_size > 0


def press_ctrl_c_once(folder, after_first_line=True):
    """Sends SIGINT to this process once training has started (its metrics file has a line, or,
    for a first epoch that is long, its run folder exists)."""

    def press():
        deadline = time.time() + 60
        while time.time() < deadline:
            started = [p for p in folder.glob("*/metrics.jsonl") if p.stat().st_size or not after_first_line]
            if started:
                break
            time.sleep(0.05)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=press)
    thread.start()
    return thread


def test_ctrl_c_saves_and_exits_with_130(tmp_path):
    handler_before = signal.getsignal(signal.SIGINT)
    presser = press_ctrl_c_once(tmp_path)
    code = cli.main(["train", "puffer_squared", "--vec.num-envs", "64", "--train.total-timesteps", "100_000_000",
                     "--train.data-dir", str(tmp_path), "--train.dashboard", "plain", "--train.device", "cpu"])
    presser.join()
    assert code == 130
    checkpoint = read_checkpoint(run_dirs(tmp_path, "puffer_squared")[-1])
    assert 0 < checkpoint["global_step"] < 100_000_000
    assert checkpoint["global_step"] == checkpoint["epoch"] * 64 * 32  # whole epochs only
    assert signal.getsignal(signal.SIGINT) is handler_before  # handler restored


@pytest.mark.slow
@pytest.mark.parametrize("inherited", ["ignored", "blocked"])
def test_sigint_stops_a_run_started_with_it_ignored_or_blocked(tmp_path, inherited):
    """A script's background job starts with SIGINT ignored, and a parent process may leave it
    blocked: kill -INT still stops the run as Ctrl-C does."""

    def inherit():
        if inherited == "ignored":
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        else:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

    command = [sys.executable, "-m", "pufferlib.cli", "train", "puffer_squared", "--vec.num-envs", "64",
               "--train.total-timesteps", "100_000_000", "--train.data-dir", str(tmp_path), "--train.dashboard", "plain",
               "--train.device", "cpu"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=inherit)
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None and not any(p.stat().st_size for p in tmp_path.glob("*/metrics.jsonl")):
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, (out, err)


def test_ctrl_c_stops_a_long_epoch_at_the_next_step(tmp_path):
    # One epoch of 16 envs x 100,000 steps takes many seconds; the press comes in the first one.
    config = config_for("puffer_squared", "--vec.num-envs", "16", "--train.horizon", "100_000",
                        "--train.minibatch-size", "100_000", "--train.total-timesteps", "1_600_000", data_dir=tmp_path)
    presser = press_ctrl_c_once(tmp_path, after_first_line=False)
    trainer = run.train("puffer_squared", config)
    presser.join()
    assert trainer.interrupted and trainer.epoch == 0 and trainer.global_step == 0
