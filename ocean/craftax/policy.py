"""The policies for ``puffer_craftax_compact``; config: ``policy = ocean.craftax.policy:CraftaxCompact`` (or
``:CraftaxCells``)."""

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


@torch.library.custom_op("puffer_craftax::embed_cells", mutates_args=(), device_types="cuda")
def embed_cells_with_kernel(compact: torch.Tensor, table: torch.Tensor, columns: int, bfloat16: bool) -> torch.Tensor:
    """CraftaxCells' input by the CUDA library's kernel, an op of its own as the expansion is, with
    its table's gradient from a second kernel."""
    return gpu.embed_cells(compact, table, columns, torch.bfloat16 if bfloat16 else torch.float32)


@embed_cells_with_kernel.register_fake
def _(compact, table, columns, bfloat16):
    return compact.new_empty((compact.shape[0], columns), dtype=torch.bfloat16 if bfloat16 else torch.float32)


@torch.library.custom_op("puffer_craftax::embed_cells_grad", mutates_args=(), device_types="cuda")
def embed_cells_grad_with_kernel(compact: torch.Tensor, grad: torch.Tensor, width: int) -> torch.Tensor:
    return gpu.embed_cells_grad(compact, grad, width)


@embed_cells_grad_with_kernel.register_fake
def _(compact, grad, width):
    return grad.new_empty((gpu.CHANNELS, width), dtype=torch.float32)


def _save_for_embed_cells_grad(ctx, inputs, output):
    compact, table, _, _ = inputs
    ctx.save_for_backward(compact)
    ctx.width = table.shape[1]


def _embed_cells_backward(ctx, grad):
    (compact,) = ctx.saved_tensors
    return None, embed_cells_grad_with_kernel(compact, grad.contiguous(), ctx.width), None, None


embed_cells_with_kernel.register_autograd(_embed_cells_backward, setup_context=_save_for_embed_cells_grad)


_KERNEL_EXPANDS = {}  # GPU index -> whether the library has code for that GPU


@torch.compiler.assume_constant_result
def kernel_expands_on(device_index: int) -> bool:
    """Whether CUDA batches on this GPU expand (or embed their cells) with the library's kernels:
    asked of the library once per GPU, and a constant to torch.compile."""
    if device_index not in _KERNEL_EXPANDS:
        _KERNEL_EXPANDS[device_index] = gpu.library_runs_on(device_index)
    return _KERNEL_EXPANDS[device_index]


class ChannelRule(torch.nn.Module):
    """The full observation's channels read off compact observations with tensor code: [B, 996]
    uint8 -> ([B, 99, 83] bool channels of each cell, [B, 51] float32 scalars).

    Each cell's channels in the full observation's order (blocks, items, mob bits, light), as one
    rule: channel c is on when (byte[c] & mask[c]) == value[c] for the cell's byte byte[c], and, for
    blocks and items, the cell is lit. One gather and one comparison make a simpler kernel than
    building and concatenating the four kinds, and a faster one."""

    view_cells, cell_bytes = LAYOUT["view_cells"], LAYOUT["cell_bytes"]
    light_byte = 7

    def __init__(self):
        super().__init__()
        block_types, item_types = LAYOUT["block_types"], LAYOUT["item_types"]
        mob_classes, mob_types = LAYOUT["mob_classes"], LAYOUT["mob_types"]
        mob_bits = [1 << bit for _ in range(mob_classes) for bit in range(mob_types)]
        mob_bytes = [2 + mob_class for mob_class in range(mob_classes) for _ in range(mob_types)]
        channel_byte = [0] * block_types + [1] * item_types + mob_bytes + [self.light_byte]
        channel_mask = [0xFF] * (block_types + item_types) + mob_bits + [0xFF]
        channel_value = list(range(block_types)) + list(range(item_types)) + mob_bits + [1]
        needs_light = [True] * (block_types + item_types) + [False] * (len(mob_bits) + 1)
        self.register_buffer("channel_byte", torch.tensor(channel_byte, dtype=torch.long), persistent=False)
        self.register_buffer("channel_mask", torch.tensor(channel_mask, dtype=torch.uint8), persistent=False)
        self.register_buffer("channel_value", torch.tensor(channel_value, dtype=torch.uint8), persistent=False)
        self.register_buffer("ignores_light", ~torch.tensor(needs_light), persistent=False)

    def forward(self, compact):
        batch = compact.shape[0]
        cells = compact[:, : self.view_cells * self.cell_bytes].reshape(batch, self.view_cells, self.cell_bytes)
        lit = cells[..., self.light_byte : self.light_byte + 1] == 1
        channels = ((cells[..., self.channel_byte] & self.channel_mask) == self.channel_value) & (lit | self.ignores_light)
        scalars = compact[:, self.view_cells * self.cell_bytes :].contiguous().view(torch.float32)
        return channels, scalars


def check_compact_space(policy_class, space):
    if space.shape != (LAYOUT["compact_obs_bytes"],) or space.dtype != np.uint8:
        raise APIUsageError(
            f"{policy_class.__name__} needs puffer_craftax_compact's {LAYOUT['compact_obs_bytes']} uint8 observations, got {space}"
        )


def autocast_type(device):
    """What the first layer computes in on ``device``: the autocast type when autocast is on."""
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else torch.float32


def library_kernel_serves(compact, dtype):
    """Whether the CUDA library's kernels make this batch's first-layer input: a CUDA batch, in
    float32 or bfloat16, on a GPU the library has code for."""
    return compact.is_cuda and dtype in (torch.float32, torch.bfloat16) and kernel_expands_on(compact.device.index)


