"""Env-only steps per second of Craftax-Classic and of Craftax observed in pixels on the CPU, beside
the JAX reference (PyPI `craftax`) stepping the same env at the same env count in the same run.

Usage: python scripts/bench_craftax_cpu.py [--games classic,pixels] [--envs 64] [--seconds 3]
           [--rounds 5] [--record]

classic: the C env CraftaxClassic (ocean/craftax_classic) against the reference's
Craftax-Classic-Symbolic (CraftaxClassicSymbolicEnv, 1,345 floats). pixels: the C env CraftaxPixels
(ocean/craftax, the full game, its frame of 130 x 110 x 3 floats at 10 pixels a cell) against the
reference's Craftax-Pixels (CraftaxPixelsEnv, the same frame). Both sides take uniformly random
actions and generate every world they reset to (no reset pool: the reference has none).

The C env steps on 1 thread and on every core, random actions from a pregenerated cache, timed
from Python over --seconds. The reference runs as its users run it, as scripts/bench_craftax_gpu.py
runs it on the GPU: jit of vmap over the envs, a lax.scan of steps per call, on the XLA CPU backend
with every core at its disposal. It is compiled once (for the pixel env that takes minutes, and the
package processes its textures on first use) and timed after; each phase is printed as it starts.
Its scans are short, as its steps are slow on the CPU, so that a call fits within --seconds.

Each round times every side once, the C env continuing its episodes from round to round (it first
plays about one random episode, so that resets are spread as in a long run), the order of the
sides alternating between rounds; rows give the median of the rounds and the ratio of the medians.

--record stores a record per C row (scripts/results.py), the reference's figure as its peer.
"""

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402
from bench_craftax_gpu import c_env_stepper, jax_reference  # noqa: E402
from bench_ocean import spread, threads_setting  # noqa: E402
from results_page import format_figure  # noqa: E402

# Steps in one jitted call of the reference: few, as its steps are slow on the CPU, so that a call
# fits within --seconds at modest env counts.
JAX_CPU_SCAN_STEPS = 16
# Steps the C env takes before it is timed: about one episode of random play, so that its envs
# reset at different steps, as they do in a long run.
C_WARMUP_STEPS = 300


@dataclass(frozen=True)
class Game:
    env_name: str
    setting: str
    num_actions: int
    reference: str

    def c_env(self, num_envs, threads):
        if self.env_name == "puffer_craftax_classic":
            from ocean.craftax_classic import CraftaxClassic

            return CraftaxClassic(num_envs=num_envs, num_threads=threads)
        from ocean.craftax import CraftaxPixels

        return CraftaxPixels(num_envs=num_envs, num_threads=threads, reset_pool_size=0, observation_block_size=10)

    def reference_env(self):
        if self.env_name == "puffer_craftax_classic":
            from craftax.craftax_classic.envs.craftax_symbolic_env import CraftaxClassicSymbolicEnv

            return CraftaxClassicSymbolicEnv()
        from craftax.craftax.envs.craftax_pixels_env import CraftaxPixelsEnv

        return CraftaxPixelsEnv()


GAMES = {
    "classic": Game("puffer_craftax_classic", "symbolic observations", 17, "Craftax-Classic-Symbolic"),
    "pixels": Game("puffer_craftax_pixels", "130 x 110 x 3 float frames, reset pool off", 43, "Craftax-Pixels"),
}


STARTED = time.perf_counter()


def progress(message):
    print(f"[{time.perf_counter() - STARTED:6.0f} s] {message}", flush=True)


def rate_text(value):
    return format_figure(value, "steps/s")


def threads_text(threads):
    return "1 thread" if threads == 1 else f"{threads} threads"


def ratio_text(ratio):
    return f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.1f}x"


