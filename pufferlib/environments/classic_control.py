"""Gymnasium classic control: CartPole, Acrobot, MountainCar and Pendulum."""

import functools

import gymnasium

from pufferlib.emulation import GymnasiumPufferEnv
from pufferlib.environments.wrappers import EpisodeStats
from pufferlib.exceptions import did_you_mean

NAMES = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1")


def check_name(name):
    if name not in NAMES:
        hint = did_you_mean(name, NAMES, cutoff=0.4)
        raise ValueError(f"Unknown classic control env {name!r}. Valid names: {', '.join(NAMES)}.{hint}")


def env_creator(name="CartPole-v1", **kwargs):
    """A creator for ``vector.make``; kwargs go to ``gymnasium.make`` (e.g. max_episode_steps)."""
    check_name(name)
    return functools.partial(make, name, **kwargs)


def build(name, **kwargs):
    """The Gymnasium env that ``make`` wraps."""
    return EpisodeStats(gymnasium.make(name, **kwargs))


def make(name="CartPole-v1", buf=None, **kwargs):
    """One emulated env; its ``spec`` recreates it (``check_env`` and ``spec.make()`` use that)."""
    check_name(name)
    return GymnasiumPufferEnv(env_creator=build, env_args=(name,), env_kwargs=kwargs, buf=buf)
