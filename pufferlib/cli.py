"""The ``puffer`` command: train, eval, bench, sweep, watch, list, plot and tank. Nothing imports this module.

    puffer train puffer_squared --train.learning-rate 0.01
"""

import argparse
import json
import re
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import torch

import pufferlib
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
    run_dirs,
    save_atomic,
    write_atomic,
)
from pufferlib.config import (
    DEFAULT_CONFIG,
    ConfigError,
    apply_config_file,
    apply_flags,
    canonical_env_name,
    config_file_path,
    env_config_files,
    flag_descriptions,
    format_flags,
    load_config,
    read_ini,
    recipe_files,
)
from pufferlib.dashboard import Dashboard, MetricsLog, epoch_metrics, human
from pufferlib.distributed import make_world
from pufferlib.environment import mean_infos
from pufferlib.evaluate import SolveCheck, score_policy
from pufferlib.exceptions import APIUsageError, ParameterError, did_you_mean
from pufferlib.pufferl import NonFiniteError, PuffeRL
from pufferlib.pytorch import clear_finished, sample_logits


def solve_target(config, env):
    base = config["base"]
    if base["solve_score"] == "auto":
        inner = getattr(env, "driver_env", env)
        return getattr(inner, "optimal_score", None)
    return base["solve_score"]


def describe_target(config, target):
    base = config["base"]
    what = "the optimal score" if base["solve_score"] == "auto" else f"the target {base['solve_metric']}"
    within = f" within {base['solve_tolerance']:g}" if base["solve_tolerance"] else ""
    return f"{what} {target:.4g}{within}"


def train(env_name, config, resume=None, load_model_path=None):
    """Trains until total_timesteps; returns the trainer (closed) for inspection, with
    ``final_score`` (the final policy's statistics on fresh episodes) and ``interrupted``.

    ``resume`` continues a run from its checkpoint in its own directory; ``load_model_path`` starts
    a new run from saved weights only. Ctrl-C (in the main thread) stops at the next step, saves a
    checkpoint of the last whole epoch and returns; a second Ctrl-C stops at once. Under torchrun,
    every rank runs this; rank 0 alone writes the run folder and prints.
    """
    world = make_world(config, resolve_device(config["train"]["device"]))
    completed = False
    try:
        trainer = train_ranks(env_name, config, world, resume, load_model_path)
        completed = True
        return trainer
    finally:
        world.close(completed)


def scoring_env_count(num_envs, episodes):
    """Envs for fresh-episode scoring: the smallest divisor of the training count that holds
    ``episodes`` envs. Scoring waits until every env has ended an episode, so thousands of envs
    (a GPU run's) would wait on the longest of thousands of episodes; a divisor keeps envs that
    group agents (boards, self-play pairs) whole."""
    return next(count for count in range(1, num_envs + 1) if num_envs % count == 0 and count >= min(episodes, num_envs))


