"""Craftax-Classic: one 64 x 64 floor, 17 actions, 22 achievements, as the JAX package's
``craftax.craftax_classic`` (``Craftax-Classic-Symbolic-v1``), bit for bit."""

import gymnasium
import numpy as np

from ocean.craftax.textures import load_atlas
from ocean.craftax_classic import binding
from ocean.craftax_classic.state_view import state_fields
from ocean.env import OceanEnv, check_int
from pufferlib.exceptions import APIUsageError, ParameterError

NUM_ACTIONS = 17
RENDER_MODES = ("ansi", "rgb_array")


class CraftaxClassic(OceanEnv):
    """Craftax-Classic with the reference's symbolic observation (1,345 floats: the 7 x 9 view of
    one-hot blocks and mobs, inventory, intrinsics, direction, light, sleeping).

    Reward: +1 per achievement unlocked plus 0.1 x the change in health. An episode ends when the
    player dies or walks into lava (terminal) or after 10,000 steps (truncated). Env i seeded with
    s plays the reference's auto-resetting env from PRNGKey(s + i). Logs: ``score`` (percentage
    of the 22 achievements), ``died``, and one unlock rate per achievement.

    ``render_mode`` "ansi" (default): ``render(i)`` is text. "rgb_array": ``render(i)`` is the
    frame of the reference's Classic pixel renderer, (height, width, 3) uint8 with cells of
    ``render_block_size`` pixels, drawn with the textures of the installed ``craftax`` package or
    of the folder ``textures`` names (its craftax_classic/assets). Frames are drawn only when asked for.
    """

    name = "puffer_craftax_classic"
    binding = binding

    def __init__(self, num_envs=1, num_threads=1, render_mode="ansi", render_block_size=16, textures="auto", **kwargs):
        check_int(self.name, "num_envs", num_envs, 1)
        if render_mode not in RENDER_MODES:
            raise ParameterError(f"{self.name}: render_mode must be one of {', '.join(RENDER_MODES)}, got {render_mode!r}")
        self.render_mode = render_mode
        self.render_block_size = check_int(self.name, "render_block_size", render_block_size, binding.MIN_BLOCK_PIXELS, 256)
        # Read before the envs are built: a missing texture folder fails at once.
        self._atlas = (load_atlas(self.render_block_size, None if textures in (None, "auto") else textures,
                                  game="craftax_classic") if render_mode == "rgb_array" else None)
        self._final_states = None
        self.single_observation_space = gymnasium.spaces.Box(0.0, 1.0, (binding.OBS_SIZE,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        super().__init__(num_envs, num_threads=num_threads, **kwargs)

    def state(self, index=0):
        """Env ``index``'s game state, copied, as {reference field name: numpy array}."""
        index = check_int(self.name, "state index", index, 0, self.num_envs - 1)
        return state_fields(binding.env_state_bytes(self.c_envs, index))

    def render(self, index=0):
        """Env ``index``'s frame: ANSI text, or with ``render_mode="rgb_array"`` its pixels,
        (height, width, 3) uint8."""
        if self.render_mode != "rgb_array":
            return super().render(index)
        if not self.started:
            raise APIUsageError(f"{self.name}: render() after close(); build a new env" if self.closed
                                else f"{self.name}: call reset() before render(): there is no game to show yet")
        index = check_int(self.name, "render index", index, 0, self.num_envs - 1)
        return binding.render_frame(binding.env_state_bytes(self.c_envs, index), self._atlas, self.render_block_size)

    def keep_final_frames(self):
        """From now on, keeps each env's last frame of its latest finished episode: its text, or
        with ``render_mode="rgb_array"`` the state it ended in (copied when an episode ends, drawn
        only when asked for)."""
        if self.render_mode != "rgb_array":
            return super().keep_final_frames()
        if self._final_states is None:
            self._final_states = np.zeros(self.num_envs * binding.STATE_BYTES, np.uint8)
            binding.keep_final_states(self.c_envs, self._final_states)

    def final_frame(self, index=0):
        """Env ``index``'s last frame of its latest finished episode (after ``keep_final_frames``):
        its text ('' before one ended), or with ``render_mode="rgb_array"`` its pixels as
        ``render`` draws them (None before one ended)."""
        if self.render_mode != "rgb_array":
            return super().final_frame(index)
        index = check_int(self.name, "final_frame index", index, 0, self.num_envs - 1)
        if self._final_states is None:
            return None
        state = self._final_states.reshape(self.num_envs, binding.STATE_BYTES)[index]
        if not state.any():
            return None
        return binding.render_frame(state, self._atlas, self.render_block_size)

    def set_state(self, state):
        # The saved structs hold the saving process's final-state pointers: point them here again.
        super().set_state(state)
        binding.keep_final_states(self.c_envs, self._final_states)
