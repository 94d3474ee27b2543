"""puffer sweep: the [sweep] syntax and its errors, SQLite sweeps end to end (resume, failed trials,
the written .ini), pruning through the twin study, and two workers sharing a real PostgreSQL."""

import glob
import json
import os
import pwd
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import pytest
from conftest import unavailable
from optuna.trial import TrialState

from pufferlib import cli, sweep
from pufferlib.config import CONFIG_DIR, ConfigError, apply_config_file, apply_flags, load_config, read_ini
from pufferlib.evaluate import RecentMean

# Tiny trials: a few epochs of 64 squared envs, scored over 20 episodes.
TINY = [
    "--train.device", "cpu", "--train.dashboard", "plain", "--vec.num-envs", "64",
    "--sweep.trial-steps", "16384", "--base.solve-episodes", "20",
    "--sweep.train.minibatch-size", "categorical(1024, 2048)", "--sweep.startup-trials", "2",
]


def study_at(sweep_dir, name="puffer_squared"):
    return optuna.load_study(study_name=name, storage=f"sqlite:///{Path(sweep_dir) / sweep.STUDY_FILE}")


def sweep_dirs(data_dir):
    return sorted(Path(data_dir).glob("puffer_squared_sweep_*"))


# -- the [sweep] syntax ---------------------------------------------------------------------------


def test_distributions_parse():
    assert sweep.parse_distribution("k", "log_uniform(1e-4, 1e-1)") == sweep.Distribution("log_uniform", (1e-4, 1e-1))
    assert sweep.parse_distribution("k", "uniform(0.8, 0.99)") == sweep.Distribution("uniform", (0.8, 0.99))
    assert sweep.parse_distribution("k", "int(1, 4)") == sweep.Distribution("int", (1, 4))
    assert sweep.parse_distribution("k", "log_int(16, 256)") == sweep.Distribution("log_int", (16, 256))
    assert sweep.parse_distribution("k", "categorical(32, 'lstm', None)") == sweep.Distribution("categorical", (32, "lstm", None))


@pytest.mark.parametrize("text, message", [
    ("log_unifrom(1e-4, 1e-1)", "unknown distribution 'log_unifrom'. Did you mean log_uniform?"),
    ("uniform(0.9, 0.1)", "empty range: low 0.9 must be below high 0.1"),
    ("uniform(0.5, 0.5)", "empty range"),
    ("log_uniform(0, 1)", "a log scale needs low > 0"),
    ("int(1.5, 4)", "int needs integer bounds"),
    ("uniform(1)", "uniform takes two bounds"),
    ("categorical()", "categorical needs at least one choice"),
    ("categorical(32, 32)", "a choice is listed twice"),
    ("uniform(low=1, high=2)", "expected a distribution"),
    (0.01, "expected a distribution"),
    ("uniform(a, b)", "arguments must be plain numbers"),
])
def test_bad_distributions_name_the_problem(text, message):
    with pytest.raises(ConfigError, match="^\\[sweep\\] train.gamma = ") as error:
        sweep.parse_distribution("train.gamma", text)
    assert message in str(error.value)


def test_search_space_from_defaults_and_flags():
    config = load_config("puffer_squared")
    space = sweep.search_space(config)
    assert set(space) == {"train.learning_rate", "train.gamma", "train.gae_lambda", "train.ent_coef", "train.clip_coef",
                          "train.minibatch_size", "train.horizon", "policy.hidden_size"}
    apply_flags(config, ["--sweep.trials", "32", "--sweep.train.gamma", "none", "--sweep.train.learning-rate", "log_uniform(1e-3, 1e-2)"])
    space = sweep.search_space(config)
    assert config["sweep"]["trials"] == 32
    assert "train.gamma" not in space
    assert space["train.learning_rate"] == sweep.Distribution("log_uniform", (1e-3, 1e-2))


