"""Vanilla PyTorch policies.

A policy is split in two halves so that recurrence can be added around any of them:
``encode_observations(observations) -> hidden [B, H]`` and
``decode_actions(hidden) -> (logits, values [B])``. ``logits`` is a [B, n] tensor for Discrete
actions, a list of them for MultiDiscrete, a ``Normal`` for Box (see ``pytorch.sample_logits``).

The trainer talks to every policy, recurrent or not, through three methods:

- ``initial_state(batch_size, device)``: a tuple of [batch_size, ...] tensors (empty when the
  policy has no memory);
- ``forward_eval(observations [B, ...], state) -> (logits, values [B], state)``: one step;
- ``forward(observations [N, T, ...], state, resets [N, T]) -> (logits over N * T rows,
  values [N, T])``: whole segments, starting from ``state``; ``resets[n, t]`` is true where an
  episode began at step t, so the memory is cleared there exactly as it was while acting.
"""

import gymnasium
import numpy as np
import torch
from torch import nn
from torch.distributions import Normal

from pufferlib.exceptions import APIUsageError
from pufferlib.pytorch import Float32Linear, layer_init, mingru_scan


class Policy(nn.Module):
    """Base class of policies without memory: the trainer-facing methods, given the two halves."""

    def initial_state(self, batch_size, device):
        return ()

    def forward_eval(self, observations, state=()):
        logits, values = self.decode_actions(self.encode_observations(observations))
        return logits, values, state

    def forward(self, observations, state=(), resets=None):
        segments, steps = observations.shape[:2]
        flat = observations.reshape(segments * steps, *observations.shape[2:])
        logits, values = self.decode_actions(self.encode_observations(flat))
        return logits, values.reshape(segments, steps)


class ActionHead(nn.Module):
    """Maps a hidden vector to the action distribution's parameters for any PufferEnv action space."""

    def __init__(self, action_space, hidden_size):
        super().__init__()
        if isinstance(action_space, gymnasium.spaces.Discrete):
            self.kind = "discrete"
            self.linear = layer_init(Float32Linear(hidden_size, int(action_space.n)), std=0.01)
        elif isinstance(action_space, gymnasium.spaces.MultiDiscrete):
            self.kind = "multidiscrete"
            self.sizes = [int(n) for n in np.asarray(action_space.nvec).ravel()]
            self.linear = layer_init(Float32Linear(hidden_size, sum(self.sizes)), std=0.01)
        elif isinstance(action_space, gymnasium.spaces.Box):
            self.kind = "continuous"
            size = int(np.prod(action_space.shape))
            self.linear = layer_init(Float32Linear(hidden_size, size), std=0.01)
            # A state-independent log standard deviation is the usual, stable choice for PPO.
            self.log_std = nn.Parameter(torch.zeros(1, size))
        else:
            raise APIUsageError(
                f"Unsupported action space {action_space}: policies handle Discrete, MultiDiscrete "
                "and Box; wrap structured spaces with pufferlib.emulation"
            )

    def forward(self, hidden):
        out = self.linear(hidden)
        if self.kind == "discrete":
            return out
        if self.kind == "multidiscrete":
            return list(torch.split(out, self.sizes, dim=-1))
        return Normal(out, self.log_std.expand_as(out).exp())


