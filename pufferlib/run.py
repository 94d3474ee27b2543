"""One training run, epoch by epoch: its folder, trainer, metrics, checkpoints and stop signals.

``TrainingRun`` is what every driver of training steps: ``puffer train`` (``train`` below, which adds
the solve check, fresh-episode scoring and the summary), sweep trials, and the scripts. Checkpoints
are written every ``checkpoint_interval`` epochs and every ``checkpoint_minutes``, and when the run
is stopped: Ctrl-C and SIGTERM (what ``timeout``, ``docker stop``, Slurm and Kubernetes send) end
it at the next step with a checkpoint of its last whole epoch.
"""

import json
import shutil
import signal
import threading
import time
from pathlib import Path

import psutil

import pufferlib.models
from pufferlib.assemble import make_policy, make_vecenv, resolve_device
from pufferlib.checkpoint import (
    BEST_NAME,
    CHECKPOINT_NAME,
    CheckpointError,
    check_architecture,
    load_weights,
    new_run_dir,
    read_checkpoint,
    resolve_checkpoint,
    save_atomic,
    write_atomic,
)
from pufferlib.config import check_config, view
from pufferlib.dashboard import Dashboard, MetricsLog, epoch_metrics, human
from pufferlib.distributed import World, make_world
from pufferlib.evaluate import SolveCheck, score_policy
from pufferlib.player import describe_stats
from pufferlib.pufferl import NonFiniteError, PuffeRL

# The shell's exit codes for a process ended by each signal: 128 + its number.
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


class RunComplete(Exception):
    """``--resume`` of a run that has already trained its ``total_timesteps``."""


class StopSignals:
    """While entered (in the main thread, where signals arrive), SIGINT and SIGTERM set
    ``trainer.stop_requested``: the rollout ends at its next step and the run saves its last whole
    epoch. A second SIGINT stops at once (KeyboardInterrupt); a second SIGTERM ends the process as
    SIGTERM always does. ``received`` is the first signal that arrived, or None."""

    def __init__(self, trainer):
        self.trainer, self.received, self.previous = trainer, None, {}

    def handle(self, signum, frame):
        self.trainer.stop_requested = True
        if self.received is None:
            self.received = signum
        signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = {signum: signal.signal(signum, self.handle) for signum in EXIT_CODES}
        return self

    def __exit__(self, *exc):
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)


class CpuClock:
    """CPU seconds spent since the clock was made by this process, every thread of it (the trainer,
    torch's threads, a native env's threads), and by the vecenv's worker processes, which
    ``time.process_time`` does not see while they run. Ray's workers are not this process's
    children and are not counted."""

    def __init__(self, vecenv):
        # Multiprocessing keeps its workers in .processes; native and Serial step envs in this process.
        self.workers = [psutil.Process(process.pid) for process in getattr(vecenv, "processes", ())]
        self.start = self.total()

    def total(self):
        seconds = time.process_time()
        for worker in self.workers:
            try:
                times = worker.cpu_times()
            except psutil.Error:  # a worker that died: the vecenv stops the run with its error
                continue
            seconds += times.user + times.system
        return seconds

    def __call__(self):
        return self.total() - self.start


def build_trainer(env_name, config, world=None, trainer_class=PuffeRL):
    """The envs, the policy and the trainer over them, as every run and benchmark builds them; the
    envs are closed again if the trainer cannot be built."""
    vecenv = make_vecenv(env_name, config)
    try:
        return trainer_class(config, vecenv, make_policy(vecenv, config), world)
    except BaseException:
        vecenv.close()
        raise


