"""``puffer sweep``: cost-aware hyperparameter search on Optuna.

The ``[sweep]`` section of a config names the keys to search, one distribution each
(``train.learning_rate = log_uniform(1e-4, 1e-1)``), and the sweep's settings (budget, metric,
sampler, pruner, storage). Each trial is a normal run, one per seed, in its own folder
(config.json, metrics.jsonl, checkpoint.pt) inside the sweep's folder. Optuna searches two
objectives at once:
the score (the metric averaged over the newest ``[base] solve_episodes`` episodes when the trial
ends) and its cost (the wall-clock seconds, CPU seconds or steps the trial took to first reach that
score); the result is their Pareto front. A trial may train its config on several seeds, each a run
of its own: its score is then the worst seed's and its cost the seeds' median, so a config counts
as solving only where every seed solves.

Optuna's pruners are single-objective (``Trial.report`` refuses a multi-objective study), so each
seed run of a trial has a twin in a single-objective study beside the main one, ``<study>.pruning``:
the twin receives the run's score at fixed fractions of its budget, and the configured pruner
(median, successive halving) judges it against the twins of the runs before it at the same
fraction. Every seed is such a run, on the same budget, so each is judged like for like (a twin
per trial would not do: the median pruner keeps a trial's best score over all its reports, and a
first seed's good score would shield every later one). A trial whose seed is pruned is recorded as
pruned in the main study, with the score and cost it had reached.
"""

import ast
import copy
import importlib.util
import json
import math
import os
import random
import shutil
import socket
import statistics
import textwrap
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import optuna
import sqlalchemy
from optuna.trial import TrialState

from pufferlib.checkpoint import new_run_dir, write_atomic
from pufferlib.config import ConfigError, apply_flags
from pufferlib.evaluate import RecentMean, SolveCheck
from pufferlib.exceptions import did_you_mean
from pufferlib.pufferl import NonFiniteError
from pufferlib.run import CpuClock, TrainingRun, solve_target

STUDY_FILE = "study.db"
BEST_CONFIG = "best.ini"
FRONT_PLOT = "pareto.png"
DISTRIBUTIONS = ("log_uniform", "uniform", "int", "log_int", "categorical")
DISTRIBUTION_HELP = (
    "log_uniform(1e-4, 1e-1), uniform(0.8, 0.99), int(1, 4), log_int(16, 256) or categorical(32, 64, 128); "
    "none leaves the key out"
)
SAMPLERS = ("tpe", "random", "nsga2")
PRUNERS = ("median", "successive_halving", "none")
COSTS = ("seconds", "steps", "cpu_seconds")
COST_UNITS = {"seconds": "s", "steps": "steps", "cpu_seconds": "CPU s"}
COST_NAMES = {"seconds": "wall-clock seconds", "steps": "env steps", "cpu_seconds": "CPU seconds"}
DIRECTIONS = ("maximize", "minimize")
# Settings that must agree among the workers of one study and across a resume.
STUDY_DEFINITION = ("metric", "direction", "cost", "seeds")
HEARTBEAT_SECONDS = 60  # a worker that dies leaves its trial RUNNING; others fail it after the grace period
GRACE_SECONDS = 180
SCHEMA_ATTEMPTS = 5


class TrialFailed(Exception):
    """A trial that crashed or diverged: recorded as failed with its error, and the sweep goes on."""


class MetricMissing(ConfigError):
    """--sweep.metric names no episode statistic of the env: every trial would fail, so the sweep stops."""


@dataclass(frozen=True)
class Distribution:
    kind: str
    args: tuple

    def suggest(self, trial, name):
        if self.kind == "categorical":
            return trial.suggest_categorical(name, list(self.args))
        low, high = self.args
        if self.kind in ("int", "log_int"):
            return trial.suggest_int(name, low, high, log=self.kind == "log_int")
        return trial.suggest_float(name, low, high, log=self.kind == "log_uniform")

    def __str__(self):
        return f"{self.kind}({', '.join(map(repr, self.args))})"


