"""Craftax-Classic parity: the C game (ocean/craftax_classic) against the JAX reference
(``craftax.craftax_classic``), from the same keys, whole states compared bit for bit each step
(ocean/craftax_classic/parity.py). Exits 1 when anything differs, else 0.

    python scripts/craftax_classic_parity.py worldgen --seeds 64
    python scripts/craftax_classic_parity.py steps --seeds 16 --steps 1000 --policy random
    python scripts/craftax_classic_parity.py steps --seeds 16 --steps 1000 --policy scripted

Needs `pip install -r requirements-craftax.txt` (craftax + jax, CPU).
"""

import argparse
import sys

from ocean.craftax_classic.parity import POLICIES, check_steps, check_worldgen


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="check", required=True)
    world = sub.add_parser("worldgen", help="generated worlds and first observations")
    world.add_argument("--seeds", type=int, default=16)
    world.add_argument("--start", type=int, default=0)
    steps = sub.add_parser("steps", help="trajectories: states, observations, rewards, dones")
    steps.add_argument("--seeds", type=int, default=4)
    steps.add_argument("--start", type=int, default=0)
    steps.add_argument("--steps", type=int, default=500)
    steps.add_argument("--policy", choices=POLICIES, default="random")
    args = parser.parse_args()
    if args.check == "worldgen":
        divergences = check_worldgen(args.seeds, args.start)
        summary = f"{args.seeds} seeds"
    else:
        divergences, finished = check_steps(args.seeds, args.steps, args.policy, args.start)
        summary = f"{args.seeds} seeds x {args.steps} steps ({args.policy}, {finished} episodes ended)"
    print(f"{args.check}: {summary}, {len(divergences)} divergences")
    for line in divergences[:20]:
        print("  " + line)
    return 1 if divergences else 0


if __name__ == "__main__":
    sys.exit(main())