def train_ranks(env_name, config, world, resume, load_model_path):
    train_config, base = config["train"], config["base"]
    main = world.is_main
    world.place(config)
    checkpoint = None
    if resume:
        checkpoint = read_checkpoint(resolve_checkpoint(resume, train_config["data_dir"], env_name))
        if checkpoint["env_name"] != env_name:
            raise CheckpointError(f"{checkpoint['path']} was trained on {checkpoint['env_name']}, not {env_name}")
        run_dir = Path(checkpoint["path"]).parent
    else:
        run_dir = Path(world.decide(str(new_run_dir(train_config["data_dir"], env_name)) if main else None))

    def abandon():  # a run that never started leaves no folder behind
        if main and not checkpoint:
            shutil.rmtree(run_dir, ignore_errors=True)

    try:
        trainer = start_trainer(env_name, config, world, checkpoint, load_model_path, run_dir)
    except BaseException:
        abandon()
        raise
    vecenv, policy = trainer.vecenv, trainer.policy

    target = solve_target(config, vecenv)
    solve_check = SolveCheck(base["solve_metric"], target, base["solve_tolerance"], base["solve_episodes"])
    # Fresh-episode scoring plays envs of its own (on the CPU: an env's GPU version is the same
    # game), fewer than training's: their workers and batches are the backend's choice.
    scoring_config = {**config, "vec": {**config["vec"], "device": "cpu", "num_workers": "auto", "batch_size": "auto"}}
    scoring_envs = []

    def scoring_env():
        if not scoring_envs:
            num_envs = scoring_env_count(vecenv.num_envs, base["solve_episodes"])
            scoring_envs.append(make_vecenv(env_name, scoring_config, num_envs=num_envs))
        return scoring_envs[0]

    def scoring_seed():
        return base["seed"] + 1_000_003 * trainer.epoch + 500_009

    def score_now():
        return score_policy(trainer, scoring_env(), scoring_seed(), base["solve_episodes"], base["score_max_steps"])

    best_path, checkpoint_path = run_dir / BEST_NAME, run_dir / CHECKPOINT_NAME
    best = [checkpoint.get("best") if checkpoint else None]  # (value, step) of best.pt

    def keep_if_best(stats):
        value = stats.get(base["solve_metric"])
        if value is not None and (best[0] is None or value > best[0][0]):
            best[0] = (value, trainer.global_step)
            save_atomic({**trainer.state_dict(), "best": best[0]}, best_path)

    try:
        metrics = MetricsLog(run_dir, config, resume_epoch=trainer.epoch if checkpoint else None) if main else None
    except BaseException:
        trainer.close()
        abandon()
        raise
    dashboard = Dashboard(trainer, run_dir, train_config["dashboard"] if main else "off", train_config["print_interval"])
    ranks = f" x {world.size} ranks" if world.size > 1 else ""
    dashboard.say(
        f"Training {env_name} on {trainer.device}{ranks}: {pufferlib.models.describe(policy)}, {trainer.num_agents} agents, "
        f"batch {trainer.batch_size}, {trainer.total_minibatches} minibatches of {trainer.minibatch_segments * trainer.horizon}, "
        f"{human(trainer.total_epochs * trainer.batch_size * world.size)} steps. Run: {run_dir}"
    )

    def on_interrupt(signum, frame):
        trainer.stop_requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C stops at once

    handle_interrupt = threading.current_thread() is threading.main_thread()  # where signals arrive
    previous_handler = signal.signal(signal.SIGINT, on_interrupt) if handle_interrupt else None
    trainer.final_score = {}
    try:
        while trainer.epoch < trainer.total_epochs:
            epoch_start, step_start = time.time(), trainer.global_step
            if not trainer.collect():
                break
            trainer.train()
            sps = (trainer.global_step - step_start) / max(time.time() - epoch_start, 1e-9)
            if metrics:
                metrics.log(epoch_metrics(trainer, sps))
            if trainer.solved is None and solve_check.candidate(trainer.episode_stats):
                reached, stats = world.decide(
                    solve_check.confirm(trainer, scoring_env(), scoring_seed(), base["score_max_steps"]) if main else None
                )
                value = stats.get(base["solve_metric"])
                if main:
                    keep_if_best(stats)
                if reached:
                    trainer.solved = (trainer.global_step, trainer.seconds(), value)
                    dashboard.say(
                        f"Solved: {describe_target(config, target)} at step {human(trainer.global_step)}, "
                        f"{trainer.seconds():.1f} s into training ({base['solve_metric']} {value:.4f} on "
                        f"{stats['episodes']:.0f} fresh episodes)"
                    )
                    if base["stop_on_solve"]:
                        break
                else:
                    solve_check.recent.clear()
                    dashboard.say(
                        f"Training episodes reached {describe_target(config, target)} at step {human(trainer.global_step)}, "
                        f"fresh episodes did not ({base['solve_metric']} {describe_value(value)}): training on"
                    )
            if main and train_config["checkpoint_interval"] and trainer.epoch % train_config["checkpoint_interval"] == 0:
                trainer.save_checkpoint(checkpoint_path)
                if target is not None:
                    keep_if_best(score_now())
            dashboard.refresh(sps)
            if world.size > 1 and world.decide(trainer.stop_requested):
                trainer.stop_requested = True
                break
        trainer.interrupted = trainer.stop_requested
        if main:
            if not trainer.interrupted:
                dashboard.say(f"Scoring the final policy on {base['solve_episodes']} fresh episodes or more")
                trainer.final_score = score_now()
                keep_if_best(trainer.final_score)
            save_atomic({**trainer.state_dict(), "best": best[0]}, checkpoint_path)
        dashboard.refresh(force=True)
    finally:
        dashboard.close()
        if metrics:
            metrics.close()
        trainer.close()
        for env in scoring_envs:
            env.close()
        if handle_interrupt:
            signal.signal(signal.SIGINT, previous_handler)

    if main:
        print_summary(env_name, config, trainer, target, best[0], run_dir)
    trainer.run_dir = run_dir
    return trainer


