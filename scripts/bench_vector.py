"""Vectorization benchmark: Gymnasium's vector envs against pufferlib's backends, side by side.

Every backend steps the same env stack (the env ``gymnasium.make`` returns, so identical wrappers on
both sides) in this one process tree, on the cores this process may use, with random actions drawn
ahead of time. Measured: agent steps per second of the whole loop (stepping plus, for pools, the
recv/send bookkeeping), after a warm-up. Backends:

    gym-sync    gymnasium.vector.SyncVectorEnv
    gym-async   gymnasium.vector.AsyncVectorEnv (one process per env: Gymnasium's only layout), with
                observations through shared memory and through pipes (``shared_memory=False``)
    serial      pufferlib Serial
    mp-sync     pufferlib Multiprocessing, reset/step over all envs
    mp-pool     pufferlib Multiprocessing async pool (send/recv, batch_size < num_envs); several
                worker/batch layouts are tried and each is printed

Envs: ``cartpole`` (CartPole-v1), ``nethack`` (NetHackScore-v0, pufferlib's default keys), and
``synthetic`` envs whose steps burn a random amount of CPU time, Normal(mean, std) clipped at 0
(the experiment of the PufferLib 0.5 post; CPU time, not sleep, so waiting on a core counts
as waiting). The ratios compare each pufferlib backend's best layout with Gymnasium's best
configuration: the pool against the faster AsyncVectorEnv, Multiprocessing sync against the fastest
of all Gymnasium runs. A last section times the checks every ``send`` makes on its actions (dtype
and range), per batch, against the time of one batch's step. Usage:

    python scripts/bench_vector.py                       # everything, 16 envs, 2 s per run
    python scripts/bench_vector.py --envs cartpole --seconds 5
    python scripts/bench_vector.py --envs synthetic --synthetic 1e-4:1e-4 --synthetic 1e-5:0

--record stores each pufferlib backend's best layout beside its Gymnasium peer, and the action
checks' cost, as records (scripts/results.py) for BENCHMARKS.md.
"""

import argparse
import functools
import os
import sys
import time

import gymnasium
import numpy as np

from pufferlib import vector
from pufferlib.emulation import GymnasiumPufferEnv
from pufferlib.spaces import ActionBounds

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402

ACTION_TABLE_ROWS = 1024


