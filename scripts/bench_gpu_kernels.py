"""The update's largest custom kernels against what they replace, on one GPU.

Usage: python scripts/bench_gpu_kernels.py [--rows 8192,32768] [--segments 256] [--horizon 128]
           [--hidden 256] [--advantage-rows 8192] [--widths 16,32] [--picks 256]

1. CraftaxCompact's expansion of compact observations into full ones, bf16 as under autocast:
   the tensor code compiled by torch.compile (``expand_with_tensors``) against the GPU env
   library's kernel (``gpu.expand_observations``), at each --rows.
2. The linear recurrence of MinGRU, forward and backward, bf16 inputs: the log-depth scan compiled
   by torch.compile against the chunked Triton scan (``pufferlib.scan_cuda``), on one MinGRU
   layer's minibatch ([segments, horizon, hidden]) and on the advantage kernel's shape
   ([advantage-rows, horizon, 1]).
3. CraftaxCells' table gradient from a bf16 gradient of its input, at each --rows and table width
   (--widths): the shared-memory atomics kernel against the tensor-core one. The library takes
   the tensor cores when the gradient starts on a 16-byte boundary, as torch's allocations do; a
   copy starting 4 bytes later takes the atomics kernel. CraftaxCells' input kernel beside them.
4. The prioritized draw's top-k: --picks of --advantage-rows segments' keys, ``torch.topk`` against
   the single Triton program (``pufferlib.top_k_cuda``).

Each figure is the mean of 30 replays of a CUDA graph of the call (captured after 3 warm-up calls),
timed with CUDA events, the better of two rounds in which the pair alternates.
"""

import argparse

import torch

from ocean.craftax import COMPACT_OBS_BYTES, NUM_ACTIONS, gpu
from ocean.craftax.policy import CraftaxCells, CraftaxCompact
from pufferlib import scan_cuda, top_k_cuda
from pufferlib.pytorch import side_stream


def milliseconds(call, repeats=30):
    """Mean device time of call, captured once as a CUDA graph and replayed: the kernels' time, as
    the trainer's graphs run them, without Python's launch overhead."""
    with side_stream("cuda"):
        for _ in range(3):
            call()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    torch.cuda.synchronize()
    start.record()
    for _ in range(repeats):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / repeats


def log_depth_scan(a, b, h0):
    steps, offset = a.shape[1], 1
    while offset < steps:
        b = torch.cat([b[:, :offset], a[:, offset:] * b[:, :-offset] + b[:, offset:]], dim=1)
        a = torch.cat([a[:, :offset], a[:, offset:] * a[:, :-offset]], dim=1)
        offset *= 2
    return a * h0.unsqueeze(1) + b


def policy_and_observations(rows, policy_class=CraftaxCompact, **policy_kwargs):
    """A policy of policy_class, and rows observations of a GPU env after 50 random steps (mobs,
    items and darkness in view)."""
    env = gpu.CraftaxCompactGPU(rows, reset_pool_size=256)
    policy = policy_class(env, hidden_size=16, **policy_kwargs).to(env.device)
    env.gpu_reset(0)
    generator = torch.Generator(device=env.device).manual_seed(0)
    for _ in range(50):
        env.actions.random_(0, NUM_ACTIONS, generator=generator)
        env.gpu_step(env.actions)
    observations = env.observations.clone()
    env.close()
    return policy, observations


def alternate(calls):
    """{name: the best of two alternating timings}."""
    times = {name: [] for name in calls}
    for _ in range(2):
        for name, call in calls.items():
            times[name].append(milliseconds(call))
    return {name: min(values) for name, values in times.items()}


def bench_expansion(rows):
    policy, compact = policy_and_observations(rows)
    tensors = torch.compile(lambda x: policy.expand_with_tensors(x, torch.bfloat16), dynamic=False)
    kernel = lambda: gpu.expand_observations(compact, torch.bfloat16, policy.input_size)  # noqa: E731
    best = alternate({"tensors": lambda: tensors(compact), "kernel": kernel})
    return best["tensors"], best["kernel"]


