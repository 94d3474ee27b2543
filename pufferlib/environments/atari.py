"""Atari 2600 games through ale-py, with the usual DQN preprocessing.

Frames are max-pooled over the skipped frames, converted to 84x84 grayscale and stacked four deep
(gymnasium's AtariPreprocessing and FrameStackObservation); sticky actions as in ALE v5. Names are
ale-py ROM ids such as ``breakout``, ``pong`` or ``space_invaders``, or the ids ale-py registers with
Gymnasium without their ``ALE/`` prefix (``Pong-v5``, ``Breakout-v5``: the names the configs in
``pufferlib/configs/atari.ini`` train).
"""

import functools

import gymnasium

from pufferlib.emulation import GymnasiumPufferEnv
from pufferlib.environments.wrappers import EpisodeStats
from pufferlib.exceptions import did_you_mean


def game_id(name):
    """'space_invaders' or 'SpaceInvaders-v5' -> 'ALE/SpaceInvaders-v5', checked against the ROMs
    ale-py ships."""
    import ale_py

    gymnasium.register_envs(ale_py)
    if "ALE/" + name in gymnasium.registry:
        return "ALE/" + name
    roms = ale_py.roms.get_all_rom_ids()
    if name not in roms:
        hint = did_you_mean(name, roms)
        raise ValueError(
            f"Unknown Atari game {name!r}; valid names are ale-py ROM ids such as breakout, pong, or their "
            f"Gymnasium ids such as Breakout-v5.{hint}"
        )
    return "ALE/" + "".join(part.capitalize() for part in name.split("_")) + "-v5"


def env_creator(name="breakout", **kwargs):
    """A creator for ``vector.make``; kwargs go to ``make``."""
    game_id(name)
    return functools.partial(make, name, **kwargs)


def build(name="breakout", frame_skip=4, stack=4, repeat_action_probability=0.25, noop_max=30, **kwargs):
    """The preprocessed Gymnasium env that ``make`` wraps."""
    env = gymnasium.make(game_id(name), frameskip=1, repeat_action_probability=repeat_action_probability, **kwargs)
    env = gymnasium.wrappers.AtariPreprocessing(env, noop_max=noop_max, frame_skip=frame_skip, screen_size=84)
    env = gymnasium.wrappers.FrameStackObservation(env, stack)
    return EpisodeStats(env)


def make(name="breakout", buf=None, **kwargs):
    """One preprocessed game; kwargs go to ``build`` (frame_skip, stack, repeat_action_probability,
    noop_max) and from there to ``gymnasium.make`` (e.g. full_action_space). Its ``spec`` recreates it."""
    return GymnasiumPufferEnv(env_creator=build, env_args=(name,), env_kwargs=kwargs, buf=buf)