class TrainingRun:
    """A run folder with its trainer (new, from saved weights, or resumed from its checkpoint),
    its metrics log and its checkpoints. ``epoch()`` trains one; ``close()`` releases everything.

    ``world`` is the data-parallel group (a single process when None); rank 0 alone writes the
    folder. ``run_dir`` names the folder of a new run (default: a new one under ``data_dir``)."""

    def __init__(self, env_name, config, world=None, resume=None, load_model_path=None, run_dir=None, group=None):
        check_config(config)
        self.env_name, self.config, self.world = env_name, config, world or World()
        self.train_settings = train = view(config, "train")
        self.is_main = self.world.is_main
        self.checkpoint = None
        # A folder this run makes is removed again if the run never starts; one given is the caller's.
        self.owns_folder = not resume and run_dir is None
        if resume:
            self.checkpoint = read_checkpoint(resolve_checkpoint(resume, train.data_dir, env_name))
            if self.checkpoint["env_name"] != env_name:
                raise CheckpointError(f"{self.checkpoint['path']} was trained on {self.checkpoint['env_name']}, not {env_name}")
            run_dir = Path(self.checkpoint["path"]).parent
        elif run_dir is None:
            run_dir = self.world.decide(str(new_run_dir(train.data_dir, env_name)) if self.is_main else None)
        self.run_dir = Path(run_dir)
        self.checkpoint_path = self.run_dir / CHECKPOINT_NAME
        try:
            self.trainer = self.start_trainer(load_model_path)
        except BaseException:
            self.abandon()
            raise
        try:
            self.metrics = MetricsLog(self.run_dir, config, resume_epoch=self.trainer.epoch if self.checkpoint else None,
                                      group=group) if self.is_main else None
        except BaseException:
            self.trainer.close()
            self.abandon()
            raise
        self.last_checkpoint_time = time.monotonic()
        self.sps = 0.0

    def abandon(self):
        """A new run that never started leaves no folder behind."""
        if self.is_main and self.owns_folder:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def start_trainer(self, load_model_path):
        config, train = self.config, self.train_settings
        trainer = build_trainer(self.env_name, config, self.world)
        try:
            if self.checkpoint:
                trainer.load_checkpoint(self.checkpoint)
                if trainer.epoch >= trainer.total_epochs:
                    raise RunComplete(
                        f"{self.run_dir} is complete: it trained {human(trainer.global_step)} of its "
                        f"{human(train.total_timesteps)} steps. To train it further, give it a larger budget: "
                        f"puffer train {self.env_name} --resume {self.run_dir} --train.total-timesteps N"
                    )
            elif load_model_path:
                weights = read_checkpoint(resolve_checkpoint(load_model_path, train.data_dir, self.env_name))
                check_architecture(weights, trainer.policy, trainer.vecenv)
                load_weights(trainer.policy, weights)
        except BaseException:
            trainer.close()
            raise
        if self.is_main:
            write_atomic(self.run_dir / "config.json", json.dumps(config, indent=2))
        return trainer

    @property
    def extended_from(self):
        """The budget a resumed run was started with, when this one gives it a larger one."""
        if not self.checkpoint:
            return None
        before = self.checkpoint["config"]["train"]["total_timesteps"]
        return before if before < self.train_settings.total_timesteps else None

    def epoch(self):
        """Collects a batch and trains on it; False when a stop was asked for before the batch was
        whole (the trainer keeps its last whole epoch)."""
        trainer = self.trainer
        epoch_start, step_start = time.time(), trainer.global_step
        if not trainer.collect():
            return False
        try:
            trainer.train()
        except NonFiniteError as error:
            saved = f"the last checkpoint ({self.checkpoint_path}) holds step {read_checkpoint(self.checkpoint_path)['global_step']}" \
                if self.checkpoint_path.is_file() else "no checkpoint was written before it"
            raise NonFiniteError(f"{error} ({saved})") from None
        self.sps = (trainer.global_step - step_start) / max(time.time() - epoch_start, 1e-9)
        if self.metrics:
            self.metrics.log(epoch_metrics(trainer, self.sps))
        return True

    @property
    def finished(self):
        return self.trainer.epoch >= self.trainer.total_epochs

    def checkpoint_due(self):
        """Whether the epoch or the clock interval has passed since the last checkpoint."""
        every_epochs, every_minutes = self.train_settings.checkpoint_interval, self.train_settings.checkpoint_minutes
        by_epoch = every_epochs and self.trainer.epoch % every_epochs == 0
        by_clock = every_minutes and time.monotonic() - self.last_checkpoint_time >= 60 * every_minutes
        return bool(by_epoch or by_clock)

    def save_checkpoint(self, **extra):
        """The trainer's state (and ``extra`` entries) to checkpoint.pt, atomically, by rank 0."""
        if self.is_main:
            save_atomic({**self.trainer.state_dict(), **extra}, self.checkpoint_path)
        self.last_checkpoint_time = time.monotonic()

    def stop_agreed(self):
        """Whether any rank was asked to stop; ranks stop together, between epochs."""
        if self.world.size > 1 and self.world.decide(self.trainer.stop_requested):
            self.trainer.stop_requested = True
        return self.trainer.stop_requested

    def close(self):
        if self.metrics:
            self.metrics.close()
        self.trainer.close()