class RunComplete(Exception):
    """``--resume`` of a run that has already trained its ``total_timesteps``."""


def start_trainer(env_name, config, world, checkpoint, load_model_path, run_dir):
    """The trainer of a new run (from scratch or from saved weights) or of a resumed one."""
    train_config = config["train"]
    vecenv = make_vecenv(env_name, config)
    try:
        trainer = PuffeRL(config, vecenv, make_policy(vecenv, config), world)
    except BaseException:
        vecenv.close()
        raise
    try:
        if checkpoint:
            trainer.load_checkpoint(checkpoint)
            if trainer.epoch >= trainer.total_epochs:
                raise RunComplete(
                    f"{run_dir} is complete: it trained {human(trainer.global_step)} of its "
                    f"{human(train_config['total_timesteps'])} steps. To train it further, give it a larger budget: "
                    f"puffer train {env_name} --resume {run_dir} --train.total-timesteps N"
                )
        elif load_model_path:
            weights = read_checkpoint(resolve_checkpoint(load_model_path, train_config["data_dir"], env_name))
            check_architecture(weights, trainer.policy, trainer.vecenv)
            load_weights(trainer.policy, weights)
    except BaseException:
        trainer.close()
        raise
    if world.is_main:
        write_atomic(run_dir / "config.json", json.dumps(config, indent=2))
    return trainer


def describe_value(value):
    return "none: no episode ended" if value is None else f"{value:.4f}"


def describe_stats(stats, solve_metric):
    """Episode statistics for a summary line. Those at 0 are counted rather than listed (a short
    Craftax run reaches a few of its 67 achievements), except the solve metric."""
    shown = [f"{k} {v:.4g}" for k, v in stats.items() if v != 0 or k == solve_metric]
    zeros = sum(1 for k, v in stats.items() if k != solve_metric and v == 0)
    if zeros:
        shown.append(f"{zeros} more at 0")
    return ", ".join(shown)


def print_summary(env_name, config, trainer, target, best, run_dir):
    """The run's last words: what the final policy does on fresh episodes, against the target."""
    base = config["base"]
    checkpoint_path = run_dir / CHECKPOINT_NAME
    if trainer.interrupted:
        print(f"Interrupted at step {trainer.global_step}: checkpoint saved to {checkpoint_path}")
        print(f"Continue with: puffer train {env_name} --resume {run_dir}")
    else:
        stats = trainer.final_score
        episode_stats = {k: v for k, v in stats.items() if k != "episodes"}
        shown = describe_stats(episode_stats, base["solve_metric"]) or "no episode finished"
        print(f"Finished {human(trainer.global_step)} steps in {trainer.seconds():.1f} s. Final policy on "
              f"{stats.get('episodes', 0):.0f} fresh episodes: {shown}")
        if target is not None:
            value = stats.get(base["solve_metric"])
            if value is not None and value >= target - base["solve_tolerance"]:
                print(f"Solved: the final policy holds {describe_target(config, target)} ({base['solve_metric']} {value:.4f}).")
            else:
                print(f"Not solved: the final policy scores {describe_value(value)}, short of {describe_target(config, target)}.")
            if trainer.solved:
                step, seconds, solved_value = trainer.solved
                print(f"First reached at step {human(step)}, after {seconds:.1f} s ({solved_value:.4f} on fresh episodes).")
    if best is not None and best[0] > trainer.final_score.get(base["solve_metric"], float("-inf")):
        print(f"Best policy: {run_dir / BEST_NAME} ({base['solve_metric']} {best[0]:.4f} at step {human(best[1])})")
    print(f"Checkpoint: {checkpoint_path}\nEval: puffer eval {env_name} --load-model-path latest\nPlot: puffer plot {run_dir}")


