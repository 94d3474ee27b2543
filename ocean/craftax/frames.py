"""Frames in pixels for the Ocean env class of a Craftax game (the full game, Classic): ``render(i)``
as text or as the reference's pixels, and the last frame of each finished episode for videos.

The class lists ``PixelFrames`` before ``OceanEnv`` among its bases, has a ``binding`` whose
``render_frame(state, atlas, block)`` draws a state, ``keep_final_states(c_envs, buffer)`` keeps
the state each episode ended in and ``STATE_BYTES`` sizes one, and defines ``_state_bytes(index)``.
"""

import numpy as np

from ocean.craftax.textures import load_atlas
from ocean.env import check_int
from pufferlib.exceptions import APIUsageError, ParameterError

RENDER_MODES = ("ansi", "rgb_array")


def check_render_mode(env_name, render_mode):
    if render_mode not in RENDER_MODES:
        raise ParameterError(f"{env_name}: render_mode must be one of {', '.join(RENDER_MODES)}, got {render_mode!r}")
    return render_mode


class PixelFrames:
    def _start_frames(self, render_mode, render_block_size, textures, game="craftax"):
        """Checks the render options and, for "rgb_array", reads the textures: before any world is
        generated, so a missing texture folder fails at once."""
        self.render_mode = check_render_mode(self.name, render_mode)
        self.render_block_size = check_int(self.name, "render_block_size", render_block_size,
                                           self.binding.MIN_BLOCK_PIXELS, 256)
        folder = None if textures in (None, "auto") else textures
        self._atlas = load_atlas(self.render_block_size, folder, game=game) if render_mode == "rgb_array" else None
        self._final_states = None

    def render(self, index=0):
        """Env ``index``'s frame: ANSI text, or with ``render_mode="rgb_array"`` its pixels,
        (height, width, 3) uint8."""
        if self.render_mode != "rgb_array":
            return super().render(index)
        if not self.started:
            raise APIUsageError(f"{self.name}: render() after close(); build a new env" if self.closed
                                else f"{self.name}: call reset() before render(): there is no game to show yet")
        index = check_int(self.name, "render index", index, 0, self.num_envs - 1)
        return self.binding.render_frame(self._state_bytes(index), self._atlas, self.render_block_size)

    def keep_final_frames(self):
        """From now on, keeps each env's last frame of its latest finished episode: its text, or
        with ``render_mode="rgb_array"`` the state it ended in (copied when an episode ends, drawn
        only when asked for)."""
        if self.render_mode != "rgb_array":
            return super().keep_final_frames()
        if self._final_states is None:
            self._final_states = np.zeros(self.num_envs * self.binding.STATE_BYTES, np.uint8)
            self.binding.keep_final_states(self.c_envs, self._final_states)

    def final_frame(self, index=0):
        """Env ``index``'s last frame of its latest finished episode (after ``keep_final_frames``):
        its text ('' before one ended), or with ``render_mode="rgb_array"`` its pixels as
        ``render`` draws them (None before one ended)."""
        if self.render_mode != "rgb_array":
            return super().final_frame(index)
        index = check_int(self.name, "final_frame index", index, 0, self.num_envs - 1)
        if self._final_states is None:
            return None
        state = self._final_states.reshape(self.num_envs, self.binding.STATE_BYTES)[index]
        if not state.any():
            return None
        return self.binding.render_frame(state, self._atlas, self.render_block_size)