class SyntheticEnv(gymnasium.Env):
    """Each step burns Normal(mean, std) seconds of this process's CPU time (clipped at 0)."""

    def __init__(self, mean=1e-4, std=0.0, episode_length=1000):
        self.mean, self.std, self.episode_length = mean, std, episode_length
        self.observation_space = gymnasium.spaces.Box(-1, 1, (4,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)
        self.rng = np.random.default_rng()
        self.tick = 0

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.tick = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        duration = max(0.0, self.rng.normal(self.mean, self.std)) if self.std else self.mean
        end = time.process_time() + duration
        while time.process_time() < end:
            pass
        self.tick += 1
        return np.zeros(4, np.float32), 1.0, False, self.tick >= self.episode_length, {}


def gymnasium_env(env_id, **kwargs):
    if env_id == "synthetic":
        return SyntheticEnv(**kwargs)
    if env_id.startswith("NetHack"):
        import nle  # noqa: F401  (registers NetHack with gymnasium)
    return gymnasium.make(env_id, **kwargs)


def puffer_env(env_id, kwargs, buf=None):
    return GymnasiumPufferEnv(env=gymnasium_env(env_id, **kwargs), buf=buf)


def actions_for(space, batch, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, space.n, size=(ACTION_TABLE_ROWS, batch)).astype(np.int64)


def timed(step_once, seconds, warmup=0.3):
    """Calls step_once until ``seconds`` have passed after a warm-up; returns calls per second."""
    end = time.perf_counter() + warmup
    while time.perf_counter() < end:
        step_once()
    calls, start = 0, time.perf_counter()
    end = start + seconds
    while True:
        for _ in range(16):
            step_once()
        calls += 16
        now = time.perf_counter()
        if now >= end:
            return calls / (now - start)


def bench_gymnasium(kind, env_id, kwargs, num_envs, seconds, shared_memory=True):
    fns = [functools.partial(gymnasium_env, env_id, **kwargs) for _ in range(num_envs)]
    if kind == "sync":
        envs = gymnasium.vector.SyncVectorEnv(fns)
    else:
        envs = gymnasium.vector.AsyncVectorEnv(fns, shared_memory=shared_memory)
    try:
        envs.reset(seed=0)
        table = actions_for(envs.single_action_space, num_envs)
        index = [0]

        def step_once():
            envs.step(table[index[0] % ACTION_TABLE_ROWS])
            index[0] += 1

        return timed(step_once, seconds) * num_envs
    finally:
        envs.close()


def bench_puffer(
    backend, env_id, kwargs, num_envs, seconds, num_workers=None, batch_size=None, zero_copy=True, **backend_kwargs
):
    creator = functools.partial(puffer_env, env_id, kwargs)
    envs = vector.make(
        creator,
        backend=backend,
        num_envs=num_envs,
        num_workers=num_workers,
        batch_size=batch_size,
        zero_copy=zero_copy,
        **backend_kwargs,
    )
    try:
        table = actions_for(envs.single_action_space, envs.agents_per_batch)
        index = [0]
        if envs.batch_size == envs.num_envs:
            envs.reset(seed=0)

            def step_once():
                envs.step(table[index[0] % ACTION_TABLE_ROWS])
                index[0] += 1

        else:
            envs.async_reset(seed=0)

            def step_once():
                envs.recv()
                envs.send(table[index[0] % ACTION_TABLE_ROWS])
                index[0] += 1

        return timed(step_once, seconds) * envs.agents_per_batch
    finally:
        envs.close()


def worker_counts(num_envs, cores):
    """Worker counts tried for Multiprocessing: powers of two up to the cores, and the core count.
    Fewer workers than cores leave a core to the main process, whose polling competes with theirs."""
    counts = {cores} | {2**k for k in range(1, cores.bit_length()) if 2**k <= cores}
    return sorted(w for w in counts if num_envs % w == 0)


def pool_layouts(num_envs, cores):
    """(num_workers, batch_size, zero_copy) layouts tried for the pool: double buffering over up to
    `cores` workers, and first-ready batches over more, smaller workers."""
    batch = num_envs // 2
    candidates = [(workers, batch, True) for workers in worker_counts(num_envs, cores)]
    candidates += [(2 * cores, batch, False), (4 * cores, batch, False)]
    return [
        (workers, size, zero_copy)
        for workers, size, zero_copy in candidates
        if num_envs % workers == 0 and size % (num_envs // workers) == 0 and size < num_envs
    ]


BACKEND_NAMES = {"serial": "Serial", "mp-sync": "Multiprocessing", "mp-pool": "Multiprocessing pool"}
GYMNASIUM_NAMES = {"gym-sync": "Gymnasium SyncVectorEnv", "gym-async": "Gymnasium AsyncVectorEnv"}


def run(name, env_id, kwargs, num_envs, seconds, cores, repeats, mp_kwargs, records):
    """Measures every backend ``repeats`` times, interleaved (so a burst of load from other
    processes on the machine hits all backends alike), prints the medians and adds each
    pufferlib backend's best layout, beside its Gymnasium peer, to ``records``."""
    configs = [
        ("gym-sync", "1 process", functools.partial(bench_gymnasium, "sync", env_id, kwargs, num_envs, seconds)),
        (
            "gym-async",
            f"{num_envs} processes, shared memory",
            functools.partial(bench_gymnasium, "async", env_id, kwargs, num_envs, seconds, True),
        ),
        (
            "gym-async",
            f"{num_envs} processes, pipes",
            functools.partial(bench_gymnasium, "async", env_id, kwargs, num_envs, seconds, False),
        ),
        ("serial", "1 process", functools.partial(bench_puffer, "serial", env_id, kwargs, num_envs, seconds)),
    ]
    for workers in worker_counts(num_envs, cores):
        measure = functools.partial(
            bench_puffer, "multiprocessing", env_id, kwargs, num_envs, seconds, workers, **mp_kwargs
        )
        configs.append(("mp-sync", f"{workers} workers", measure))
    for workers, batch, zero_copy in pool_layouts(num_envs, cores):
        measure = functools.partial(
            bench_puffer, "multiprocessing", env_id, kwargs, num_envs, seconds, workers, batch, zero_copy, **mp_kwargs
        )
        configs.append(("mp-pool", f"{workers} workers, batch {batch}, zero_copy={zero_copy}", measure))
    samples = {(backend, layout): [] for backend, layout, _ in configs}
    for _ in range(repeats):
        for backend, layout, measure in configs:
            samples[(backend, layout)].append(measure())

    print(f"\n## {name}: {num_envs} envs, {cores} cores, median of {repeats}\n")
    print("| backend | layout | steps/s (median) | min - max |")
    print("|---|---|---:|---:|")
    medians = {}
    for (backend, layout), values in samples.items():
        medians[(backend, layout)] = float(np.median(values))
        print(f"| {backend} | {layout} | {medians[(backend, layout)]:,.0f} | {min(values):,.0f} - {max(values):,.0f} |")
    best, best_layout = {}, {}
    for (backend, layout), value in medians.items():
        if value > best.get(backend, 0):
            best[backend], best_layout[backend] = value, layout
    gym_async, gym_best = best["gym-async"], max(best["gym-async"], best["gym-sync"])
    print()
    spin = f", spin {mp_kwargs['spin']}" if "spin" in mp_kwargs else ""
    for backend in ("serial", "mp-sync", "mp-pool"):
        print(
            f"- {backend}: {best[backend] / gym_async:.2f}x Gymnasium async (its best configuration), "
            f"{best[backend] / gym_best:.2f}x Gymnasium's best"
        )
        peer = "gym-async" if backend == "mp-pool" else max(("gym-async", "gym-sync"), key=best.get)
        records.append(results.measurement(
            "vector", name, f"{num_envs} envs, {BACKEND_NAMES[backend]}{spin}", best[backend], "steps/s",
            peer={"what": f"{GYMNASIUM_NAMES[peer]}, {best_layout[peer]}", "value": best[peer]},
            note=f"best layout: {best_layout[backend]}; median of {repeats}"))
    step_us = num_envs / best["mp-sync"] * 1e6
    for batch in sorted({num_envs, num_envs // 2}):
        check_us = action_check_us(env_id, kwargs, batch)
        print(
            f"- send's action checks, batch of {batch}: {check_us:.2f} us "
            f"({check_us / step_us:.1%} of one {num_envs}-env mp-sync step, {step_us:.0f} us)"
        )
        records.append(results.measurement("vector", "send's action checks", f"{name}, a batch of {batch}", check_us, "us"))
    sys.stdout.flush()


def action_check_us(env_id, kwargs, batch, calls=20000):
    """Microseconds per call of the checks ``VecEnv.send`` runs on a batch of valid actions."""
    env = puffer_env(env_id, kwargs)
    bounds = ActionBounds(env.single_action_space)
    env.close()
    actions = actions_for(env.single_action_space, batch)[0]
    start = time.perf_counter()
    for _ in range(calls):
        if bounds.dtype_problem(actions) or bounds.out_of_range(actions):
            raise AssertionError("valid actions were rejected")
    return (time.perf_counter() - start) / calls * 1e6


def parse_synthetic(text):
    mean, std = text.split(":")
    return float(mean), float(std)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--envs", nargs="+", default=["cartpole", "nethack", "synthetic"], choices=["cartpole", "nethack", "synthetic"]
    )
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=2.0, help="measured time per run")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs per backend; medians are reported")
    parser.add_argument(
        "--spin", type=int, help="Multiprocessing semaphore polls before blocking (default: the library's choice)"
    )
    results.add_record_flag(parser)
    parser.add_argument(
        "--synthetic",
        action="append",
        type=parse_synthetic,
        metavar="MEAN:STD",
        help="step-time mean and std in seconds (repeatable; default 1e-5:1e-5, 1e-4:1e-4, 1e-3:1e-3 and 1e-4:0)",
    )
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    mp_kwargs = {} if args.spin is None else {"spin": args.spin}
    print(f"# bench_vector: {args.num_envs} envs, {cores} cores, {args.seconds} s per run, {args.repeats} runs each")
    print(f"CPU: {results.cpu_model()}; Python {sys.version.split()[0]}; gymnasium {gymnasium.__version__}")
    print(
        f"load average before: {' '.join(f'{load:.2f}' for load in os.getloadavg())}; "
        f"Multiprocessing spin: {args.spin if args.spin is not None else 'default'}"
    )
    records = []
    if "cartpole" in args.envs:
        run("CartPole-v1", "CartPole-v1", {}, args.num_envs, args.seconds, cores, args.repeats, mp_kwargs, records)
    if "nethack" in args.envs:
        from pufferlib.environments.nethack import OBSERVATION_KEYS

        run(
            "NetHackScore-v0",
            "NetHackScore-v0",
            {"observation_keys": OBSERVATION_KEYS},
            args.num_envs,
            args.seconds,
            cores,
            args.repeats,
            mp_kwargs,
            records,
        )
    if "synthetic" in args.envs:
        for mean, std in args.synthetic or [(1e-5, 1e-5), (1e-4, 1e-4), (1e-3, 1e-3), (1e-4, 0.0)]:
            run(
                f"synthetic mean {mean:g} s, std {std:g} s",
                "synthetic",
                {"mean": mean, "std": std},
                args.num_envs,
                args.seconds,
                cores,
                args.repeats,
                mp_kwargs,
                records,
            )
    print(f"\nload average after: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    if args.record:
        print(f"{len(records)} records stored in {results.record(records, args.record)}")


if __name__ == "__main__":
    main()