ANSI_CODE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Playback:
    """Shows an eval's frames: ANSI text redrawn in place on a terminal (plain text, one frame
    after another, when stdout is a file or a pipe), RGB frames kept for a GIF or MP4."""

    def __init__(self, fps):
        self.terminal = sys.stdout.isatty()
        self.delay = 1.0 / fps if fps > 0 and self.terminal else 0.0
        self.frames = []

    def show(self, frame, status):
        if isinstance(frame, str):
            if self.terminal:
                sys.stdout.write("\033[H\033[2J" + frame + f"\n{status}\n")
            else:
                sys.stdout.write(ANSI_CODE.sub("", frame) + f"\n{status}\n\n")
            sys.stdout.flush()
            time.sleep(self.delay)
        elif frame is not None:
            self.frames.append(np.asarray(frame))

    def save(self, output, fps):
        """Writes the RGB frames to ``output``; returns how many frames the file holds."""
        try:
            import imageio.v2 as imageio
        except ImportError:
            raise ConfigError("Saving RGB frames needs imageio: pip install imageio (and imageio-ffmpeg for .mp4)") from None
        gif = str(output).lower().endswith(".gif")
        timing = dict(duration=1000 / max(fps, 1)) if gif else dict(fps=max(fps, 1))  # GIFs time frames in ms
        try:
            imageio.mimsave(output, self.frames, **timing)
        except ValueError as error:  # imageio's word for a format it has no backend for
            first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ConfigError(f"--eval.output {output}: {first_line} Save a .gif, or pip install imageio-ffmpeg for .mp4") from None
        if gif:
            from PIL import Image  # imageio's GIF writer

            with Image.open(output) as image:
                return image.n_frames
        return len(self.frames)


