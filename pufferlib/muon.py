"""``StackedMuon``: torch's Muon optimizer with the matrices of one shape orthogonalized together.

Imported only where ``torch.optim.Muon`` exists (torch >= 2.9); ``pufferlib.pufferl`` checks that
first and says so when it does not.
"""

import functools

import torch
from torch.optim._muon import _adjust_lr  # Muon's own per-shape rate, so that the two stay equal

from pufferlib.pytorch import SideBySide


def newton_schulz(matrices, coefficients, steps, eps):
    """``torch.optim.Muon``'s orthogonalization (its quintic Newton-Schulz iteration, in bf16) of
    each matrix of a stack [k, A, B], as batched matrix products."""
    a, b, c = coefficients
    tall = matrices.size(1) > matrices.size(2)
    x = matrices.bfloat16()
    if tall:
        x = x.mT
    x = x / x.norm(dim=(1, 2), keepdim=True).clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.mT
        x = torch.baddbmm(x, torch.baddbmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.mT if tall else x


class StackedMuon(torch.optim.Muon):
    """``torch.optim.Muon`` with the matrices of one shape orthogonalized together: each Newton-Schulz
    product is one batched kernel for all of them instead of one per matrix. A policy's hidden
    matrices are small (a MinGRU's layers are 512 x 256), so on a GPU each product costs a kernel's
    fixed time rather than its arithmetic. The same update as Muon's (nesterov momentum, decoupled
    weight decay, the shape's learning-rate adjustment) and the same state, so checkpoints move
    between the two."""

    def __init__(self, params, *args, **kwargs):
        super().__init__(params, *args, **kwargs)
        self.side_by_side = SideBySide()

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            for p in params:
                if "momentum_buffer" not in self.state[p]:
                    self.state[p]["momentum_buffer"] = torch.zeros_like(p.grad)
            buffers = [self.state[p]["momentum_buffer"] for p in params]
            torch._foreach_lerp_(buffers, grads, 1 - group["momentum"])
            updates = torch._foreach_lerp(grads, buffers, group["momentum"]) if group["nesterov"] else buffers
            shapes = {}
            for param, update in zip(params, updates):
                shapes.setdefault(param.shape, []).append((param, update))
            # Each shape's products are a chain of small kernels: on a GPU the chains run side by side.
            steps = [functools.partial(self.step_shape, group, shape, members) for shape, members in shapes.items()]
            self.side_by_side.run(steps, params[0].device)
        return loss

    @staticmethod
    def step_shape(group, shape, members):
        """The step of the matrices (param, update) of one shape."""
        same_shape = [param for param, _ in members]
        orthogonal = newton_schulz(torch.stack([update for _, update in members]), group["ns_coefficients"],
                                   group["ns_steps"], group["eps"])
        if group["weight_decay"]:
            torch._foreach_mul_(same_shape, 1 - group["lr"] * group["weight_decay"])
        torch._foreach_add_(same_shape, list(orthogonal.to(same_shape[0].dtype).unbind(0)),
                            alpha=-_adjust_lr(group["lr"], group["adjust_lr_fn"], shape))