def parse_distribution(key, text):
    """A ``[sweep]`` value such as ``log_uniform(1e-4, 1e-1)`` as a Distribution, or a ConfigError
    that names the key, the problem and the fix."""
    where = f"[sweep] {key} = {text}"
    try:
        node = ast.parse(str(text).strip(), mode="eval").body
    except SyntaxError:
        node = None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.keywords:
        raise ConfigError(f"{where}: expected a distribution: {DISTRIBUTION_HELP}")
    kind = node.func.id
    if kind not in DISTRIBUTIONS:
        raise ConfigError(f"{where}: unknown distribution {kind!r}.{did_you_mean(kind, DISTRIBUTIONS)} Valid: {', '.join(DISTRIBUTIONS)}")
    try:
        args = tuple(ast.literal_eval(arg) for arg in node.args)
    except ValueError:
        raise ConfigError(f"{where}: arguments must be plain numbers or strings") from None
    if kind == "categorical":
        if not args:
            raise ConfigError(f"{where}: categorical needs at least one choice")
        if len({repr(a) for a in args}) < len(args):
            raise ConfigError(f"{where}: a choice is listed twice")
        if not all(a is None or isinstance(a, (bool, int, float, str)) for a in args):
            raise ConfigError(f"{where}: choices must be numbers, strings, booleans or None")
        return Distribution(kind, args)
    if len(args) != 2:
        raise ConfigError(f"{where}: {kind} takes two bounds, (low, high)")
    low, high = args
    wanted = int if kind in ("int", "log_int") else (int, float)
    if not all(isinstance(b, wanted) and not isinstance(b, bool) for b in args):
        raise ConfigError(f"{where}: {kind} needs {'integer' if wanted is int else 'numeric'} bounds")
    if low >= high:
        raise ConfigError(f"{where}: empty range: low {low!r} must be below high {high!r}")
    if kind.startswith("log") and low <= 0:
        raise ConfigError(f"{where}: a log scale needs low > 0")
    return Distribution(kind, args)


def search_space(config):
    """{'section.key': Distribution} from the config's ``[sweep]`` keys that name a config key."""
    space = {}
    settings = config["sweep"]
    targets = [f"{s}.{k}" for s, values in config.items() if s != "sweep" for k in values]
    for key, text in settings.items():
        if "." not in key or text is None:
            continue
        section, _, name = key.partition(".")
        if section == "sweep" or section not in config or name not in config[section]:
            hint = did_you_mean(key, targets, cutoff=0.6)
            raise ConfigError(
                f"[sweep] {key}: no such config key to search.{hint} Searched keys are section.key of the config "
                f"(train.learning_rate, env.size); --sweep.{key.replace('_', '-')} none leaves it out"
            )
        space[key] = parse_distribution(key, text)
    if not space:
        raise ConfigError("[sweep] names no key to search: add one, e.g. --sweep.train.learning-rate 'log_uniform(1e-4, 1e-1)'")
    return space


def check_settings(settings):
    if settings["pruner"] is None:  # `pruner = none` reads as None, like every none in an .ini
        settings["pruner"] = "none"

    def choice(key, valid):
        if settings[key] not in valid:
            hint = did_you_mean(str(settings[key]), valid)
            raise ConfigError(f"--sweep.{key.replace('_', '-')} {settings[key]!r}: valid are {', '.join(valid)}.{hint}")

    choice("direction", DIRECTIONS)
    choice("cost", COSTS)
    choice("sampler", SAMPLERS)
    choice("pruner", PRUNERS)
    for key, low in (("trials", 1), ("seeds", 1), ("report_points", 1), ("startup_trials", 0), ("prune_startup", 0), ("trial_steps", 0)):
        if not isinstance(settings[key], int) or settings[key] < low:
            raise ConfigError(f"--sweep.{key.replace('_', '-')} {settings[key]!r}: expected an integer >= {low}")
    if not 0 <= settings["prune_warmup"] < 1:
        raise ConfigError(f"--sweep.prune-warmup {settings['prune_warmup']!r}: expected a fraction of the budget in [0, 1)")
    if settings["trial_seconds"] < 0:
        raise ConfigError(f"--sweep.trial-seconds {settings['trial_seconds']!r}: expected seconds >= 0 (0: no limit)")


def shown_url(url):
    """A storage URL fit to print: its password hidden."""
    try:
        return sqlalchemy.engine.make_url(url).render_as_string(hide_password=True)
    except sqlalchemy.exc.ArgumentError:
        return url


