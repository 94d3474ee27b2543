"""Does PuffeRL solve each Ocean sanity env with its shipped config, and hold it to the end?

Each run is `puffer train <env> --base.seed N` with the env's shipped config
(ocean/<env>/<env>.ini): it trains for the config's whole total_timesteps, and at the end the
final policy plays fresh episodes. A run counts as solved when that final score is within the
.ini's solve_tolerance of the target, exactly as `puffer train` reports "Solved" in its last
lines. A policy that solved the env on the way and then fell back counts as unsolved.

The table gives, per env, the seeds whose final policy holds the target, the median step and
training seconds at which fresh episodes first confirmed the target, the whole run's median
seconds (process clock: env building, training, the final scoring), and the final scores.
For each run that fails, the script says why: its final score against the target, where the
fresh-episode score and the training episodes peaked, and the policy's entropy at the end.

    python scripts/sanity.py                          # every sanity run, seed 42
    python scripts/sanity.py --seeds 1 2 3 4 5        # five seeds per run
    python scripts/sanity.py --envs puffer_memory     # one env (all its variants)
    python scripts/sanity.py --envs puffer_squared --train.total-timesteps 2e6   # flags go to every run
"""

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from pufferlib.checkpoint import CHECKPOINT_NAME
from pufferlib.config import apply_flags, load_config
from pufferlib.dashboard import human
from pufferlib.run import solve_target, train

# (env, flags): the memory env also runs at a longer sequence and with a delay before recall,
# from the same shipped config.
SANITY_RUNS = [
    ("puffer_squared", []),
    ("puffer_password", []),
    ("puffer_stochastic", []),
    ("puffer_memory", []),
    ("puffer_memory", ["--env.length", "4"]),
    ("puffer_memory", ["--env.delay", "2"]),
    ("puffer_bandit", []),
    ("puffer_multiagent", []),
    ("puffer_spaces", []),
]


def train_once(env_name, seed, flags, data_dir):
    """One `puffer train` run to its end; returns what it reported, and why it failed if it did."""
    wall = time.perf_counter()
    config = apply_flags(
        load_config(env_name),
        ["--base.seed", str(seed), "--train.dashboard", "off", "--train.data-dir", str(data_dir), *flags],
    )
    base = config["base"]
    summary = io.StringIO()
    with contextlib.redirect_stdout(summary):
        trainer = train(env_name, config)
    wall = time.perf_counter() - wall

    target = solve_target(config, trainer.vecenv)
    metric = base["solve_metric"]
    final = trainer.final_score.get(metric)
    final = None if final is None else float(final)
    solved = bool(target is not None and final is not None and final >= target - base["solve_tolerance"])
    result = dict(
        env=env_name, flags=flags, seed=seed, solved=solved, target=target, tolerance=base["solve_tolerance"],
        final_score=final, final_episodes=trainer.final_score.get("episodes", 0),
        first_solve_step=trainer.solved[0] if trainer.solved else None,
        first_solve_seconds=trainer.solved[1] if trainer.solved else None,
        steps=trainer.global_step, train_seconds=trainer.seconds(), wall_seconds=wall,
        policy=base["policy"] + (f"+{base['rnn']}" if base["rnn"] not in (None, "none") else ""),
    )
    result.update(peaks(trainer.run_dir, metric))
    if not solved:
        result["why"] = why_unsolved(result, summary.getvalue())
    return result


def peaks(run_dir, metric):
    """Where the run's scores peaked: on fresh episodes (best.pt's record) and in training's
    per-epoch episode means (metrics.jsonl), and the entropy of the last epoch."""
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    scored = [line for line in lines if isinstance(line.get(f"env/{metric}"), (int, float))]
    peak = max(scored, key=lambda line: line[f"env/{metric}"], default=None)
    best = torch.load(run_dir / CHECKPOINT_NAME, map_location="cpu", weights_only=False).get("best")
    return dict(
        best_fresh_score=best[0] if best else None, best_fresh_step=best[1] if best else None,
        peak_train_score=peak[f"env/{metric}"] if peak else None, peak_train_step=peak["step"] if peak else None,
        last_train_score=scored[-1][f"env/{metric}"] if scored else None,
        last_entropy=lines[-1].get("losses/entropy") if lines else None,
    )


