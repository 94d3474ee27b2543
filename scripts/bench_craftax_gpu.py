"""Env-only steps per second of the GPU Craftax env, with its peers measured in the same run.

Usage: python scripts/bench_craftax_gpu.py [--counts 8192,65536,262144,655360] [--seconds 2]
           [--pool 1024] [--cpu-envs 4096] [--jax-envs 4096] [--kernels] [--envs-per-warp N]
       python scripts/bench_craftax_gpu.py --classic [--counts ...] [--pool 1024] [--cpu-envs 4096]
           [--envs-per-warp N] [--peer-craftax-cu PATH]

Rows: CraftaxGPU and CraftaxCompactGPU at each env count (counts that do not fit in the GPU's
free memory are reported and skipped), random actions drawn on the GPU every step (torch.randint
into the env's action tensor), timed with CUDA events; the C env (ocean.craftax.Craftax/
CraftaxCompact) on every host core; and, when the JAX package `craftax` is importable, the JAX
reference (jit + vmap + lax.scan, auto-reset). Every row uses a reset pool of --pool worlds except
the JAX reference, which has none. --kernels adds each GPU row's device time per step by kernel
(the env's step, observation and reset kernels, and the rest), from the torch profiler.
--envs-per-warp sets the GPU env's step kernel's warp width instead of the env's own choice.
--record stores each GPU row beside the C env of the same observation, and the JAX reference, as
records (scripts/results.py) for BENCHMARKS.md.

--classic times Craftax-Classic instead, by the same method: CraftaxClassicGPU at each count and
the C env CraftaxClassic on every host core, both with a reset pool of --pool worlds (--pool 0:
every world generated, as the reference). With --peer-craftax-cu PATH (a checkout of
github.com/Infatoshi/craftax.cu), its Classic CUDA env is built there as its Makefile builds it
and its own `bench` (env-only, random actions, the 1,345-float observation: --obs-mode 0) runs at
each count in the same run; each count prints ours / theirs. Its trajectories are not the
reference's (its world generator draws its own random numbers), so the two step different worlds,
and it generates every world it resets to: --pool 0 times ours doing the same. --record stores
each Classic GPU row (its setting names the pool) with craftax.cu's row of the same count as its peer.
"""

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

import ocean.craftax as craftax
from ocean.craftax import binding, gpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402

# Bytes a GPU env holds per env beyond its state and observation (the C env struct, episode sums).
ENV_OVERHEAD_BYTES = 1024
CLASSIC_ACTIONS = 17


