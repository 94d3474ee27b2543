"""NetHack through the NetHack Learning Environment (nle).

The observation is nle's Dict of arrays, flattened losslessly into bytes (its leaves mix int16,
uint8, int8 and int64); models restore it with ``pufferlib.pytorch.nativize_tensor``. The default
keys leave out ``screen_descriptions`` (21x79x80 bytes, over 80% of the full observation) to keep
vectorization cheap; pass ``observation_keys`` to choose others.

nle ignores the seed given to ``reset``: a game draws its RNG seeds from system entropy, and NetHack
reseeds itself mid-game as an anti-automation measure. ``SeededNetHack`` makes games reproducible
through nle's own ``seed(core, disp, reseed=False)``: a seeded reset fixes both of NetHack's RNGs
and turns reseeding off, and later unseeded resets (the vector backends' autoresets) draw their
seeds from a generator that the last seed started.
"""

import functools

import gymnasium
import numpy as np

from pufferlib.emulation import GymnasiumPufferEnv
from pufferlib.environments.wrappers import EpisodeStats
from pufferlib.exceptions import did_you_mean

TASKS = {
    "score": "NetHackScore-v0",
    "staircase": "NetHackStaircase-v0",
    "pet": "NetHackStaircasePet-v0",
    "oracle": "NetHackOracle-v0",
    "gold": "NetHackGold-v0",
    "eat": "NetHackEat-v0",
    "scout": "NetHackScout-v0",
    "challenge": "NetHackChallenge-v0",
}

OBSERVATION_KEYS = (
    "glyphs",
    "chars",
    "colors",
    "specials",
    "blstats",
    "message",
    "inv_glyphs",
    "inv_strs",
    "inv_letters",
    "inv_oclasses",
    "tty_chars",
    "tty_colors",
    "tty_cursor",
)


class SeededNetHack(gymnasium.Wrapper):
    """Same seed, same actions: same game (see the module docstring)."""

    def __init__(self, env):
        super().__init__(env)
        self.game_seeds = np.random.default_rng()

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.game_seeds = np.random.default_rng(seed)
        core, disp = (int(value) for value in self.game_seeds.integers(0, 2**63 - 1, size=2))
        self.env.unwrapped.seed(core=core, disp=disp, reseed=False)
        return self.env.reset(seed=seed, options=options)


def task_id(name):
    """'score' (or 'NetHackScore-v0') -> 'NetHackScore-v0'."""
    if name in TASKS.values():
        return name
    if name not in TASKS:
        hint = did_you_mean(name, TASKS)
        raise ValueError(f"Unknown NetHack task {name!r}. Valid names: {', '.join(TASKS)}.{hint}")
    return TASKS[name]


def env_creator(name="score", **kwargs):
    """A creator for ``vector.make``; kwargs go to nle's env (e.g. max_episode_steps, character)."""
    task_id(name)
    return functools.partial(make, name, **kwargs)


def build(name="score", observation_keys=OBSERVATION_KEYS, **kwargs):
    """The seeded Gymnasium env that ``make`` wraps."""
    import nle  # noqa: F401  (registers the NetHack envs with gymnasium)

    env = gymnasium.make(task_id(name), observation_keys=tuple(observation_keys), **kwargs)
    return EpisodeStats(SeededNetHack(env))


def make(name="score", buf=None, **kwargs):
    """One emulated NetHack env; kwargs go to ``build``. Its ``spec`` recreates it."""
    return GymnasiumPufferEnv(env_creator=build, env_args=(name,), env_kwargs=kwargs, buf=buf)
