"""StackedMuon (pufferlib.muon): torch's Muon, step for step, with same-shape matrices orthogonalized
as one batch, and on a GPU beside Adam on streams of their own."""

import pytest
import torch


@pytest.mark.parametrize("weight_decay,adjust_lr_fn,nesterov", [(0.0, "match_rms_adamw", True), (0.1, None, False)])
def test_stacked_muon_steps_as_torch_muon_does(weight_decay, adjust_lr_fn, nesterov):
    """StackedMuon orthogonalizes same-shape matrices as one batch: the weights and momentum of
    torch.optim.Muon, step for step, with wide, tall and square matrices, one without a gradient."""
    from pufferlib.muon import StackedMuon

    torch.manual_seed(0)
    shapes = [(6, 4), (6, 4), (4, 6), (5, 5), (4, 6), (5, 5), (6, 4), (3, 3)]
    start = [torch.randn(shape) for shape in shapes]
    runs = []
    for optimizer_class in (torch.optim.Muon, StackedMuon):
        params = [torch.nn.Parameter(tensor.clone()) for tensor in start]
        optimizer = optimizer_class(params, lr=0.02, momentum=0.9, weight_decay=weight_decay, nesterov=nesterov,
                                    adjust_lr_fn=adjust_lr_fn)
        generator = torch.Generator().manual_seed(1)
        for _ in range(3):
            for param in params[:-1]:  # the last has no gradient and must stay as it is
                param.grad = torch.randn(param.shape, generator=generator)
            optimizer.step()
        runs.append((params, optimizer))
    (expected, muon), (got, stacked) = runs
    for mine, theirs in zip(got, expected):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-6)
    torch.testing.assert_close(got[-1].detach(), start[-1], rtol=0, atol=0)
    for mine, theirs in zip(got[:-1], expected[:-1]):
        torch.testing.assert_close(stacked.state[mine]["momentum_buffer"], muon.state[theirs]["momentum_buffer"])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_optimizers_stepping_side_by_side_on_a_gpu_step_as_one_after_another(monkeypatch):
    """On a GPU, Muon and Adam, and Muon's matrices of each shape, step on streams of their own:
    the weights and optimizer state are those of the same steps run one after another, bit for
    bit, for the shapes of a MinGRU policy."""
    from pufferlib.muon import StackedMuon
    from pufferlib.pytorch import CombinedOptimizer, SideBySide

    def one_after_another(self, calls, device):
        for call in calls:
            call()

    shapes = [(512, 256), (512, 256), (512, 256), (256, 256), (256, 1024), (512,), (43, 256)]
    torch.manual_seed(0)
    start = [torch.randn(shape, device="cuda") for shape in shapes]
    runs = []
    for side_by_side in (True, False):
        if not side_by_side:
            monkeypatch.setattr(SideBySide, "run", one_after_another)
        params = [torch.nn.Parameter(tensor.clone()) for tensor in start]
        muon = StackedMuon(params[:4], lr=0.02, momentum=0.9, adjust_lr_fn="match_rms_adamw")
        adam = torch.optim.Adam(params[4:], lr=0.02, fused=True, capturable=True)
        optimizer = CombinedOptimizer([muon, adam])
        generator = torch.Generator(device="cuda").manual_seed(1)
        for _ in range(3):
            for param in params:
                param.grad = torch.randn(param.shape, generator=generator, device="cuda")
            optimizer.step()
        state = [value for part in (muon, adam) for p in params if p in part.state for value in part.state[p].values()]
        runs.append([p.detach().clone() for p in params] + [value.clone() for value in state])
    assert len(runs[0]) == len(runs[1]) > len(shapes)
    assert all(torch.equal(a, b) for a, b in zip(*runs))
