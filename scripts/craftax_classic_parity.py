"""Craftax-Classic parity: the C game (ocean/craftax_classic) against the JAX reference
(``craftax.craftax_classic``), from the same keys, whole states compared bit for bit each step
(ocean/craftax_classic/parity.py). Exits 1 when anything differs, else 0.

    python scripts/craftax_classic_parity.py worldgen --seeds 64
    python scripts/craftax_classic_parity.py steps --seeds 16 --steps 1000 --policy random
    python scripts/craftax_classic_parity.py steps --seeds 16 --steps 1000 --policy scripted

Needs `pip install -r requirements-craftax.txt` (craftax + jax, CPU).
"""

import sys

from ocean.craftax.parity_command import checks_parser, report
from ocean.craftax_classic.parity import POLICIES, check_steps, check_worldgen


def main():
    parser, _ = checks_parser(__doc__, "generated worlds and first observations",
                              "trajectories: states, observations, rewards, dones",
                              steps_seeds=4, steps=500, policies=POLICIES)
    args = parser.parse_args()
    if args.check == "worldgen":
        divergences = check_worldgen(args.seeds, args.start)
        summary = f"{args.seeds} seeds"
    else:
        divergences, finished = check_steps(args.seeds, args.steps, args.policy, args.start)
        summary = f"{args.seeds} seeds x {args.steps} steps ({args.policy}, {finished} episodes ended)"
    return report(args.check, summary, divergences)


if __name__ == "__main__":
    sys.exit(main())
