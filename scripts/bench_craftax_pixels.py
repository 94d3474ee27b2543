"""Env-only steps per second of Craftax observed in pixels: the GPU env (CraftaxPixelsGPU) beside
the same env with compact observations (CraftaxCompactGPU: the step alone, what the pixels add to
it) and the C env (CraftaxPixels on every host core), measured in the same run.

Usage: python scripts/bench_craftax_pixels.py [--counts 1024,4096,16384] [--seconds 2] [--pool 1024]
           [--cpu-envs 1024] [--kernels]

Rows are timed as scripts/bench_craftax_gpu.py times its GPU rows (random actions drawn on the GPU
every step, CUDA events; --kernels adds each row's device time per step by kernel). That script
can take a pixel row from ``pixels_gpu_env``, which builds the env or says why it does not fit.
"""

import argparse
import os
import sys

import ocean.craftax as craftax
from ocean.craftax import binding, gpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_craftax_gpu import ENV_OVERHEAD_BYTES, bench_cpu, bench_gpu, time_gpu_env  # noqa: E402


def pixels_gpu_env(torch, num_envs, pool, envs_per_warp=None, observation_block_size=10):
    """(CraftaxPixelsGPU of ``num_envs`` envs, None), or (None, why not) when they do not fit in
    the GPU's free memory."""
    height, width, channels = binding.frame_shape(observation_block_size)
    per_env = binding.STATE_BYTES + craftax.COMPACT_OBS_BYTES + height * width * channels * 4 + ENV_OVERHEAD_BYTES
    free, _ = torch.cuda.mem_get_info()
    if num_envs * per_env > free * 0.95:
        return None, f"does not fit: needs {num_envs * per_env / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"
    env = gpu.CraftaxPixelsGPU(num_envs, reset_pool_size=pool, envs_per_warp=envs_per_warp,
                               observation_block_size=observation_block_size)
    return env, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1024,4096,16384")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--pool", type=int, default=1024)
    parser.add_argument("--cpu-envs", type=int, default=1024)
    parser.add_argument("--kernels", action="store_true")
    args = parser.parse_args()
    import torch

    print(f"{torch.cuda.get_device_name()}, {os.cpu_count()} host cores", flush=True)
    rows = []
    for count in [int(c) for c in args.counts.split(",")]:
        env, note = pixels_gpu_env(torch, count, args.pool)
        rate, note = time_gpu_env(torch, env, craftax.NUM_ACTIONS, args.seconds, args.kernels) if env else (None, note)
        rows.append(("GPU CraftaxPixelsGPU", count, rate, note))
        print(rows[-1], flush=True)
        rate, note = bench_gpu(torch, gpu.CraftaxCompactGPU, count, args.pool, args.seconds, args.kernels)
        rows.append(("GPU CraftaxCompactGPU", count, rate, note))
        print(rows[-1], flush=True)
    rate, note = bench_cpu(craftax.CraftaxPixels, args.cpu_envs, args.pool, args.seconds)
    rows.append(("C env CraftaxPixels", args.cpu_envs, rate, note))
    print(rows[-1], flush=True)
    print()
    for name, count, rate, note in rows:
        shown = f"{rate:>14,.0f} steps/s" if rate else f"{'-':>14}"
        print(f"{name:<24} {count:>7,} envs {shown}  ({note})")


if __name__ == "__main__":
    main()
