"""Emulation: any Gymnasium or PettingZoo env, made to look like Atari to the rest of the stack.

``GymnasiumPufferEnv`` and ``PettingZooPufferEnv`` wrap an env in one line. Structured observations
are flattened into one flat row per agent (``pufferlib.spaces.ObservationLayout``), structured
actions become MultiDiscrete, and PettingZoo populations are padded to a constant agent count in
the stable order of ``possible_agents``. Both wrappers are PufferEnvs (they write the preallocated
buffers, so the vector backends treat them like native envs) and are themselves valid
Gymnasium/PettingZoo envs. ``nativize`` (here, numpy) and ``pufferlib.pytorch.nativize_tensor``
(torch) undo the flattening inside a model.

Checks that need a real observation or action run once, on the first reset and step, never again.
Observations returned by ``reset``/``step`` are views of the buffers: copy them to keep them.
"""

from dataclasses import dataclass

import gymnasium
import numpy as np

from pufferlib.environment import PufferEnv
from pufferlib.exceptions import APIUsageError
from pufferlib.spaces import ActionLayout, ObservationLayout, check_observation


@dataclass(frozen=True)
class Emulated:
    """What emulation did to one agent's spaces; ``pytorch.nativize_dtype`` reads it."""

    observation_space: gymnasium.Space
    action_space: gymnasium.Space
    observation_layout: ObservationLayout
    action_layout: ActionLayout

    @property
    def observation_dtype(self):
        """The numpy structured dtype of a flat observation row (None for Box and leaf spaces)."""
        return self.observation_layout.dtype


def nativize(flat_observation, emulated):
    """The native (nested) observation(s) stored in flat row(s) of shape (..., row size).

    ``emulated`` is an env's ``emulated`` attribute (or an ``ObservationLayout``). Leaves are views of
    the input.
    """
    layout = emulated.observation_layout if isinstance(emulated, Emulated) else emulated
    return layout.nativize(flat_observation)


def check_action(space, action, owner):
    """Start-up check of one flat action: its shape, and its range for discrete spaces.

    Box actions are not range-checked: policies commonly emit unclipped values that envs clip.
    """
    action = np.asarray(action)
    expected = () if isinstance(space, gymnasium.spaces.Discrete) else space.shape
    if action.shape != expected:
        raise APIUsageError(f"{owner}: actions for {space} must have shape {expected}, got shape {action.shape}")
    if isinstance(space, gymnasium.spaces.Box):
        return
    if action.dtype.kind not in "iu":
        raise APIUsageError(f"{owner}: actions for {space} must be integers, got dtype {action.dtype}")
    upper = space.n if isinstance(space, gymnasium.spaces.Discrete) else space.nvec
    if np.any(action < 0) or np.any(action >= upper):
        raise APIUsageError(f"{owner}: action {action.tolist()} is outside the action space {space}")


def make_object(env, env_creator, env_args, env_kwargs, wrapper_name):
    """The env to wrap: ``env`` itself, or ``env_creator(*env_args, **env_kwargs)``."""
    if (env is None) == (env_creator is None):
        raise APIUsageError(
            f"{wrapper_name}: pass exactly one of env= (an env object) or env_creator= (a class or function)"
        )
    if env is not None:
        if env_args or env_kwargs:
            raise APIUsageError(f"{wrapper_name}: env_args/env_kwargs only apply with env_creator=, not env=")
        return env
    if not callable(env_creator):
        raise APIUsageError(f"{wrapper_name}: env_creator must be a class or function, got {env_creator!r}")
    return env_creator(*(env_args or ()), **(env_kwargs or {}))


def build_emulated(observation_space, action_space):
    return Emulated(
        observation_space=observation_space,
        action_space=action_space,
        observation_layout=ObservationLayout(observation_space),
        action_layout=ActionLayout(action_space),
    )