def open_storage(url):
    """Optuna's RDB storage on ``url``, or a ConfigError saying why it cannot be used."""
    example = "sqlite:///path/study.db or postgresql://user:password@host:5432/database"
    try:
        parsed = sqlalchemy.engine.make_url(url)
    except sqlalchemy.exc.ArgumentError:
        raise ConfigError(f"--sweep.storage {url!r} is not a database URL: use {example}") from None
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql", "mysql"):
        raise ConfigError(f"--sweep.storage {shown_url(url)}: {backend!r} is not a supported database: use {example}")
    engine_kwargs = {"connect_args": {"connect_timeout": 10}} if backend == "postgresql" else {}
    try:
        for attempt in range(SCHEMA_ATTEMPTS):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # heartbeat_interval
                    return optuna.storages.RDBStorage(
                        url, engine_kwargs=engine_kwargs, heartbeat_interval=HEARTBEAT_SECONDS, grace_period=GRACE_SECONDS
                    )
            except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.ProgrammingError):
                # Workers started together on an empty database race to create Optuna's tables; the
                # loser finds them made once the winner commits.
                if attempt == SCHEMA_ATTEMPTS - 1:
                    raise
                time.sleep(0.5 * (attempt + 1))
    except ImportError as error:
        reason = error.__cause__ or error
        raise ConfigError(f"--sweep.storage {shown_url(url)} needs its database driver ({reason}): pip install 'psycopg[binary]'") from None
    except sqlalchemy.exc.SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        raise ConfigError(f"cannot open the study database {shown_url(url)}: {reason}. Is the server running and the URL right?") from None


def make_sampler(settings, seed):
    if settings["sampler"] == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if settings["sampler"] == "nsga2":
        return optuna.samplers.NSGAIISampler(population_size=max(2, settings["startup_trials"]), seed=seed)
    return optuna.samplers.TPESampler(n_startup_trials=settings["startup_trials"], seed=seed)


def make_pruner(settings):
    warmup_points = math.ceil(settings["prune_warmup"] * settings["report_points"])
    if settings["pruner"] == "median":
        # The twins are seed runs: prune_startup trials finish that many runs each.
        startup_runs = settings["prune_startup"] * settings["seeds"]
        return optuna.pruners.MedianPruner(n_startup_trials=startup_runs, n_warmup_steps=warmup_points)
    if settings["pruner"] == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=max(1, warmup_points))
    return optuna.pruners.NopPruner()


def counted_trials(study):
    """Trials that use up the budget: finished ones (an interrupted trial does not count) and
    those other workers are running now."""
    count = 0
    for trial in study.get_trials(deepcopy=False):
        if trial.state == TrialState.FAIL and trial.user_attrs.get("interrupted"):
            continue
        count += trial.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING)
    return count


class Progress(NamedTuple):
    """Where a run stood after an epoch: its spend on each cost's clock, and its score."""

    steps: int
    seconds: float
    cpu_seconds: float
    score: float