def solve_target(config, env):
    base = view(config, "base")
    if base.solve_score == "auto":
        inner = getattr(env, "driver_env", env)
        return getattr(inner, "optimal_score", None)
    return base.solve_score


def describe_target(config, target):
    base = view(config, "base")
    what = "the optimal score" if base.solve_score == "auto" else f"the target {base.solve_metric}"
    within = f" within {base.solve_tolerance:g}" if base.solve_tolerance else ""
    return f"{what} {target:.4g}{within}"


def describe_value(value):
    return "none: no episode ended" if value is None else f"{value:.4f}"


def scoring_env_count(num_envs, episodes):
    """Envs for fresh-episode scoring: the smallest divisor of the training count that holds
    ``episodes`` envs. Scoring waits until every env has ended an episode, so thousands of envs
    (a GPU run's) would wait on the longest of thousands of episodes; a divisor keeps envs that
    group agents (boards, self-play pairs) whole."""
    return next(count for count in range(1, num_envs + 1) if num_envs % count == 0 and count >= min(episodes, num_envs))


def train(env_name, config, resume=None, load_model_path=None):
    """Trains until total_timesteps; returns the trainer (closed) for inspection, with
    ``final_score`` (the final policy's statistics on fresh episodes), ``interrupted``, the
    ``stop_signal`` that stopped it (or None) and its ``run_dir``.

    ``resume`` continues a run from its checkpoint in its own directory; ``load_model_path`` starts
    a new run from saved weights only. Under torchrun, every rank runs this; rank 0 alone writes
    the run folder and prints.
    """
    check_config(config)
    world = make_world(config, resolve_device(config["train"]["device"]))
    completed = False
    try:
        trainer = train_run(env_name, config, world, resume, load_model_path)
        completed = True
        return trainer
    finally:
        world.close(completed)


