"""The ``puffer`` command: train, eval, bench, sweep, watch, list, plot and tank. Nothing imports this module.

    puffer train puffer_squared --train.learning-rate 0.01
"""

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import torch

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
    ConfigError,
    apply_config_file,
    apply_flags,
    canonical_env_name,
    env_config_files,
    load_config,
    print_flags,
)
from pufferlib.dashboard import Dashboard, MetricsLog, epoch_metrics, human
from pufferlib.distributed import make_world
from pufferlib.environment import mean_infos
from pufferlib.evaluate import SolveCheck, score_policy
from pufferlib.exceptions import APIUsageError, did_you_mean
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
    try:
        return train_ranks(env_name, config, world, resume, load_model_path)
    finally:
        world.close()


def train_ranks(env_name, config, world, resume, load_model_path):
    train_config, base = config["train"], config["base"]
    main = world.is_main
    if world.size > 1 and world.cuda:  # one GPU per rank: this rank's
        train_config["device"] = str(world.device)
        if config["vec"]["device"] != "cpu":
            config["vec"]["device"] = str(world.device)
    checkpoint = None
    if resume:
        checkpoint = read_checkpoint(resolve_checkpoint(resume, train_config["data_dir"], env_name))
        if checkpoint["env_name"] != env_name:
            raise CheckpointError(f"{checkpoint['path']} was trained on {checkpoint['env_name']}, not {env_name}")
        run_dir = Path(checkpoint["path"]).parent
    else:
        run_dir = Path(world.decide(str(new_run_dir(train_config["data_dir"], env_name)) if main else None))
    if main:
        write_atomic(run_dir / "config.json", json.dumps(config, indent=2))

    vecenv = make_vecenv(env_name, config)
    policy = make_policy(vecenv, config)
    trainer = PuffeRL(config, vecenv, policy, world)
    if checkpoint:
        trainer.load_checkpoint(checkpoint)
    elif load_model_path:
        weights = read_checkpoint(resolve_checkpoint(load_model_path, train_config["data_dir"], env_name))
        check_architecture(weights, trainer.policy, trainer.vecenv)
        load_weights(trainer.policy, weights)

    target = solve_target(config, vecenv)
    solve_check = SolveCheck(base["solve_metric"], target, base["solve_tolerance"], base["solve_episodes"])
    # Fresh-episode scoring plays envs of its own (on the CPU: an env's GPU version is the same game).
    scoring_config = {**config, "vec": {**config["vec"], "device": "cpu"}}
    scoring_envs = []

    def scoring_env():
        if not scoring_envs:
            scoring_envs.append(make_vecenv(env_name, scoring_config, num_envs=vecenv.num_envs))
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

    metrics = MetricsLog(run_dir, config, resume_epoch=trainer.epoch if checkpoint else None) if main else None
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


def describe_value(value):
    return "none: no episode ended" if value is None else f"{value:.4f}"


def print_summary(env_name, config, trainer, target, best, run_dir):
    """The run's last words: what the final policy does on fresh episodes, against the target."""
    base = config["base"]
    checkpoint_path = run_dir / CHECKPOINT_NAME
    if trainer.interrupted:
        print(f"Interrupted at step {trainer.global_step}: checkpoint saved to {checkpoint_path}")
        print(f"Continue with: puffer train {env_name} --resume {run_dir}")
    else:
        stats = trainer.final_score
        shown = ", ".join(f"{k} {v:.4g}" for k, v in stats.items() if k != "episodes") or "no episode finished"
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


def evaluate_policy(env_name, config, checkpoint):
    """Runs a trained policy in one env and renders it: ANSI text in the terminal for Ocean envs,
    a GIF or MP4 (imageio) for envs that render RGB frames. ``config`` is normally the run's own
    (from the checkpoint) with the command's flags applied."""
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

    generator = torch.Generator(device=device)
    generator.manual_seed(config["base"]["seed"])
    env.async_reset(config["base"]["seed"])
    state = policy.initial_state(env.num_agents, device)
    frames, returns, infos, steps = [], [], [], 0
    episode_return, episode_length = 0.0, 0
    delay = 1.0 / eval_config["fps"] if eval_config["fps"] > 0 else 0.0
    print(f"Evaluating {checkpoint['path']} on {env_name} ({pufferlib.models.describe(policy)})")
    try:
        while len(returns) < eval_config["episodes"] and steps < eval_config["max_steps"]:
            obs, rewards, terminals, truncations, step_infos, env_ids, masks = env.recv()
            infos.extend(step_infos if isinstance(step_infos, list) else [step_infos])
            if steps > 0:  # agent 0, the one rendered, is followed episode by episode
                episode_return += float(rewards[0])
                episode_length += 1
                if terminals[0] or truncations[0]:
                    returns.append(episode_return)
                    print(f"Episode {len(returns)}: return {episode_return:.4g}, length {episode_length}")
                    episode_return, episode_length = 0.0, 0
            frame = env.render()
            if isinstance(frame, str):
                sys.stdout.write("\033[H\033[2J" + frame + f"\nstep {steps}  reward {float(rewards[0]):+.3f}  episodes {len(returns)}\n")
                sys.stdout.flush()
                time.sleep(delay)
            elif frame is not None:
                frames.append(np.asarray(frame))
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
    if returns:
        print(f"Mean return of agent 0 over {len(returns)} episodes: {np.mean(returns):.4g}")
    if stats:
        print("Env episode statistics (all agents): " + ", ".join(f"{k} {v:.4g}" for k, v in stats.items()))
    if frames:
        output = eval_config["output"]
        if output == "auto":
            output = str(Path(checkpoint["path"]).parent / "eval.gif")
        try:
            import imageio.v2 as imageio
        except ImportError:
            raise ConfigError("Saving RGB frames needs imageio: pip install imageio (and imageio-ffmpeg for .mp4)") from None
        imageio.mimsave(output, frames, fps=max(eval_config["fps"], 1))
        print(f"Saved {len(frames)} frames to {output}")
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