def train_trial(config, run_dir, settings, on_progress, params):
    """Trains one seed of a trial's config as a normal run in ``run_dir``; returns a Progress per
    epoch (once enough episodes ended to score), and whether its training episodes reached the
    env's solve target. ``on_progress(fraction of budget, Progress)`` is called each epoch and may
    raise ``optuna.TrialPruned``; the checkpoint is written either way, and so are the searched
    ``params`` with the run's score and cost, to wandb and TensorBoard when they are on.

    ``trial_seconds`` is counted on the cost's clock: CPU seconds when the cost is, so that neither
    the budget nor the pruner's fractions of it move with other jobs' load; else wall-clock."""
    env_name, metric, base = config["base"]["env_name"], settings["metric"], config["base"]
    run = TrainingRun(env_name, config, run_dir=run_dir, group=run_dir.parent.name)
    trainer = run.trainer
    target = solve_target(config, trainer.vecenv)
    score = RecentMean(base["solve_episodes"])
    # A trial's cost ends where its training episodes first reach the target (fresh-episode
    # confirmation would cost each trial more than it tells the search).
    solve_check = SolveCheck(base["solve_metric"], target, base["solve_tolerance"], base["solve_episodes"])
    history, reached_target = [], False
    cpu_clock = CpuClock(trainer.vecenv)  # from when the trainer is ready, as trainer.seconds()

    def spent():
        return cpu_clock() if settings["cost"] == "cpu_seconds" else trainer.seconds()

    try:
        pruned = None
        try:
            while not run.finished:
                try:
                    run.epoch()
                except NonFiniteError as error:
                    raise TrialFailed(str(error)) from None
                diverged = [k for k, v in trainer.losses.items() if k != "explained_variance" and not math.isfinite(v)]
                if diverged:
                    raise TrialFailed(f"{', '.join(diverged)} not finite at step {trainer.global_step}")
                stats = trainer.episode_stats
                if stats and metric not in stats:
                    raise MetricMissing(f"--sweep.metric {metric!r}: {env_name}'s episodes report {', '.join(k for k in stats if k != 'episodes')}")
                if metric in stats:
                    if not math.isfinite(stats[metric]):
                        raise TrialFailed(f"{metric} is {stats[metric]} at step {trainer.global_step}")
                    score.add(stats["episodes"], stats[metric])
                    if score.ready():
                        history.append(Progress(trainer.global_step, trainer.seconds(), cpu_clock(), score.value()))
                solved = solve_check.candidate(stats)
                reached_target = reached_target or solved
                out_of_time = settings["trial_seconds"] and spent() >= settings["trial_seconds"]
                progress = trainer.epoch / trainer.total_epochs
                if settings["trial_seconds"]:
                    progress = max(progress, spent() / settings["trial_seconds"])
                if history:
                    on_progress(min(progress, 1.0), history[-1])
                if out_of_time or (solved and base["stop_on_solve"]):
                    break
        except optuna.TrialPruned as error:
            pruned = error
        run.save_checkpoint()
        if history:
            score, cost = score_and_cost(history, settings["direction"], settings["cost"])
            run.metrics.record_trial(params, {"sweep/score": score, f"sweep/cost_{settings['cost']}": cost})
        if pruned:
            raise pruned
    finally:
        run.close()
    if not history:
        raise TrialFailed(
            f"fewer than {base['solve_episodes']} episodes ended within {trainer.global_step} steps: "
            f"raise --sweep.trial-steps or lower --base.solve-episodes"
        )
    return history, reached_target


def score_and_cost(history, direction, cost):
    """A run's final score, and its spend on the ``cost`` clock when it first reached it."""
    final = history[-1].score
    reached = next(h for h in history if (h.score >= final if direction == "maximize" else h.score <= final))
    return final, float(getattr(reached, cost))


def worst(scores, direction):
    return min(scores) if direction == "maximize" else max(scores)


def trial_config(config, params, settings, seed):
    config = copy.deepcopy(config)
    config["base"]["seed"] = seed
    for key, value in params.items():
        section, _, name = key.partition(".")
        config[section][name] = value
    if settings["trial_steps"]:
        config["train"]["total_timesteps"] = settings["trial_steps"]
    return config


def short_names(keys):
    """{section.key: key}, keeping section.key where two sections share a key (policy and rnn hidden_size)."""
    last = [key.split(".")[-1] for key in keys]
    return {key: name if last.count(name) == 1 else key for key, name in zip(keys, last)}


def describe(params):
    names = short_names(list(params))
    return ", ".join(f"{names[key]} {value:.3g}" if isinstance(value, float) else f"{names[key]} {value}" for key, value in params.items())


def unit(cost):
    return COST_UNITS[cost]


def seed_runs(sweep_dir, number, base_seed, seeds):
    """[(seed, run folder)] of trial ``number``: trial_0007 on one seed; trial_0007_seed_42,
    trial_0007_seed_43, ... on several (flat, so each run keeps a name of its own in wandb)."""
    if seeds == 1:
        return [(base_seed, sweep_dir / f"trial_{number:04d}")]
    return [(seed, sweep_dir / f"trial_{number:04d}_seed_{seed}") for seed in range(base_seed, base_seed + seeds)]


def trial_runs(trial):
    """The run folders of a finished trial."""
    return trial.user_attrs.get("run_dirs") or [trial.user_attrs.get("run_dir")]


def score_label(settings):
    seeds = settings["seeds"]
    return settings["metric"] if seeds == 1 else f"{settings['metric']} (worst of {seeds} seeds)"