class Default(Policy):
    """MLP policy: observations -> ``num_layers`` GELU layers -> action and value heads.

    Observations that are small non-negative integers (grids of cell types, like most Ocean envs)
    are one-hot encoded, one input per cell and nonzero value: a cell's value is a category, and a
    linear layer on the raw number would treat "2" as twice "1". Value 0 needs no input of its own
    (its weights fold into the bias), so on a CPU the first layer only sums the weights of nonzero
    cells (an embedding bag), which is several times faster on mostly empty grids. Other
    observations are flattened as floats.
    """

    max_categories = 16

    def __init__(self, env, hidden_size=128, num_layers=1):
        super().__init__()
        self.hidden_size = hidden_size
        space = env.single_observation_space
        obs_size = int(np.prod(space.shape))
        integer = np.issubdtype(space.dtype, np.integer)
        self.categories = int(np.max(space.high)) if integer and np.min(space.low) >= 0 else 0
        if 0 < self.categories <= self.max_categories:
            first = nn.Linear(obs_size * self.categories, hidden_size)
            layer_init(first)
            self.embedding = nn.EmbeddingBag(obs_size * self.categories, hidden_size, mode="sum")
            self.embedding.weight = nn.Parameter(first.weight.detach().T.contiguous())
            self.embedding_bias = first.bias
        else:
            self.categories = 0
            self.embedding = layer_init(nn.Linear(obs_size, hidden_size))
        layers = [nn.GELU()]
        for _ in range(num_layers - 1):
            layers += [layer_init(nn.Linear(hidden_size, hidden_size)), nn.GELU()]
        self.encoder = nn.Sequential(*layers)
        self.action_head = ActionHead(env.single_action_space, hidden_size)
        self.value_head = layer_init(Float32Linear(hidden_size, 1), std=1.0)

    def embed_categories(self, flat):
        """First layer on one-hot cell values: bias + the weights of every (cell, value) present."""
        cells = flat.shape[1]
        if flat.is_cuda:
            # Dense one-hot: static shapes keep torch.compile and CUDA graphs usable.
            values = torch.arange(1, self.categories + 1, device=flat.device)
            onehot = (flat.unsqueeze(-1) == values).reshape(flat.shape[0], cells * self.categories)
            return onehot.to(self.embedding.weight.dtype) @ self.embedding.weight + self.embedding_bias
        rows, cols = flat.nonzero(as_tuple=True)
        index = cols * self.categories + flat[rows, cols].long() - 1
        counts = torch.bincount(rows, minlength=flat.shape[0])
        offsets = torch.cumsum(counts, 0) - counts
        return self.embedding(index, offsets) + self.embedding_bias

    def encode_observations(self, observations):
        flat = observations.reshape(observations.shape[0], -1)
        hidden = self.embed_categories(flat) if self.categories else self.embedding(flat.float())
        return self.encoder(hidden)

    def decode_actions(self, hidden):
        return self.action_head(hidden), self.value_head(hidden).squeeze(-1)


class ImagePolicy(Policy):
    """Base of the convolutional policies: image observations through a subclass's convolutional
    layers, flattened, then one ReLU hidden layer, with the same heads as Default.

    Observations are [C, H, W], or [H, W, C] with ``channels_last``; uint8 pixels are scaled to
    [0, 1]. A subclass calls ``__init__``, then ``build`` with its layers for ``self.in_channels``
    input channels.
    """

    def __init__(self, env, hidden_size, channels_last):
        super().__init__()
        self.hidden_size = hidden_size
        self.channels_last = channels_last
        self.observation_shape = env.single_observation_space.shape
        if len(self.observation_shape) != 3:
            raise APIUsageError(
                f"{type(self).__name__} needs image observations of rank 3, got shape {self.observation_shape}"
            )
        self.scale = 1 / 255 if env.single_observation_space.dtype == np.uint8 else 1.0
        self.in_channels = self.observation_shape[2] if channels_last else self.observation_shape[0]

    def build(self, conv_layers, action_space):
        """The network (``conv_layers``, flattened, the hidden layer) and the heads; the hidden
        layer's input size is what the layers make of a blank observation."""
        self.network = nn.Sequential(*conv_layers, nn.Flatten())
        with torch.no_grad():
            flat_size = self.network(self._images(torch.zeros(1, *self.observation_shape))).shape[1]
        self.network.append(layer_init(nn.Linear(flat_size, self.hidden_size)))
        self.network.append(nn.ReLU())
        self.action_head = ActionHead(action_space, self.hidden_size)
        self.value_head = layer_init(Float32Linear(self.hidden_size, 1), std=1.0)

    def _images(self, observations):
        images = observations.float() * self.scale
        return images.permute(0, 3, 1, 2) if self.channels_last else images

    def encode_observations(self, observations):
        return self.network(self._images(observations))

    def decode_actions(self, hidden):
        return self.action_head(hidden), self.value_head(hidden).squeeze(-1)