def kernel_times(torch, run, steps=10):
    """Device time per step of each env kernel (vec_gpu_*, craftax_*, classic_*, the observation expansion)
    and of the rest together (the action draws), from the torch profiler over `steps` steps."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as profiler:
        run(steps)
        torch.cuda.synchronize()
    times = {}
    for event in profiler.key_averages():
        if event.self_device_time_total > 0:
            match = re.search(r"(?:vec_gpu|craftax|classic)_\w+|\w*observation\w*", event.key)
            name = match.group(0) if match else "other"
            times[name] = times.get(name, 0.0) + event.self_device_time_total / steps
    return ", ".join(f"{name} {us:,.0f} us" for name, us in sorted(times.items(), key=lambda item: -item[1]))


def bench_gpu(torch, env_class, num_envs, pool, seconds, kernels=False, envs_per_warp=None):
    obs_bytes = craftax.COMPACT_OBS_BYTES if env_class.compact else craftax.OBS_SIZE * 4
    needed = num_envs * (binding.STATE_BYTES + obs_bytes + ENV_OVERHEAD_BYTES)
    free, _ = torch.cuda.mem_get_info()
    if needed > free * 0.95:
        return None, f"does not fit: needs {needed / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"
    env = env_class(num_envs, reset_pool_size=pool, envs_per_warp=envs_per_warp)
    return time_gpu_env(torch, env, craftax.NUM_ACTIONS, seconds, kernels)


def bench_classic_gpu(torch, num_envs, pool, seconds, kernels=False, envs_per_warp=None):
    from ocean.craftax_classic import binding as classic_binding
    from ocean.craftax_classic.gpu import CraftaxClassicGPU

    needed = num_envs * (classic_binding.state_size() + classic_binding.OBS_SIZE * 4 + ENV_OVERHEAD_BYTES)
    free, _ = torch.cuda.mem_get_info()
    if needed > free * 0.95:
        return None, f"does not fit: needs {needed / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"
    warp = {} if envs_per_warp is None else {"envs_per_warp": envs_per_warp}
    env = CraftaxClassicGPU(num_envs, reset_pool_size=pool, **warp)
    return time_gpu_env(torch, env, CLASSIC_ACTIONS, seconds, kernels)


def time_gpu_env(torch, env, num_actions, seconds, kernels):
    """Steps per second of a GPU env (closed after), random actions drawn on the GPU every step."""
    env.gpu_reset(0)
    generator = torch.Generator(device=env.device).manual_seed(0)

    def run(steps, actions=env.actions, step=env.gpu_step):
        for _ in range(steps):
            actions.random_(0, num_actions, generator=generator)
            step(actions)

    run(20)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run(10)
    end.record()
    end.synchronize()
    per_step = start.elapsed_time(end) / 1000 / 10
    steps = max(10, int(seconds / per_step))
    start.record()
    run(steps)
    end.record()
    end.synchronize()
    elapsed = start.elapsed_time(end) / 1000
    note = f"{steps} steps, {elapsed / steps * 1000:.2f} ms/step"
    if kernels:
        note += f"; per step: {kernel_times(torch, run)}"
    env.gpu_sync_logs()
    env.close()
    return env.num_envs * steps / elapsed, note


def bench_cpu(env_class, num_envs, pool, seconds, num_actions=craftax.NUM_ACTIONS, threads=None):
    """Steps per second of a C env on ``threads`` threads (default: every core) over about ``seconds``."""
    threads = threads or os.cpu_count() or 1
    env = env_class(num_envs=num_envs, num_threads=threads, **({} if pool is None else {"reset_pool_size": pool}))
    rate = c_env_stepper(env, num_actions)(seconds)
    env.close()
    return rate, f"{threads} thread{'s' if threads > 1 else ''}, {num_envs} envs"


def c_env_stepper(env, num_actions, warmup_steps=10):
    """Resets the C env ``env`` and steps it ``warmup_steps`` times; returns a function that steps it
    for about ``seconds`` (at least one step) with random actions from a pregenerated cache, world
    generations included, and gives steps per second. Successive calls continue the same episodes."""
    cache = np.random.default_rng(0).integers(0, num_actions, (64, env.num_envs)).astype(np.int32)
    env.reset(0)
    for i in range(warmup_steps):
        env.step(cache[i % len(cache)])
    taken = warmup_steps

    def steps_per_second(seconds):
        nonlocal taken
        steps, start = 0, time.perf_counter()
        while steps == 0 or time.perf_counter() - start < seconds:
            env.step(cache[(taken + steps) % len(cache)])
            steps += 1
        taken += steps
        return steps * env.num_envs / (time.perf_counter() - start)

    return steps_per_second


def bench_jax(num_envs, seconds):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        from craftax.craftax.envs.craftax_symbolic_env import CraftaxSymbolicEnv
    except ImportError as error:
        return None, f"not importable here ({error})"
    rate = jax_reference(CraftaxSymbolicEnv(), craftax.NUM_ACTIONS, num_envs)(seconds)
    return rate, f"{jax.devices()[0].device_kind}, {num_envs} envs, no pool"


JAX_SCAN_STEPS = 64


def jax_reference(env, num_actions, num_envs, scan_steps=JAX_SCAN_STEPS, progress=lambda message: None):
    """The JAX reference timed as its users run it: ``env`` (an auto-resetting env of the ``craftax``
    package) vmapped over ``num_envs`` envs, ``scan_steps`` steps of random actions in one jitted
    lax.scan. Resets and compiles before it returns, telling ``progress`` each phase; returns a
    function that steps for about ``seconds`` (at least one scan) and gives steps per second."""
    import jax

    params = env.default_params

    def body(carry, _):
        rng, state = carry
        rng, action_key, step_key = jax.random.split(rng, 3)
        actions = jax.random.randint(action_key, (num_envs,), 0, num_actions)
        step_keys = jax.random.split(step_key, num_envs)
        _, state, reward, _, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(step_keys, state, actions, params)
        return (rng, state), reward.sum()

    def rollout(rng, state):
        return jax.lax.scan(body, (rng, state), None, scan_steps)

    progress(f"resetting {num_envs} envs (the jitted reset compiles first)")
    start = time.perf_counter()
    reset_keys = jax.random.split(jax.random.PRNGKey(0), num_envs)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(reset_keys, params)
    jax.block_until_ready(state)
    progress(f"reset in {time.perf_counter() - start:.0f} s; compiling the scan of {scan_steps} steps")
    start = time.perf_counter()
    rng = jax.random.PRNGKey(1)
    compiled = jax.jit(rollout).lower(rng, state).compile()
    progress(f"compiled in {time.perf_counter() - start:.0f} s; one scan to warm up")
    start = time.perf_counter()
    carry, rewards = compiled(rng, state)
    rewards.block_until_ready()
    progress(f"warm-up scan in {time.perf_counter() - start:.1f} s")

    def steps_per_second(seconds):
        nonlocal carry
        calls, start = 0, time.perf_counter()
        while calls == 0 or time.perf_counter() - start < seconds:
            carry, rewards = compiled(*carry)
            rewards.block_until_ready()
            calls += 1
        return calls * scan_steps * num_envs / (time.perf_counter() - start)

    return steps_per_second


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="8192,65536,262144,655360")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--pool", type=int, default=1024)
    parser.add_argument("--cpu-envs", type=int, default=4096)
    parser.add_argument("--jax-envs", type=int, default=4096)
    parser.add_argument("--kernels", action="store_true", help="each GPU row's device time per step by kernel")
    parser.add_argument("--envs-per-warp", type=int, choices=gpu.ENVS_PER_WARP,
                        help="of the GPU env's step kernel (default: the env's own choice for the count)")
    parser.add_argument("--classic", action="store_true", help="time Craftax-Classic (CraftaxClassicGPU) instead")
    parser.add_argument("--peer-craftax-cu", metavar="PATH",
                        help="with --classic: a craftax.cu checkout, its Classic CUDA env built and timed beside")
    results.add_record_flag(parser)
    args = parser.parse_args()
    if args.peer_craftax_cu and not args.classic:
        parser.error("--peer-craftax-cu times craftax.cu's Classic env: give --classic too")

    import torch

    print(f"GPU: {torch.cuda.get_device_name()}; host: {results.cpu_model()}, {os.cpu_count()} cores", flush=True)
    if args.classic:
        return main_classic(torch, args)
    rows, gpu_rates, cpu_rates = [], [], {}
    for count in [int(c) for c in args.counts.split(",")]:
        for env_class in (gpu.CraftaxCompactGPU, gpu.CraftaxGPU):
            rate, note = bench_gpu(torch, env_class, count, args.pool, args.seconds, args.kernels, args.envs_per_warp)
            torch.cuda.empty_cache()  # the closed env's tensors, before the next count
            rows.append((f"GPU {env_class.__name__}", count, rate, note))
            gpu_rates.append((env_class, count, rate, note))
            print(rows[-1], flush=True)
    if args.cpu_envs:
        for env_class in (craftax.CraftaxCompact, craftax.Craftax):
            rate, note = bench_cpu(env_class, args.cpu_envs, args.pool, args.seconds)
            rows.append((f"C env {env_class.__name__}", args.cpu_envs, rate, note))
            cpu_rates[env_class.compact] = (f"C env {env_class.__name__}, {args.cpu_envs:,} envs on {os.cpu_count()} threads", rate)
            print(rows[-1], flush=True)
    if args.jax_envs:
        rate, note = bench_jax(args.jax_envs, args.seconds)
        rows.append(("JAX reference (full obs)", args.jax_envs, rate, note))

    print("\n| env | envs | steps/s | notes |\n|---|---:|---:|---|")
    for name, count, rate, note in rows:
        shown = "-" if rate is None else f"{rate / 1e6:.2f}M"
        print(f"| {name} | {count:,} | {shown} | {note} |")
    if args.record:
        records = recorded(torch.cuda.get_device_name(), args, gpu_rates, cpu_rates, rows[-1] if args.jax_envs else None)
        print(f"\n{len(records)} records stored in {results.record(records, args.record)}")


def main_classic(torch, args):
    from ocean.craftax_classic import CraftaxClassic

    peer = build_classic_peer(torch, args.peer_craftax_cu) if args.peer_craftax_cu else None
    rows, records = [], []
    machine = results.this_machine(gpu=torch.cuda.get_device_name())
    pool = f"reset pool {args.pool:,} worlds" if args.pool else "no reset pool"
    for count in [int(c) for c in args.counts.split(",")]:
        rate, note = bench_classic_gpu(torch, count, args.pool, args.seconds, args.kernels, args.envs_per_warp)
        torch.cuda.empty_cache()
        rows.append(("GPU CraftaxClassicGPU", count, rate, note))
        print(rows[-1], flush=True)
        if peer is not None:
            theirs, their_note = classic_peer_rate(peer, count, args.seconds)
            rows.append(("craftax.cu craftax_classic (obs-mode 0)", count, theirs, their_note))
            print(rows[-1], flush=True)
            if rate is not None and theirs is not None:
                print(f"  {count:,} envs: ours / theirs = {rate / theirs:.3f}", flush=True)
        if rate is not None:
            peer_row = {"what": f"craftax.cu craftax_classic, {their_note}", "value": theirs} if peer and theirs else None
            records.append(results.measurement(
                "craftax-gpu", "CraftaxClassicGPU", f"{count:,} envs, symbolic observations, {pool}", rate,
                "steps/s", peer=peer_row, machine=machine, note=note))
    if args.cpu_envs:
        rate, note = bench_cpu(CraftaxClassic, args.cpu_envs, args.pool, args.seconds, CLASSIC_ACTIONS)
        rows.append(("C env CraftaxClassic", args.cpu_envs, rate, note))
        print(rows[-1], flush=True)
    print("\n| env | envs | steps/s | notes |\n|---|---:|---:|---|")
    for name, count, rate, note in rows:
        shown = "-" if rate is None else f"{rate / 1e6:.2f}M"
        print(f"| {name} | {count:,} | {shown} | {note} |")
    if args.record:
        print(f"\n{len(records)} records stored in {results.record(records, args.record)}")


def build_classic_peer(torch, checkout):
    """craftax.cu's Classic binary for this GPU, built in ``checkout`` as its Makefile's `classic`
    target builds it (its CPU backend's object, compiled for this host, linked in)."""
    sources = [os.path.join(checkout, name) for name in ("main_classic.cu", "craftax_classic.cu", "craftax_classic.c")]
    missing = [path for path in sources if not os.path.exists(path)]
    if missing:
        raise SystemExit(f"--peer-craftax-cu {checkout}: no {', '.join(missing)}; give a checkout of craftax.cu")
    major, minor = torch.cuda.get_device_capability()
    binary = os.path.join(checkout, f"craftax_classic_sm{major}{minor}")
    if not os.path.exists(binary) or os.path.getmtime(binary) < max(os.path.getmtime(path) for path in sources):
        cpu_object = os.path.join(checkout, "craftax_classic_cpu.o")
        builds = [
            ["gcc", "-O3", "-march=native", "-mtune=native", "-ffast-math", "-fno-math-errno", "-funroll-loops", "-fopenmp",
             "-c", sources[2], "-o", cpu_object],
            ["nvcc", "-O3", f"-arch=sm_{major}{minor}", "--expt-relaxed-constexpr", "--use_fast_math", sources[0], cpu_object,
             "-o", binary, "-Xcompiler", "-fopenmp", "-lpthread", "-lcublas"],
        ]
        for build in builds:
            print("craftax.cu: " + " ".join(build), flush=True)
            subprocess.run(build, check=True)
    return binary


def classic_peer_rate(binary, num_envs, seconds):
    """craftax.cu's own env-only bench at ``num_envs`` envs: float observations (--obs-mode 0), its
    default split reset; about ``seconds`` of steps after its 20 warm-up steps."""
    def bench(iters):
        command = [binary, "bench", "--envs", str(num_envs), "--iters", str(iters), "--obs-mode", "0"]
        result = subprocess.run(command, capture_output=True, text=True)
        found = re.search(r"([\d.]+) M SPS\s+\(([\d.]+) us/kernel-step\)", result.stdout)
        if result.returncode != 0 or found is None:
            return None, None, f"failed (exit {result.returncode}): {(result.stdout + result.stderr)[-300:]!r}"
        return float(found.group(1)) * 1e6, float(found.group(2)), " ".join(command[1:])

    rate, step_us, note = bench(50)
    if rate is None:
        return None, note
    rate, step_us, note = bench(max(50, int(seconds / (step_us * 1e-6))))
    return rate, note if rate is None else f"{note}; {step_us / 1000:.2f} ms/step"


def recorded(card, args, gpu_rates, cpu_rates, jax_row):
    """Records of the rows that ran: each GPU row beside the C env of its observation, and the JAX reference."""
    machine = results.this_machine(gpu=card)
    warp = f", {args.envs_per_warp} envs per warp" if args.envs_per_warp else ""
    records = []
    for env_class, count, rate, note in gpu_rates:
        if rate is None:
            continue
        peer = cpu_rates.get(env_class.compact)
        records.append(results.measurement(
            "craftax-gpu", env_class.__name__, f"{count:,} envs, reset pool {args.pool:,} worlds{warp}", rate, "steps/s",
            peer=None if peer is None else {"what": peer[0], "value": peer[1]}, machine=machine,
            note=note.split("; per step: ")[1] if args.kernels else None))
    if jax_row is not None and jax_row[2] is not None:
        records.append(results.measurement(
            "craftax-gpu", "JAX reference (CraftaxSymbolicEnv, full observations)",
            f"{args.jax_envs:,} envs, jit + vmap + scan of {JAX_SCAN_STEPS} steps, no pool", jax_row[2], "steps/s",
            machine=machine, note=jax_row[3]))
    return records


if __name__ == "__main__":
    main()