def test_unknown_hyperparameter_is_an_error():
    config = load_config("puffer_squared")
    config["sweep"]["train.learnin_rate"] = "uniform(0.1, 0.2)"
    with pytest.raises(ConfigError, match="no such config key to search. Did you mean train.learning_rate"):
        sweep.search_space(config)
    config = load_config("puffer_squared")
    for key in [k for k in config["sweep"] if "." in k]:
        config["sweep"][key] = None
    with pytest.raises(ConfigError, match="names no key to search"):
        sweep.search_space(config)


@pytest.mark.parametrize("flags, message", [
    (["--sweep.pruner", "medain"], "--sweep.pruner 'medain': expected one of median, successive_halving, none. Did you mean median?"),
    (["--sweep.train.learning-rate", "log_uniform(0.1, 0.01)"], "empty range"),
    (["--sweep.prune-warmup", "1.5"], "--sweep.prune-warmup 1.5: expected a number >= 0 and <= 1"),
    (["--sweep.seeds", "0"], "--sweep.seeds 0: expected an integer >= 1"),
    (["--sweep.cost", "bogus"], "--sweep.cost 'bogus': expected one of seconds, steps, cpu_seconds"),
    (["--sweep.cost", "cpu_second"], "expected one of seconds, steps, cpu_seconds. Did you mean cpu_seconds?"),
    (["--sweep.storage", "nonsense"], "'nonsense' is not a database URL"),
    (["--sweep.storage", "oracle://u@host/db"], "'oracle' is not a supported database"),
    (["--sweep.storage", "postgresql://puffer:secret@127.0.0.1:9/nothing"], "cannot open the study database postgresql://puffer:***@127.0.0.1:9/nothing"),
])
def test_bad_input_is_one_error_line_and_writes_nothing(tmp_path, capsys, flags, message):
    assert cli.main(["sweep", "squared", "--train.data-dir", str(tmp_path), *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("puffer: error: ") and message in err and err.count("\n") == 1
    assert "secret" not in err
    assert not sweep_dirs(tmp_path)


def test_config_file_overlay_is_validated(tmp_path, capsys):
    bad = tmp_path / "bad.ini"
    bad.write_text("[train]\nlearning_rat = 0.1\n")
    assert cli.main(["train", "squared", "--config", str(bad)]) == 2
    assert "unknown key 'learning_rat' in [train]. Did you mean learning_rate?" in capsys.readouterr().err
    assert cli.main(["train", "squared", "--config", str(tmp_path / "missing.ini")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_a_config_file_may_carry_a_search_space(tmp_path, capsys):
    space = tmp_path / "space.ini"
    space.write_text("[sweep]\ntrials = 5\ntrain.update_epochs = int(1, 4)\n")
    config = apply_config_file(load_config("puffer_squared"), space)
    assert config["sweep"]["trials"] == 5
    assert sweep.search_space(config)["train.update_epochs"] == sweep.Distribution("int", (1, 4))
    space.write_text("[sweep]\ntrails = 5\n")  # a setting, not a key to search: it must exist
    assert cli.main(["sweep", "squared", "--config", str(space), "--train.data-dir", str(tmp_path)]) == 2
    assert "unknown key 'trails' in [sweep]. Did you mean trials?" in capsys.readouterr().err
    space.write_text("[sweep]\ntrain.update_epoch = int(1, 4)\n")
    assert cli.main(["sweep", "squared", "--config", str(space), "--train.data-dir", str(tmp_path)]) == 2
    assert "[sweep] train.update_epoch: no such config key to search. Did you mean train.update_epochs?" in capsys.readouterr().err
    assert not sweep_dirs(tmp_path)


@pytest.mark.parametrize("env_name, space_file, keys", [("CartPole-v1", "cartpole_wide.ini", 10), ("puffer_memory", "memory_length4.ini", 8)])
def test_the_shipped_search_spaces_are_valid(env_name, space_file, keys):
    config = apply_config_file(load_config(env_name), CONFIG_DIR / "sweeps" / space_file)
    sweep.check_settings(config["sweep"])
    assert len(sweep.search_space(config)) == keys and config["base"]["stop_on_solve"] is True


# -- sweeps on SQLite -----------------------------------------------------------------------------


def test_sqlite_sweep_resume_and_the_best_ini_trains(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    flags = ["--train.data-dir", str(tmp_path), *TINY]
    assert cli.main(["sweep", "squared", "--sweep.trials", "3", *flags]) == 0
    out = capsys.readouterr().out
    [sweep_dir] = sweep_dirs(tmp_path)
    trials = study_at(sweep_dir).trials
    assert len(trials) == 3 and all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials)
    assert "Pareto front of puffer_squared" in out
    front = out[out.index("Pareto front of"):out.index("Best: trial")]
    assert max(map(len, front.splitlines())) <= 80, front  # readable on an 80-column terminal
    assert "learning_rate" in front  # the searched values, each trial's wrapped below the table
    for trial in trials:
        run_dir = sweep_dir / f"trial_{trial.number:04d}"
        assert trial.user_attrs["run_dir"] == str(run_dir.resolve())
        assert {"config.json", "metrics.jsonl", "checkpoint.pt"} <= {p.name for p in run_dir.iterdir()}
    assert (sweep_dir / sweep.FRONT_PLOT).read_bytes().startswith(b"\x89PNG")

    # Resume: the same folder and study, extended by one trial.
    assert cli.main(["sweep", "squared", "--resume", "--sweep.trials", "4", "--train.data-dir", str(tmp_path)]) == 0
    assert sweep_dirs(tmp_path) == [sweep_dir]
    trials = study_at(sweep_dir).trials
    assert [t.number for t in trials] == [0, 1, 2, 3] and (sweep_dir / "trial_0003" / "checkpoint.pt").is_file()
    out = capsys.readouterr().out

    # The best trial's config is an .ini that train accepts and applies; the summary names its run.
    best_ini = sweep_dir / sweep.BEST_CONFIG
    best = read_ini(best_ini)
    study = study_at(sweep_dir)
    front_numbers = {t.number for t in study.best_trials}
    best_trial = next(t for t in study.trials if t.params["train.learning_rate"] == best["train"]["learning_rate"])
    assert best_trial.number in front_numbers
    assert f"Best: trial {best_trial.number}," in out and f"; run {sweep_dir.resolve() / f'trial_{best_trial.number:04d}'}\n" in out
    assert best["train"]["total_timesteps"] == 16384
    train_flags = ["--train.device", "cpu", "--train.dashboard", "plain", "--vec.num-envs", "64", "--train.data-dir", str(tmp_path / "train")]
    assert cli.main(["train", "squared", "--config", str(best_ini), "--train.total-timesteps", "4096", *train_flags]) == 0
    [run_config] = (tmp_path / "train").glob("puffer_squared_*/config.json")
    trained = json.loads(run_config.read_text())
    for key, value in best_trial.params.items():
        section, _, name = key.partition(".")
        assert trained[section][name] == value


def seed_run_outcome(run_dir, solve_episodes):
    """A seed run's score and its cost in steps, read back from its metrics.jsonl: the metric over
    the newest ``solve_episodes`` episodes at the end, and the first step where it stood that high."""
    window, scored = RecentMean(solve_episodes), []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        epoch = json.loads(line)
        if "env/score" in epoch:
            window.add(epoch["env/episodes"], epoch["env/score"])
            if window.ready():
                scored.append((epoch["step"], window.value()))
    final = scored[-1][1]
    return final, next(step for step, value in scored if value >= final)


@pytest.mark.slow
def test_a_trial_on_several_seeds_scores_its_worst_seed_at_their_median_cost(tmp_path, capsys):
    # A learning rate that learns within the budget, and seeds whose runs reach their scores at
    # different steps, so the median differs from the worst seed's cost, the mean and the extremes.
    flags = ["--train.data-dir", str(tmp_path), *TINY, "--sweep.trials", "1", "--sweep.seeds", "3", "--sweep.cost", "steps",
             "--sweep.pruner", "none", "--base.seed", "2", "--sweep.trial-steps", "32768",
             "--sweep.train.learning-rate", "categorical(0.03)"]
    assert cli.main(["sweep", "squared", *flags]) == 0
    out = capsys.readouterr().out
    [sweep_dir] = sweep_dirs(tmp_path)
    [trial] = study_at(sweep_dir).trials
    runs = [sweep_dir / f"trial_0000_seed_{seed}" for seed in (2, 3, 4)]
    assert sorted(sweep_dir.glob("trial_*")) == runs
    assert trial.user_attrs["run_dirs"] == [str(run.resolve()) for run in runs]
    for seed, run in zip((2, 3, 4), runs):
        assert json.loads((run / "config.json").read_text())["base"]["seed"] == seed
        assert (run / "checkpoint.pt").is_file()
    scores, costs = zip(*(seed_run_outcome(run, 20) for run in runs))
    assert trial.user_attrs["seed_scores"] == pytest.approx(scores)
    assert trial.user_attrs["seed_costs"] == list(costs)
    assert trial.values == pytest.approx([min(scores), statistics.median(costs)])
    assert "trial 0: score (worst of 3 seeds)" in out and "steps, median of 3 seeds" in out
    assert "trial 0, seed 3: score" in out
    # Each seed run is a twin of its own for the pruner, told its own score.
    twins = study_at(sweep_dir, "puffer_squared.pruning").trials
    assert [(t.user_attrs["trial"], t.user_attrs["seed"]) for t in twins] == [(0, 2), (0, 3), (0, 4)]
    assert [t.value for t in twins] == pytest.approx(scores)
    header = (sweep_dir / sweep.BEST_CONFIG).read_text().splitlines()[:2]
    assert "score (worst of 3 seeds)" in header[0] and header[0].endswith("steps, median of 3 seeds")
    assert header[1] == "# Runs: " + ", ".join(str(run.resolve()) for run in runs)


def test_a_seed_that_fails_fails_the_trial_and_names_the_seed(tmp_path, capsys):
    flags = ["--train.data-dir", str(tmp_path), *TINY, "--sweep.trials", "1", "--sweep.seeds", "2",
             "--sweep.train.horizon", "categorical(1)"]
    assert cli.main(["sweep", "squared", *flags]) == 0
    capsys.readouterr()
    [sweep_dir] = sweep_dirs(tmp_path)
    [trial] = study_at(sweep_dir).trials
    assert trial.state == TrialState.FAIL and trial.user_attrs["error"].startswith("seed 42: ")
    assert [p.name for p in sweep_dir.glob("trial_*")] == ["trial_0000_seed_42"]  # the next seed did not run


def test_cpu_seconds_cost_is_the_trials_cpu_time(tmp_path, capsys):
    flags = ["--train.data-dir", str(tmp_path), *TINY, "--sweep.trials", "1", "--sweep.cost", "cpu_seconds", "--sweep.pruner", "none"]
    assert cli.main(["sweep", "squared", *flags]) == 0
    out = capsys.readouterr().out
    [sweep_dir] = sweep_dirs(tmp_path)
    [trial] = study_at(sweep_dir).trials
    cost = trial.values[1]
    # Reached at or before the run's last epoch; no more CPU than every core for that long.
    wall = json.loads((sweep_dir / "trial_0000" / "metrics.jsonl").read_text().splitlines()[-1])["time"]
    assert 0 < cost <= (wall + 1e-3) * os.cpu_count()
    assert f"after {cost:.4g} CPU s" in out and "cost (CPU s)" in out


def test_a_failing_trial_is_recorded_and_the_sweep_goes_on(tmp_path, capsys):
    flags = ["--train.data-dir", str(tmp_path), *TINY, "--sweep.train.horizon", "categorical(1)", "--sweep.trials", "2"]
    assert cli.main(["sweep", "squared", *flags]) == 0
    out = capsys.readouterr().out
    [sweep_dir] = sweep_dirs(tmp_path)
    trials = study_at(sweep_dir).trials
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.FAIL]
    assert all("horizon 1: expected an integer >= 2" in t.user_attrs["error"] for t in trials)
    assert "No trial completed (0 complete, 0 pruned, 2 failed)" in out
    assert not (sweep_dir / sweep.BEST_CONFIG).exists()


def test_a_metric_no_episode_reports_stops_the_sweep(tmp_path, capsys):
    assert cli.main(["sweep", "squared", "--train.data-dir", str(tmp_path), *TINY, "--sweep.metric", "scor"]) == 2
    assert "--sweep.metric 'scor': puffer_squared's episodes report" in capsys.readouterr().err


def front_trial(number, score, cost, solved):
    trial = optuna.trial.create_trial(values=[score, cost], user_attrs={"solved": solved})
    trial.number = number
    return trial


def test_the_best_trial_is_the_cheapest_that_solved_else_the_best_score():
    # Past the target a higher score is noise: the cheapest solve is what a solve-time sweep wants.
    front = [front_trial(0, 0.5, 1.0, False), front_trial(1, 0.991, 2.0, True), front_trial(2, 0.999, 3.0, True)]
    assert sweep.best_trial(front, "maximize").number == 1
    unsolved = [front_trial(0, 0.5, 1.0, False), front_trial(1, 0.9, 2.0, False), front_trial(2, 0.9, 2.5, False)]
    assert sweep.best_trial(unsolved, "maximize").number == 1  # the best score, the cheaper at a tie
    assert sweep.best_trial(unsolved, "minimize").number == 0


def test_a_trial_behind_the_others_is_pruned_through_its_twin(tmp_path):
    config = apply_flags(load_config("puffer_squared"), [*TINY, "--sweep.trial-steps", "60000", "--vec.num-envs", "128"])
    for key in [k for k in config["sweep"] if "." in k]:
        config["sweep"][key] = None
    space = {"train.learning_rate": sweep.Distribution("categorical", (0.0, 0.03))}
    study = optuna.create_study(directions=["maximize", "minimize"])
    twins = optuna.create_study(direction="maximize", pruner=optuna.pruners.MedianPruner(n_startup_trials=1))
    study.enqueue_trial({"train.learning_rate": 0.03})
    study.enqueue_trial({"train.learning_rate": 0.0})  # never learns: falls behind the first
    study.optimize(sweep.Objective(config, space, tmp_path, twins), n_trials=2, catch=(sweep.TrialFailed,))
    learner, frozen = study.trials
    assert learner.state == TrialState.COMPLETE and frozen.state == TrialState.PRUNED
    assert frozen.user_attrs["score"] < learner.values[0]
    assert [t.state for t in twins.trials] == [TrialState.COMPLETE, TrialState.PRUNED]
    assert (tmp_path / "trial_0001" / "checkpoint.pt").is_file()


def sweep_command(data_dir, *flags):
    return [sys.executable, "-m", "pufferlib.cli", "sweep", "squared", "--train.data-dir", str(data_dir), *TINY, *flags]


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_resume_continues(tmp_path):
    # Trials long enough that the signal lands in the middle of the first.
    command = sweep_command(tmp_path, "--sweep.trials", "3", "--sweep.trial-steps", "50_000_000", "--sweep.pruner", "none")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics = None
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None:
        metrics = next(iter(tmp_path.glob("puffer_squared_sweep_*/trial_0000/metrics.jsonl")), None)
        if metrics and len(metrics.read_text().splitlines()) >= 2:  # training, a few epochs in
            break
        time.sleep(0.2)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (out, err)
    [sweep_dir] = sweep_dirs(tmp_path)
    assert f"Stopped: the interrupted trial is recorded as such and does not count.\nContinue with: puffer sweep puffer_squared --resume {sweep_dir}\n" in out
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    [interrupted] = study_at(sweep_dir).trials
    assert interrupted.state == TrialState.FAIL and interrupted.user_attrs["interrupted"]
    assert [t.state for t in study_at(sweep_dir, "puffer_squared.pruning").trials] == [TrialState.FAIL]
    lines_before = metrics.read_text()

    resumed = subprocess.run(sweep_command(tmp_path, "--resume", str(sweep_dir), "--sweep.trials", "2", "--sweep.trial-steps", "16384"),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    trials = study_at(sweep_dir).trials
    assert [t.number for t in trials] == [0, 1, 2]  # two new trials: the interrupted one does not count
    assert [t.state for t in trials[1:]] == [TrialState.COMPLETE, TrialState.COMPLETE]
    assert sorted(p.name for p in sweep_dir.glob("trial_*")) == ["trial_0000", "trial_0001", "trial_0002"]
    assert metrics.read_text() == lines_before  # the interrupted trial did not run again
    assert "trial 0:" not in resumed.stdout


# -- tracking: TensorBoard and W&B ------------------------------------------------------------------


def test_tensorboard_carries_each_trials_config_and_metrics(tmp_path, capsys):
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        from tensorboard.plugins.hparams import plugin_data_pb2
    except ImportError:
        unavailable("tensorboard is not installed (pip install tensorboard; the dev extra has it)")
    assert cli.main(["sweep", "squared", "--train.data-dir", str(tmp_path), *TINY, "--sweep.trials", "2",
                     "--train.tensorboard", "true"]) == 0
    capsys.readouterr()
    [sweep_dir] = sweep_dirs(tmp_path)
    for trial in study_at(sweep_dir).trials:
        events = EventAccumulator(str(sweep_dir / f"trial_{trial.number:04d}" / "tensorboard"), size_guidance={"tensors": 0})
        events.Reload()
        lines = [json.loads(line) for line in (sweep_dir / f"trial_{trial.number:04d}" / "metrics.jsonl").read_text().splitlines()]
        # Every epoch's metrics, as in metrics.jsonl.
        sps = events.Scalars("sps")
        assert [e.step for e in sps] == [m["step"] for m in lines]
        assert [e.value for e in sps] == pytest.approx([m["sps"] for m in lines], rel=1e-6)  # float32 in TensorBoard
        assert len(events.Scalars("env/score")) == sum("env/score" in m for m in lines) > 0
        # The trial's whole config, as JSON in the text tab.
        [text] = events.Tensors("config/text_summary")
        config = json.loads(text.tensor_proto.string_val[0].decode())
        assert config["train"]["learning_rate"] == trial.params["train.learning_rate"]
        assert config["train"]["total_timesteps"] == 16384
        # The searched values and the results, in the HParams tab.
        content = events.PluginTagToContent("hparams")["_hparams_/session_start_info"]
        hparams = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info.hparams
        assert hparams["train.learning_rate"].number_value == trial.params["train.learning_rate"]
        assert hparams["train.minibatch_size"].number_value == trial.params["train.minibatch_size"]
        [score] = events.Scalars("sweep/score")
        [cost] = events.Scalars("sweep/cost_seconds")
        if trial.state == TrialState.COMPLETE:
            assert (score.value, cost.value) == pytest.approx(tuple(trial.values))


def wandb_records(path):
    """The records of an offline W&B run file: a LevelDB log (32 KiB blocks of records, each with
    a 7-byte header: checksum, length, type) after W&B's own 7-byte header."""
    from wandb.proto import wandb_internal_pb2

    data = Path(path).read_bytes()
    ident, magic, _ = struct.unpack("<4sHB", data[:7])
    assert (ident, magic) == (b":W&B", 0xBEE1)
    position, pending = 7, b""
    while position + 7 <= len(data):
        if 32768 - position % 32768 < 7:  # a block's tail too short for a header is padding
            position += 32768 - position % 32768
            continue
        _, length, kind = struct.unpack("<IHB", data[position:position + 7])
        if kind == 0:
            break
        pending += data[position + 7:position + 7 + length]
        position += 7 + length
        if kind in (1, 4):  # a full record, or the last piece of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record
            pending = b""


@pytest.mark.slow
def test_wandb_offline_carries_each_trials_config_and_metrics(tmp_path, capsys, monkeypatch):
    pytest.importorskip("wandb", reason="wandb is not installed (pip install wandb): W&B logging is optional")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    assert cli.main(["sweep", "squared", "--train.data-dir", str(tmp_path), *TINY, "--sweep.trials", "1", "--train.wandb", "true"]) == 0
    capsys.readouterr()
    [sweep_dir] = sweep_dirs(tmp_path)
    [trial] = study_at(sweep_dir).trials
    [run_file] = (sweep_dir / "trial_0000" / "wandb").glob("offline-run-*/run-*.wandb")
    records = list(wandb_records(run_file))
    [run] = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert (run.run_group, run.display_name) == (sweep_dir.name, "trial_0000")
    config = {item.key: json.loads(item.value_json) for item in run.config.update}
    assert config["train"]["learning_rate"] == trial.params["train.learning_rate"]
    logged = [{"/".join(item.nested_key) or item.key: json.loads(item.value_json) for item in r.history.item}
              for r in records if r.WhichOneof("record_type") == "history"]
    lines = [json.loads(line) for line in (sweep_dir / "trial_0000" / "metrics.jsonl").read_text().splitlines()]
    assert [h["step"] for h in logged] == [m["step"] for m in lines] and any("env/score" in h for h in logged)
    summary = {}
    for r in records:
        if r.WhichOneof("record_type") == "summary":
            summary.update({"/".join(item.nested_key) or item.key: json.loads(item.value_json) for item in r.summary.update})
    assert summary["train.learning_rate"] == trial.params["train.learning_rate"]
    assert (summary["sweep/score"], summary["sweep/cost_seconds"]) == pytest.approx(tuple(trial.values))


# -- two workers on one PostgreSQL study ------------------------------------------------------------


@pytest.fixture
def postgres_url():
    """A real PostgreSQL server (Debian's package) in a temporary folder, on localhost."""
    initdb = shutil.which("initdb") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))), None)
    if initdb is None:
        unavailable("no PostgreSQL server binaries (apt-get install postgresql)")
    bin_dir = Path(initdb).resolve().parent
    data = Path(tempfile.mkdtemp(prefix="puffer-postgres-"))
    as_owner = []
    if os.geteuid() == 0:  # postgres refuses to run as root
        owner = pwd.getpwnam("postgres")
        os.chown(data, owner.pw_uid, owner.pw_gid)
        as_owner = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = lambda *args: subprocess.run(as_owner + [str(a) for a in args], check=True, capture_output=True)  # noqa: E731
    try:
        run(bin_dir / "initdb", "-D", data / "db", "-A", "trust", "-U", "puffer", "--no-sync")
        run(bin_dir / "pg_ctl", "-D", data / "db", "-l", data / "server.log", "-w", "start",
            "-o", f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -F")
        yield f"postgresql://puffer@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(as_owner + [str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


@pytest.mark.slow
def test_two_workers_share_a_postgresql_study(tmp_path, postgres_url):
    trials = 8
    workers = []
    for name in ("a", "b"):
        command = [sys.executable, "-m", "pufferlib.cli", "sweep", "squared", *TINY, "--train.data-dir", str(tmp_path / name),
                   "--sweep.storage", postgres_url, "--sweep.study", "shared", "--sweep.trials", str(trials),
                   "--sweep.trial-steps", "49152"]  # trials long enough that both workers start before they are all taken
        log = open(tmp_path / f"{name}.log", "w")
        workers.append((name, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), log))
    deadline = time.time() + 300
    for name, process, log in workers:
        assert process.wait(timeout=max(1, deadline - time.time())) == 0, (tmp_path / f"{name}.log").read_text()
        log.close()

    study = optuna.load_study(study_name="shared", storage=postgres_url)
    numbers = [t.number for t in study.trials]
    # Workers stop once the study holds `trials`; two that ask in the same instant may add one more.
    assert trials <= len(numbers) <= trials + 1
    assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in study.trials)
    ran = {name: {int(p.name.split("_")[1]) for p in (tmp_path / name).glob("puffer_squared_sweep_*/trial_*")} for name in ("a", "b")}
    assert ran["a"] and ran["b"], ran  # both workers took trials
    assert not ran["a"] & ran["b"]  # no trial ran twice
    assert ran["a"] | ran["b"] == set(numbers)  # and the study holds every trial that ran
    assert len({t.user_attrs["worker"] for t in study.trials}) == 2
    assert len({tuple(sorted(t.params.items())) for t in study.trials}) == len(numbers)
    for name in ("a", "b"):
        [sweep_dir] = (tmp_path / name).glob("puffer_squared_sweep_*")
        assert (sweep_dir / sweep.BEST_CONFIG).is_file()
