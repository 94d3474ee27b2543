"""A small NetHack policy: what is around the hero, and the hero's status line.

The flat byte rows of ``pufferlib.environments.nethack`` are restored to nle's arrays
(``nativize_tensor``, no copy); the policy reads two of them, so the env needs only
``observation_keys = ("glyphs", "blstats")``:

- ``glyphs`` (21 x 79 glyph ids): a ``crop`` x ``crop`` window centred on the hero, each glyph
  embedded, then one linear layer;
- ``blstats`` (27 status numbers: position, hit points, depth, gold, score, ...): signed log
  scale, then one linear layer.

Kept apart from the env module so that env workers never import torch.
"""

import torch
from torch import nn

from pufferlib.exceptions import APIUsageError
from pufferlib.models import ActionHead, Policy
from pufferlib.pytorch import Float32Linear, layer_init, nativize_dtype, nativize_tensor

MAX_GLYPH = 5976  # nle.nethack.MAX_GLYPH: glyph ids are 0 .. MAX_GLYPH - 1; MAX_GLYPH pads the crop
BLSTATS_X, BLSTATS_Y = 0, 1


class NetHackPolicy(Policy):
    def __init__(self, env, hidden_size=128, crop=9, glyph_dim=16):
        super().__init__()
        self.native_dtype = nativize_dtype(env.emulated)
        if not isinstance(self.native_dtype, dict) or not {"glyphs", "blstats"} <= set(self.native_dtype):
            raise APIUsageError(
                "NetHackPolicy reads the glyphs and blstats observations: make the env with "
                "observation_keys including 'glyphs' and 'blstats'"
            )
        self.hidden_size, self.crop = hidden_size, crop
        self.glyph_embedding = nn.Embedding(MAX_GLYPH + 1, glyph_dim)
        self.crop_encoder = nn.Sequential(layer_init(nn.Linear(crop * crop * glyph_dim, hidden_size)), nn.ReLU())
        self.status_encoder = nn.Sequential(layer_init(nn.Linear(27, hidden_size // 2)), nn.ReLU())
        self.encoder = nn.Sequential(layer_init(nn.Linear(hidden_size + hidden_size // 2, hidden_size)), nn.ReLU())
        self.action_head = ActionHead(env.single_action_space, hidden_size)
        self.value_head = layer_init(Float32Linear(hidden_size, 1), std=1.0)

    def around_hero(self, glyphs, blstats):
        """[B, crop, crop] glyph ids centred on the hero; cells off the map hold MAX_GLYPH."""
        radius = self.crop // 2
        padded = nn.functional.pad(glyphs.long(), (radius, radius, radius, radius), value=MAX_GLYPH)
        offsets = torch.arange(self.crop, device=glyphs.device)
        rows = (blstats[:, BLSTATS_Y].long().clamp(0, glyphs.shape[1] - 1)[:, None] + offsets)[:, :, None]
        cols = (blstats[:, BLSTATS_X].long().clamp(0, glyphs.shape[2] - 1)[:, None] + offsets)[:, None, :]
        batch = torch.arange(glyphs.shape[0], device=glyphs.device)[:, None, None]
        return padded[batch, rows, cols]

    def encode_observations(self, observations):
        native = nativize_tensor(observations, self.native_dtype)
        glyphs, blstats = native["glyphs"], native["blstats"]
        window = self.glyph_embedding(self.around_hero(glyphs, blstats)).flatten(1)
        status = blstats.float()
        status = torch.sign(status) * torch.log1p(status.abs())
        return self.encoder(torch.cat([self.crop_encoder(window), self.status_encoder(status)], dim=1))

    def decode_actions(self, hidden):
        return self.action_head(hidden), self.value_head(hidden).squeeze(-1)