class Convolutional(ImagePolicy):
    """Nature-DQN convolutional encoder for image observations (ImagePolicy's layout and heads).
    ``downsample`` keeps every n-th pixel, a cheap way to shrink large frames.
    """

    def __init__(self, env, hidden_size=512, channels_last=False, downsample=1):
        super().__init__(env, hidden_size, channels_last)
        self.downsample = downsample
        self.build([
            layer_init(nn.Conv2d(self.in_channels, 32, 8, stride=4)), nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 4, stride=2)), nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(),
        ], env.single_action_space)

    def _images(self, observations):
        return super()._images(observations)[:, :, :: self.downsample, :: self.downsample]


class PixelCNN(ImagePolicy):
    """A small convolutional encoder for frames drawn from sprites (Craftax's pixel observation):
    3 x 3 convolutions, each followed by 2 x 2 max pooling, then ImagePolicy's hidden layer and
    heads. Small kernels keep the details of a sprite (a mob, a digit of a count) that
    Convolutional's 8 x 8 stride-4 first layer averages away. Observations are [H, W, C] by
    default (``channels_last``, the Gymnasium layout).
    """

    def __init__(self, env, hidden_size=256, channels=(32, 64, 64), channels_last=True):
        super().__init__(env, hidden_size, channels_last)
        layers, previous = [], self.in_channels
        for width in channels:
            layers += [layer_init(nn.Conv2d(previous, width, 3, padding=1)), nn.ReLU(), nn.MaxPool2d(2)]
            previous = width
        self.build(layers, env.single_action_space)


class RecurrentWrapper(nn.Module):
    """Adds memory between the two halves of ``policy``; subclasses supply the recurrent core
    (``initial_state``, ``step`` for one token, ``sequence`` for whole segments)."""

    def __init__(self, env, policy):
        super().__init__()
        if not (hasattr(policy, "encode_observations") and hasattr(policy, "decode_actions")):
            raise APIUsageError(
                f"{type(self).__name__} needs a policy split into encode_observations / decode_actions, "
                f"got {type(policy).__name__}"
            )
        self.policy = policy

    def forward_eval(self, observations, state):
        hidden = self.policy.encode_observations(observations)
        hidden, state = self.step(hidden, state)
        logits, values = self.policy.decode_actions(hidden)
        return logits, values, state

    def forward(self, observations, state, resets):
        segments, steps = observations.shape[:2]
        flat = observations.reshape(segments * steps, *observations.shape[2:])
        hidden = self.policy.encode_observations(flat).reshape(segments, steps, -1)
        hidden = self.sequence(hidden, state, resets)
        logits, values = self.policy.decode_actions(hidden.reshape(segments * steps, -1))
        return logits, values.reshape(segments, steps)