def evaluate_policy(env_name, config, checkpoint):
    """Runs a trained policy in one env and shows agent 0's episodes: ANSI text in the terminal for
    Ocean envs (each episode to its final frame), a GIF or MP4 (imageio) for envs that render RGB
    frames. ``config`` is normally the run's own (from the checkpoint) with the command's flags
    applied."""
    eval_config = config["eval"]
    if checkpoint["env_name"] != env_name:
        raise CheckpointError(f"{checkpoint['path']} was trained on {checkpoint['env_name']}, not {env_name}")
    device = resolve_device(config["train"]["device"])
    # A policy trained on an env's GPU version plays its CPU version: the same game, bit for bit.
    config["vec"]["device"] = "cpu"
    env = make_vecenv(env_name, config, num_envs=eval_config["num_envs"])
    policy = make_policy(env, config).to(device)
    check_architecture(checkpoint, policy, env)
    load_weights(policy, checkpoint)
    policy.eval()
    # The step that ends an episode returns the next one's first frame; an env that can keeps the
    # final frame, so the episode is seen to its end.
    driver = getattr(env, "driver_env", env)
    final_frames = hasattr(driver, "keep_final_frames")
    if final_frames:
        driver.keep_final_frames()

    generator = torch.Generator(device=device)
    generator.manual_seed(config["base"]["seed"])
    env.async_reset(config["base"]["seed"])
    state = policy.initial_state(env.num_agents, device)
    playback = Playback(eval_config["fps"])
    episodes = eval_config["episodes"]
    returns, infos, steps = [], [], 0
    episode_return, episode_length = 0.0, 0
    print(f"Evaluating {checkpoint['path']} on {env_name} ({pufferlib.models.describe(policy)}): {episodes} episodes of agent 0")
    try:
        while steps < eval_config["max_steps"]:
            obs, rewards, terminals, truncations, step_infos, env_ids, masks = env.recv()
            infos.extend(step_infos if isinstance(step_infos, list) else [step_infos])
            if steps > 0:  # agent 0, the one rendered, is followed episode by episode
                episode_return += float(rewards[0])
                episode_length += 1
                if terminals[0] or truncations[0]:
                    returns.append(episode_return)
                    ended = f"Episode {len(returns)} of {episodes}: return {episode_return:.4g}, length {episode_length}"
                    if final_frames:
                        playback.show(driver.final_frame(0), ended)
                    if not playback.terminal or not final_frames:
                        print(ended)
                    episode_return, episode_length = 0.0, 0
                    if len(returns) >= episodes:
                        break
            playback.show(env.render(), f"episode {len(returns) + 1} of {episodes}  step {episode_length}  "
                                        f"reward {float(rewards[0]):+.3f}  return {episode_return:.4g}")
            with torch.inference_mode():
                state = clear_finished(state, torch.as_tensor(np.logical_or(terminals, truncations), device=device))
                logits, _, state = policy.forward_eval(torch.as_tensor(obs).to(device), state)
                action, _, _ = sample_logits(logits, generator=generator)
            env.send(action.cpu().numpy())
            steps += 1
    except KeyboardInterrupt:
        print("\nStopped.")
    finally:
        env.close()
    stats = mean_infos(infos)
    if len(returns) < episodes:
        print(f"Stopped after {steps} steps ([eval] max_steps) with {len(returns)} of {episodes} episodes finished")
    if returns:
        print(f"Mean return of agent 0 over {len(returns)} episodes: {np.mean(returns):.4g}")
    if stats:
        print("Env episode statistics (all agents): " + describe_stats(stats, config["base"]["solve_metric"]))
    if playback.frames:
        output = eval_config["output"]
        if output == "auto":
            output = str(Path(checkpoint["path"]).parent / "eval.gif")
        stored = playback.save(output, eval_config["fps"])
        merged = f" ({len(playback.frames)} steps: a GIF stores repeated frames once, shown for longer)" if stored != len(playback.frames) else ""
        print(f"Saved {stored} frames to {output}{merged}")
    return stats


def env_steps_per_second(env, seconds, seed):
    """Steps ``env`` with uniform random actions for ``seconds``; an env with device hooks is
    stepped on its device with actions drawn there."""
    space = env.single_action_space
    steps, start = 0, time.time()
    if hasattr(env, "gpu_step"):
        env.gpu_reset(seed)
        generator = torch.Generator(device=env.device)
        generator.manual_seed(seed)
        while time.time() - start < seconds:
            for _ in range(100):
                env.gpu_step(torch.randint(0, space.n, (env.num_agents,), device=env.device, generator=generator))
            torch.cuda.synchronize(env.device)
            steps += 100 * env.num_agents
        return steps / (time.time() - start)
    env.async_reset(seed)
    rng = np.random.default_rng(seed)
    env.recv()
    while time.time() - start < seconds:
        if hasattr(space, "nvec"):
            actions = rng.integers(0, space.nvec, size=(env.num_agents, *space.shape))
        elif hasattr(space, "n"):
            actions = rng.integers(0, space.n, size=env.num_agents)
        else:
            actions = rng.uniform(space.low, space.high, size=(env.num_agents, *space.shape)).astype(space.dtype)
        env.send(actions)
        _, _, _, _, _, env_ids, _ = env.recv()
        steps += len(env_ids)
    return steps / (time.time() - start)


