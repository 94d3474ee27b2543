"""Steps per second of every Ocean env, and the fixed Python cost of one step() call.

Usage: python scripts/bench_ocean.py [--envs squared,bandit] [--counts 1024,4096,16384] [--seconds 1]
       python scripts/bench_ocean.py --envs none --games pong --craftax-envs 0   # pong only
       python scripts/bench_ocean.py --envs none --craftax-envs 1024   # Craftax only

Env names are short (pong) or registered (puffer_pong). Each env is stepped with uniformly random
actions (a cache of pregenerated batches, copied into the env's action buffer every step, as a
trainer would) on one thread and on every core, by calling the Ocean env's step() directly: the
C game's own speed, with no vector backend in between and no action drawn per step. `puffer bench
ENV` measures something else: the env as training runs it, at its config's env count and threads,
through the vector backend's send/recv, with actions drawn afresh every step, so it reports less.
The peer in the same run is the same Squared game written as vectorized numpy, the fastest way to
write it without C. Every rate is that of the median step() call over the measuring time (each
call timed alone, after a warm-up), so that calls slowed by other processes on shared cores drop
out of it.

The games (breakout, pong, snake, connect4) have their own section (--games, 'none' to skip): each
stepped on one thread with random actions at the size the original Ocean's figures were measured
at (4,096 envs; snake: 16 boards of 256 snakes), beside the same game written as vectorised numpy
(scripts/numpy_games.py) in the same run, and the target speed for each.

Craftax has its own section (--craftax-envs envs, 0 to skip): compact and full observations,
with a reset pool (--craftax-pool worlds) and without one (every reset generates a world, as the
reference does), and the memory each env holds.

--peer pufferlib3 adds the comparison with the real PufferLib 3.0.0 (built from its sdist by
scripts/build_pufferlib3.py into a scratch venv, --peer-python its python): each game both ship,
at matched rules where the games allow it, stepped from each project's own step() on one thread
with the same random actions, the two sides alternating for --rounds rounds in this run (PufferLib
3.0 runs in a process of its own, idle while Ocean steps); the ratio per round shows the spread.

--record stores every figure as a record (scripts/results.py) for BENCHMARKS.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

import ocean
from pufferlib.exceptions import did_you_mean

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_pufferlib3  # noqa: E402
import numpy_games  # noqa: E402
import results  # noqa: E402

ACTION_CACHE = 256


def action_cache(env):
    rng = np.random.default_rng(0)
    if env.actions.ndim == 1:
        cache = rng.integers(0, env.single_action_space.n, (ACTION_CACHE, *env.actions.shape))
    else:
        cache = rng.integers(0, env.single_action_space.nvec, (ACTION_CACHE, *env.actions.shape))
    return cache.astype(np.int32)


def steps_per_second(env, seconds):
    """Agent steps per second of the median step() call with the cached actions."""
    env.reset(0)
    return build_pufferlib3.median_step_rate(env.step, action_cache(env), env.num_agents, seconds)


class NumpySquared:
    """Squared's rules as vectorized numpy over all envs: the peer."""

    def __init__(self, num_envs, size=11):
        self.size, self.n = size, num_envs
        self.observations = np.zeros((num_envs, size * size), np.uint8)
        self.rows = np.empty(num_envs, np.int64)
        self.cols = np.empty(num_envs, np.int64)
        self.targets = np.empty(num_envs, np.int64)
        self.ticks = np.zeros(num_envs, np.int64)
        self.rng = np.random.default_rng(0)
        self.arange = np.arange(num_envs)
        edge = size - 1
        border = [(0, k) for k in range(edge)] + [(k, edge) for k in range(edge)]
        border += [(edge, edge - k) for k in range(edge)] + [(edge - k, 0) for k in range(edge)]
        self.border = np.array([r * size + c for r, c in border])

    def reset_envs(self, mask):
        index = self.arange[mask]
        self.observations[index] = 0
        self.rows[index] = self.cols[index] = self.size // 2
        self.ticks[index] = 0
        self.targets[index] = self.border[self.rng.integers(0, len(self.border), len(index))]
        self.observations[index, self.rows[index] * self.size + self.cols[index]] = 1
        self.observations[index, self.targets[index]] = 2

    def step(self, actions):
        self.observations[self.arange, self.rows * self.size + self.cols] = 0
        self.rows += (actions == 1) & (self.rows < self.size - 1)
        self.rows -= (actions == 2) & (self.rows > 0)
        self.cols -= (actions == 3) & (self.cols > 0)
        self.cols += (actions == 4) & (self.cols < self.size - 1)
        position = self.rows * self.size + self.cols
        self.observations[self.arange, position] = 1
        self.ticks += 1
        rewards = (position == self.targets).astype(np.float32)
        done = (rewards > 0) | (self.ticks >= 2 * self.size)
        if done.any():
            self.reset_envs(done)
        return self.observations, rewards, done


