"""Craftax parity: the C game (ocean/craftax) against the JAX reference (PyPI `craftax`), from the
same keys; reports the first divergence by field name, step and env (ocean/craftax/parity.py).
Exits 1 when anything differs, a generated world included (the steps check prints such a world's
differences and resynchronises it to check the step, but the run still fails), else 0.

    python scripts/craftax_parity.py worldgen --seeds 64        # reset states + observations
    python scripts/craftax_parity.py rng --keys 256             # PRNG and samplers
    python scripts/craftax_parity.py steps --seeds 64 --steps 5000 --policy random
    python scripts/craftax_parity.py steps --seeds 16 --steps 3000 --policy descend

Needs `pip install -r requirements-craftax.txt` (craftax + jax, CPU).
"""

import sys

import numpy as np

from ocean.craftax.parity import check_rng, check_steps, check_worldgen
from ocean.craftax.parity_command import checks_parser, report


def main():
    parser, checks = checks_parser(__doc__, "reset states and observations",
                                   "trajectories: observations, rewards, dones, states",
                                   steps_seeds=16, steps=1000, policies=("random", "descend"))
    checks.choices["steps"].add_argument("--state-every", type=int, default=100,
                                         help="compare whole states every N steps (0: never)")
    rng = checks.add_parser("rng", help="threefry and jax.random samplers")
    rng.add_argument("--keys", type=int, default=64)
    args = parser.parse_args()
    world_differences = []
    if args.check == "worldgen":
        divergences = check_worldgen(args.seeds, args.start)
        total = args.seeds
    elif args.check == "steps":
        divergences, statistics = check_steps(args.seeds, args.steps, args.start, args.policy, args.state_every)
        world_differences = statistics["reset_worlds"]
        total = f"{args.seeds} envs x {statistics['steps']} steps ({args.policy}, {statistics['episodes']} episodes ended,"
        total += f" deepest floor per env: {np.bincount(statistics['deepest'], minlength=9).tolist()} envs on floors 0..8;"
        total += f" {len(world_differences)} generated worlds differed and were resynchronised)"
        for line in world_differences:
            print("  world generation: " + line)
    else:
        divergences = check_rng(args.keys)
        total = args.keys
    status = report(args.check, f"{total} cases", divergences)
    return 1 if world_differences else status


if __name__ == "__main__":
    sys.exit(main())