def bench_cells(rows, width):
    policy, compact = policy_and_observations(rows, CraftaxCells, cell_width=width)
    columns = policy.input_size
    storage = torch.randn(rows * columns + 2, device="cuda").to(torch.bfloat16)
    aligned = storage[: rows * columns].view(rows, columns)
    offset = storage[2:].view(rows, columns)
    assert aligned.data_ptr() % 16 == 0 and offset.data_ptr() % 16 == 4
    best = alternate({
        "input": lambda: gpu.embed_cells(compact, policy.cell_embedding, columns, torch.bfloat16),
        "atomics": lambda: gpu.embed_cells_grad(compact, offset, width),
        "tensor cores": lambda: gpu.embed_cells_grad(compact, aligned, width),
    })
    return best["input"], best["atomics"], best["tensor cores"]


def bench_top_k(count, k):
    keys = torch.randn(count, device="cuda")
    best = alternate({
        "torch.topk": lambda: keys.topk(k, sorted=False).indices,
        "program": lambda: top_k_cuda.top_k_indices(keys, k),
    })
    return best["torch.topk"], best["program"]


def bench_scan(shape):
    a = torch.rand(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    b = torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    h0 = torch.randn(shape[0], shape[2], device="cuda", requires_grad=True)
    grad = torch.randn(shape, device="cuda")
    log_depth = torch.compile(log_depth_scan, dynamic=False)
    best = alternate({
        "log-depth": lambda: torch.autograd.grad(log_depth(a, b, h0), [a, b, h0], grad),
        "chunked": lambda: torch.autograd.grad(scan_cuda.linear_scan(a, b, h0), [a, b, h0], grad),
    })
    return best["log-depth"], best["chunked"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="8192,32768")
    parser.add_argument("--segments", type=int, default=256)
    parser.add_argument("--horizon", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--advantage-rows", type=int, default=8192, help="segments of the whole batch")
    parser.add_argument("--widths", default="16,32", help=f"CraftaxCells' table widths, of {gpu.CELL_WIDTHS}")
    parser.add_argument("--picks", type=int, default=256, help="segments a minibatch draws")
    args = parser.parse_args()
    widths = [int(width) for width in args.widths.split(",")]
    if any(width not in gpu.CELL_WIDTHS for width in widths):
        parser.error(f"--widths must be of {gpu.CELL_WIDTHS}, got {args.widths}")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")

    print("| expansion, bf16 | rows | tensor code (compiled) | kernel | ratio |")
    print("|---|---:|---:|---:|---:|")
    for rows in [int(r) for r in args.rows.split(",")]:
        slow, fast = bench_expansion(rows)
        print(f"| {COMPACT_OBS_BYTES} bytes -> {CraftaxCompact.input_size:,} | {rows:,} | {slow:.3f} ms | {fast:.3f} ms | {slow / fast:.1f}x |")

    print("\n| scan, forward + backward | shape | log-depth (compiled) | chunked | ratio |")
    print("|---|---|---:|---:|---:|")
    for shape in [(args.segments, args.horizon, args.hidden), (args.advantage_rows, args.horizon, 1)]:
        slow, fast = bench_scan(shape)
        print(f"| a_t h_t-1 + b_t | {list(shape)} | {slow:.3f} ms | {fast:.3f} ms | {slow / fast:.1f}x |")

    print("\n| CraftaxCells, bf16 | rows | width | input | table gradient, atomics | tensor cores | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for rows in [int(r) for r in args.rows.split(",")]:
        for width in widths:
            embed, slow, fast = bench_cells(rows, width)
            print(f"| {gpu.CHANNELS} x {width} table | {rows:,} | {width} | {embed:.3f} ms | {slow:.3f} ms | {fast:.3f} ms | {slow / fast:.1f}x |")

    print("\n| top-k | values | torch.topk | single program | ratio |")
    print("|---|---:|---:|---:|---:|")
    slow, fast = bench_top_k(args.advantage_rows, args.picks)
    print(f"| {args.picks} largest | {args.advantage_rows:,} | {slow:.3f} ms | {fast:.3f} ms | {slow / fast:.1f}x |")


if __name__ == "__main__":
    main()
