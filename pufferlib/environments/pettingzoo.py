"""PettingZoo butterfly and classic envs, built through PettingZoo's registry.

Names are registry ids without family and version (``pistonball``, ``tictactoe``; the newest
version is used) or full ids (``butterfly/pistonball-v6``). Butterfly envs are parallel already.
Classic games are turn-based AEC envs; they run through PettingZoo's turn-based converter, where
every agent sends an action each step and only the agent to move acts (its observation's
``action_mask`` is the only non-zero one).
"""

import functools

from pufferlib.emulation import PettingZooPufferEnv
from pufferlib.environments.wrappers import ParallelEpisodeStats
from pufferlib.exceptions import did_you_mean

FAMILIES = ("butterfly", "classic")


def registry_ids():
    """{short name: newest registry id} for the butterfly and classic families."""
    import pettingzoo

    newest = {}
    for env_id in pettingzoo.aec_registry:
        family, rest = env_id.split("/", 1)
        if family not in FAMILIES:
            continue
        name, version = rest.rsplit("-v", 1)
        if name not in newest or int(version) > int(newest[name].rsplit("-v", 1)[1]):
            newest[name] = env_id
    return newest


def registry_id(name):
    ids = registry_ids()
    if name in ids.values():
        return name
    if name not in ids:
        hint = did_you_mean(name, ids)
        raise ValueError(f"Unknown PettingZoo env {name!r}. Valid names: {', '.join(sorted(ids))}.{hint}")
    return ids[name]


def env_creator(name="pistonball", **kwargs):
    """A creator for ``vector.make``; kwargs go to the PettingZoo env (e.g. continuous=False)."""
    registry_id(name)
    return functools.partial(make, name, **kwargs)


def make(name="pistonball", buf=None, **kwargs):
    import pettingzoo
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    env_id = registry_id(name)
    if env_id in pettingzoo.parallel_registry:
        env = pettingzoo.make("parallel", env_id, **kwargs)
    else:
        env = turn_based_aec_to_parallel(pettingzoo.make("aec", env_id, **kwargs))
    return PettingZooPufferEnv(env=ParallelEpisodeStats(env), buf=buf)
