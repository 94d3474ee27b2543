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

import pufferlib
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
    view,
)
from pufferlib.exceptions import APIUsageError, CheckpointError, ParameterError, did_you_mean

# torch and the trainer load only for the commands that run one: help, list and plot answer at once.
USER_ERRORS = (ConfigError, CheckpointError, APIUsageError, ParameterError)


def env_steps_per_second(env, seconds, seed):
    """Steps ``env`` with uniform random actions for ``seconds``; an env with device hooks is
    stepped on its device with actions drawn there."""
    import numpy as np
    import torch

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
    import pufferlib.models
    from pufferlib.assemble import make_vecenv
    from pufferlib.dashboard import human
    from pufferlib.run import build_trainer

    seconds = config["bench"]["seconds"]
    env = make_vecenv(env_name, config)
    env_sps = env_steps_per_second(env, seconds, view(config, "base").seed)
    # Said with the figure: scripts/bench_ocean.py times step() alone, with no backend between,
    # cached actions and its own env counts, so it reports more for the same game.
    count = view(config, "vec").num_threads
    threads = f" ({count} thread{'s' * (count != 1)})" if type(env).__name__ == "Native" else ""
    env_setup = f"{env.num_envs} envs on {type(env).__name__}{threads}, fresh random actions every step"
    env.close()

    trainer = build_trainer(env_name, config)
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
    print(f"{env_name}: env {human(env_sps)} SPS ({env_setup}), training {human(train_sps)} SPS "
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
    from pufferlib.checkpoint import run_dirs

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


def with_new_keys(saved, current):
    """A saved run's config, with the keys it predates taken from ``current`` (the defaults and
    the env's .ini as they are now)."""
    merged = {section: dict(values) for section, values in current.items()}
    for section, values in saved.items():
        merged.setdefault(section, {}).update(values)
    return merged


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
        if command in ("train", "eval", "bench"):
            from pufferlib.checkpoint import read_checkpoint, resolve_checkpoint
        if command == "train":
            from pufferlib.pufferl import NonFiniteError
            from pufferlib.run import RunComplete, train

            if args.resume and args.load_model_path:
                raise ConfigError("--resume continues a run; --load-model-path starts a new one from weights: pick one")
            if args.resume and args.config:
                raise ConfigError("--resume continues a run with its own settings; --config is for a new run: pick one")
            if args.resume:
                # A resumed run keeps the settings it was started with; flags given now still apply.
                saved = read_checkpoint(resolve_checkpoint(args.resume, config["train"]["data_dir"], env_name))
                config = apply_flags(with_new_keys(saved["config"], config), flags)
            try:
                trainer = train(env_name, config, resume=args.resume, load_model_path=args.load_model_path)
            except RunComplete as complete:
                print(complete)
                return 0
            except NonFiniteError as error:
                print(f"puffer: error: {error}", file=sys.stderr)
                return 1
            if trainer.interrupted:
                from pufferlib.run import EXIT_CODES

                return EXIT_CODES.get(trainer.stop_signal, 130)
        elif command == "eval":
            from pufferlib.player import evaluate

            # The run's own settings (its policy, its env parameters), with the flags given now.
            checkpoint = read_checkpoint(resolve_checkpoint(args.load_model_path, config["train"]["data_dir"], env_name))
            evaluate(env_name, apply_flags(with_new_keys(checkpoint["config"], config), flags), checkpoint)
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
    except USER_ERRORS as error:
        return fail(error)


if __name__ == "__main__":
    sys.exit(main())