class GymnasiumPufferEnv(PufferEnv, gymnasium.Env):
    """A Gymnasium env as a one-agent PufferEnv (and still a Gymnasium env).

    Args:
        env: an env object to wrap, or
        env_creator: a class or function building it from ``env_args`` and ``env_kwargs``.
        buf: optional dict of buffers (see ``pufferlib.environment.BUFFER_NAMES``) to write into.
        seed: seed of the first reset when ``reset`` is called without one.

    ``observation_space``/``action_space`` are the flat spaces; the native ones are in
    ``emulated``. ``step`` raises ``APIUsageError`` before the first reset and after the episode
    ended; the vector backends reset finished episodes themselves through ``batch_step``.
    """

    def __init__(self, env=None, env_creator=None, env_args=None, env_kwargs=None, buf=None, seed=0):
        self.env = make_object(env, env_creator, env_args, env_kwargs, "GymnasiumPufferEnv")
        if hasattr(self.env, "possible_agents"):
            raise APIUsageError("GymnasiumPufferEnv got a PettingZoo env; wrap it with PettingZooPufferEnv instead")
        for attribute in ("observation_space", "action_space", "reset", "step"):
            if not hasattr(self.env, attribute):
                raise APIUsageError(
                    f"GymnasiumPufferEnv: the wrapped object has no '{attribute}'; is it a Gymnasium env?"
                )
        self._emulated = build_emulated(self.env.observation_space, self.env.action_space)
        self.single_observation_space = self._emulated.observation_layout.flat_space
        self.single_action_space = self._emulated.action_layout.flat_space
        self.num_agents = 1
        super().__init__(buf)
        # Gymnasium's view of this env is one agent: unbatched spaces.
        self.observation_space = self.single_observation_space
        self.action_space = self.single_action_space
        self.metadata = getattr(self.env, "metadata", {})
        self.render_mode = getattr(self.env, "render_mode", None)
        self.spec = getattr(self.env, "spec", None)
        # [0, ...] is a view even when one observation is a scalar (plain [0] would copy it).
        self.observation_row = self.observations[0, ...]
        self._write_observation = self._emulated.observation_layout.writer(self.observation_row)
        self._to_native_action = self._emulated.action_layout.nativizer()
        self.seed = seed
        self.initialized = False
        self.done = True
        self._observation_checked = False
        self._step_checked = False

    @property
    def emulated(self):
        return self._emulated

    @property
    def unwrapped(self):
        """The innermost env, as Gymnasium wrappers report it."""
        return self.env.unwrapped

    @property
    def np_random(self):
        return self.env.np_random

    def _reset_env(self, seed, options):
        if seed is None and not self.initialized:
            seed = self.seed
        observation, info = self.env.reset(seed=seed, options=options)
        if not self._observation_checked:
            check_observation(self._emulated.observation_space, observation)
            self._observation_checked = True
        self._write_observation(observation)
        self.masks[0] = True
        self.initialized = True
        self.done = False
        return info

    def reset(self, seed=None, options=None):
        """Starts an episode; returns (flat observation view, info)."""
        info = self._reset_env(seed, options)
        self.rewards[0] = 0.0
        self.terminals[0] = False
        self.truncations[0] = False
        return self.observation_row, info

    def _check_first_result(self, result):
        if not isinstance(result, tuple) or len(result) != 5:
            count = len(result) if isinstance(result, tuple) else type(result).__name__
            raise APIUsageError(
                f"GymnasiumPufferEnv: env.step returned {count} values, expected 5 "
                "(obs, reward, terminated, truncated, info); old Gym envs need a Gymnasium "
                "compatibility wrapper (shimmy) first"
            )
        check_observation(self._emulated.observation_space, result[0])

    def _step(self, action):
        if self._step_checked:
            result = self.env.step(self._to_native_action(action))
        else:
            check_action(self.single_action_space, action, "GymnasiumPufferEnv")
            result = self.env.step(self._to_native_action(action))
            self._check_first_result(result)
            self._step_checked = True
        observation, reward, terminated, truncated, info = result
        self._write_observation(observation)
        self.rewards[0] = reward
        self.terminals[0] = terminated
        self.truncations[0] = truncated
        self.done = bool(terminated or truncated)
        return info

    def step(self, action):
        """Steps the episode; returns (flat observation view, reward, terminated, truncated, info)."""
        if not self.initialized:
            raise APIUsageError("GymnasiumPufferEnv: step() called before reset()")
        if self.done:
            raise APIUsageError("GymnasiumPufferEnv: step() called after the episode ended; call reset() first")
        info = self._step(action)
        return self.observation_row, float(self.rewards[0]), bool(self.terminals[0]), bool(self.truncations[0]), info

    def batch_reset(self, seed=None):
        """The vector backends' reset: returns the infos as a list (empty when the info is)."""
        _, info = self.reset(seed)
        return [info] if info else []

    def batch_step(self):
        """The vector backends' step: acts with ``self.actions``, resets finished episodes in place.

        The rewards/terminals/truncations of the final step stay in the buffers while the
        observation is already the next episode's first, as in the native Ocean envs.
        """
        info = self._step(self.actions[0])
        if self.done:
            self._reset_env(None, None)
        return [info] if info else []

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()