def cost_label(settings):
    seeds = settings["seeds"]
    return unit(settings["cost"]) if seeds == 1 else f"{unit(settings['cost'])}, median of {seeds} seeds"


class Objective:
    """Runs one trial for ``study.optimize``: samples a config, trains it on each seed, feeds the
    pruning twins."""

    def __init__(self, config, space, sweep_dir, pruning_study):
        self.config, self.space, self.sweep_dir, self.pruning_study = config, space, sweep_dir, pruning_study
        self.settings = config["sweep"]
        self.worker = f"{socket.gethostname()}:{os.getpid()}"

    def __call__(self, trial):
        settings = self.settings
        params = {key: distribution.suggest(trial, key) for key, distribution in self.space.items()}
        runs = seed_runs(self.sweep_dir, trial.number, self.config["base"]["seed"], settings["seeds"])
        trial.set_user_attr("run_dir", str(runs[0][1].resolve()))
        trial.set_user_attr("run_dirs", [str(run_dir.resolve()) for _, run_dir in runs])
        trial.set_user_attr("worker", self.worker)
        print(f"trial {trial.number}: {describe(params)}", flush=True)
        scores, costs, solved = [], [], []
        latest = {}
        for seed, run_dir in runs:
            run_dir.mkdir(parents=True)  # exist_ok=False: a trial number is never run twice
            with warnings.catch_warnings():
                # The twin has no heartbeat of its own: a dead worker's trial is failed through the main study.
                warnings.filterwarnings("ignore", message="Heartbeat of storage")
                twin = self.pruning_study.ask()
            twin.set_user_attr("trial", trial.number)
            twin.set_user_attr("seed", seed)
            on_progress = self.reporter(twin, seed, scores, costs, latest)
            try:
                history, run_solved = train_trial(trial_config(self.config, params, settings, seed), run_dir, settings, on_progress, params)
            except optuna.TrialPruned as pruned:
                for key, value in latest.items():  # where it stood, for the plot
                    trial.set_user_attr(key, value)
                self.pruning_study.tell(twin, state=TrialState.PRUNED)
                print(f"trial {trial.number}: pruned: {pruned}", flush=True)
                raise
            except KeyboardInterrupt:
                trial.set_user_attr("interrupted", True)
                self.pruning_study.tell(twin, state=TrialState.FAIL)
                raise
            except MetricMissing:
                self.pruning_study.tell(twin, state=TrialState.FAIL)
                raise
            except Exception as error:
                self.pruning_study.tell(twin, state=TrialState.FAIL)
                message = f"{type(error).__name__}: {error}"
                if len(runs) > 1:
                    message = f"seed {seed}: {message}"
                trial.set_user_attr("error", message)
                print(f"trial {trial.number}: failed: {message}", flush=True)
                raise TrialFailed(message) from error
            seed_score, seed_cost = score_and_cost(history, settings["direction"], settings["cost"])
            scores.append(seed_score)
            costs.append(seed_cost)
            solved.append(run_solved)
            self.pruning_study.tell(twin, seed_score)
            if len(runs) > 1:
                print(f"trial {trial.number}, seed {seed}: {settings['metric']} {seed_score:.4g} after {seed_cost:.4g} "
                      f"{unit(settings['cost'])}", flush=True)
        # A config counts as solving only where every seed solves; the median cost is the typical one.
        score, cost = worst(scores, settings["direction"]), statistics.median(costs)
        trial.set_user_attr("score", score)
        trial.set_user_attr("cost", cost)
        trial.set_user_attr("solved", all(solved))
        trial.set_user_attr("seed_scores", scores)
        trial.set_user_attr("seed_costs", costs)
        print(f"trial {trial.number}: {score_label(settings)} {score:.4g} after {cost:.4g} {cost_label(settings)}", flush=True)
        return score, cost

    def reporter(self, twin, seed, scores, costs, latest):
        """The ``on_progress`` of one seed run: reports the run's score to its twin at the
        ``report_points`` fractions of its budget, asks the pruner, and keeps in ``latest`` where the
        trial stands (its worst seed so far, the median cost of its seeds so far)."""
        settings = self.settings
        reported = [-1]

        def on_progress(progress, entry):
            latest.update(score=worst([*scores, entry.score], settings["direction"]),
                          cost=float(statistics.median([*costs, getattr(entry, settings["cost"])])))
            point = int(progress * settings["report_points"])
            for step in range(reported[0] + 1, point + 1):
                twin.report(entry.score, step)
            reported[0] = max(reported[0], point)
            if twin.should_prune():
                on_seed = f" on seed {seed}" if settings["seeds"] > 1 else ""
                raise optuna.TrialPruned(f"{settings['metric']} {entry.score:.4g} at {progress:.0%} of its budget{on_seed}")

        return on_progress


