"""The command line both parity scripts share (scripts/craftax_parity.py for the full game,
scripts/craftax_classic_parity.py for Craftax-Classic): a `worldgen` check over a range of seeds, a
`steps` check over seeds, steps and a policy, and the report that ends a run, whose exit status is
1 when anything differs from the reference."""

import argparse

# Divergences printed under the summary; the count in the summary covers them all.
SHOWN_DIVERGENCES = 20


def checks_parser(description, worldgen_help, steps_help, steps_seeds, steps, policies):
    """The parser and its checks' subparsers, with `worldgen` and `steps` in them; a script adds its
    own checks to the subparsers and its own options to ``subparsers.choices["steps"]``. ``policies``
    are the steps check's choices, the first one its default."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    subparsers = parser.add_subparsers(dest="check", required=True)
    world = subparsers.add_parser("worldgen", help=worldgen_help)
    world.add_argument("--seeds", type=int, default=16)
    world.add_argument("--start", type=int, default=0)
    trajectories = subparsers.add_parser("steps", help=steps_help)
    trajectories.add_argument("--seeds", type=int, default=steps_seeds)
    trajectories.add_argument("--start", type=int, default=0)
    trajectories.add_argument("--steps", type=int, default=steps)
    trajectories.add_argument("--policy", choices=policies, default=policies[0])
    return parser, subparsers


def report(check, summary, divergences):
    """Prints the check's summary line and its first divergences; returns the exit status."""
    print(f"{check}: {summary}, {len(divergences)} divergences")
    for line in divergences[:SHOWN_DIVERGENCES]:
        print("  " + line)
    return 1 if divergences else 0