def bench(env_name, config):
    """Env-only SPS (random actions, no policy) and full training SPS, `[bench] seconds` each."""
    seconds = config["bench"]["seconds"]
    env = make_vecenv(env_name, config)
    env_sps = env_steps_per_second(env, seconds, config["base"]["seed"])
    env.close()

    vecenv = make_vecenv(env_name, config)
    trainer = PuffeRL(config, vecenv, make_policy(vecenv, config))
    trainer.collect()
    trainer.train()  # warm-up: first-call allocations (and compilation on GPU)
    step0, start, rollout, learn = trainer.global_step, time.time(), 0.0, 0.0
    while time.time() - start < seconds:
        trainer.collect()
        trainer.train()
        rollout += trainer.timings["rollout"]
        learn += trainer.timings["train"]
    elapsed = time.time() - start
    train_sps = (trainer.global_step - step0) / elapsed
    trainer.close()
    result = dict(env=env_name, device=trainer.device, policy=pufferlib.models.describe(trainer.policy),
                  num_agents=trainer.num_agents, env_sps=env_sps, train_sps=train_sps,
                  rollout_fraction=rollout / elapsed, train_fraction=learn / elapsed)
    print(f"{env_name}: env {human(env_sps)} SPS (random actions), training {human(train_sps)} SPS "
          f"({result['rollout_fraction']:.0%} rollout, {result['train_fraction']:.0%} update) on {trainer.device}, "
          f"{trainer.num_agents} agents, {result['policy']}")
    return result


def list_envs():
    files = env_config_files()
    print(f"{'env':<24} config")
    for name in sorted(files):
        print(f"{name:<24} {files[name]}")


def plot(runs, metric, output, data_dir):
    """Draws `metric` against steps for each run (a run directory, its metrics.jsonl, or an env
    name meaning that env's newest run) into one PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("puffer plot needs matplotlib: pip install matplotlib") from None
    figure, axes = plt.subplots(figsize=(8, 5))
    first_dir = None
    for run in runs:
        path = Path(run)
        if not path.exists():
            found = run_dirs(data_dir, canonical_env_name(run))
            if not found:
                raise ConfigError(f"{run!r} is neither a run directory, a metrics file, nor an env with runs under {data_dir}/")
            path = found[-1]
        metrics_file = path / "metrics.jsonl" if path.is_dir() else path
        rows = [json.loads(line) for line in open(metrics_file) if line.strip()]
        points = [(row["step"], row[metric]) for row in rows if isinstance(row.get(metric), (int, float))]
        if not points:
            known = sorted({key for row in rows for key in row})
            raise ConfigError(f"{metrics_file} has no {metric!r}; it has: {', '.join(known)}")
        axes.plot(*zip(*points), label=metrics_file.parent.name)
        first_dir = first_dir or metrics_file.parent
    axes.set_xlabel("environment steps")
    axes.set_ylabel(metric)
    axes.grid(alpha=0.3)
    axes.legend()
    output = Path(output) if output else first_dir / f"{metric.replace('/', '_')}.png"
    figure.tight_layout()
    figure.savefig(output, dpi=120)
    print(f"Saved {output}")
    return output


USAGE = """usage: puffer COMMAND [ENV] [--section.key value ...]

commands:
  train ENV              train; --resume [latest|RUN] continues a run, --load-model-path PATH starts from weights
  eval ENV               render a trained policy: --load-model-path latest|RUN|FILE (default latest)
  bench ENV              env-only and training steps per second
  sweep ENV              hyperparameter search ([sweep] section): Pareto front of score against cost;
                         --resume [latest|SWEEP] continues one, --sweep.storage postgresql://... shares one
  list                   envs with configs
  plot RUN|ENV [...]     learning curves to PNG: --metric env/score --output FILE
  watch ENV              a web page on localhost: the policy playing and the newest run's live curve;
                         --load-model-path PATH, --port 8000, --metric env/score
  tank ...               build and run the PufferTank containers

options:
  -h, --help             this help; `puffer COMMAND --help` lists a command's flags with their descriptions
  --version              the version of pufferlib