def latest_sweep_dir(data_dir, env_name):
    found = [p.parent for p in Path(data_dir).glob(f"{env_name}_sweep_*/config.json")]
    if not found:
        raise ConfigError(f"No sweep of {env_name} under {data_dir}/ to resume: start one with puffer sweep {env_name}")
    return max(found, key=lambda p: (p / "config.json").stat().st_mtime)


def ini_value(value):
    return repr(value) if isinstance(value, float) else str(value)


def best_config_text(env_name, trial, settings, study_name):
    """The best trial's searched keys as an .ini that ``puffer train ENV --config FILE`` overlays."""
    sections = {}
    for key, value in trial.params.items():
        section, _, name = key.partition(".")
        sections.setdefault(section, {})[name] = value
    if settings["trial_steps"]:
        sections.setdefault("train", {})["total_timesteps"] = settings["trial_steps"]
    runs = trial_runs(trial)
    lines = [
        f"# puffer sweep {env_name}, study {study_name}: trial {trial.number}, {score_label(settings)} {trial.values[0]:.4g} "
        f"after {trial.values[1]:.4g} {cost_label(settings)}",
        f"# {'Run' if len(runs) == 1 else 'Runs'}: {', '.join(map(str, runs))}",
        f"# Train with: puffer train {env_name} --config FILE",
    ]
    for section, values in sections.items():
        lines += ["", f"[{section}]"] + [f"{name} = {ini_value(value)}" for name, value in values.items()]
    return "\n".join(lines) + "\n"


