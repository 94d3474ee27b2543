"""puffer sweep: the [sweep] syntax and its errors, SQLite sweeps end to end (resume, failed trials,
the written .ini), pruning through the twin study, and two workers sharing a real PostgreSQL."""

import glob
import os
import pwd
import shutil
import socket
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
from pufferlib.config import ConfigError, apply_flags, load_config, read_ini

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
    (["--sweep.pruner", "medain"], "--sweep.pruner 'medain': valid are median, successive_halving, none. Did you mean median?"),
    (["--sweep.train.learning-rate", "log_uniform(0.1, 0.01)"], "empty range"),
    (["--sweep.prune-warmup", "1.5"], "expected a fraction"),
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


# -- sweeps on SQLite -----------------------------------------------------------------------------


def test_sqlite_sweep_resume_and_the_best_ini_trains(tmp_path, capsys):
    flags = ["--train.data-dir", str(tmp_path), *TINY]
    assert cli.main(["sweep", "squared", "--sweep.trials", "3", *flags]) == 0
    out = capsys.readouterr().out
    [sweep_dir] = sweep_dirs(tmp_path)
    trials = study_at(sweep_dir).trials
    assert len(trials) == 3 and all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials)
    assert "Pareto front of puffer_squared" in out
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
    capsys.readouterr()

    # The best trial's config is an .ini that train accepts and applies.
    best_ini = sweep_dir / sweep.BEST_CONFIG
    best = read_ini(best_ini)
    study = study_at(sweep_dir)
    front_numbers = {t.number for t in study.best_trials}
    best_trial = next(t for t in study.trials if t.params["train.learning_rate"] == best["train"]["learning_rate"])
    assert best_trial.number in front_numbers
    assert best["train"]["total_timesteps"] == 16384
    train_flags = ["--train.device", "cpu", "--train.dashboard", "plain", "--vec.num-envs", "64", "--train.data-dir", str(tmp_path / "train")]
    assert cli.main(["train", "squared", "--config", str(best_ini), "--train.total-timesteps", "4096", *train_flags]) == 0
    [run_config] = (tmp_path / "train").glob("puffer_squared_*/config.json")
    trained = __import__("json").loads(run_config.read_text())
    for key, value in best_trial.params.items():
        section, _, name = key.partition(".")
        assert trained[section][name] == value


def test_a_failing_trial_is_recorded_and_the_sweep_goes_on(tmp_path, capsys):
    flags = ["--train.data-dir", str(tmp_path), *TINY, "--sweep.train.horizon", "categorical(1)", "--sweep.trials", "2"]
    assert cli.main(["sweep", "squared", *flags]) == 0
    out = capsys.readouterr().out
    [sweep_dir] = sweep_dirs(tmp_path)
    trials = study_at(sweep_dir).trials
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.FAIL]
    assert all("horizon 1: segments need at least 2 steps" in t.user_attrs["error"] for t in trials)
    assert "No trial completed (0 complete, 0 pruned, 2 failed)" in out
    assert not (sweep_dir / sweep.BEST_CONFIG).exists()


def test_a_metric_no_episode_reports_stops_the_sweep(tmp_path, capsys):
    assert cli.main(["sweep", "squared", "--train.data-dir", str(tmp_path), *TINY, "--sweep.metric", "scor"]) == 2
    assert "--sweep.metric 'scor': puffer_squared's episodes report" in capsys.readouterr().err


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
