"""The policy for ``puffer_craftax_compact``; config: ``policy = ocean.craftax.policy:CraftaxCompact``."""

from types import SimpleNamespace

import gymnasium
import numpy as np
import torch

from ocean.craftax import gpu
from ocean.craftax.binding import LAYOUT
from pufferlib.exceptions import APIUsageError
from pufferlib.models import Default


@torch.library.custom_op("puffer_craftax::expand", mutates_args=(), device_types="cuda")
def expand_with_kernel(compact: torch.Tensor, columns: int, bfloat16: bool) -> torch.Tensor:
    """The expansion by the CUDA library's kernel: an op of its own, so that torch.compile keeps it
    whole inside a compiled graph and CUDA graphs capture its launch."""
    return gpu.expand_observations(compact, torch.bfloat16 if bfloat16 else torch.float32, columns)


@expand_with_kernel.register_fake
def _(compact, columns, bfloat16):
    return compact.new_empty((compact.shape[0], columns), dtype=torch.bfloat16 if bfloat16 else torch.float32)


_KERNEL_EXPANDS = {}  # GPU index -> whether the library has code for that GPU


@torch.compiler.assume_constant_result
def kernel_expands_on(device_index: int) -> bool:
    """Whether CUDA batches on this GPU expand with the library's kernel: asked of the library once
    per GPU, and a constant to torch.compile."""
    if device_index not in _KERNEL_EXPANDS:
        _KERNEL_EXPANDS[device_index] = gpu.library_runs_on(device_index)
    return _KERNEL_EXPANDS[device_index]


class CraftaxCompact(Default):
    """The Default MLP for ``puffer_craftax_compact``: each batch of 996-byte compact observations is
    expanded, on the policy's device, into exactly the 8,268 floats of the full observation (layout
    in docs/craftax.md), so the policy sees what one on ``puffer_craftax`` sees while rollouts store
    and move 33x fewer bytes. Four zeros follow them: rows of 8,272 values, and a first layer of
    8,272 inputs, are 16-byte aligned, which the GPU's fastest matrix products need; without it
    torch.compile copies every batch into a padded one.
    """

    view_cells, cell_bytes, scalars = LAYOUT["view_cells"], LAYOUT["cell_bytes"], LAYOUT["scalars"]
    block_types, item_types = LAYOUT["block_types"], LAYOUT["item_types"]
    mob_classes, mob_types = LAYOUT["mob_classes"], LAYOUT["mob_types"]
    full_size = LAYOUT["obs_size"]
    input_size = -(-full_size // 8) * 8
    light_byte = 7

    def __init__(self, env, hidden_size=128, num_layers=1):
        space = env.single_observation_space
        if space.shape != (LAYOUT["compact_obs_bytes"],) or space.dtype != np.uint8:
            raise APIUsageError(
                f"CraftaxCompact needs puffer_craftax_compact's {LAYOUT['compact_obs_bytes']} uint8 observations, got {space}"
            )
        full = gymnasium.spaces.Box(0.0, 1.0, (self.full_size,), np.float32)
        super().__init__(SimpleNamespace(single_observation_space=full, single_action_space=env.single_action_space), hidden_size, num_layers)
        # The padding's inputs are always zero, and so are their weights: the first layer starts
        # as the full observation's policy's does from the same seed.
        first = self.embedding
        first.weight = torch.nn.Parameter(torch.nn.functional.pad(first.weight.detach(), (0, self.input_size - self.full_size)))
        first.in_features = self.input_size
        # Each cell's channels in the full observation's order (blocks, items, mob bits, light),
        # as one rule: channel c is on when (byte[c] & mask[c]) == value[c] for the cell's byte
        # byte[c], and, for blocks and items, the cell is lit. One gather and one comparison make
        # a simpler kernel than building and concatenating the four kinds, and a faster one.
        mob_bits = [1 << bit for _ in range(self.mob_classes) for bit in range(self.mob_types)]
        mob_bytes = [2 + mob_class for mob_class in range(self.mob_classes) for _ in range(self.mob_types)]
        channel_byte = [0] * self.block_types + [1] * self.item_types + mob_bytes + [self.light_byte]
        channel_mask = [0xFF] * (self.block_types + self.item_types) + mob_bits + [0xFF]
        channel_value = list(range(self.block_types)) + list(range(self.item_types)) + mob_bits + [1]
        needs_light = [True] * (self.block_types + self.item_types) + [False] * (len(mob_bits) + 1)
        self.register_buffer("channel_byte", torch.tensor(channel_byte, dtype=torch.long), persistent=False)
        self.register_buffer("channel_mask", torch.tensor(channel_mask, dtype=torch.uint8), persistent=False)
        self.register_buffer("channel_value", torch.tensor(channel_value, dtype=torch.uint8), persistent=False)
        self.register_buffer("ignores_light", ~torch.tensor(needs_light), persistent=False)

    def expand(self, compact):
        """[B, 996] uint8 -> [B, 8,272] float32: bit for bit the full observation, then four zeros.
        Under autocast it is written in the autocast type instead, as the first layer would round
        it anyway: the expansion is the largest write of the update, and this halves it. CUDA
        batches expand in the GPU env's library's kernel when the library is built for their GPU,
        and with tensor code otherwise."""
        device = compact.device.type
        dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else torch.float32
        if compact.is_cuda and dtype in (torch.float32, torch.bfloat16) and kernel_expands_on(compact.device.index):
            return expand_with_kernel(compact.contiguous(), self.input_size, dtype == torch.bfloat16)
        return self.expand_with_tensors(compact, dtype)

    def expand_with_tensors(self, compact, dtype):
        batch = compact.shape[0]
        cells = compact[:, : self.view_cells * self.cell_bytes].reshape(batch, self.view_cells, self.cell_bytes)
        lit = cells[..., self.light_byte : self.light_byte + 1] == 1
        channels = ((cells[..., self.channel_byte] & self.channel_mask) == self.channel_value) & (lit | self.ignores_light)
        scalars = compact[:, self.view_cells * self.cell_bytes :].contiguous().view(torch.float32)
        padding = compact.new_zeros((batch, self.input_size - self.full_size), dtype=dtype)
        return torch.cat([channels.reshape(batch, -1).to(dtype), scalars.to(dtype), padding], dim=1)

    def encode_observations(self, observations):
        return super().encode_observations(self.expand(observations.reshape(observations.shape[0], -1)))
