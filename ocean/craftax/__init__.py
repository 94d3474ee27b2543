"""Craftax (the full game) in C, bit-exact against the JAX reference (PyPI ``craftax``).

``puffer_craftax`` observes the reference's 8,268 float32 symbolic observation; ``puffer_craftax_compact``
the same information in 996 bytes (see docs/craftax.md). 43 actions. Rewards, terminals and
observations match the reference's auto-resetting env step for step (ocean/craftax/parity.py),
except with a reset pool, an opt-in speed option whose resets copy pre-generated worlds.
"""

import gymnasium
import numpy as np

from ocean.craftax import binding
from ocean.craftax.frames import PixelFrames
from ocean.craftax.textures import load_atlas
from ocean.env import OceanEnv, check_int, shared_reset_pool

OBS_SIZE = binding.LAYOUT["obs_size"]
COMPACT_OBS_BYTES = binding.LAYOUT["compact_obs_bytes"]
NUM_ACTIONS = binding.LAYOUT["actions"]


def reset_pool(size, seed, num_threads):
    """This game's reset pool of ``size`` worlds from ``seed``, shared (ocean.env.shared_reset_pool)."""
    return shared_reset_pool(binding, size, seed, num_threads)


class Craftax(PixelFrames, OceanEnv):
    """The full Craftax game: 9 floors, 43 actions, 67 achievements.

    Reward: achievement weights (226 points in all) plus 0.1 x the change in health. An episode
    ends when the player dies or defeats the necromancer (terminal) or after 100,000 steps
    (truncated). Logs: ``score`` (percentage of the 226 points), ``deepest_floor``, ``died``,
    and one unlock rate per achievement.

    ``reset_pool_size`` > 0 pre-generates that many worlds (from ``reset_pool_seed``) and resets
    by copying one (world generation costs ~5.5 ms); 0 generates every world, as the reference.

    ``render_mode`` "ansi" (default): ``render(i)`` is text. "rgb_array": ``render(i)`` is the
    reference's pixel frame of env i, (height, width, 3) uint8, with cells of
    ``render_block_size`` pixels, drawn with the textures of the installed ``craftax`` package or
    of the folder ``textures`` names. Frames are drawn only when asked for.
    """

    name = "puffer_craftax"
    binding = binding
    compact = False

    def __init__(self, num_envs=1, reset_pool_size=0, reset_pool_seed=0, num_threads=1, render_mode="ansi",
                 render_block_size=16, textures="auto", **kwargs):
        self._start_frames(render_mode, render_block_size, textures)
        reset_pool_size = check_int(self.name, "reset_pool_size", reset_pool_size, 0, 1 << 16)
        reset_pool_seed = check_int(self.name, "reset_pool_seed", reset_pool_seed, 0, 2**31 - 1)
        threads = check_int(self.name, "num_threads", num_threads, 1)
        pool = reset_pool(reset_pool_size, reset_pool_seed, threads) if reset_pool_size else None
        self.single_observation_space = self.observation_space()
        self.single_action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        self._states = binding.StateBuffer(check_int(self.name, "num_envs", num_envs, 1))
        super().__init__(num_envs, num_threads=num_threads, compact=int(self.compact), states=self._states,
                         reset_pool=pool, **kwargs)

    def state(self, index=0):
        """Env ``index``'s game state, copied, as {reference field name: numpy array}."""
        index = check_int(self.name, "state index", index, 0, self.num_envs - 1)
        states = self._states.states.reshape(self.num_envs, binding.STATE_BYTES)
        return binding.state_fields(states[index].copy())

    def observation_space(self):
        if self.compact:
            return gymnasium.spaces.Box(0, 255, (COMPACT_OBS_BYTES,), np.uint8)
        return gymnasium.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32)

    def _state_bytes(self, index):
        return self._states.states.reshape(self.num_envs, binding.STATE_BYTES)[index]

    @classmethod
    def memory_per_env(cls, compact=None):
        """Bytes one env holds: its game state plus its observation (this class's observation
        unless ``compact`` says which)."""
        compact = cls.compact if compact is None else compact
        return binding.STATE_BYTES + (COMPACT_OBS_BYTES if compact else OBS_SIZE * 4)


class CraftaxCompact(Craftax):
    """Craftax with the compact observation: 99 cells x 8 bytes (block id, item id, one bitmask
    of mob types per mob class, light flag; 0 on dark cells) then the 51 scalars as float32
    bytes (``obs[:, 792:].view(np.float32)``)."""

    name = "puffer_craftax_compact"
    compact = True


class CraftaxPixels(Craftax):
    """Craftax observed in pixels, as the reference's Craftax-Pixels: each observation is the
    reference's frame at ``observation_block_size`` pixels a cell (10, the reference's, by
    default: 130 x 110 x 3) over 255, float32 in [0, 1], bit for bit.

    The C envs step the game as CraftaxCompact's do, their compact observation written at the start
    of each env's observation; after every reset and step each env's frame is drawn over it, on
    ``num_threads`` threads.
    """

    name = "puffer_craftax_pixels"
    compact = True

    def __init__(self, num_envs=1, reset_pool_size=0, reset_pool_seed=0, num_threads=1, render_mode="ansi",
                 render_block_size=16, textures="auto", observation_block_size=10, **kwargs):
        self.observation_block_size = check_int(self.name, "observation_block_size", observation_block_size,
                                                binding.MIN_BLOCK_PIXELS, 64)
        self._observation_atlas = load_atlas(self.observation_block_size, None if textures in (None, "auto") else textures)
        super().__init__(num_envs, reset_pool_size=reset_pool_size, reset_pool_seed=reset_pool_seed, num_threads=num_threads,
                         render_mode=render_mode, render_block_size=render_block_size, textures=textures, **kwargs)

    def observation_space(self):
        return gymnasium.spaces.Box(0.0, 1.0, binding.frame_shape(self.observation_block_size), np.float32)

    def reset(self, seed=0):
        observations, infos = super().reset(seed)
        self._draw_observations()
        return observations, infos

    def step(self, actions):
        result = super().step(actions)
        self._draw_observations()
        return result

    def _draw_observations(self):
        binding.render_observations(self._states.states, self._observation_atlas, self.observation_block_size,
                                    self.observations, self.num_threads)

    @classmethod
    def memory_per_env(cls, compact=None, observation_block_size=10):
        height, width, channels = binding.frame_shape(observation_block_size)
        return binding.STATE_BYTES + height * width * channels * 4