def check_reference_importable():
    """The jax and craftax packages, or exit naming what is missing: without the reference there is
    nothing to compare with."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        import craftax  # noqa: F401
        import jax
    except ImportError as error:
        raise SystemExit(f"the JAX reference is not importable here ({error}): pip install craftax jax") from error
    return jax


def bench_game(game, num_envs, seconds, rounds, cores):
    """{side: [steps per second of each round]} for the C env on each thread count and the reference."""
    c_envs = {threads: game.c_env(num_envs, threads) for threads in sorted({1, cores})}
    steppers = {}
    for threads, env in c_envs.items():
        progress(f"{game.env_name}: {num_envs} C envs on {threads_text(threads)}, {C_WARMUP_STEPS} warm-up steps")
        steppers[threads] = c_env_stepper(env, game.num_actions, C_WARMUP_STEPS)
    progress(f"{game.reference}: building the JAX reference's env")
    steppers["jax"] = jax_reference(game.reference_env(), game.num_actions, num_envs, JAX_CPU_SCAN_STEPS,
                                    progress=lambda message: progress(f"{game.reference}: {message}"))
    rates = {side: [] for side in steppers}
    for round_index in range(rounds):
        # Alternate who goes first, so that a drift in the machine's load hits both alike.
        sides = list(steppers) if round_index % 2 == 0 else list(reversed(steppers))
        for side in sides:
            rates[side].append(steppers[side](seconds))
        shown = ", ".join(f"{'JAX' if side == 'jax' else f'C on {threads_text(side)}'} {rate_text(rates[side][-1])}"
                          for side in steppers)
        progress(f"{game.env_name} round {round_index + 1}/{rounds}: {shown} steps/s")
    for env in c_envs.values():
        env.close()
    return rates


def game_records(game, num_envs, rates, jax_version):
    records = []
    reference = rates["jax"]
    for threads, ours in rates.items():
        if threads == "jax":
            continue
        ratios = [a / b for a, b in zip(ours, reference)]
        records.append(results.measurement(
            "craftax-cpu", f"{game.env_name} against the JAX reference",
            f"{num_envs:,} envs, {game.setting}, {threads_setting(threads)}", statistics.median(ours), "steps/s",
            runs=ours,
            peer={"what": f"JAX {game.reference}: jit + vmap + scan of {JAX_CPU_SCAN_STEPS} steps, every core",
                  "value": statistics.median(reference), "runs": reference},
            note=f"ratio per round {spread(ratios)}; jax {jax_version} on the CPU; random actions, no reset pool"))
    return records


def game_names(parser, text):
    names = text.split(",")
    unknown = [name for name in names if name not in GAMES]
    if unknown or not text:
        parser.error(f"--games: unknown game {(unknown or [text])[0]!r}; valid: {', '.join(GAMES)} (comma-separated)")
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", default=",".join(GAMES), help=f"comma-separated, of {', '.join(GAMES)}")
    parser.add_argument("--envs", type=int, default=64, help="envs on each side (the reference's steps slow down as envs are added)")
    parser.add_argument("--seconds", type=float, default=3.0, help="of each side in each round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of every side per game")
    results.add_record_flag(parser)
    args = parser.parse_args()
    games = [GAMES[name] for name in game_names(parser, args.games)]
    if args.envs < 1:
        parser.error(f"--envs must be at least 1, got {args.envs}")
    if args.seconds <= 0:
        parser.error(f"--seconds must be positive, got {args.seconds}")
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    jax = check_reference_importable()
    cores = os.cpu_count()
    print(f"{results.cpu_model()}, {cores} cores; jax {jax.__version__} on {jax.devices()[0].platform}; "
          f"{args.envs} envs a side, {args.rounds} rounds of {args.seconds:g} s", flush=True)
    measured, records = [], []
    for game in games:
        rates = bench_game(game, args.envs, args.seconds, args.rounds, cores)
        measured.append((game, rates))
        records += game_records(game, args.envs, rates, jax.__version__)

    print(f"\nsteps/s, medians of {args.rounds} rounds; ours / JAX reference per thread count")
    print("| env | envs | C, 1 thread | C, " + f"{cores} threads | JAX reference | 1 thread / JAX | {cores} threads / JAX |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for game, rates in measured:
        medians = {side: statistics.median(values) for side, values in rates.items()}
        many = medians[cores]
        print(f"| {game.env_name} | {args.envs:,} | {rate_text(medians[1])} | {rate_text(many)} | "
              f"{rate_text(medians['jax'])} | {ratio_text(medians[1] / medians['jax'])} | {ratio_text(many / medians['jax'])} |")
    if args.record:
        print(f"\n{len(records)} records stored in {results.record(records, args.record)}")


if __name__ == "__main__":
    main()