def first_layer_row(per_cell, scalars, columns, dtype):
    """[B, ...] cell values and [B, 51] scalars -> one [B, columns] row of ``dtype`` each, zeros
    after them (the padding that keeps rows 16-byte aligned)."""
    batch = per_cell.shape[0]
    per_cell = per_cell.reshape(batch, -1)
    padding = per_cell.new_zeros((batch, columns - per_cell.shape[1] - scalars.shape[1]), dtype=dtype)
    return torch.cat([per_cell.to(dtype), scalars.to(dtype), padding], dim=1)


class CraftaxCompact(Default):
    """The Default MLP for ``puffer_craftax_compact``: each batch of 996-byte compact observations is
    expanded, on the policy's device, into exactly the 8,268 floats of the full observation (layout
    in docs/craftax.md), so the policy sees what one on ``puffer_craftax`` sees while rollouts store
    and move 33x fewer bytes. Four zeros follow them: rows of 8,272 values, and a first layer of
    8,272 inputs, are 16-byte aligned, which the GPU's fastest matrix products need; without it
    torch.compile copies every batch into a padded one.
    """

    full_size = LAYOUT["obs_size"]
    input_size = -(-full_size // 8) * 8

    def __init__(self, env, hidden_size=128, num_layers=1):
        check_compact_space(type(self), env.single_observation_space)
        full = gymnasium.spaces.Box(0.0, 1.0, (self.full_size,), np.float32)
        super().__init__(SimpleNamespace(single_observation_space=full, single_action_space=env.single_action_space), hidden_size, num_layers)
        # The padding's inputs are always zero, and so are their weights: the first layer starts
        # as the full observation's policy's does from the same seed.
        first = self.embedding
        first.weight = torch.nn.Parameter(torch.nn.functional.pad(first.weight.detach(), (0, self.input_size - self.full_size)))
        first.in_features = self.input_size
        self.channel_rule = ChannelRule()

    def expand(self, compact):
        """[B, 996] uint8 -> [B, 8,272] float32: bit for bit the full observation, then four zeros.
        Under autocast it is written in the autocast type instead, as the first layer would round
        it anyway: the expansion is the largest write of the update, and this halves it. CUDA
        batches expand in the GPU env's library's kernel when the library is built for their GPU,
        and with tensor code otherwise."""
        dtype = autocast_type(compact.device.type)
        if library_kernel_serves(compact, dtype):
            return expand_with_kernel(compact.contiguous(), self.input_size, dtype == torch.bfloat16)
        return self.expand_with_tensors(compact, dtype)

    def expand_with_tensors(self, compact, dtype):
        channels, scalars = self.channel_rule(compact)
        return first_layer_row(channels, scalars, self.input_size, dtype)

    def encode_observations(self, observations):
        return super().encode_observations(self.expand(observations.reshape(observations.shape[0], -1)))


class CraftaxCells(Default):
    """The Default MLP for ``puffer_craftax_compact`` with each cell embedded: the channels a cell
    has in the full observation (its block, item, mobs and light; none when dark) select rows of
    one learned table of ``cell_width`` columns, shared by the 99 cells, and their sum stands for
    the cell. The 99 sums and the 51 scalars, then zeros to a multiple of 8, are the first layer's
    input: 1,640 values at the default width of 16, where CraftaxCompact's first layer reads 8,272.

    It is CraftaxCompact's first layer with each cell's 83 x hidden block of weights factored
    through the table (83 x cell_width), a subspace of the same functions that shares what it
    learns of a block, an item or a mob across the cells. CUDA batches embed in the kernels of
    cell_embedding.cu, built into the GPU env's library (the table's gradient in a second one);
    elsewhere the channels, as 0/1 values, multiply the table.
    """

    def __init__(self, env, hidden_size=128, num_layers=1, cell_width=16):
        check_compact_space(type(self), env.single_observation_space)
        if cell_width not in gpu.CELL_WIDTHS:
            raise APIUsageError(f"CraftaxCells: cell_width must be one of {gpu.CELL_WIDTHS}, got {cell_width}")
        self.cell_width = cell_width
        self.input_size = -(-(gpu.CELLS * cell_width + gpu.SCALARS) // 8) * 8
        inputs = gymnasium.spaces.Box(0.0, 1.0, (self.input_size,), np.float32)
        super().__init__(SimpleNamespace(single_observation_space=inputs, single_action_space=env.single_action_space), hidden_size, num_layers)
        self.channel_rule = ChannelRule()
        # Scaled as a linear layer over the 83 channels: the first layer's outputs then start about
        # as large as CraftaxCompact's.
        self.cell_embedding = torch.nn.Parameter(torch.randn(gpu.CHANNELS, cell_width) / gpu.CHANNELS**0.5)
        with torch.no_grad():
            self.embedding.weight[:, gpu.CELLS * cell_width + gpu.SCALARS :] = 0  # the padding's, never used

    def embed_cells(self, compact):
        """[B, 996] uint8 -> [B, input_size] first-layer input, in the autocast type under autocast."""
        dtype = autocast_type(compact.device.type)
        if library_kernel_serves(compact, dtype):
            return embed_cells_with_kernel(compact.contiguous(), self.cell_embedding, self.input_size, dtype == torch.bfloat16)
        return self.embed_cells_with_tensors(compact, dtype)

    def embed_cells_with_tensors(self, compact, dtype):
        channels, scalars = self.channel_rule(compact)
        return first_layer_row(channels.float() @ self.cell_embedding, scalars, self.input_size, dtype)

    def encode_observations(self, observations):
        return self.encoder(self.embedding(self.embed_cells(observations.reshape(observations.shape[0], -1))))