def numpy_squared_sps(num_envs, seconds):
    env = NumpySquared(num_envs)
    env.reset_envs(np.ones(num_envs, bool))
    cache = np.random.default_rng(0).integers(0, 5, (ACTION_CACHE, num_envs))
    return build_pufferlib3.median_step_rate(env.step, cache, num_envs, seconds)


COPY_BYTES = 256 * 2**20  # each of the two arrays: far larger than any cache


def copy_bandwidth(threads, repeats=5):
    """Bytes per second a STREAM-like copy moves (each byte read once and written once, counted
    twice as STREAM does) with `threads` threads each copying its own slice: numpy releases the
    GIL for the copy, so the threads run at once."""
    source = np.ones(COPY_BYTES // 8)
    target = np.zeros_like(source)
    bounds = np.linspace(0, len(source), threads + 1).astype(int)
    slices = [slice(low, high) for low, high in zip(bounds[:-1], bounds[1:])]

    def copy(part):
        np.copyto(target[part], source[part])

    best = float("inf")
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            start = time.perf_counter()
            list(pool.map(copy, slices))
            best = min(best, time.perf_counter() - start)
    return 2 * source.nbytes / best


def bytes_per_agent_step(env):
    """Bytes one agent step reads or writes at least once: its share of its env's saved state (the
    env struct and episode record) and of the buffers; None for an env that cannot be saved."""
    state = env.c_envs.save_state()
    if state is None:
        return None
    buffers = env.observations.nbytes + env.actions.nbytes + env.rewards.nbytes + env.terminals.nbytes
    buffers += env.truncations.nbytes
    return (len(state) + buffers) / env.num_agents


# Game: (C env parameters, steps/s target on one core of an Intel Xeon of these machines: 1.5x the
# original Ocean's figures there).
GAME_BENCH = {
    "puffer_breakout": (dict(num_envs=4096), 4.7e6),
    "puffer_pong": (dict(num_envs=4096), 38e6),
    "puffer_snake": (dict(num_envs=16, width=640, height=360, num_snakes=256, food=4096, vision=5, max_length=256), 5e6),
    "puffer_connect4": (dict(num_envs=4096, depth=3), 0.054e6),
}


def numpy_game_sps(name, params, seconds):
    env = numpy_games.GAMES[name](**params)
    agents = params["num_envs"] * params.get("num_snakes", 1)
    n = 4 if name == "puffer_snake" else 7 if name == "puffer_connect4" else 3
    cache = np.random.default_rng(0).integers(0, n, (ACTION_CACHE, agents))
    return build_pufferlib3.median_step_rate(env.step, cache, agents, seconds)


def games_section(names, seconds, records):
    print("\nGames, 1 thread, random actions from a pregenerated cache, step() called directly (no vector backend):"
          "\nagent steps/second, C vecenv vs vectorised numpy (same run)")
    header = f"{'env':<18}{'envs x agents':>15}{'C':>10}{'numpy':>10}{'C/numpy':>9}{'target':>9}{'C/target':>10}"
    print(header)
    print("-" * len(header))
    for name in names:
        params, target = GAME_BENCH[name]
        game = {key: value for key, value in params.items() if key != "num_envs"}
        env = ocean.make(name, num_envs=params["num_envs"], num_threads=1, **game)
        ours = steps_per_second(env, seconds)
        peer = numpy_game_sps(name, dict(params), seconds)
        shape = f"{params['num_envs']} x {env.agents_per_env}"
        print(f"{name:<18}{shape:>15}{human_rate(ours):>10}{human_rate(peer):>10}{ours / peer:>8.0f}x"
              f"{human_rate(target):>9}{ours / target:>9.1f}x")
        records.append(results.measurement(
            "games", name, f"{params['num_envs']:,} x {env.agents_per_env} agents, 1 thread", ours, "steps/s",
            peer={"what": "the same game as vectorized numpy", "value": peer}, note=f"target {human_rate(target)}"))


# Game: (Ocean's parameters, PufferLib 3.0's parameters, how the rules still differ). Matched where
# the games allow it: squared's grid, pong's points, snake's boards and lengths, breakout's bricks
# and frames a step, connect4's search depth.
PEER_GAMES = {
    "puffer_squared": (
        dict(num_envs=4096, size=11), dict(num_envs=4096, size=11),
        "11 x 11 grid both; PL 3.0: target anywhere, leaving the grid ends the episode with -1, 3 x size "
        "steps; ours: target on the border, walls block, 2 x size steps"),
    "puffer_pong": (
        dict(num_envs=4096, points_to_win=21), dict(num_envs=4096, max_score=21),
        "to 21 points both; PL 3.0: pixel units, full-speed opponent, 8 floats; ours: slower opponent, 6 floats"),
    "puffer_snake": (
        dict(num_envs=16, width=640, height=360, num_snakes=256, food=4096, vision=5, max_length=256),
        dict(num_envs=16, width=640, height=360, num_snakes=256, num_food=4096, vision=5, max_snake_length=256),
        "16 boards of 640 x 360, 256 snakes, 4,096 food, vision 5, max length 256 both; PL 3.0: corpses "
        "become food, boards never reset; ours: boards reset every 1,024 steps"),
    "puffer_breakout": (
        dict(num_envs=4096, brick_rows=6, brick_cols=18), dict(num_envs=4096, frameskip=1),
        "108 bricks and one frame a step both; PL 3.0: pixel physics; ours: a point ball in brick units, 5 lives"),
    "puffer_connect4": (
        dict(num_envs=4096, depth=4), dict(num_envs=4096),
        "opponent searches 4 plies both; PL 3.0: no pruning; ours: alpha-beta"),
}
PEER_SCRATCH = Path("/tmp/pufferlib3")


class PufferLib3:
    """PufferLib 3.0 stepping its games in its own venv (scripts/build_pufferlib3.py --serve)."""

    def __init__(self, python):
        if not Path(python).exists():
            raise SystemExit(f"--peer-python {python} does not exist: build PufferLib 3.0 first with "
                             f"python scripts/build_pufferlib3.py --dir {Path(python).parent.parent.parent}")
        # Its working folder is the scratch folder: importing pufferlib 3.0 links 'resources' there.
        self.process = subprocess.Popen([python, build_pufferlib3.__file__, "--serve"], cwd=Path(python).parents[2],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def steps_per_second(self, game, params, seconds):
        request = dict(game=game.removeprefix("puffer_"), params=params, seconds=seconds, batches=ACTION_CACHE)
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise SystemExit(f"PufferLib 3.0 stopped while stepping {game} (exit {self.process.wait()}); its error is above")
        return json.loads(answer)["rate"]

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=60)


def spread(ratios):
    return f"{min(ratios):.2f}-{max(ratios):.2f}x"


def pufferlib3_section(names, python, rounds, seconds, records):
    """Each shared game from Ocean and from PufferLib 3.0, alternating, one thread each."""
    print(f"\nAgainst PufferLib 3.0.0 (its sdist, built by scripts/build_pufferlib3.py), 1 thread, random actions,"
          f"\neach side's own step(); {rounds} rounds alternating the two sides, agent steps/second of the median"
          f"\nstep() call of each round, medians of the rounds")
    header = f"{'env':<18}{'envs x agents':>15}{'ours':>10}{'PL 3.0':>10}{'ratio':>8}{'per round':>14}"
    print(header)
    print("-" * len(header))
    peer = PufferLib3(python)
    try:
        for name in names:
            ours_params, peer_params, differences = PEER_GAMES[name]
            game = {key: value for key, value in ours_params.items() if key != "num_envs"}
            env = ocean.make(name, num_envs=ours_params["num_envs"], num_threads=1, **game)
            env.reset(0)
            cache = action_cache(env)
            ours, theirs = [], []
            for round_index in range(rounds):
                # Alternate who goes first, so that a drift in the machine's load hits both alike.
                sides = ["ours", "peer"] if round_index % 2 == 0 else ["peer", "ours"]
                for side in sides:
                    if side == "ours":
                        ours.append(build_pufferlib3.median_step_rate(env.step, cache, env.num_agents, seconds))
                    else:
                        theirs.append(peer.steps_per_second(name, peer_params, seconds))
            ratios = [a / b for a, b in zip(ours, theirs)]
            shape = f"{ours_params['num_envs']} x {env.agents_per_env}"
            print(f"{name:<18}{shape:>15}{human_rate(statistics.median(ours)):>10}"
                  f"{human_rate(statistics.median(theirs)):>10}{statistics.median(ours) / statistics.median(theirs):>7.2f}x"
                  f"{spread(ratios):>14}")
            records.append(results.measurement(
                "games", f"{name} against PufferLib 3.0", f"{ours_params['num_envs']:,} x {env.agents_per_env} agents, 1 thread",
                statistics.median(ours), "steps/s", runs=ours,
                peer={"what": "PufferLib 3.0.0, same game, its own step()", "value": statistics.median(theirs), "runs": theirs},
                note=f"ratio per round {spread(ratios)}; {differences}"))
    finally:
        peer.close()


def human_rate(value):
    return f"{value / 1e6:.2f}M" if value < 1e7 else f"{value / 1e6:.1f}M"


def fixed_step_cost(repeats=200_000):
    """Seconds per step() call on a single bandit env: the Python and binding overhead."""
    env = ocean.make("bandit", num_envs=1, log_interval=1_000_000)
    env.reset(0)
    actions = np.zeros(1, np.int32)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeats // 5):
            env.step(actions)
        best = min(best, (time.perf_counter() - start) / (repeats // 5))
    return best


def action_check_share(name="squared", num_envs=4096, repeats=2000):
    """The share of a step at num_envs that its action checks take (check_actions on the action
    buffer: the scan of every action that each step makes before stepping)."""
    env = ocean.make(name, num_envs=num_envs, num_threads=1, log_interval=1_000_000)
    env.reset(0)
    env.actions[:] = action_cache(env)[0]
    best_step, best_check = float("inf"), float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeats):
            env.step(env.actions)
        best_step = min(best_step, (time.perf_counter() - start) / repeats)
        start = time.perf_counter()
        for _ in range(repeats):
            env.check_actions(env.actions)
        best_check = min(best_check, (time.perf_counter() - start) / repeats)
    return best_check / best_step


CRAFTAX_ENVS = ("puffer_craftax", "puffer_craftax_compact")


def craftax_section(num_envs, pool_size, seconds, cores, records):
    """Craftax steps per second: compact and full, with and without a reset pool, 1 and all cores."""
    from ocean.craftax import Craftax

    print(f"\nCraftax, {num_envs} envs, random actions, steps/second (thousands)")
    header = f"{'env':<24}{'reset pool':>12}{'1 thread':>11}{f'{cores} threads':>12}{'memory/env':>12}"
    print(header)
    print("-" * len(header))
    for name in CRAFTAX_ENVS:
        compact = name.endswith("compact")
        for pool in (pool_size, 0):
            rates = [
                steps_per_second(ocean.make(name, num_envs=num_envs, num_threads=threads, reset_pool_size=pool), seconds)
                for threads in (1, cores)
            ]
            memory = Craftax.memory_per_env(compact) / 1024
            label = f"{pool} worlds" if pool else "off"
            print(f"{name:<24}{label:>12}{rates[0] / 1e3:>11.0f}{rates[1] / 1e3:>12.0f}{memory:>10.0f}KB")
            shown = f"{pool:,} worlds" if pool else "off"
            for threads, rate in zip((1, cores), rates):
                records.append(results.measurement(
                    "craftax-cpu", name, f"{num_envs:,} envs, reset pool {shown}, {threads_setting(threads)}", rate,
                    "steps/s", note=f"{memory:.0f} KB per env"))
    if pool_size:
        from ocean.craftax import binding

        print(f"(the reset pool itself: {pool_size} worlds, {pool_size * binding.STATE_BYTES / 2**20:.0f} MB, shared by all envs)")


def threads_setting(threads):
    """How a record names its threads: how they wait matters once there are several."""
    if threads == 1:
        return "1 thread"
    return f"{threads} threads, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}"


def registered_names(parser, flag, text, valid):
    """The registered names a comma-separated ``flag`` value lists (each short, like pong, or
    registered, like puffer_pong; 'none' for none); an unknown one is a usage error listing the
    valid ones."""
    if text == "none":
        return []
    names = []
    for name in text.split(","):
        registered = name if name.startswith("puffer_") else f"puffer_{name}"
        if registered not in valid:
            hint = did_you_mean(registered, valid, ignore_prefix="puffer_")
            shown = ", ".join(sorted(key.removeprefix("puffer_") for key in valid))
            parser.error(f"{flag}: unknown env {name!r}.{hint} Valid: {shown}, or none")
        names.append(registered)
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default=",".join(name for name in ocean.ENVS if name not in CRAFTAX_ENVS + tuple(GAME_BENCH)),
                        help="comma-separated Ocean envs for the generic table, or 'none'")
    parser.add_argument("--counts", default="1024,4096,16384")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--games", default=",".join(GAME_BENCH), help="games for the games section, or 'none'")
    parser.add_argument("--craftax-envs", type=int, default=1024, help="Craftax envs per run (0: skip Craftax)")
    parser.add_argument("--craftax-pool", type=int, default=1024, help="worlds in the Craftax reset pool")
    parser.add_argument("--peer", choices=["none", "pufferlib3"], default="none",
                        help="pufferlib3: also step the games PufferLib 3.0.0 shares, alternating with Ocean's")
    parser.add_argument("--peer-python", default=str(PEER_SCRATCH / "venv" / "bin" / "python"),
                        help="the python of the venv scripts/build_pufferlib3.py built")
    parser.add_argument("--peer-games", default=",".join(PEER_GAMES), help="games to compare with PufferLib 3.0")
    parser.add_argument("--rounds", type=int, default=9, help="rounds of each side per game against PufferLib 3.0")
    results.add_record_flag(parser)
    args = parser.parse_args()
    envs = registered_names(parser, "--envs", args.envs, ocean.ENVS)
    games = registered_names(parser, "--games", args.games, list(GAME_BENCH))
    peer_games = registered_names(parser, "--peer-games", args.peer_games, list(PEER_GAMES))
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    cores = os.cpu_count()
    counts = [int(c) for c in args.counts.split(",")]
    records = []
    print(f"{results.cpu_model()}, {cores} cores; steps/second in millions (agent steps), random actions from a "
          "pregenerated cache, step() called directly (no vector backend)\n")
    header = f"{'env':<20}{'envs':>7}{'1 thread':>11}{f'{cores} threads':>12}{'scaling':>9}"
    print(header)
    print("-" * len(header))
    bandwidth = copy_bandwidth(cores) if envs else None
    traffic = []
    for name in envs:
        for count in counts:
            single = steps_per_second(ocean.make(name, num_envs=count, num_threads=1), args.seconds)
            threaded = ocean.make(name, num_envs=count, num_threads=cores)
            multi = steps_per_second(threaded, args.seconds)
            print(f"{name:<20}{count:>7}{single / 1e6:>11.1f}{multi / 1e6:>12.1f}{multi / single:>8.2f}x")
            records.append(results.measurement("ocean", name, f"{count:,} envs, 1 thread", single, "steps/s"))
            records.append(results.measurement("ocean", name, f"{count:,} envs, {threads_setting(cores)}", multi, "steps/s"))
            moved = bytes_per_agent_step(threaded)
            if moved is not None:
                share = multi * moved / bandwidth
                working_set = moved * threaded.num_agents / 2**20
                traffic.append((name, count, share, working_set))
                records.append(results.measurement(
                    "ocean", f"{name}: bytes touched per second against the copy bandwidth",
                    f"{count:,} envs, {threads_setting(cores)}", share * 100, "%",
                    note=f"{moved:.0f} bytes an agent step touches, {working_set:.1f} MiB in all (where caches hold "
                         f"them, more than memory could bring); STREAM-like copy {bandwidth / 1e9:.1f} GB/s on "
                         f"{cores} threads in the same run"))
    if traffic:
        print(f"\nSTREAM-like copy on {cores} threads: {bandwidth / 1e9:.1f} GB/s. The bytes the envs above touch per "
              f"second on {cores} threads,\nas a share of it (a working set that the caches hold can exceed 100%):")
        for name, count, share, working_set in traffic:
            print(f"  {name:<20}{count:>7} envs{share:>8.1%} of the copy bandwidth, working set {working_set:.1f} MiB")
    print()
    for count in counts:
        ours = steps_per_second(ocean.make("squared", num_envs=count), args.seconds)
        peer = numpy_squared_sps(count, args.seconds)
        print(f"squared, {count} envs, 1 thread: C vecenv {ours / 1e6:.1f}M, numpy peer {peer / 1e6:.1f}M "
              f"-> {ours / peer:.1f}x")
        records.append(results.measurement("ocean", "puffer_squared against numpy", f"{count:,} envs, 1 thread", ours,
                                           "steps/s", peer={"what": "Squared as vectorized numpy", "value": peer}))
    step_cost = fixed_step_cost()
    print(f"\nfixed cost of one step() call from Python: {step_cost * 1e6:.2f} us")
    records.append(results.measurement("ocean", "step() call from Python", "1 bandit env", step_cost * 1e6, "us"))
    check_share = action_check_share()
    print(f"action checks: {check_share:.1%} of a step of 4,096 squared envs")
    records.append(results.measurement("ocean", "action checks' share of a step", "4,096 squared envs, 1 thread",
                                       check_share * 100, "%"))
    if games:
        games_section(games, args.seconds, records)
    if args.peer == "pufferlib3" and peer_games:
        pufferlib3_section(peer_games, args.peer_python, args.rounds, args.seconds, records)
    if args.craftax_envs:
        craftax_section(args.craftax_envs, args.craftax_pool, args.seconds, cores, records)
    if args.record:
        print(f"\n{len(records)} records stored in {results.record(records, args.record)}")


if __name__ == "__main__":
    main()
