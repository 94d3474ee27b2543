"""PufferEnv: the native vectorized environment base.

A PufferEnv simulates ``num_agents`` agents at once and owns one preallocated buffer per signal
(``observations``, ``actions``, ``rewards``, ``terminals``, ``truncations``, ``masks``). ``reset`` and
``step`` write those buffers in place and return them, so a caller that keeps a reference always
sees the newest data without copies. Vectorization backends hand a PufferEnv slices of shared
memory through ``buf``, which is why the buffers are never reallocated.

``masks`` is True for every live agent and False for padding (a PettingZoo agent that is absent);
a trainer stores only masked-in agents. Buffers start with every agent live (``allocate_buffers``
and every backend's), and an env whose agents are never padded sets its masks once all the same,
as it cannot know who allocated the buffer it was given.
"""

from abc import ABC, abstractmethod
from collections import defaultdict

import gymnasium
import numpy as np

from pufferlib.exceptions import APIUsageError

BUFFER_NAMES = ("observations", "actions", "rewards", "terminals", "truncations", "masks")


def action_buffer_layout(space):
    """Per-agent shape and dtype of the action buffer for a single-agent action space."""
    if isinstance(space, gymnasium.spaces.Discrete):
        return (), np.dtype(np.int32)
    if isinstance(space, gymnasium.spaces.MultiDiscrete):
        return space.shape, np.dtype(np.int32)
    if isinstance(space, gymnasium.spaces.Box):
        return space.shape, np.dtype(space.dtype)
    raise APIUsageError(
        f"PufferEnv action spaces must be Discrete, MultiDiscrete or Box, got {space}; "
        "wrap structured spaces with pufferlib.emulation first"
    )


def allocate_buffers(single_observation_space, single_action_space, num_agents, pin_memory=False):
    """Zeroed buffers for ``num_agents`` agents, laid out as PufferEnv expects them (masks all
    True). With ``pin_memory`` they are page-locked host memory (torch with CUDA), from which
    copies to a GPU run asynchronously and at the bus's full speed."""
    obs = single_observation_space
    if not isinstance(obs, gymnasium.spaces.Box):
        raise APIUsageError(
            f"PufferEnv observation spaces must be a flat Box, got {obs}; "
            "wrap structured spaces with pufferlib.emulation first"
        )
    action_shape, action_dtype = action_buffer_layout(single_action_space)
    zeros = pinned_zeros if pin_memory else np.zeros
    buffers = dict(
        observations=zeros((num_agents, *obs.shape), obs.dtype),
        actions=zeros((num_agents, *action_shape), action_dtype),
        rewards=zeros(num_agents, np.float32),
        terminals=zeros(num_agents, bool),
        truncations=zeros(num_agents, bool),
        masks=zeros(num_agents, bool),
    )
    buffers["masks"][:] = True
    return buffers


def pinned_zeros(shape, dtype):
    """A zeroed numpy array in page-locked memory that torch allocated (and the array keeps)."""
    import torch

    if not torch.cuda.is_available():
        raise APIUsageError("pinned buffers need torch with a CUDA device; this one has none")
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    pinned = torch.zeros(max(size, 1), dtype=torch.uint8, pin_memory=True).numpy()
    return pinned[:size].view(dtype).reshape(shape)


def joint_space(single_space, num_agents):
    """The batched space of ``num_agents`` copies of a single-agent space."""
    if isinstance(single_space, gymnasium.spaces.Discrete):
        return gymnasium.spaces.MultiDiscrete([single_space.n] * num_agents)
    if isinstance(single_space, gymnasium.spaces.MultiDiscrete):
        return gymnasium.spaces.MultiDiscrete(np.tile(single_space.nvec, (num_agents, 1)))
    low = np.broadcast_to(single_space.low, (num_agents, *single_space.shape))
    high = np.broadcast_to(single_space.high, (num_agents, *single_space.shape))
    return gymnasium.spaces.Box(low=low, high=high, dtype=single_space.dtype)


class PufferEnv(ABC):
    """Base class for vectorized environments that write preallocated buffers in place.

    Subclasses set ``single_observation_space``, ``single_action_space`` and ``num_agents``, then
    call ``super().__init__(buf)``. ``buf`` is an optional dict of arrays (see ``BUFFER_NAMES``)
    to write into instead of fresh allocations.
    """

    def __init__(self, buf=None):
        for attribute in ("single_observation_space", "single_action_space", "num_agents"):
            if not hasattr(self, attribute):
                raise APIUsageError(f"{type(self).__name__} must set {attribute} before PufferEnv.__init__")
        if int(self.num_agents) < 1:
            raise APIUsageError(f"{type(self).__name__}: num_agents must be >= 1, got {self.num_agents}")
        expected = allocate_buffers(self.single_observation_space, self.single_action_space, self.num_agents)
        if buf is None:
            buf = expected
        for name in BUFFER_NAMES:
            array = buf[name]
            want = expected[name]
            if array.shape != want.shape or array.dtype != want.dtype:
                raise APIUsageError(
                    f"{type(self).__name__}: buffer '{name}' must have shape {want.shape} and dtype "
                    f"{want.dtype}, got shape {array.shape} and dtype {array.dtype}"
                )
            setattr(self, name, array)
        self.observation_space = joint_space(self.single_observation_space, self.num_agents)
        self.action_space = joint_space(self.single_action_space, self.num_agents)
        self.agent_ids = np.arange(self.num_agents)

    @property
    def emulated(self):
        """Native envs need no emulation layer; wrappers override this."""
        return False

    @abstractmethod
    def reset(self, seed=0):
        """Reset every agent; returns (observations, infos)."""

    @abstractmethod
    def step(self, actions):
        """Step every agent; returns (observations, rewards, terminals, truncations, infos)."""

    def render(self):
        return None

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def mean_infos(infos):
    """Episode statistics averaged over a list of info dicts, weighted by their episode counts."""
    sums, weights, episodes = defaultdict(float), defaultdict(float), 0
    for info in infos:
        if not isinstance(info, dict):
            continue
        weight = float(info.get("episodes", 1))
        episodes += weight
        for key, value in info.items():
            if key != "episodes" and isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
                sums[key] += float(value) * weight
                weights[key] += weight
    stats = {key: sums[key] / weights[key] for key in sums if weights[key] > 0}
    if stats:
        stats["episodes"] = episodes
    return stats