class LSTMWrapper(RecurrentWrapper):
    """An LSTM between encoder and decoder. State: (h, c), each [B, num_layers, H]."""

    def __init__(self, env, policy, input_size=128, hidden_size=128, num_layers=1):
        super().__init__(env, policy)
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=num_layers, batch_first=True)
        for name, param in self.lstm.named_parameters():
            if "bias" in name:
                nn.init.constant_(param, 0)
            else:
                nn.init.orthogonal_(param, 1.0)

    def initial_state(self, batch_size, device):
        zeros = torch.zeros(batch_size, self.num_layers, self.hidden_size, device=device)
        return (zeros, zeros.clone())

    def step(self, hidden, state):
        h, c = (s.transpose(0, 1).contiguous() for s in state)  # nn.LSTM keeps layers first
        out, (h, c) = self.lstm(hidden.unsqueeze(1), (h, c))
        return out.squeeze(1), (h.transpose(0, 1), c.transpose(0, 1))

    def sequence(self, hidden, state, resets):
        h, c = (s.transpose(0, 1).contiguous() for s in state)
        # One whole-sequence call when no episode starts inside the segments (step 0's reset is
        # already folded into the stored start state); otherwise step and clear memory there.
        if resets is None or not bool(resets[:, 1:].any()):
            return self.lstm(hidden, (h, c))[0]
        keep = (~resets).to(hidden.dtype).T.unsqueeze(-1)  # [T, N, 1]
        outputs = []
        for t in range(hidden.shape[1]):
            if t > 0:
                h, c = h * keep[t], c * keep[t]
            out, (h, c) = self.lstm(hidden[:, t : t + 1], (h, c))
            outputs.append(out)
        return torch.cat(outputs, dim=1)


class MinGRU(nn.Module):
    """A stack of minGRU layers (Feng et al. 2024, "Were RNNs All We Needed?").

    Each layer: z = sigmoid(W_z x), h~ = W_h x, h_t = (1 - z_t) h_{t-1} + z_t h~_t. The gates see only
    the input, so the recurrence is linear in h: training runs it for whole sequences with a
    parallel scan (``mingru_scan``) while acting steps it one token at a time (``step``). Layers
    after the first are residual. State: [B, num_layers, H].
    """

    def __init__(self, input_size, hidden_size, num_layers=1):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.layers = nn.ModuleList(
            nn.Linear(input_size if i == 0 else hidden_size, 2 * hidden_size) for i in range(num_layers)
        )

    def step(self, x, state):
        """One token: x [B, I], state [B, L, H] -> (output [B, H], new state)."""
        new_state = []
        for i, layer in enumerate(self.layers):
            gate, candidate = layer(x).chunk(2, dim=-1)
            h = state[:, i] + torch.sigmoid(gate) * (candidate - state[:, i])
            new_state.append(h)
            x = h if i == 0 and x.shape[-1] != self.hidden_size else x + h
        return x, torch.stack(new_state, dim=1)

    def forward(self, x, state, resets=None):
        """Whole sequences: x [N, T, I], state [N, L, H], resets [N, T] -> outputs [N, T, H]."""
        keep = None if resets is None else (~resets).to(x.dtype)
        if keep is not None:
            keep[:, 0] = 1  # step 0's reset is already folded into the stored start state
        for i, layer in enumerate(self.layers):
            h = mingru_scan(layer(x), keep, state[:, i])
            x = h if i == 0 and x.shape[-1] != self.hidden_size else x + h
        return x


class MinGRUWrapper(RecurrentWrapper):
    """A MinGRU stack between encoder and decoder. State: ([B, num_layers, H],)."""

    def __init__(self, env, policy, input_size=128, hidden_size=128, num_layers=1):
        super().__init__(env, policy)
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.rnn = MinGRU(input_size, hidden_size, num_layers)

    def initial_state(self, batch_size, device):
        return (torch.zeros(batch_size, self.num_layers, self.hidden_size, device=device),)

    def step(self, hidden, state):
        out, new_state = self.rnn.step(hidden, state[0])
        return out, (new_state,)

    def sequence(self, hidden, state, resets):
        return self.rnn(hidden, state[0], resets)


POLICIES = {"default": Default, "convolutional": Convolutional, "pixelcnn": PixelCNN}
RNNS = {"lstm": LSTMWrapper, "mingru": MinGRUWrapper}


def param_count(module):
    return sum(p.numel() for p in module.parameters())


def describe(policy):
    """One line naming the architecture, for logs: 'MinGRUWrapper(Default), 0.21M parameters'."""
    inner = f"({type(policy.policy).__name__})" if isinstance(policy, RecurrentWrapper) else ""
    return f"{type(policy).__name__}{inner}, {param_count(policy) / 1e6:.2f}M parameters"
