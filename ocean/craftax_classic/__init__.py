"""Craftax-Classic: one 64 x 64 floor, 17 actions, 22 achievements, as the JAX package's
``craftax.craftax_classic`` (``Craftax-Classic-Symbolic-v1``), bit for bit."""

import gymnasium
import numpy as np

from ocean.craftax.frames import PixelFrames
from ocean.craftax_classic import binding
from ocean.craftax_classic.state_view import state_fields
from ocean.env import OceanEnv, check_int, shared_reset_pool

NUM_ACTIONS = 17


def reset_pool(size, seed, num_threads):
    """This game's reset pool of ``size`` worlds from ``seed``, shared (ocean.env.shared_reset_pool)."""
    return shared_reset_pool(binding, size, seed, num_threads)


class CraftaxClassic(PixelFrames, OceanEnv):
    """Craftax-Classic with the reference's symbolic observation (1,345 floats: the 7 x 9 view of
    one-hot blocks and mobs, inventory, intrinsics, direction, light, sleeping).

    Reward: +1 per achievement unlocked plus 0.1 x the change in health. An episode ends when the
    player dies or walks into lava (terminal) or after 10,000 steps (truncated). Env i seeded with
    s plays the reference's auto-resetting env from PRNGKey(s + i). Logs: ``score`` (percentage
    of the 22 achievements), ``died``, and one unlock rate per achievement.

    ``reset_pool_size`` > 0 pre-generates that many worlds (from ``reset_pool_seed``) and resets
    by copying the one the reset's key picks; 0 (the default) generates every world, as the
    reference. The key chain is the same either way; with a pool, episodes no longer match the
    reference's.

    ``render_mode`` "ansi" (default): ``render(i)`` is text. "rgb_array": ``render(i)`` is the
    frame of the reference's Classic pixel renderer, (height, width, 3) uint8 with cells of
    ``render_block_size`` pixels, drawn with the textures of the installed ``craftax`` package or
    of the folder ``textures`` names (its craftax_classic/assets). Frames are drawn only when asked for.
    """

    name = "puffer_craftax_classic"
    binding = binding

    def __init__(self, num_envs=1, reset_pool_size=0, reset_pool_seed=0, num_threads=1, render_mode="ansi",
                 render_block_size=16, textures="auto", **kwargs):
        check_int(self.name, "num_envs", num_envs, 1)
        reset_pool_size = check_int(self.name, "reset_pool_size", reset_pool_size, 0, 1 << 16)
        reset_pool_seed = check_int(self.name, "reset_pool_seed", reset_pool_seed, 0, 2**31 - 1)
        threads = check_int(self.name, "num_threads", num_threads, 1)
        self._start_frames(render_mode, render_block_size, textures, game="craftax_classic")
        self.single_observation_space = gymnasium.spaces.Box(0.0, 1.0, (binding.OBS_SIZE,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        self._reset_pool = reset_pool(reset_pool_size, reset_pool_seed, threads) if reset_pool_size else None
        super().__init__(num_envs, num_threads=num_threads, reset_pool=self._reset_pool, **kwargs)
        # What a checkpoint is checked against: the pool's parameters, not its memory.
        self.params = dict(reset_pool_size=reset_pool_size, reset_pool_seed=reset_pool_seed)

    def state(self, index=0):
        """Env ``index``'s game state, copied, as {reference field name: numpy array}."""
        return state_fields(self._state_bytes(check_int(self.name, "state index", index, 0, self.num_envs - 1)))

    def _state_bytes(self, index):
        return binding.env_state_bytes(self.c_envs, index)

    def set_state(self, state):
        # The saved structs hold the saving process's pointers (final states, reset pool): point them here again.
        super().set_state(state)
        binding.keep_final_states(self.c_envs, self._final_states)
        binding.bind_reset_pool(self.c_envs, self._reset_pool)
