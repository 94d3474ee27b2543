"""``top_k_indices`` on CUDA: the indices of the k largest values of a 1-D float32 tensor, in one
Triton program.

The program holds all the values at once (up to ``MOST_VALUES``), reads each float's bits as an
integer that orders as the floats do, and finds the k-th largest by bisecting the integers: 32
counts of the values at or above a candidate, each a sum across the program. The values above it,
then as many of those equal to it as make k, are written at their ranks in a prefix sum, in the
order of their indices. ``torch.topk`` on a CUDA tensor of a few thousand values runs a
single-block radix select that reads the values once per two bits, and takes several times as
long. Imported only where Triton is (CUDA builds of torch).
"""

import torch
import triton
import triton.language as tl

MOST_VALUES = 16384  # beyond, a program's registers would spill: torch.topk serves larger inputs


@triton.jit
def _top_k(values, out, count, K: tl.constexpr, SIZE: tl.constexpr):
    index = tl.arange(0, SIZE)
    x = tl.load(values + index, mask=index < count, other=float("-inf"))
    bits = x.to(tl.int32, bitcast=True)
    # A negative float's magnitude grows with its other bits: flipping them orders it as an integer.
    ordered = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    low = tl.full([], -(2**31), tl.int64)  # at least K values are at or above low ...
    high = tl.full([], 2**31 - 1, tl.int64)  # ... and fewer than K above high
    for _ in range(32):
        middle = (low + high + 1) >> 1
        enough = tl.sum((ordered >= middle.to(tl.int32)).to(tl.int32), axis=0) >= K
        low = tl.where(enough, middle, low)
        high = tl.where(enough, high, middle - 1)
    threshold = low.to(tl.int32)
    above = (ordered > threshold).to(tl.int32)
    tied = (ordered == threshold).to(tl.int32)
    rank = tl.where(above == 1, tl.cumsum(above, axis=0), tl.sum(above, axis=0) + tl.cumsum(tied, axis=0)) - 1
    keep = ((above + tied) > 0) & (rank < K) & (index < count)
    tl.store(out + rank, index.to(tl.int64), mask=keep)


def serves(values, k):
    """Whether ``top_k_indices`` takes these: 1-D float32 values on a CUDA device, at most
    MOST_VALUES of them, and 0 < k <= their number."""
    return (values.is_cuda and values.dtype == torch.float32 and values.dim() == 1
            and 0 < k <= values.numel() <= MOST_VALUES)


def top_k_indices(values, k):
    """The indices ([k] int64) of the k largest of ``values`` (as ``serves`` says), in increasing
    order of index among those above the k-th largest, then those equal to it; ties at the k-th
    largest go to the lower indices."""
    if not serves(values, k):
        raise ValueError(f"top_k_indices: needs 1-D float32 CUDA values, at most {MOST_VALUES} of them, and "
                         f"0 < k <= len(values); got {list(values.shape)} {values.dtype} on {values.device}, k={k}")
    out = torch.empty(k, dtype=torch.int64, device=values.device)
    size = triton.next_power_of_2(values.numel())
    with torch.cuda.device(values.device):
        _top_k[(1,)](values.contiguous(), out, values.numel(), K=k, SIZE=size, num_warps=max(4, min(16, size // 512)))
    return out