class PettingZooPufferEnv(PufferEnv):
    """A PettingZoo ParallelEnv as a PufferEnv with one slot per possible agent.

    Slots follow ``possible_agents``; an agent that is absent at a step is padded: zero
    observation, reward 0, terminal True, mask False. Every agent must share one observation and
    one action space. ``reset``/``step`` follow the ParallelEnv API, with dicts over all possible
    agents; ``step`` also accepts an array of actions in slot order. ``num_agents`` is the padded
    agent count (PettingZoo's live count is ``len(env.agents)``).
    """

    def __init__(self, env=None, env_creator=None, env_args=None, env_kwargs=None, buf=None, seed=0):
        self.env = make_object(env, env_creator, env_args, env_kwargs, "PettingZooPufferEnv")
        if not hasattr(self.env, "possible_agents"):
            raise APIUsageError("PettingZooPufferEnv needs a PettingZoo ParallelEnv (with possible_agents)")
        if hasattr(self.env, "agent_selection"):
            raise APIUsageError(
                "PettingZooPufferEnv got an AEC env; convert it with pettingzoo.utils.conversions."
                "aec_to_parallel (or turn_based_aec_to_parallel for turn-based games) first"
            )
        self.possible_agents = list(self.env.possible_agents)
        if not self.possible_agents:
            raise APIUsageError("PettingZooPufferEnv: the env has no possible_agents")
        first = self.possible_agents[0]
        observation_space = self.env.observation_space(first)
        action_space = self.env.action_space(first)
        for agent in self.possible_agents[1:]:
            if self.env.observation_space(agent) != observation_space or self.env.action_space(agent) != action_space:
                raise APIUsageError(
                    f"PettingZooPufferEnv: agent {agent!r} has different spaces than {first!r}; "
                    "every agent must share one observation space and one action space"
                )
        self._emulated = build_emulated(observation_space, action_space)
        self.single_observation_space = self._emulated.observation_layout.flat_space
        self.single_action_space = self._emulated.action_layout.flat_space
        self.num_agents = len(self.possible_agents)
        super().__init__(buf)
        # PettingZoo's API names observation_space/action_space as methods taking an agent;
        # drop the joint-space attributes PufferEnv set so the methods below are visible.
        del self.observation_space
        del self.action_space
        self.metadata = getattr(self.env, "metadata", {})
        self.render_mode = getattr(self.env, "render_mode", None)
        self.slot = {agent: index for index, agent in enumerate(self.possible_agents)}
        layout = self._emulated.observation_layout
        self.observation_rows = [self.observations[index, ...] for index in range(self.num_agents)]
        self._writers = [layout.writer(row) for row in self.observation_rows]
        self._to_native_action = self._emulated.action_layout.nativizer()
        self.seed = seed
        self.initialized = False
        self.done = True
        self._checked = False

    @property
    def emulated(self):
        return self._emulated

    @property
    def agents(self):
        """The live agents, as PettingZoo defines them."""
        return self.env.agents

    @property
    def unwrapped(self):
        return self

    def observation_space(self, agent):
        self._slot_of(agent)
        return self.single_observation_space

    def action_space(self, agent):
        self._slot_of(agent)
        return self.single_action_space

    def _slot_of(self, agent):
        try:
            return self.slot[agent]
        except (KeyError, TypeError):
            raise APIUsageError(
                f"PettingZooPufferEnv: unknown agent {agent!r}; possible agents are {self.possible_agents}"
            ) from None

    def _check_agents(self, what, agents):
        unknown = [agent for agent in agents if agent not in self.slot]
        if unknown:
            raise APIUsageError(
                f"PettingZooPufferEnv: the env returned {what} for agents {unknown} that are not in "
                f"possible_agents {self.possible_agents}"
            )

    def _write(self, observations):
        """Writes present agents' observations and pads the absent ones; returns the present slots."""
        present = self.masks
        present[:] = False
        for agent, observation in observations.items():
            slot = self.slot[agent]
            self._writers[slot](observation)
            present[slot] = True
        if not present.all():
            self.observations[~present] = 0
        return present

    def _reset_env(self, seed, options):
        if seed is None and not self.initialized:
            seed = self.seed
        observations, infos = self.env.reset(seed=seed, options=options)
        if not self._checked:
            self._check_agents("observations", observations)
            for observation in observations.values():
                check_observation(self._emulated.observation_space, observation)
        present = self._write(observations)
        self.initialized = True
        self.done = not self.env.agents
        return present, infos

    def _start_episode(self, seed, options):
        """Resets the env and the step signals (absent agents are terminal); returns the infos."""
        present, infos = self._reset_env(seed, options)
        self.rewards[:] = 0.0
        self.terminals[:] = ~present
        self.truncations[:] = False
        return infos

    def reset(self, seed=None, options=None):
        """Starts an episode; returns (observations, infos), dicts over all possible agents."""
        infos = self._start_episode(seed, options)
        return self._observation_dict(), {agent: infos.get(agent, {}) for agent in self.possible_agents}

    def _observation_dict(self):
        return {agent: self.observation_rows[slot] for agent, slot in self.slot.items()}

    def _native_actions(self, actions):
        live = self.env.agents
        if isinstance(actions, dict):
            for agent in actions:
                self._slot_of(agent)
            missing = [agent for agent in live if agent not in actions]
            if missing:
                raise APIUsageError(f"PettingZooPufferEnv: no action for live agents {missing}")
            return {agent: self._to_native_action(actions[agent]) for agent in live}
        actions = np.asarray(actions)
        if actions.shape[:1] != (self.num_agents,):
            raise APIUsageError(
                f"PettingZooPufferEnv: an action array needs one row per possible agent "
                f"({self.num_agents}), got shape {actions.shape}"
            )
        return {agent: self._to_native_action(actions[self.slot[agent]]) for agent in live}

    def _step(self, actions):
        if not self._checked:
            for agent in self.env.agents:
                flat = actions.get(agent) if isinstance(actions, dict) else np.asarray(actions)[self.slot[agent]]
                if flat is not None:
                    check_action(self.single_action_space, flat, f"PettingZooPufferEnv (agent {agent!r})")
        native = self._native_actions(actions)
        observations, rewards, terminations, truncations, infos = self.env.step(native)
        if not self._checked:
            for what, mapping in (("observations", observations), ("rewards", rewards), ("terminations", terminations)):
                self._check_agents(what, mapping)
            self._checked = True
        present = self._write(observations)
        self.rewards[:] = 0.0
        self.terminals[:] = ~present
        self.truncations[:] = False
        slot = self.slot
        for agent, reward in rewards.items():
            self.rewards[slot[agent]] = reward
        for agent, terminated in terminations.items():
            self.terminals[slot[agent]] = terminated
        for agent, truncated in truncations.items():
            self.truncations[slot[agent]] = truncated
        self.done = not self.env.agents
        return infos

    def step(self, actions):
        """Steps every live agent; returns dicts over all possible agents, padded.

        ``actions``: a dict {agent: flat action} (actions of absent agents are ignored) or an array
        with one row per possible agent.
        """
        if not self.initialized:
            raise APIUsageError("PettingZooPufferEnv: step() called before reset()")
        if self.done:
            raise APIUsageError("PettingZooPufferEnv: step() called after every agent finished; call reset() first")
        infos = self._step(actions)
        agents = self.possible_agents
        return (
            self._observation_dict(),
            {agent: float(self.rewards[i]) for i, agent in enumerate(agents)},
            {agent: bool(self.terminals[i]) for i, agent in enumerate(agents)},
            {agent: bool(self.truncations[i]) for i, agent in enumerate(agents)},
            {agent: infos.get(agent, {}) for agent in agents},
        )

    def batch_reset(self, seed=None):
        """The vector backends' reset: returns the non-empty per-agent infos as a list."""
        return [info for info in self._start_episode(seed, None).values() if info]

    def batch_step(self):
        """The vector backends' step: acts with ``self.actions``, resets finished episodes in place.

        The final step's rewards/terminals/truncations stay in the buffers; the observations (and
        masks) are already the next episode's first.
        """
        infos = self._step(self.actions)
        if self.done:
            self._reset_env(None, None)
        return [info for info in infos.values() if info]

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()
