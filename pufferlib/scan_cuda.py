"""``linear_scan`` on CUDA: h_t = a_t * h_{t-1} + b_t for every (row, feature) chain, each chain
run in time order by one Triton lane, carrying h in float32.

The log-depth scan of ``pufferlib.pytorch.linear_scan`` rewrites its [N, T, H] inputs in each of
its log2(T) rounds, forward and backward; a chain in order reads a and b once and writes h once.
Both directions are custom ops, so ``torch.compile`` keeps them whole inside a compiled graph and
CUDA graphs capture their launches. Imported only where Triton is (CUDA builds of torch).
"""

import torch
import triton
import triton.language as tl

# Chains per program (one warp's lanes), and how many steps ahead the loop's loads are issued.
BLOCK = 32
STAGES = 4


@triton.jit
def _scan_forward(a, b, h0, out, steps, features, HAS_H0: tl.constexpr, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    feature = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = feature < features
    h = tl.zeros([BLOCK], dtype=tl.float32)
    if HAS_H0:
        h = tl.load(h0 + row * features + feature, mask=mask, other=0.0).to(tl.float32)
    first = row * steps * features + feature
    # The loads do not depend on h: the pipeline issues later steps' loads while h waits.
    for t in tl.range(0, steps, num_stages=STAGES):
        offset = first + t * features
        h = tl.load(a + offset, mask=mask, other=0.0).to(tl.float32) * h + tl.load(b + offset, mask=mask, other=0.0).to(tl.float32)
        tl.store(out + offset, h.to(out.dtype.element_ty), mask=mask)


# The adjoint runs backward in time: dh_t = g_t + a_{t+1} dh_{t+1}; then db_t = dh_t,
# da_t = dh_t h_{t-1} (h_{-1} = h0) and dh0 = a_0 dh_0.
@triton.jit
def _scan_backward(a, h, h0, grad, grad_a, grad_b, grad_h0, steps, features, HAS_H0: tl.constexpr, BLOCK: tl.constexpr,
                   STAGES: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    feature = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = feature < features
    carry = tl.zeros([BLOCK], dtype=tl.float32)
    first = row * steps * features + feature
    start = row * features + feature
    for k in tl.range(0, steps, num_stages=STAGES):
        t = steps - 1 - k
        offset = first + t * features
        dh = tl.load(grad + offset, mask=mask, other=0.0).to(tl.float32) + carry
        tl.store(grad_b + offset, dh.to(grad_b.dtype.element_ty), mask=mask)
        previous = tl.load(h + offset - features, mask=mask & (offset > first), other=0.0).to(tl.float32)
        if HAS_H0:  # step 0's previous state
            previous += tl.load(h0 + start, mask=mask & (offset == first), other=0.0).to(tl.float32)
        tl.store(grad_a + offset, (dh * previous).to(grad_a.dtype.element_ty), mask=mask)
        carry = tl.load(a + offset, mask=mask, other=0.0).to(tl.float32) * dh
    if HAS_H0:
        tl.store(grad_h0 + start, carry.to(grad_h0.dtype.element_ty), mask=mask)


def _grid(a):
    return (a.shape[0], triton.cdiv(a.shape[2], BLOCK))


@torch.library.custom_op("pufferlib::linear_scan", mutates_args=())
def scan(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None) -> torch.Tensor:
    """a, b: contiguous [N, T, H] of one dtype; h0: contiguous [N, H] or None. Returns h, [N, T, H]
    of the dtype of a, b and h0 promoted."""
    out = torch.empty(a.shape, dtype=_out_dtype(a, h0), device=a.device)
    start = h0 if h0 is not None else a  # without h0 the kernel does not read it
    with torch.cuda.device_of(a):  # the tensors' GPU, which Triton launches on
        _scan_forward[_grid(a)](a, b, start, out, a.shape[1], a.shape[2],
                                HAS_H0=h0 is not None, BLOCK=BLOCK, STAGES=STAGES, num_warps=1)
    return out


@scan.register_fake
def _(a, b, h0):
    return a.new_empty(a.shape, dtype=_out_dtype(a, h0))


@torch.library.custom_op("pufferlib::linear_scan_backward", mutates_args=())
def scan_backward(a: torch.Tensor, h: torch.Tensor, h0: torch.Tensor | None, grad: torch.Tensor) -> list[torch.Tensor]:
    grad = grad.contiguous()
    grad_a, grad_b = torch.empty_like(a), torch.empty_like(a)
    grad_h0 = torch.empty_like(h0) if h0 is not None else a.new_empty(0)
    # Without h0 the kernel touches neither h0 nor its gradient: any tensor stands in for them.
    start, start_grad = (h0, grad_h0) if h0 is not None else (a, grad_a)
    with torch.cuda.device_of(a):  # the tensors' GPU, which Triton launches on
        _scan_backward[_grid(a)](a, h, start, grad, grad_a, grad_b, start_grad, a.shape[1], a.shape[2],
                                 HAS_H0=h0 is not None, BLOCK=BLOCK, STAGES=STAGES, num_warps=1)
    return [grad_a, grad_b, grad_h0]


@scan_backward.register_fake
def _(a, h, h0, grad):
    return [torch.empty_like(a), torch.empty_like(a), torch.empty_like(h0) if h0 is not None else a.new_empty(0)]


def _out_dtype(a, h0):
    return a.dtype if h0 is None else torch.promote_types(a.dtype, h0.dtype)


def _setup_context(ctx, inputs, output):
    a, _, h0 = inputs
    ctx.save_for_backward(a, output, h0)
    ctx.has_h0 = h0 is not None


def _backward(ctx, grad):
    a, h, h0 = ctx.saved_tensors
    grad_a, grad_b, grad_h0 = scan_backward(a, h, h0 if ctx.has_h0 else None, grad)
    return grad_a, grad_b, grad_h0 if ctx.has_h0 else None


scan.register_autograd(_backward, setup_context=_setup_context)


def linear_scan(a, b, h0=None):
    """``pufferlib.pytorch.linear_scan`` for CUDA tensors a, b of one shape [N, T, ...] and h0
    [N, ...] (or None)."""
    shape = a.shape
    rows, steps = shape[:2]
    dtype = torch.promote_types(a.dtype, b.dtype)
    a3 = a.to(dtype).reshape(rows, steps, -1).contiguous()
    b3 = b.to(dtype).reshape(rows, steps, -1).contiguous()
    start = None if h0 is None else h0.reshape(rows, -1).contiguous()
    return scan(a3, b3, start).reshape(shape)