Every key of pufferlib/configs/default.ini and of the env's .ini is a flag: --train.learning-rate 0.01,
--env.size 11, --vec.num-envs 512. `puffer train ENV --help` lists them with the env's values.
--config FILE overlays an .ini on the env's config (a sweep's best.ini, say) before the flags;
--config NAME, one of the recipes the env ships beside its .ini (puffer_craftax_compact: gpu)."""

# Each command's own options: (flag, what it takes).
COMMAND_OPTIONS = {
    "train": [("--resume [latest|RUN]", "continue a run from its checkpoint, with its own settings (flags given now still apply)"),
              ("--load-model-path latest|RUN|FILE", "start a new run from these weights"),
              ("--config FILE|NAME", "overlay an .ini (a sweep's best.ini, say, or a recipe the env ships) on the env's config before the flags")],
    "eval": [("--load-model-path latest|RUN|FILE", "the policy to play (default: latest, the env's newest run)")],
    "bench": [("--config FILE|NAME", "overlay an .ini (or a recipe the env ships) on the env's config before the flags")],
    "sweep": [("--resume [latest|SWEEP]", "continue a sweep"),
              ("--config FILE|NAME", "overlay an .ini (or a recipe the env ships) on the env's config before the flags")],
    "watch": [("--load-model-path latest|RUN|FILE", "the policy to play (default: the newest run's best, else its last)"),
              ("--port N", "the localhost port to serve on (default 8000; 0 takes any free one)"),
              ("--metric NAME", "the metrics.jsonl column the live curve draws (default: env/score)")],
}
COMMAND_SUMMARIES = {
    "train": "train a policy on ENV",
    "eval": "play a trained policy on ENV and show it (the run's own settings, with these flags applied)",
    "bench": "steps per second of ENV alone (random actions) and of training on it",
    "sweep": "search hyperparameters for ENV ([sweep] section)",
    "watch": "a web page on localhost: the policy playing ENV and the newest run's live learning curve",
}
# The config keys each command reads; a flag for another key does nothing there, so it is refused.
EVAL_KEYS = {("base", "seed"), ("train", "device"), ("train", "data_dir")}


def command_uses(command):
    """``allowed(section, key)`` for the config keys that ``command`` reads."""
    if command == "eval":
        return lambda section, key: section in ("eval", "env") or (section, key) in EVAL_KEYS
    if command == "train":
        return lambda section, key: section not in ("eval", "bench", "sweep")
    if command == "bench":
        return lambda section, key: section not in ("eval", "sweep")
    return lambda section, key: True


def command_help(command, env_name, config):
    """`puffer COMMAND [ENV] --help`: the command's options and its flags with their descriptions."""
    target = env_name or "ENV"
    lines = [f"usage: puffer {command} {target} [options] [--section.key value ...]", "",
             f"{COMMAND_SUMMARIES[command]}.", "", "options:"]
    width = max(len(flag) for flag, _ in COMMAND_OPTIONS[command] + [("-h, --help", "")])
    lines += [f"  {flag:<{width}}  {what}" for flag, what in [("-h, --help", "this help")] + COMMAND_OPTIONS[command]]
    recipes = recipe_files(env_name) if env_name else {}
    if recipes and any(flag.startswith("--config") for flag, _ in COMMAND_OPTIONS[command]):
        lines += ["", f"recipes (--config NAME): {', '.join(recipes)}, in {next(iter(recipes.values())).parent}"]
    values = f"{env_name}'s values" if env_name else f"the default values (an env's .ini changes some: puffer {command} ENV --help)"
    lines += ["", f"flags, with {values}:"]
    lines.append(format_flags(config, flag_descriptions(env_name), allowed=command_uses(command)))
    return "\n".join(lines)


