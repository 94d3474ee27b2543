"""PyTorch helpers shared by the models, the trainer and the emulation layer."""

import contextlib

import gymnasium
import torch
from torch import nn
from torch.distributions import Normal

try:
    from pufferlib.scan_cuda import linear_scan as linear_scan_chunked
    from pufferlib.scan_cuda import mingru_scan as mingru_scan_fused
except ImportError:  # no Triton (a CPU build of torch): every device takes the log-depth scan
    linear_scan_chunked = mingru_scan_fused = None
try:
    from pufferlib import top_k_cuda
except ImportError:  # no Triton: every device takes torch.topk
    top_k_cuda = None


def layer_init(layer, std=2**0.5, bias_const=0.0):
    """Orthogonal weights and constant bias: the initialisation PPO implementations converge best with."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class Float32Linear(nn.Linear):
    """A linear layer computed in float32 under bf16 autocast too: for the policy's output heads.
    A logit rounded to bf16 is off by up to 0.4% of its size, so a near-deterministic policy's
    log-probabilities, and with them PPO's importance ratios, drown in rounding noise and training
    stalls short of the optimum."""

    def forward(self, x):
        with torch.autocast(x.device.type, enabled=False):
            return super().forward(x.float())


def sampling_noise(action_space, rows, generator=None, device=None):
    """The random numbers ``sample_logits`` turns into ``rows`` actions of ``action_space``: one
    uniform per row and component for Discrete and MultiDiscrete actions, one standard normal per
    row and dimension for Box. Drawn apart from the sampling, a compiled policy step can take them
    as an input, where torch.compile cannot draw from a generator of its own."""
    if isinstance(action_space, gymnasium.spaces.Box):
        return torch.randn((rows, *action_space.shape), generator=generator, device=device)
    components = action_space.nvec.size if isinstance(action_space, gymnasium.spaces.MultiDiscrete) else 1
    return torch.rand((rows, components), generator=generator, device=device)


def sample_logits(logits, action=None, generator=None, noise=None):
    """Samples (or scores, when ``action`` is given) actions from a policy's output.

    ``logits`` is what ``decode_actions`` returns: a [B, n] tensor for Discrete actions, a list of
    [B, n_i] tensors for MultiDiscrete, or a ``torch.distributions.Normal`` for Box. Returns
    (action, log-probability [B], entropy [B]); log-probabilities and entropies of the components
    of MultiDiscrete and Box actions are summed, as the components are sampled independently.
    ``noise`` is the draw ``sampling_noise`` makes for these actions; when omitted, it is drawn
    here from ``generator`` (torch's global RNG if that is omitted too).
    """
    if isinstance(logits, Normal):
        if action is None:
            if noise is None:
                noise = torch.randn(logits.loc.shape, generator=generator, device=logits.loc.device)
            action = logits.loc + logits.scale * noise
        return action, logits.log_prob(action).sum(-1), logits.entropy().sum(-1)

    multi = isinstance(logits, (list, tuple))
    components = logits if multi else [logits]
    if action is not None:
        columns = action.reshape(action.shape[0], -1).long()
    elif noise is None:
        rows, device = components[0].shape[0], components[0].device
        noise = torch.rand((rows, len(components)), generator=generator, device=device)
    chosen, logprob, entropy = [], 0, 0
    for i, component in enumerate(components):
        log_probs = torch.log_softmax(component.float(), dim=-1)
        if action is None:
            # Inverse-CDF sampling: a handful of elementwise kernels, where torch.multinomial
            # costs hundreds of microseconds of host time per call on a GPU. A GPU scans rows of a
            # few actions slowly along the innermost dimension; down the transpose's columns each
            # thread sums one row instead.
            probs = log_probs.exp()
            cdf = probs.T.cumsum(0).T if probs.shape[-1] < 16 else probs.cumsum(-1)
            picked = (cdf < noise[:, i : i + 1]).sum(-1, keepdim=True).clamp_(max=log_probs.shape[-1] - 1)
        else:
            picked = columns[:, i : i + 1]
        chosen.append(picked)
        logprob = logprob + log_probs.gather(-1, picked).squeeze(-1)
        entropy = entropy - (log_probs.exp() * log_probs).sum(-1)
    if action is None:
        action = torch.cat(chosen, dim=-1) if multi else chosen[0].squeeze(-1)
    return action, logprob, entropy


def linear_scan(a, b, h0=None):
    """All states of the linear recurrence h_t = a_t * h_{t-1} + b_t, along dim 1, in parallel.

    A Hillis-Steele scan: after the round with offset k every position holds the composition of
    the (up to) 2k steps that end at it, so log2(T) rounds of elementwise work replace a loop over
    T. Composition of step (a1, b1) followed by (a2, b2) is (a2 * a1, a2 * b1 + b2). ``a`` and ``b``
    are [N, T, ...]; ``h0`` ([N, ...]) is the state before step 0 (zeros when omitted). Used by
    MinGRU for training on whole sequences and by the advantage kernel (with time reversed).
    On a GPU with Triton, a and b of one shape take ``pufferlib.scan_cuda`` instead, which reads
    and writes each tensor once.
    """
    if a.is_cuda and a.shape == b.shape and linear_scan_chunked is not None:
        return linear_scan_chunked(a, b, h0)
    steps = a.shape[1]
    offset = 1
    while offset < steps:
        b = torch.cat([b[:, :offset], a[:, offset:] * b[:, :-offset] + b[:, offset:]], dim=1)
        a = torch.cat([a[:, :offset], a[:, offset:] * a[:, :-offset]], dim=1)
        offset *= 2
    if h0 is None:
        return b
    return a * h0.unsqueeze(1) + b


def mingru_scan(gates, keep=None, h0=None):
    """MinGRU's recurrence over whole sequences, from its layer's output ``gates`` [N, T, 2H] (the
    gates' pre-activations, then the candidates): z = sigmoid(gate) and
    h_t = (1 - z_t) keep_t h_{t-1} + z_t candidate_t. ``keep`` [N, T] is 0 where the state is
    dropped before a step (None: never); ``h0`` [N, H] the state before step 0 (None: zeros).
    On a GPU with Triton, ``pufferlib.scan_cuda`` computes the gates inside the scan, in float32,
    so that they and their gradients never go through memory."""
    if gates.is_cuda and mingru_scan_fused is not None:
        return mingru_scan_fused(gates, keep, h0)
    gate, candidate = gates.chunk(2, dim=-1)
    z = torch.sigmoid(gate)
    decay = 1 - z if keep is None else (1 - z) * keep.unsqueeze(-1)
    return linear_scan(decay, z * candidate, h0)


def top_k_indices(values, k):
    """The indices of the k largest values of a 1-D float tensor, in no particular order. A float32
    CUDA tensor of up to ``top_k_cuda.MOST_VALUES`` values takes ``pufferlib.top_k_cuda``'s single
    program, which picks the same values as ``torch.topk``; anything else takes ``torch.topk``."""
    if top_k_cuda is not None and top_k_cuda.serves(values, k):
        return top_k_cuda.top_k_indices(values, k)
    return values.topk(k, sorted=False).indices


# Restoring emulated observations inside a model ----------------------------------------------
# Emulation flattens structured observations into one row per agent (pufferlib.spaces). A model
# gets those rows as one tensor and rebuilds the structure in its forward pass: nativize_dtype
# once, at construction, then nativize_tensor per batch (slices and in-place reinterpretation
# only; no copies, on any device).


class NativeLeaf:
    """Where one leaf of a structured observation lives in a flat row, for ``nativize_tensor``.

    ``start:stop`` indexes the row's last dimension (elements for typed rows, bytes for byte
    rows); ``reinterpret`` says the bytes must be viewed as ``dtype``.
    """

    __slots__ = ("dtype", "shape", "start", "stop", "reinterpret")

    def __init__(self, dtype, shape, start, stop, reinterpret):
        self.dtype, self.shape, self.start, self.stop, self.reinterpret = dtype, shape, start, stop, reinterpret

    def __repr__(self):
        return f"NativeLeaf({self.dtype}, shape={self.shape}, [{self.start}:{self.stop}], reinterpret={self.reinterpret})"


def torch_dtype(numpy_dtype):
    """The torch dtype of a numpy dtype (uint8 -> torch.uint8, ...)."""
    import numpy as np

    return torch.from_numpy(np.zeros(0, dtype=numpy_dtype)).dtype


def clear_finished(state, dones):
    """A recurrent state (tuple of [N, ...] tensors) with the rows of agents whose episode just
    ended zeroed, so a new episode starts from a blank memory."""
    if not state:
        return tuple(state)
    keep = (~dones.bool()).to(state[0].dtype)
    return tuple(s * keep.view(-1, *[1] * (s.ndim - 1)) for s in state)


def nativize_dtype(emulated):
    """What ``nativize_tensor`` needs to restore an env's native observations.

    ``emulated``: an emulated env's ``emulated`` attribute (or its ``ObservationLayout``). Returns a
    nested dict/tuple of ``NativeLeaf`` mirroring the observation space, a single ``NativeLeaf``
    for Discrete/MultiDiscrete/MultiBinary spaces, or None for Box spaces and native envs (their
    observations need no restoring).
    """
    if not emulated:  # a native env's ``emulated`` is False: its observations are already native
        return None
    layout = getattr(emulated, "observation_layout", emulated)
    if layout.passthrough:
        return None
    itemsize = 1 if not layout.typed else layout.flat_space.dtype.itemsize
    leaves = {}
    for leaf in layout.leaves:
        start = leaf.byte_offset // itemsize
        stop = start + leaf.nbytes // itemsize
        leaves[leaf.path] = NativeLeaf(torch_dtype(leaf.dtype), leaf.shape, start, stop, not layout.typed)
    if layout.dtype is None:
        return leaves[()]
    return _nest(layout.space, (), leaves)


def _nest(space, path, leaves):
    import gymnasium

    if isinstance(space, gymnasium.spaces.Dict):
        return {key: _nest(child, (*path, key), leaves) for key, child in space.spaces.items()}
    if isinstance(space, gymnasium.spaces.Tuple):
        return tuple(_nest(child, (*path, index), leaves) for index, child in enumerate(space.spaces))
    return leaves[path]


def nativize_tensor(observation, native_dtype):
    """Restores native observations from a batch of flat rows ``observation`` [..., row size].

    ``native_dtype`` comes from ``nativize_dtype``. Pass the rows as the env produced them (not
    cast to float): byte rows are reinterpreted in place. Leaves are views of ``observation``
    with shape [..., *leaf shape].
    """
    if native_dtype is None:
        return observation
    if isinstance(native_dtype, dict):
        return {key: nativize_tensor(observation, child) for key, child in native_dtype.items()}
    if isinstance(native_dtype, tuple):
        return tuple(nativize_tensor(observation, child) for child in native_dtype)
    part = observation[..., native_dtype.start : native_dtype.stop]
    if native_dtype.reinterpret:
        part = part.view(native_dtype.dtype)
    return part.reshape(*observation.shape[:-1], *native_dtype.shape)


class CombinedOptimizer:
    """Muon for weight matrices and Adam for the rest, stepped as one optimizer."""

    def __init__(self, optimizers):
        self.optimizers = optimizers
        self.side_by_side = SideBySide()

    @property
    def param_groups(self):
        return [group for optimizer in self.optimizers for group in optimizer.param_groups]

    def zero_grad(self, set_to_none=True):
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=set_to_none)

    def step(self):
        """On a GPU the optimizers step side by side, each after the first on a stream of its own:
        Muon's Newton-Schulz products on small matrices and Adam's fused kernel each leave most of
        the GPU idle, and they share no tensors."""
        device = next(p.device for group in self.param_groups for p in group["params"])
        self.side_by_side.run([optimizer.step for optimizer in self.optimizers], device)

    def state_dict(self):
        return {str(i): optimizer.state_dict() for i, optimizer in enumerate(self.optimizers)}

    def load_state_dict(self, state):
        for i, optimizer in enumerate(self.optimizers):
            optimizer.load_state_dict(state[str(i)])


def load_optimizer_state(optimizer, state):
    """Loads a saved optimizer state (a torch optimizer's or a ``CombinedOptimizer``'s) but keeps
    this optimizer's device flags: a checkpoint written on a CPU resumes on a GPU as the fused,
    capturable Adam a CUDA graph needs, and one written on a GPU resumes on a CPU."""
    optimizer.load_state_dict(state)
    for part in getattr(optimizer, "optimizers", [optimizer]):
        flags = {flag: part.defaults[flag] for flag in ("fused", "capturable") if flag in part.defaults}
        for group in part.param_groups:
            group.update(flags)
            for p in group["params"]:
                step = part.state.get(p, {}).get("step")
                if torch.is_tensor(step):
                    on_device = group.get("fused") or group.get("capturable")
                    part.state[p]["step"] = step.to(p.device if on_device else "cpu", torch.float32)


# CUDA graphs ----------------------------------------------------------------------------------
# A graph replays the kernels one call of a function launched, at the same addresses, for one
# launch from the host; the function must only queue device work (no host reads, no allocation
# that outlives the call except its outputs).


@contextlib.contextmanager
def side_stream(device):
    """Runs the block on a fresh stream ordered after and before the current one: how calls that
    are about to be captured warm up (compilation, lazily created state) as CUDA's docs advise."""
    current = torch.cuda.current_stream(device)
    side = torch.cuda.Stream(device)
    side.wait_stream(current)
    with torch.cuda.stream(side):
        yield
    current.wait_stream(side)


class SideBySide:
    """Runs independent calls side by side on a GPU: calls[0] on the current stream and each later
    call on a stream of its own (made once, kept for the next run), all after the work queued
    before and ahead of the work queued after. Chains of small kernels then share the GPU instead
    of queuing one behind the other (in a CUDA graph being captured, as parallel branches). The
    calls must not touch each other's tensors. Elsewhere they run one after another."""

    def __init__(self):
        self.streams = []

    def run(self, calls, device):
        if device.type != "cuda":
            for call in calls:
                call()
            return
        while len(self.streams) < len(calls) - 1:
            self.streams.append(torch.cuda.Stream(device))
        current = torch.cuda.current_stream(device)
        for call, stream in zip(calls[1:], self.streams):
            stream.wait_stream(current)
            with torch.cuda.stream(stream):
                call()
        calls[0]()
        for stream in self.streams[: len(calls) - 1]:
            current.wait_stream(stream)


def allow_recompiles(versions):
    """Lets torch.compile keep ``versions`` more compiled versions of each function, and in all.
    Compiled code is cached per function, not per trainer: a process that builds many trainers of
    other shapes (a sweep's trials, a test session) would otherwise reach Dynamo's limits and
    silently run every later trainer eagerly."""
    config = torch._dynamo.config
    config.recompile_limit += versions
    config.accumulated_recompile_limit += versions


def capture_graph(function, generator):
    """Captures one call of ``function`` (already warmed up) as a CUDA graph, without running it.
    Returns (graph, what the captured call returned: its tensors are rewritten by each replay).
    ``generator``'s random streams advance with every replay as they would eagerly."""
    graph = torch.cuda.CUDAGraph()
    graph.register_generator_state(generator)
    with torch.cuda.graph(graph, capture_error_mode="thread_local"):
        outputs = function()
    return graph, outputs