def plot_front(study, settings, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    trials = study.get_trials(deepcopy=False)
    front = sorted(study.best_trials, key=lambda t: t.values[1])
    figure, axes = plt.subplots(figsize=(7, 4.5))
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    pruned = [t for t in trials if t.state == TrialState.PRUNED and "score" in t.user_attrs]
    axes.scatter([t.values[1] for t in done], [t.values[0] for t in done], color="tab:blue", alpha=0.6, label="trial")
    if pruned:
        # A pruned trial's cost is what it had spent when stopped.
        axes.scatter([t.user_attrs["cost"] for t in pruned], [t.user_attrs["score"] for t in pruned],
                     color="tab:gray", marker="x", label="pruned")
    if front:
        axes.step([t.values[1] for t in front], [t.values[0] for t in front], where="post", color="tab:red", alpha=0.5)
        axes.scatter([t.values[1] for t in front], [t.values[0] for t in front], color="tab:red", s=60, zorder=3, label="Pareto front")
        for t in front:
            axes.annotate(str(t.number), (t.values[1], t.values[0]), textcoords="offset points", xytext=(4, 4), fontsize=8)
    median = f", median of {settings['seeds']} seeds" if settings["seeds"] > 1 else ""
    axes.set_xlabel(f"cost: {COST_NAMES[settings['cost']]} to the score{median}")
    axes.set_ylabel(score_label(settings))
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def best_trial(front, direction):
    """The cheapest trial of the front that solved the env (reached [base] solve_score): with a
    target, a higher score past it is noise, and the cost is what was searched for. Without one,
    the front's best score, the cheaper at a tie."""
    solved = [t for t in front if t.user_attrs.get("solved")]
    if solved:
        return min(solved, key=lambda t: t.values[1])
    sign = 1 if direction == "maximize" else -1
    return max(front, key=lambda t: (sign * t.values[0], -t.values[1]))


def summarize(study, env_name, settings, sweep_dir):
    """Prints the Pareto front (rich), draws it, and writes the best trial's config; returns the
    best trial (None when no trial completed)."""
    from rich.console import Console
    from rich.table import Table

    trials = study.get_trials(deepcopy=False)
    states = {state: sum(t.state == state for t in trials) for state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)}
    counts = f"{states[TrialState.COMPLETE]} complete, {states[TrialState.PRUNED]} pruned, {states[TrialState.FAIL]} failed"
    failed = [t for t in trials if t.state == TrialState.FAIL and "error" in t.user_attrs]
    for t in failed:
        print(f"trial {t.number} failed: {t.user_attrs['error']}")
    front = sorted(study.best_trials, key=lambda t: t.values[1])
    if not front:
        print(f"No trial completed ({counts}); nothing to report.")
        return None
    best = best_trial(front, settings["direction"])
    keys = list(front[0].params)
    names = short_names(keys)

    def shown(value):
        return f"{value:.3g}" if isinstance(value, float) else str(value)

    def front_table(with_params):
        table = Table()
        table.add_column("trial", justify="right")
        table.add_column(score_label(settings), justify="right")
        table.add_column(f"cost ({cost_label(settings)})", justify="right")
        table.add_column("solved", justify="center")
        for key in keys if with_params else ():
            table.add_column(names[key], justify="right")
        for t in front:
            values = [shown(t.params[k]) for k in keys] if with_params else []
            solved = "yes" if t.user_attrs.get("solved") else "no"
            table.add_row(str(t.number), f"{t.values[0]:.4g}", f"{t.values[1]:.4g}", solved, *values,
                          style="bold green" if t is best else None)
        return table

    # The terminal's width (80 off a terminal): a table wider than that wraps into noise, so the
    # searched values then follow the table as one wrapped line per trial.
    width = shutil.get_terminal_size((80, 24)).columns
    console = Console(width=width)
    print(textwrap.fill(f"Pareto front of {env_name} ({study.study_name}): {len(trials)} trials, {counts}", width=width))
    table = front_table(with_params=True)
    if Console(width=10_000).measure(table).maximum <= width:  # measured unclamped: rich would squeeze it
        console.print(table)
    else:
        console.print(front_table(with_params=False))
        for t in front:
            line = ", ".join(f"{names[k]} {shown(t.params[k])}" for k in keys)
            print(textwrap.fill(line, width=width, initial_indent=f"trial {t.number}: ", subsequent_indent="  "))
    plot_path = sweep_dir / FRONT_PLOT
    plot_front(study, settings, plot_path, f"{env_name}: {settings['metric']} against {COST_NAMES[settings['cost']]} ({counts})")
    best_path = sweep_dir / BEST_CONFIG
    write_atomic(best_path, best_config_text(env_name, best, settings, study.study_name))
    runs = trial_runs(best)
    print(f"Best: trial {best.number}, {score_label(settings)} {best.values[0]:.4g} after {best.values[1]:.4g} {cost_label(settings)}; "
          f"{'run' if len(runs) == 1 else 'runs'} {', '.join(map(str, runs))}")
    print(f"Front: {plot_path}\nConfig: {best_path}\nTrain it: puffer train {env_name} --config {best_path}")
    return best


@dataclass(frozen=True)
class SweepResult:
    study: optuna.Study
    folder: Path
    best: optuna.trial.FrozenTrial | None  # the front's best score; None when no trial completed
    interrupted: bool  # stopped by Ctrl-C: the study is left to --resume


