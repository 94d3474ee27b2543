"""``linear_scan`` on CUDA: h_t = a_t * h_{t-1} + b_t for every (row, feature) chain, carrying h
in float32.

Each Triton program holds a block of chains and walks their steps a chunk at a time: a chunk's
[CHUNK, BLOCK] tile is loaded at once and scanned across the program's threads (Triton's
``associative_scan`` of the pairs (a, b) under composition), and its last state carries into the
next chunk. So a and b are read once and h written once, with the whole chunk's loads in flight
together rather than one step's. (The log-depth scan of ``pufferlib.pytorch.linear_scan`` rewrites
its [N, T, H] inputs in each of its log2(T) rounds.) Both directions are custom ops, so
``torch.compile`` keeps them whole inside a compiled graph and CUDA graphs capture their launches.
``mingru_scan`` is the same scan with MinGRU's gates computed inside it from its layer's output,
so that neither the gates nor their gradients go through memory between the layer and the scan.
Imported only where Triton is (CUDA builds of torch).
"""

import torch
import triton
import triton.language as tl

# A program is one warp over a tile of TILE values: BLOCK chains (fewer when there are fewer
# features) by as many steps as fill it, up to the sequence's length. With one feature a chain's
# steps are contiguous, and a single chunk holds a whole segment.
TILE = 2048
BLOCK = 64
MIN_CHUNK = 16


@triton.jit
def _compose(a_first, b_first, a_then, b_then):
    """Two steps h -> a h + b, the first then the second, as one."""
    return a_first * a_then, a_then * b_first + b_then


@triton.jit
def _last_row(tile, CHUNK: tl.constexpr):
    rows = tl.arange(0, CHUNK)[:, None]
    return tl.sum(tl.where(rows == CHUNK - 1, tile, 0.0), axis=0)


