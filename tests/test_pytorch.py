"""The scans and the top-k of pufferlib.pytorch, and the CUDA kernels they take on a GPU
(pufferlib.scan_cuda, pufferlib.top_k_cuda), against the loops and torch calls that define them:
values and gradients."""

import pytest
import torch

from pufferlib.pytorch import linear_scan, mingru_scan, top_k_indices


def test_linear_scan_matches_a_loop():
    torch.manual_seed(0)
    for steps in (1, 2, 5, 16, 33):
        a, b, h0 = torch.rand(3, steps, 4), torch.randn(3, steps, 4), torch.randn(3, 4)
        h, expected = h0, []
        for t in range(steps):
            h = a[:, t] * h + b[:, t]
            expected.append(h)
        torch.testing.assert_close(linear_scan(a, b, h0), torch.stack(expected, 1), rtol=1e-5, atol=1e-5)


def assert_same_values_and_gradients(got, expected, inputs, grad):
    """got and expected (functions of inputs) equal to float32 rounding, and so their gradients
    along grad."""
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    got_grads = torch.autograd.grad(got, inputs, grad, retain_graph=True)
    for got_grad, expected_grad in zip(got_grads, torch.autograd.grad(expected, inputs, grad, retain_graph=True)):
        torch.testing.assert_close(got_grad, expected_grad, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("with_h0", [False, True])
def test_cuda_linear_scan_matches_a_loop_with_gradients(with_h0):
    """The chunked Triton scan (pufferlib.scan_cuda) against the loop defining it: values and
    gradients, float32, eager and compiled."""
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA GPU visible to torch {torch.__version__}")
    scan_cuda = pytest.importorskip("pufferlib.scan_cuda", reason="needs Triton")
    torch.manual_seed(0)

    def loop(a, b, h0):
        h, states = torch.zeros_like(b[:, 0]) if h0 is None else h0, []
        for t in range(a.shape[1]):
            h = a[:, t] * h + b[:, t]
            states.append(h)
        return torch.stack(states, 1)

    compiled = torch.compile(scan_cuda.linear_scan, fullgraph=True)
    for shape in [(5, 1, 3), (64, 128, 256), (300, 33, 2, 5)]:
        a = torch.rand(shape, device="cuda", requires_grad=True)
        b = torch.randn(shape, device="cuda", requires_grad=True)
        h0 = torch.randn(shape[:1] + shape[2:], device="cuda", requires_grad=True) if with_h0 else None
        inputs = [a, b] + ([h0] if with_h0 else [])
        grad = torch.randn(shape, device="cuda")
        expected = loop(a, b, h0)
        for scan in (linear_scan, compiled):
            assert_same_values_and_gradients(scan(a, b, h0), expected, inputs, grad)


def mingru_loop(gates, keep, h0):
    """MinGRU's recurrence one step at a time: the definition mingru_scan is held to."""
    gate, candidate = gates.chunk(2, dim=-1)
    z = torch.sigmoid(gate)
    h, states = torch.zeros_like(candidate[:, 0]) if h0 is None else h0, []
    for t in range(gates.shape[1]):
        kept = 1 if keep is None else keep[:, t, None]
        h = (1 - z[:, t]) * kept * h + z[:, t] * candidate[:, t]
        states.append(h)
    return torch.stack(states, 1)


def mingru_cases(device):
    """(gates, keep, h0, the tensors to differentiate, the output's gradient) of several shapes, with
    and without keep and h0."""
    generator = torch.Generator().manual_seed(0)
    # The CPU scan's rounds depend on the steps alone; the GPU's kernels also split rows and width.
    wide = (64, 128, 256) if device == "cuda" else (4, 128, 16)
    for rows, steps, hidden in [(3, 1, 3), (4, 37, 5), wide, (2, 40, 70)]:
        for with_keep, with_h0 in [(False, False), (True, False), (False, True), (True, True)]:
            gates = torch.randn(rows, steps, 2 * hidden, generator=generator).to(device).requires_grad_()
            keep = (torch.rand(rows, steps, generator=generator) > 0.3).float().to(device) if with_keep else None
            h0 = torch.randn(rows, hidden, generator=generator).to(device).requires_grad_() if with_h0 else None
            grad = torch.randn(rows, steps, hidden, generator=generator).to(device)
            yield gates, keep, h0, [gates] + ([h0] if with_h0 else []), grad


def test_mingru_scan_matches_a_loop_with_gradients():
    for gates, keep, h0, inputs, grad in mingru_cases("cpu"):
        assert_same_values_and_gradients(mingru_scan(gates, keep, h0), mingru_loop(gates, keep, h0), inputs, grad)


@pytest.mark.gpu
def test_cuda_mingru_scan_matches_a_loop_with_gradients():
    """The fused Triton scan (gates computed inside it) against the loop defining it: values and
    gradients, float32, eager and compiled."""
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA GPU visible to torch {torch.__version__}")
    scan_cuda = pytest.importorskip("pufferlib.scan_cuda", reason="needs Triton")
    compiled = torch.compile(scan_cuda.mingru_scan, fullgraph=True)
    for gates, keep, h0, inputs, grad in mingru_cases("cuda"):
        expected = mingru_loop(gates, keep, h0)
        for scan in (mingru_scan, compiled):
            assert_same_values_and_gradients(scan(gates, keep, h0), expected, inputs, grad)


@pytest.mark.gpu
@pytest.mark.parametrize("count,k", [(8192, 256), (1000, 37), (5, 5), (16384, 1)])
def test_cuda_top_k_picks_what_torch_topk_picks(count, k):
    """The single-program top-k (pufferlib.top_k_cuda) against torch.topk: on distinct values the
    same set; on values with ties at the k-th largest, everything above it, then the lowest indices
    of those equal to it; in both, the indices in increasing order within each group."""
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA GPU visible to torch {torch.__version__}")
    top_k_cuda = pytest.importorskip("pufferlib.top_k_cuda", reason="needs Triton")
    generator = torch.Generator(device="cuda").manual_seed(count)
    distinct = torch.randn(count, generator=generator, device="cuda") * 10.0 ** torch.randint(
        -30, 30, (count,), generator=generator, device="cuda")

    def above_then_tied(values):
        """(the indices above torch.topk's k-th largest, those equal to it)"""
        kth = values.topk(k).values.min()
        return (values > kth).nonzero().squeeze(1), (values == kth).nonzero().squeeze(1)

    picked = top_k_cuda.top_k_indices(distinct, k)
    above, equal = above_then_tied(distinct)
    assert equal.numel() == 1 and torch.equal(picked, torch.cat([above, equal]))
    assert torch.equal(top_k_indices(distinct, k), picked)
    tied = torch.randint(-3, 3, (count,), generator=generator, device="cuda").float()
    above, equal = above_then_tied(tied)
    assert torch.equal(top_k_cuda.top_k_indices(tied, k), torch.cat([above, equal[: k - above.numel()]]))
    with pytest.raises(ValueError, match="k <= len"):
        top_k_cuda.top_k_indices(distinct, count + 1)
    with pytest.raises(ValueError, match="1-D float32 CUDA"):
        top_k_cuda.top_k_indices(distinct.double(), k)