def score(value):
    return "none (no episode ended)" if value is None else f"{value:.4f}"


def why_unsolved(run, summary):
    if run["target"] is None:
        return "the env states no optimal score, so no run can count as solved"
    parts = [
        f"final score {score(run['final_score'])} on {run['final_episodes']:.0f} fresh episodes, "
        f"short of {run['target'] - run['tolerance']:.4f} ({run['target']:.4g} within {run['tolerance']:g})"
    ]
    if run["first_solve_step"] is not None:
        parts.append(f"it had reached the target at step {human(run['first_solve_step'])} "
                     f"({run['first_solve_seconds']:.1f} s) and lost it")
    else:
        parts.append("fresh episodes never confirmed the target")
    if run["best_fresh_score"] is not None:
        parts.append(f"best on fresh episodes {run['best_fresh_score']:.4f} at step {human(run['best_fresh_step'])}")
    if run["peak_train_score"] is not None:
        parts.append(f"training episodes peaked at {run['peak_train_score']:.4f} at step {human(run['peak_train_step'])} "
                     f"and ended at {run['last_train_score']:.4f}")
    if run["last_entropy"] is not None:
        parts.append(f"entropy at the end {run['last_entropy']:.3g}")
    lines = [line for line in summary.splitlines() if line.startswith(("Finished", "Solved", "Not solved", "First", "Best"))]
    return "; ".join(parts) + "".join(f"\n    puffer train: {line}" for line in lines)


def describe(env_name, flags):
    return " ".join([env_name, *flags])


def table_row(runs):
    solved = [run for run in runs if run["solved"]]
    finals = [run["final_score"] for run in runs if run["final_score"] is not None]
    first = runs[0]
    cells = [
        describe(first["env"], first["flags"]), first["policy"], f"{len(solved)}/{len(runs)}",
        "-" if first["target"] is None else f"{first['target'] - first['tolerance']:.3f}",
    ]
    if solved:
        cells += [
            f"{statistics.median(run['first_solve_step'] for run in solved) / 1e6:.2f}M",
            f"{statistics.median(run['first_solve_seconds'] for run in solved):.1f}",
        ]
    else:
        cells += ["-", "-"]
    cells += [
        f"{human(statistics.median(run['steps'] for run in runs))} / {statistics.median(run['wall_seconds'] for run in runs):.1f}",
        f"{statistics.median(finals):.4f} / {min(finals):.4f}" if finals else "-",
    ]
    return "| " + " | ".join(cells) + " |"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", help="only these envs (each with all its sanity runs)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[42])
    parser.add_argument("--json", help="also write every run's result to this file")
    parser.add_argument("--data-dir", help="keep the runs (checkpoints, metrics.jsonl) here; default: a temporary folder")
    args, flags = parser.parse_known_args()
    known = {env_name for env_name, _ in SANITY_RUNS}
    unknown = [name for name in args.envs or [] if name not in known]
    if unknown:
        parser.error(f"{', '.join(unknown)} is not a sanity env; the sanity envs are {', '.join(sorted(known))}")
    selected = [(env_name, run_flags) for env_name, run_flags in SANITY_RUNS if not args.envs or env_name in args.envs]

    results, failures = [], []
    print("| run | policy | seeds solved (final policy) | target | steps to solve (median) | "
          "seconds to solve (median) | steps / run seconds (median) | final score (median / min) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with contextlib.ExitStack() as stack:
        data_dir = args.data_dir or stack.enter_context(tempfile.TemporaryDirectory(prefix="sanity-"))
        for env_name, run_flags in selected:
            runs = [train_once(env_name, seed, [*run_flags, *flags], Path(data_dir)) for seed in args.seeds]
            results += runs
            failures += [run for run in runs if not run["solved"]]
            print(table_row(runs), flush=True)
    for run in failures:
        print(f"\nNot solved: {describe(run['env'], run['flags'])} seed {run['seed']}: {run['why']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