@triton.jit
def _program_chains(h0, features, HAS_H0: tl.constexpr, BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    """This program's row, its block of features, the steps of a chunk, and its chains' states
    before step 0 (h0's, else zeros), in float32."""
    row = tl.program_id(0).to(tl.int64)
    feature = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    start_state = tl.zeros([BLOCK], dtype=tl.float32)
    if HAS_H0:
        start_state = tl.load(h0 + row * features + feature, mask=feature < features, other=0.0).to(tl.float32)
    return row, feature, tl.arange(0, CHUNK), start_state


@triton.jit
def _scan_chunk(decay, value, carried, step, CHUNK: tl.constexpr):
    """The states of a chunk's [CHUNK, BLOCK] steps h -> decay h + value, the state carried in
    entering through its first step; and the state its last step leaves, to carry on."""
    value = tl.where(step[:, None] == 0, decay * carried[None, :] + value, value)
    _, states = tl.associative_scan((decay, value), 0, _compose)
    return states, _last_row(states, CHUNK)


@triton.jit
def _scan_forward(a, b, h0, out, steps, features, HAS_H0: tl.constexpr, BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    row, feature, step, h = _program_chains(h0, features, HAS_H0, BLOCK, CHUNK)
    for start in range(0, steps, CHUNK):
        t = start + step
        offset = row * steps * features + t[:, None] * features + feature[None, :]
        mask = (t[:, None] < steps) & (feature[None, :] < features)
        # Past the last step: a = 1, b = 0, which keep the state, so the chunk's last row is h_{T-1}.
        decay = tl.load(a + offset, mask=mask, other=1.0).to(tl.float32)
        value = tl.load(b + offset, mask=mask, other=0.0).to(tl.float32)
        states, h = _scan_chunk(decay, value, h, step, CHUNK)
        tl.store(out + offset, states.to(out.dtype.element_ty), mask=mask)


# The adjoint runs backward in time: dh_t = g_t + a_{t+1} dh_{t+1}; then db_t = dh_t,
# da_t = dh_t h_{t-1} (h_{-1} = h0) and dh0 = a_0 dh_0. Chunks go from the last to the first, each
# loaded in reverse step order, so the adjoint is the same forward scan with a_{t+1} as its decay.
@triton.jit
def _scan_backward(a, h, h0, grad, grad_a, grad_b, grad_h0, steps, features, HAS_H0: tl.constexpr, BLOCK: tl.constexpr,
                   CHUNK: tl.constexpr):
    row, feature, step, start_state = _program_chains(h0, features, HAS_H0, BLOCK, CHUNK)
    first = row * steps * features
    in_feature = feature < features
    carry = tl.zeros([BLOCK], dtype=tl.float32)  # dh of the step after the chunk
    chunks = tl.cdiv(steps, CHUNK)
    for c in range(chunks):
        t = (chunks - 1 - c) * CHUNK + CHUNK - 1 - step
        offset = first + t[:, None] * features + feature[None, :]
        mask = (t[:, None] < steps) & in_feature[None, :]
        # Past the last step g = 0 and a_{t+1} = 0, so dh = 0 there.
        g = tl.load(grad + offset, mask=mask, other=0.0).to(tl.float32)
        decay = tl.load(a + offset + features, mask=(t[:, None] + 1 < steps) & in_feature[None, :], other=0.0).to(tl.float32)
        dh, carry = _scan_chunk(decay, g, carry, step, CHUNK)
        tl.store(grad_b + offset, dh.to(grad_b.dtype.element_ty), mask=mask)
        previous = tl.load(h + offset - features, mask=mask & (t[:, None] > 0), other=0.0).to(tl.float32)
        previous = tl.where(t[:, None] == 0, start_state[None, :], previous)
        tl.store(grad_a + offset, (dh * previous).to(grad_a.dtype.element_ty), mask=mask)
    if HAS_H0:
        start = row * features + feature
        first_decay = tl.load(a + first + feature, mask=in_feature, other=0.0).to(tl.float32)
        tl.store(grad_h0 + start, (first_decay * carry).to(grad_h0.dtype.element_ty), mask=in_feature)


@triton.jit
def _gated_chunk(gates, keep, row, t, feature, steps, hidden, mask, HAS_KEEP: tl.constexpr):
    """MinGRU's gates at steps t (a column) for features (a row), from the layer's output [N, T, 2H]
    (gate pre-activations, then candidates): z, the candidate, the decay (1 - z) * keep and keep,
    in float32. Outside mask: decay 1 and z 0, a step that keeps the state."""
    offset = row * steps * 2 * hidden + t[:, None] * 2 * hidden + feature[None, :]
    z = tl.sigmoid(tl.load(gates + offset, mask=mask, other=0.0).to(tl.float32))
    z = tl.where(mask, z, 0.0)
    candidate = tl.load(gates + offset + hidden, mask=mask, other=0.0).to(tl.float32)
    kept = tl.full(z.shape, 1.0, tl.float32)
    if HAS_KEEP:
        kept = kept * tl.load(keep + row * steps + t, mask=t < steps, other=1.0).to(tl.float32)[:, None]
    return z, candidate, (1.0 - z) * kept, kept


@triton.jit
def _mingru_forward(gates, keep, h0, out, steps, hidden, HAS_H0: tl.constexpr, HAS_KEEP: tl.constexpr,
                    BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    row, feature, step, h = _program_chains(h0, hidden, HAS_H0, BLOCK, CHUNK)
    for start in range(0, steps, CHUNK):
        t = start + step
        mask = (t[:, None] < steps) & (feature[None, :] < hidden)
        z, candidate, decay, _ = _gated_chunk(gates, keep, row, t, feature, steps, hidden, mask, HAS_KEEP)
        states, h = _scan_chunk(decay, z * candidate, h, step, CHUNK)
        tl.store(out + row * steps * hidden + t[:, None] * hidden + feature[None, :], states.to(out.dtype.element_ty),
                 mask=mask)


# The adjoint as in _scan_backward, then through the gates: with dh_t and h_{t-1},
# dz_t = dh_t (candidate_t - keep_t h_{t-1}), d gate_t = dz_t z_t (1 - z_t), d candidate_t = dh_t z_t.
@triton.jit
def _mingru_backward(gates, keep, h, h0, grad, grad_gates, grad_h0, steps, hidden, HAS_H0: tl.constexpr,
                     HAS_KEEP: tl.constexpr, BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    row, feature, step, start_state = _program_chains(h0, hidden, HAS_H0, BLOCK, CHUNK)
    in_feature = feature < hidden
    carry = tl.zeros([BLOCK], dtype=tl.float32)  # dh of the step after the chunk
    chunks = tl.cdiv(steps, CHUNK)
    for c in range(chunks):
        t = (chunks - 1 - c) * CHUNK + CHUNK - 1 - step
        mask = (t[:, None] < steps) & in_feature[None, :]
        offset = row * steps * hidden + t[:, None] * hidden + feature[None, :]
        g = tl.load(grad + offset, mask=mask, other=0.0).to(tl.float32)
        next_mask = (t[:, None] + 1 < steps) & in_feature[None, :]
        _, _, next_decay, _ = _gated_chunk(gates, keep, row, t + 1, feature, steps, hidden, next_mask, HAS_KEEP)
        next_decay = tl.where(next_mask, next_decay, 0.0)
        dh, carry = _scan_chunk(next_decay, g, carry, step, CHUNK)
        previous = tl.load(h + offset - hidden, mask=mask & (t[:, None] > 0), other=0.0).to(tl.float32)
        previous = tl.where(t[:, None] == 0, start_state[None, :], previous)
        z, candidate, _, kept = _gated_chunk(gates, keep, row, t, feature, steps, hidden, mask, HAS_KEEP)
        dz = dh * (candidate - kept * previous)
        gate_offset = row * steps * 2 * hidden + t[:, None] * 2 * hidden + feature[None, :]
        tl.store(grad_gates + gate_offset, (dz * z * (1.0 - z)).to(grad_gates.dtype.element_ty), mask=mask)
        tl.store(grad_gates + gate_offset + hidden, (dh * z).to(grad_gates.dtype.element_ty), mask=mask)
    if HAS_H0:
        first = tl.full([1], 0, tl.int32)
        _, _, first_decay, _ = _gated_chunk(gates, keep, row, first, feature, steps, hidden, in_feature[None, :], HAS_KEEP)
        tl.store(grad_h0 + row * hidden + feature, (tl.sum(first_decay, axis=0) * carry).to(grad_h0.dtype.element_ty),
                 mask=in_feature)


def _launch(rows, steps, features):
    """The grid and the constants for chains [N, T, H]: a program per row and block of features."""
    block = min(BLOCK, triton.next_power_of_2(features))
    chunk = max(MIN_CHUNK, min(TILE // block, triton.next_power_of_2(steps)))
    return (rows, triton.cdiv(features, block)), dict(BLOCK=block, CHUNK=chunk, num_warps=1)


@torch.library.custom_op("pufferlib::linear_scan", mutates_args=())
def scan(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None) -> torch.Tensor:
    """a, b: contiguous [N, T, H] of one dtype; h0: contiguous [N, H] or None. Returns h, [N, T, H]
    of the dtype of a, b and h0 promoted."""
    out = torch.empty(a.shape, dtype=_out_dtype(a, h0), device=a.device)
    start = h0 if h0 is not None else a  # without h0 the kernel does not read it
    with torch.cuda.device_of(a):  # the tensors' GPU, which Triton launches on
        grid, constants = _launch(*a.shape)
        _scan_forward[grid](a, b, start, out, a.shape[1], a.shape[2], HAS_H0=h0 is not None, **constants)
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
        grid, constants = _launch(*a.shape)
        _scan_backward[grid](a, h, start, grad, grad_a, grad_b, start_grad, a.shape[1], a.shape[2],
                             HAS_H0=h0 is not None, **constants)
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


@torch.library.custom_op("pufferlib::mingru_scan", mutates_args=())
def mingru_scan_op(gates: torch.Tensor, keep: torch.Tensor | None, h0: torch.Tensor | None) -> torch.Tensor:
    """gates: contiguous [N, T, 2H]; keep: contiguous [N, T] or None; h0: contiguous [N, H] or None.
    Returns h, [N, T, H] of the dtype of gates and h0 promoted."""
    rows, steps, hidden = gates.shape[0], gates.shape[1], gates.shape[2] // 2
    out = torch.empty((rows, steps, hidden), dtype=_out_dtype(gates, h0), device=gates.device)
    with torch.cuda.device_of(gates):  # the tensors' GPU, which Triton launches on
        grid, constants = _launch(rows, steps, hidden)
        # Without keep or h0 the kernel does not read them: gates stands in for them.
        _mingru_forward[grid](gates, gates if keep is None else keep, gates if h0 is None else h0, out, steps, hidden,
                              HAS_H0=h0 is not None, HAS_KEEP=keep is not None, **constants)
    return out


@mingru_scan_op.register_fake
def _(gates, keep, h0):
    return gates.new_empty((gates.shape[0], gates.shape[1], gates.shape[2] // 2), dtype=_out_dtype(gates, h0))


@torch.library.custom_op("pufferlib::mingru_scan_backward", mutates_args=())
def mingru_scan_backward(gates: torch.Tensor, keep: torch.Tensor | None, h: torch.Tensor, h0: torch.Tensor | None,
                         grad: torch.Tensor) -> list[torch.Tensor]:
    grad = grad.contiguous()
    rows, steps, hidden = h.shape
    grad_gates = torch.empty_like(gates)
    grad_h0 = torch.empty_like(h0) if h0 is not None else gates.new_empty(0)
    with torch.cuda.device_of(gates):
        grid, constants = _launch(rows, steps, hidden)
        _mingru_backward[grid](gates, gates if keep is None else keep, h, h if h0 is None else h0, grad, grad_gates,
                               grad_gates if h0 is None else grad_h0, steps, hidden, HAS_H0=h0 is not None,
                               HAS_KEEP=keep is not None, **constants)
    return [grad_gates, grad_h0]


@mingru_scan_backward.register_fake
def _(gates, keep, h, h0, grad):
    return [torch.empty_like(gates), torch.empty_like(h0) if h0 is not None else gates.new_empty(0)]


def _mingru_setup_context(ctx, inputs, output):
    gates, keep, h0 = inputs
    ctx.save_for_backward(gates, keep, output, h0)
    ctx.has_keep, ctx.has_h0 = keep is not None, h0 is not None


def _mingru_backward_op(ctx, grad):
    gates, keep, h, h0 = ctx.saved_tensors
    grad_gates, grad_h0 = mingru_scan_backward(gates, keep if ctx.has_keep else None, h, h0 if ctx.has_h0 else None, grad)
    return grad_gates, None, grad_h0 if ctx.has_h0 else None


mingru_scan_op.register_autograd(_mingru_backward_op, setup_context=_mingru_setup_context)


def mingru_scan(gates, keep=None, h0=None):
    """``pufferlib.pytorch.mingru_scan`` for CUDA tensors: gates [N, T, 2H], keep [N, T] (or None),
    h0 [N, H] (or None)."""
    return mingru_scan_op(gates.contiguous(), None if keep is None else keep.contiguous(),
                          None if h0 is None else h0.contiguous())