def train_run(env_name, config, world, resume, load_model_path):
    base = view(config, "base")
    run = TrainingRun(env_name, config, world, resume=resume, load_model_path=load_model_path)
    trainer, vecenv, run_dir = run.trainer, run.trainer.vecenv, run.run_dir
    main = run.is_main

    target = solve_target(config, vecenv)
    solve_check = SolveCheck(base.solve_metric, target, base.solve_tolerance, base.solve_episodes)
    # Fresh-episode scoring plays envs of its own (on the CPU: an env's GPU version is the same
    # game), fewer than training's: their workers and batches are the backend's choice. Ray's
    # would wait for CPUs that training's actors hold, so they step in this process instead.
    backend = "Serial" if str(config["vec"]["backend"]).lower() == "ray" else config["vec"]["backend"]
    scoring_config = {**config, "vec": {**config["vec"], "backend": backend, "device": "cpu", "num_workers": "auto",
                                        "batch_size": "auto"}}
    scoring_envs = []

    def scoring_env():
        if not scoring_envs:
            num_envs = scoring_env_count(vecenv.num_envs, base.solve_episodes)
            scoring_envs.append(make_vecenv(env_name, scoring_config, num_envs=num_envs))
        return scoring_envs[0]

    def scoring_seed():
        return base.seed + 1_000_003 * trainer.epoch + 500_009

    def score_now():
        return score_policy(trainer, scoring_env(), scoring_seed(), base.solve_episodes, base.score_max_steps)

    best = [run.checkpoint.get("best") if run.checkpoint else None]  # (value, step) of best.pt

    def keep_if_best(stats):
        value = stats.get(base.solve_metric)
        if value is not None and (best[0] is None or value > best[0][0]):
            best[0] = (value, trainer.global_step)
            save_atomic({**trainer.state_dict(), "best": best[0]}, run_dir / BEST_NAME)

    dashboard = Dashboard(trainer, run_dir, config["train"]["dashboard"] if main else "off", config["train"]["print_interval"])
    ranks = f" x {world.size} ranks" if world.size > 1 else ""
    dashboard.say(
        f"Training {env_name} on {trainer.device}{ranks}: {pufferlib.models.describe(trainer.policy)}, {trainer.num_agents} agents, "
        f"batch {trainer.batch_size}, {trainer.total_minibatches} minibatches of {trainer.minibatch_segments * trainer.horizon}, "
        f"{human(trainer.total_epochs * trainer.batch_size * world.size)} steps. Run: {run_dir}"
    )
    if run.extended_from:
        dashboard.say(f"Extending the run from {human(run.extended_from)} to {human(config['train']['total_timesteps'])} steps: "
                      f"the learning rate's schedule now spans the larger budget")
    trainer.final_score = {}
    try:
        with StopSignals(trainer) as stop:
            while not run.finished:
                if not run.epoch():
                    break
                if trainer.solved is None and solve_check.candidate(trainer.episode_stats):
                    reached, stats = world.decide(
                        solve_check.confirm(trainer, scoring_env(), scoring_seed(), base.score_max_steps) if main else None
                    )
                    value = stats.get(base.solve_metric)
                    if main:
                        keep_if_best(stats)
                    if reached:
                        trainer.solved = (trainer.global_step, trainer.seconds(), value)
                        dashboard.say(
                            f"Solved: {describe_target(config, target)} at step {human(trainer.global_step)}, "
                            f"{trainer.seconds():.1f} s into training ({base.solve_metric} {value:.4f} on "
                            f"{stats['episodes']:.0f} fresh episodes)"
                        )
                        if base.stop_on_solve:
                            break
                    else:
                        solve_check.recent.clear()
                        dashboard.say(
                            f"Training episodes reached {describe_target(config, target)} at step {human(trainer.global_step)}, "
                            f"fresh episodes did not ({base.solve_metric} {describe_value(value)}): training on"
                        )
                if run.checkpoint_due():
                    run.save_checkpoint(best=best[0])
                    if main and target is not None:
                        keep_if_best(score_now())
                dashboard.refresh(run.sps)
                if run.stop_agreed():
                    break
            trainer.interrupted = trainer.stop_requested
            trainer.stop_signal = stop.received
            if main and not trainer.interrupted:
                dashboard.say(f"Scoring the final policy on {base.solve_episodes} fresh episodes or more")
                trainer.final_score = score_now()
                keep_if_best(trainer.final_score)
            run.save_checkpoint(best=best[0])
        dashboard.refresh(force=True)
    finally:
        dashboard.close()
        run.close()
        for env in scoring_envs:
            env.close()

    if main:
        print_summary(env_name, config, trainer, target, best[0], run_dir)
    trainer.run_dir = run_dir
    return trainer


def print_summary(env_name, config, trainer, target, best, run_dir):
    """The run's last words: what the final policy does on fresh episodes, against the target,
    and the commands that continue, play and plot this very run."""
    base = view(config, "base")
    checkpoint_path = run_dir / CHECKPOINT_NAME
    if trainer.interrupted:
        by = {signal.SIGTERM: " by SIGTERM"}.get(getattr(trainer, "stop_signal", None), "")
        print(f"Stopped{by} at step {trainer.global_step}: checkpoint saved to {checkpoint_path}")
        print(f"Continue with: puffer train {env_name} --resume {run_dir}")
    else:
        stats = trainer.final_score
        episode_stats = {k: v for k, v in stats.items() if k != "episodes"}
        shown = describe_stats(episode_stats, base.solve_metric) or "no episode finished"
        print(f"Finished {human(trainer.global_step)} steps in {trainer.seconds():.1f} s. Final policy on "
              f"{stats.get('episodes', 0):.0f} fresh episodes: {shown}")
        if target is not None:
            value = stats.get(base.solve_metric)
            if value is not None and value >= target - base.solve_tolerance:
                print(f"Solved: the final policy holds {describe_target(config, target)} ({base.solve_metric} {value:.4f}).")
            else:
                print(f"Not solved: the final policy scores {describe_value(value)}, short of {describe_target(config, target)}.")
            if trainer.solved:
                step, seconds, solved_value = trainer.solved
                print(f"First reached at step {human(step)}, after {seconds:.1f} s ({solved_value:.4f} on fresh episodes).")
    if best is not None and best[0] > trainer.final_score.get(base.solve_metric, float("-inf")):
        print(f"Best policy: {run_dir / BEST_NAME} ({base.solve_metric} {best[0]:.4f} at step {human(best[1])})")
    print(f"Checkpoint: {checkpoint_path}\nEval: puffer eval {env_name} --load-model-path {run_dir}\nPlot: puffer plot {run_dir}")