def fail(message):
    print(f"puffer: error: {message}", file=sys.stderr)
    return 2


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(USAGE, file=sys.stderr)
        return fail("a command is required: puffer train ENV, puffer list, ... (puffer --help for all)")
    if argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    if argv[0] == "--version":
        print(f"puffer (pufferlib) {pufferlib.__version__}")
        return 0
    command, rest = argv[0], argv[1:]
    if threading.current_thread() is threading.main_thread():
        # A parent may hand SIGINT over ignored (a script's background job inherits that) or
        # blocked: Ctrl-C and kill -INT stop every command the same way whatever started it.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if command == "tank":
        from pufferlib import tank  # docker-py is imported only when asked for

        return tank.main(rest)
    try:
        if command == "list":
            list_envs()
            return 0
        if command == "plot":
            parser = argparse.ArgumentParser(prog="puffer plot", description="Learning curves of runs, to PNG.")
            parser.add_argument("runs", nargs="+", help="run folders, metrics.jsonl files, or env names (their newest run)")
            parser.add_argument("--metric", default="env/score", help="the metrics.jsonl column to draw (default: env/score)")
            parser.add_argument("--output", default=None, help="the PNG to write (default: METRIC.png in the first run)")
            parser.add_argument("--data-dir", "--train.data-dir", dest="data_dir", default="experiments",
                                help="where env names' runs are found, as train's --train.data-dir")
            args = parser.parse_args(rest)
            plot(args.runs, args.metric, args.output, args.data_dir)
            return 0
        if command not in COMMAND_OPTIONS:
            hint = did_you_mean(command, [*COMMAND_OPTIONS, "list", "plot", "tank"])
            return fail(f"unknown command {command!r}.{hint} Commands: train, eval, bench, sweep, list, plot, tank")
        wants_help = bool(rest) and rest[0] in ("-h", "--help")
        if not rest or (rest[0].startswith("-") and not wants_help):
            return fail(f"puffer {command} needs an env: puffer {command} ENV [--section.key value ...] (envs: puffer list)")
        if wants_help:
            config = read_ini(DEFAULT_CONFIG)
            print(command_help(command, None, config))
            return 0
        env_name, rest = canonical_env_name(rest[0]), rest[1:]
        parser = argparse.ArgumentParser(prog=f"puffer {command} {env_name}", add_help=False)
        parser.add_argument("-h", "--help", action="store_true")
        own = [flag.split()[0] for flag, _ in COMMAND_OPTIONS[command]]
        if "--resume" in own:
            parser.add_argument("--resume", nargs="?", const="latest", default=None)
        if "--load-model-path" in own:
            parser.add_argument("--load-model-path", default="latest" if command == "eval" else None)
        if "--config" in own:
            parser.add_argument("--config", default=None)
        if command == "watch":
            parser.add_argument("--port", type=int, default=8000)
            parser.add_argument("--metric", default="env/score")
        args, flags = parser.parse_known_args(rest)
        config = load_config(env_name)
        if getattr(args, "config", None):
            apply_config_file(config, config_file_path(env_name, args.config))
        if args.help:
            print(command_help(command, env_name, config))
            return 0
        uses = command_uses(command)
        apply_flags(config, flags, extra_flags=[*own, "--help"], allowed=uses, command=f"puffer {command}")
        if command == "train":
            if args.resume and args.load_model_path:
                raise ConfigError("--resume continues a run; --load-model-path starts a new one from weights: pick one")
            if args.resume and args.config:
                raise ConfigError("--resume continues a run with its own settings; --config is for a new run: pick one")
            if args.resume:
                # A resumed run keeps the settings it was started with; flags given now still apply.
                saved = read_checkpoint(resolve_checkpoint(args.resume, config["train"]["data_dir"], env_name))
                config = apply_flags(saved["config"], flags)
            try:
                trainer = train(env_name, config, resume=args.resume, load_model_path=args.load_model_path)
            except RunComplete as complete:
                print(complete)
                return 0
            if trainer.interrupted:
                return 130  # the shell's code for a run stopped by Ctrl-C
        elif command == "eval":
            # The run's own settings (its policy, its env parameters), with the flags given now.
            checkpoint = read_checkpoint(resolve_checkpoint(args.load_model_path, config["train"]["data_dir"], env_name))
            evaluate_policy(env_name, apply_flags(checkpoint["config"], flags), checkpoint)
        elif command == "watch":
            from pufferlib import watch  # its http server is started only when asked for

            watch.watch(env_name, config, flags, args.load_model_path, port=args.port, metric=args.metric)
        elif command == "sweep":
            try:
                from pufferlib import sweep  # optuna is imported only when asked for
            except ModuleNotFoundError as error:
                raise ConfigError(f"puffer sweep needs {error.name}: pip install 'pufferlib[sweep]'") from None
            if sweep.sweep(env_name, config, flags, resume=args.resume).interrupted:
                return 130
        else:
            bench(env_name, config)
        return 0
    except (ConfigError, CheckpointError, APIUsageError, ParameterError) as error:
        return fail(error)
    except NonFiniteError as error:
        print(f"puffer: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