Every key of pufferlib/configs/default.ini and of the env's .ini is a flag: --train.learning-rate 0.01,
--env.size 11, --vec.num-envs 512. `puffer train ENV --help` lists them with their values.
--config FILE overlays an .ini on the env's config (a sweep's best.ini, say) before the flags.
"""


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "tank":
        import pufferlib.tank  # docker-py is imported only when asked for

        return pufferlib.tank.main(rest)
    try:
        if command == "list":
            list_envs()
            return 0
        if command == "plot":
            parser = argparse.ArgumentParser(prog="puffer plot")
            parser.add_argument("runs", nargs="+")
            parser.add_argument("--metric", default="env/score")
            parser.add_argument("--output", default=None)
            parser.add_argument("--data-dir", default="experiments")
            args = parser.parse_args(rest)
            plot(args.runs, args.metric, args.output, args.data_dir)
            return 0
        if command not in ("train", "eval", "bench", "sweep", "watch"):
            hint = did_you_mean(command, ["train", "eval", "bench", "sweep", "watch", "list", "plot", "tank"])
            print(f"Unknown command {command!r}.{hint}\n\n" + USAGE, file=sys.stderr)
            return 2
        if not rest or rest[0].startswith("-"):
            print(f"usage: puffer {command} ENV [--section.key value ...]; envs: puffer list", file=sys.stderr)
            return 2
        env_name, rest = canonical_env_name(rest[0]), rest[1:]
        parser = argparse.ArgumentParser(prog=f"puffer {command} {env_name}", add_help=False)
        parser.add_argument("-h", "--help", action="store_true")
        parser.add_argument("--resume", nargs="?", const="latest", default=None)
        parser.add_argument("--load-model-path", default="latest" if command == "eval" else None)
        parser.add_argument("--config", default=None)
        if command == "watch":
            parser.add_argument("--port", type=int, default=8000)
            parser.add_argument("--metric", default="env/score")
        args, flags = parser.parse_known_args(rest)
        config = load_config(env_name)
        if args.config:
            apply_config_file(config, args.config)
        if args.help:
            print(f"puffer {command} {env_name}: flags and their current values\n  --resume [latest|RUN]\n  --load-model-path PATH|latest\n  --config FILE")
            print_flags(config)
            return 0
        apply_flags(config, flags, extra_flags=["--resume", "--load-model-path", "--config", "--help"])
        if command == "train":
            if args.resume and args.load_model_path:
                raise ConfigError("--resume continues a run; --load-model-path starts a new one from weights: pick one")
            if args.resume and args.config:
                raise ConfigError("--resume continues a run with its own settings; --config is for a new run: pick one")
            if args.resume:
                # A resumed run keeps the settings it was started with; flags given now still apply.
                saved = read_checkpoint(resolve_checkpoint(args.resume, config["train"]["data_dir"], env_name))
                config = apply_flags(saved["config"], flags)
            trainer = train(env_name, config, resume=args.resume, load_model_path=args.load_model_path)
            if trainer.interrupted:
                return 130  # the shell's code for a run stopped by Ctrl-C
        elif command == "eval":
            # The run's own settings (its policy, its env parameters), with the flags given now.
            checkpoint = read_checkpoint(resolve_checkpoint(args.load_model_path, config["train"]["data_dir"], env_name))
            evaluate_policy(env_name, apply_flags(checkpoint["config"], flags), checkpoint)
        elif command == "watch":
            import pufferlib.watch

            pufferlib.watch.watch(env_name, config, flags, args.load_model_path, port=args.port, metric=args.metric)
        elif command == "sweep":
            try:
                import pufferlib.sweep  # optuna is imported only when asked for
            except ModuleNotFoundError as error:
                raise ConfigError(f"puffer sweep needs {error.name}: pip install 'pufferlib[sweep]'") from None
            pufferlib.sweep.sweep(env_name, config, flags, resume=args.resume)
        else:
            bench(env_name, config)
        return 0
    except (ConfigError, CheckpointError, APIUsageError) as error:
        print(f"puffer: error: {error}", file=sys.stderr)
        return 2
    except NonFiniteError as error:
        print(f"puffer: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