def sweep(env_name, config, flags=(), resume=None):
    """Runs (or joins, or resumes) the sweep ``config`` describes; returns a SweepResult.

    ``resume`` ('latest' or a sweep folder) continues a stopped sweep with its own settings and
    ``flags`` applied on top (``--sweep.trials 32`` extends it)."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ConfigError("puffer sweep draws its Pareto front with matplotlib: pip install 'pufferlib[sweep]'")
    data_dir = config["train"]["data_dir"]
    if resume:
        sweep_dir = latest_sweep_dir(data_dir, env_name) if resume == "latest" else Path(resume)
        if not (sweep_dir / "config.json").is_file():
            raise ConfigError(f"--resume {resume}: {sweep_dir} is not a sweep folder (no config.json)")
        saved = json.loads((sweep_dir / "config.json").read_text())
        storage_given = any(flag.split("=")[0] == "--sweep.storage" for flag in flags)
        if "***" in str(saved["sweep"]["storage"]) and not storage_given:
            raise ConfigError(f"{sweep_dir} was swept on {saved['sweep']['storage']}: give --sweep.storage again (its password is not saved)")
        saved["sweep"].setdefault("seeds", 1)  # a sweep saved before trials had several seeds ran one
        config = apply_flags(saved, list(flags))
    settings = config["sweep"]
    check_settings(settings)
    space = search_space(config)
    study_name = env_name if settings["study"] == "auto" else str(settings["study"])

    if not resume:
        sweep_dir = new_run_dir(data_dir, f"{env_name}_sweep")
    try:
        study, pruning_study, url = open_study(config, space, sweep_dir, study_name, resume)
    except ConfigError:
        if not resume:
            shutil.rmtree(sweep_dir)  # made just now: bad input leaves nothing behind
        raise
    print(f"Sweep of {env_name}: {len(space)} keys, {settings['trials']} trials in study {study_name!r} at {shown_url(url)}; folder {sweep_dir}")
    for key, distribution in space.items():
        print(f"  {key} = {distribution}")

    def stop_when_done(study, trial):
        if counted_trials(study) >= settings["trials"]:
            study.stop()

    interrupted = False
    try:
        if counted_trials(study) < settings["trials"]:
            study.optimize(Objective(config, space, sweep_dir, pruning_study), callbacks=[stop_when_done],
                           catch=(TrialFailed,), gc_after_trial=True)
        else:
            print(f"Study {study_name!r} already holds {settings['trials']} trials: raise --sweep.trials to run more.")
    except KeyboardInterrupt:
        interrupted = True
        print(f"\nStopped: the interrupted trial is recorded as such and does not count.\nContinue with: puffer sweep {env_name} --resume {sweep_dir}")
    best = summarize(study, env_name, settings, sweep_dir)
    return SweepResult(study, sweep_dir, best, interrupted)


def open_study(config, space, sweep_dir, study_name, resume):
    """The main study and its pruning twin, created or joined; a ConfigError, before anything is
    written to the study, when the storage cannot be used or holds a different sweep by that name."""
    settings = config["sweep"]
    url = f"sqlite:///{(sweep_dir / STUDY_FILE).resolve()}" if settings["storage"] == "auto" else str(settings["storage"])
    storage = open_storage(url)
    saved_config = copy.deepcopy(config)
    saved_config["sweep"]["storage"] = shown_url(url) if settings["storage"] != "auto" else "auto"
    definition = {key: settings[key] for key in STUDY_DEFINITION} | {"space": {k: str(d) for k, d in space.items()}}
    try:
        existing = optuna.load_study(study_name=study_name, storage=storage)
    except KeyError:
        existing = None
    recorded = existing.user_attrs.get("definition", definition) if existing is not None else definition
    if {"seeds": 1} | recorded != definition:  # a study made before trials had several seeds ran one
        raise ConfigError(
            f"study {study_name!r} in {shown_url(url)} searches something else ({existing.user_attrs['definition']}); "
            f"give another --sweep.study, or the same [sweep] settings to join it"
        )
    if resume and existing is None:
        raise ConfigError(f"--resume: no study {study_name!r} in {shown_url(url)}")
    if not resume:
        write_atomic(sweep_dir / "config.json", json.dumps(saved_config, indent=2))

    # One worker on its own SQLite file is reproducible from the seed; workers sharing a study
    # draw their own seeds, or the first trials of each would repeat one another.
    seed = config["base"]["seed"] + (len(existing.trials) if existing else 0)
    if settings["storage"] != "auto":
        seed = random.SystemRandom().randrange(2**31)
    # Each trial's outcome is printed here; Optuna's own line for a failed or interrupted trial would
    # repeat it with a traceback.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(
        study_name=study_name, storage=storage, load_if_exists=True,
        directions=[settings["direction"], "minimize"], sampler=make_sampler(settings, seed),
    )
    study.set_user_attr("definition", definition)
    pruning_study = optuna.create_study(
        study_name=f"{study_name}.pruning", storage=storage, load_if_exists=True,
        direction=settings["direction"], sampler=optuna.samplers.RandomSampler(seed=seed), pruner=make_pruner(settings),
    )
    return study, pruning_study, url
