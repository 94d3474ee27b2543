"""Env-only steps per second of the GPU Craftax env, with its peers measured in the same run.

Usage: python scripts/bench_craftax_gpu.py [--counts 8192,65536,262144,655360] [--seconds 2]
           [--pool 1024] [--cpu-envs 4096] [--jax-envs 4096] [--kernels] [--envs-per-warp N]

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
"""

import argparse
import os
import re
import sys
import time

import numpy as np

import ocean.craftax as craftax
from ocean.craftax import binding, gpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402

# Bytes a GPU env holds per env beyond its state and observation (the C env struct, episode sums).
ENV_OVERHEAD_BYTES = 1024


def kernel_times(torch, run, steps=10):
    """Device time per step of each env kernel (vec_gpu_*, craftax_*, the observation expansion) and of the
    rest together (the action draws), from the torch profiler over `steps` steps."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as profiler:
        run(steps)
        torch.cuda.synchronize()
    times = {}
    for event in profiler.key_averages():
        if event.self_device_time_total > 0:
            match = re.search(r"(?:vec_gpu|craftax)_\w+|\w*observation\w*", event.key)
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
    env.gpu_reset(0)
    generator = torch.Generator(device=env.device).manual_seed(0)

    def run(steps, actions=env.actions, step=env.gpu_step):
        for _ in range(steps):
            actions.random_(0, craftax.NUM_ACTIONS, generator=generator)
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
    return num_envs * steps / elapsed, note


def bench_cpu(env_class, num_envs, pool, seconds):
    threads = os.cpu_count() or 1
    env = env_class(num_envs=num_envs, num_threads=threads, reset_pool_size=pool)
    cache = np.random.default_rng(0).integers(0, craftax.NUM_ACTIONS, (64, num_envs)).astype(np.int32)
    env.reset(0)
    for i in range(10):
        env.step(cache[i % 64])
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.step(cache[steps % 64])
        steps += 1
    rate = steps * num_envs / (time.perf_counter() - start)
    env.close()
    return rate, f"{threads} threads, {num_envs} envs"


def bench_jax(num_envs, seconds):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        from craftax.craftax.envs.craftax_symbolic_env import CraftaxSymbolicEnv
    except ImportError as error:
        return None, f"not importable here ({error})"
    env = CraftaxSymbolicEnv()
    params = env.default_params
    scan_steps = 64

    def body(carry, _):
        rng, state = carry
        rng, action_key, step_key = jax.random.split(rng, 3)
        actions = jax.random.randint(action_key, (num_envs,), 0, craftax.NUM_ACTIONS)
        step_keys = jax.random.split(step_key, num_envs)
        _, state, reward, _, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(step_keys, state, actions, params)
        return (rng, state), reward.sum()

    @jax.jit
    def rollout(rng, state):
        return jax.lax.scan(body, (rng, state), None, scan_steps)

    reset_keys = jax.random.split(jax.random.PRNGKey(0), num_envs)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(reset_keys, params)
    rng = jax.random.PRNGKey(1)
    (rng, state), rewards = rollout(rng, state)
    rewards.block_until_ready()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        (rng, state), rewards = rollout(rng, state)
        rewards.block_until_ready()
        calls += 1
    rate = calls * scan_steps * num_envs / (time.perf_counter() - start)
    return rate, f"{jax.devices()[0].device_kind}, {num_envs} envs, no pool"


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
    results.add_record_flag(parser)
    args = parser.parse_args()

    import torch

    rows, gpu_rates, cpu_rates = [], [], {}
    print(f"GPU: {torch.cuda.get_device_name()}; host: {results.cpu_model()}, {os.cpu_count()} cores", flush=True)
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
            f"{args.jax_envs:,} envs, jit + vmap + scan of 64 steps, no pool", jax_row[2], "steps/s", machine=machine,
            note=jax_row[3]))
    return records


if __name__ == "__main__":
    main()
