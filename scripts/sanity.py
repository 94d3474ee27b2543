"""Wall-clock time for PuffeRL to solve each Ocean sanity env with its shipped config.

Each env trains with ocean/<env>/<env>.ini as `puffer train <env>` would, until the
mean score of its newest 100+ training episodes reaches the env's optimal score (less the
tolerance its .ini states) and 100+ fresh episodes of the policy confirm it, or the time budget
runs out. The clock starts before the env is built. CPU seconds
are this process's, which is what the run would take on an otherwise idle core.

    python scripts/sanity.py                      # every sanity env, seed 42, markdown table
    python scripts/sanity.py --seeds 1 2 3        # several seeds per env
    python scripts/sanity.py --envs puffer_squared --budget 15
"""

import argparse
import json
import statistics
import sys
import time

from pufferlib import assemble, cli, pufferl
from pufferlib.config import apply_flags, load_config
from pufferlib.evaluate import SolveCheck

SANITY_ENVS = [
    "puffer_squared", "puffer_password", "puffer_stochastic", "puffer_memory",
    "puffer_bandit", "puffer_multiagent", "puffer_spaces",
]


def time_to_solve(env_name, seed, budget, flags):
    wall, cpu = time.perf_counter(), time.process_time()
    config = apply_flags(load_config(env_name), ["--base.seed", str(seed), *flags])
    vecenv = assemble.make_vecenv(env_name, config)
    trainer = pufferl.PuffeRL(config, vecenv, assemble.make_policy(vecenv, config))
    base = config["base"]
    target = cli.solve_target(config, vecenv)
    check = SolveCheck(base["solve_metric"], target, base["solve_tolerance"], base["solve_episodes"])
    scoring_env = assemble.make_vecenv(env_name, config)
    solved, score = False, None
    try:
        while trainer.epoch < trainer.total_epochs and time.perf_counter() - wall < budget:
            trainer.collect()
            trainer.train()
            if check.candidate(trainer.episode_stats):
                solved, stats = check.confirm(trainer, scoring_env, seed + trainer.epoch, base["score_max_steps"])
                score = stats.get(base["solve_metric"])
                if solved:
                    break
    finally:
        trainer.close()
        scoring_env.close()
    return dict(
        env=env_name, seed=seed, solved=solved, target=target - base["solve_tolerance"],
        score=score if score is not None else trainer.env_stats.get(base["solve_metric"]),
        steps=trainer.global_step, wall_s=time.perf_counter() - wall, cpu_s=time.process_time() - cpu,
        policy=f"{base['policy']}" + (f"+{base['rnn']}" if base["rnn"] not in (None, "none") else ""),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=SANITY_ENVS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[42])
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per run before it counts as unsolved")
    parser.add_argument("--json", help="also write every run's result to this file")
    args, flags = parser.parse_known_args()

    results = []
    print("| env | policy | seeds solved | target | steps (median) | wall s (median / max) | CPU s (median) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for env_name in args.envs:
        runs = [time_to_solve(env_name, seed, args.budget, flags) for seed in args.seeds]
        results += runs
        solved = [r for r in runs if r["solved"]]
        walls = [r["wall_s"] for r in solved]
        print(
            f"| {env_name} | {runs[0]['policy']} | {len(solved)}/{len(runs)} | {runs[0]['target']:.3f} | "
            + (f"{statistics.median(r['steps'] for r in solved) / 1e6:.2f}M | {statistics.median(walls):.1f} / {max(walls):.1f} | "
               f"{statistics.median(r['cpu_s'] for r in solved):.1f} |" if solved else "- | - | - |"),
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0 if all(r["solved"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
