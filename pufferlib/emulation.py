"""Emulation: any Gymnasium or PettingZoo env, made to look like Atari to the rest of the stack.

``GymnasiumPufferEnv`` and ``PettingZooPufferEnv`` wrap an env in one line. Structured observations
are flattened into one flat row per agent (``pufferlib.spaces.ObservationLayout``), structured
actions become MultiDiscrete, and PettingZoo populations are padded to a constant agent count in
the stable order of ``possible_agents``. Both wrappers are PufferEnvs (they write the preallocated
buffers, so the vector backends treat them like native envs) and are themselves valid
Gymnasium/PettingZoo envs. ``nativize`` (here, numpy) and ``pufferlib.pytorch.nativize_tensor``
(torch) undo the flattening inside a model.

The Gymnasium- and PettingZoo-facing ``reset``/``step`` return observations the caller owns
(copies), so checkers, frame stacks and replay buffers that keep them see each step's own data. The
vector backends use ``batch_reset``/``batch_step`` instead, which only write the buffers in place:
no copy on the hot path. PettingZoo's interface reports only the agents the env reports (dead
agents leave every dict the step after they are done); the padding to a constant agent count
exists only in the buffers. Each write checks the observation's shapes; the structure check and the
5-tuple check run once, on the first reset and step.
"""

import functools
from dataclasses import dataclass

import gymnasium
import numpy as np
from gymnasium.envs.registration import EnvSpec

from pufferlib.environment import PufferEnv
from pufferlib.exceptions import APIUsageError
from pufferlib.spaces import ActionBounds, ActionLayout, ObservationLayout, check_observation


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


def check_action(bounds, action, owner):
    """Checks one flat action's shape, dtype and (for discrete spaces) range; raises ValueError.

    ``bounds`` is the space's ``spaces.ActionBounds``.
    """
    space = bounds.space
    action = np.asarray(action)
    expected = () if isinstance(space, gymnasium.spaces.Discrete) else space.shape
    if action.shape != expected:
        raise ValueError(f"{owner}: actions for {space} must have shape {expected}, got shape {action.shape}")
    problem = bounds.dtype_problem(action)
    if problem:
        raise ValueError(f"{owner}: {problem}")
    if bounds.out_of_range(action):
        raise ValueError(f"{owner}: action {action.tolist()} is outside the action space {space}")


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
        spec: the ``gymnasium.envs.registration.EnvSpec`` that recreates this env. By default, an
            env built from ``env_creator`` gets one that rebuilds it the same way; an env object
            gets none (the wrapped env's own spec would make the unwrapped env, not this one).

    ``observation_space``/``action_space`` are the flat spaces; the native ones are in
    ``emulated``. ``reset``/``step`` return a copy of the flat observation; ``step`` checks every
    action (ValueError) and raises ``APIUsageError`` before the first reset and after the episode
    ended. The vector backends use ``batch_reset``/``batch_step``, which write the buffers in place
    and reset finished episodes themselves.
    """

    def __init__(self, env=None, env_creator=None, env_args=None, env_kwargs=None, buf=None, seed=0, spec=None):
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
        if spec is None and env_creator is not None:
            spec = recreating_spec(self.env, GymnasiumPufferEnv, env_creator, env_args, env_kwargs)
        self.spec = spec
        # [0, ...] is a view even when one observation is a scalar (plain [0] would copy it).
        self.observation_row = self.observations[0, ...]
        self._write_observation = self._emulated.observation_layout.writer(self.observation_row)
        self._to_native_action = self._emulated.action_layout.nativizer()
        self._action_bounds = ActionBounds(self.single_action_space)
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

    def _start_episode(self, seed, options):
        info = self._reset_env(seed, options)
        self.rewards[0] = 0.0
        self.terminals[0] = False
        self.truncations[0] = False
        return info

    def reset(self, seed=None, options=None):
        """Starts an episode; returns (flat observation, info)."""
        info = self._start_episode(seed, options)
        return self.observation_row.copy(), info

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
        """Steps the episode; returns (flat observation, reward, terminated, truncated, info)."""
        if not self.initialized:
            raise APIUsageError("GymnasiumPufferEnv: step() called before reset()")
        if self.done:
            raise APIUsageError("GymnasiumPufferEnv: step() called after the episode ended; call reset() first")
        check_action(self._action_bounds, action, "GymnasiumPufferEnv")
        info = self._step(action)
        return (
            self.observation_row.copy(),
            float(self.rewards[0]),
            bool(self.terminals[0]),
            bool(self.truncations[0]),
            info,
        )

    def batch_reset(self, seed=None):
        """The vector backends' reset: writes the buffers; returns the infos as a list."""
        info = self._start_episode(seed, None)
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


def remake(wrapper, env_creator, env_args, env_kwargs, **overrides):
    """``EnvSpec.make``'s entry point: its keyword arguments (``render_mode``) go to the creator."""
    return wrapper(env_creator=env_creator, env_args=env_args, env_kwargs={**(env_kwargs or {}), **overrides})


def recreating_spec(env, wrapper, env_creator, env_args, env_kwargs):
    """An EnvSpec whose ``make()`` builds ``wrapper(env_creator=..., ...)`` again, keeping the
    wrapped env's id and its ``nondeterministic`` flag (which decides the checkers' determinism
    checks)."""
    inner = getattr(env, "spec", None)
    name = inner.id if inner is not None else type(getattr(env, "unwrapped", env)).__name__
    return EnvSpec(
        id=f"puffer/{name.replace('/', '-')}",  # one namespace level only
        entry_point=functools.partial(remake, wrapper, env_creator, env_args, env_kwargs),
        nondeterministic=inner.nondeterministic if inner is not None else False,
        disable_env_checker=True,
        order_enforce=False,
    )


class PettingZooPufferEnv(PufferEnv):
    """A PettingZoo ParallelEnv as a PufferEnv with one slot per possible agent.

    ``reset``/``step`` follow the ParallelEnv API: their dicts hold exactly the agents the env
    reported (an agent that finished appears in the step where it is done, then never again), and
    their observations are copies. Below that interface, for the vector layer, the buffers hold
    one slot per possible agent in the order of ``possible_agents``; an agent absent at a step is
    padded there: zero observation, reward 0, terminal True, mask False. Every agent must share one
    observation and one action space. ``step`` also accepts an array of actions in slot order.
    ``num_agents`` is the padded agent count (PettingZoo's live count is ``len(env.agents)``).
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
        self._action_bounds = ActionBounds(self.single_action_space)
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
        """The innermost env, as PettingZoo wrappers report it (its checkers look envs up by it)."""
        return getattr(self.env, "unwrapped", self.env)

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
        self._write(observations)
        self.initialized = True
        self.done = not self.env.agents
        return observations, infos

    def _start_episode(self, seed, options):
        """Resets the env and the step signals (absent agents are terminal); returns what the env returned."""
        observations, infos = self._reset_env(seed, options)
        self.rewards[:] = 0.0
        self.terminals[:] = ~self.masks
        self.truncations[:] = False
        return observations, infos

    def reset(self, seed=None, options=None):
        """Starts an episode; returns (observations, infos) over the agents the env reported."""
        observations, infos = self._start_episode(seed, options)
        return self._observation_copies(observations), {agent: infos.get(agent, {}) for agent in observations}

    def _observation_copies(self, reported):
        rows, slot = self.observation_rows, self.slot
        return {agent: rows[slot[agent]].copy() for agent in reported}

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

    def _check_actions(self, actions):
        for agent in self.env.agents:
            flat = actions.get(agent) if isinstance(actions, dict) else np.asarray(actions)[self.slot[agent]]
            if flat is not None:
                check_action(self._action_bounds, flat, f"PettingZooPufferEnv (agent {agent!r})")

    def _step(self, actions):
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
        return observations, infos

    def step(self, actions):
        """Steps every live agent; returns dicts over the agents the env reported at this step.

        ``actions``: a dict {agent: flat action} (actions of absent agents are ignored) or an array
        with one row per possible agent. Every live agent's action is checked (ValueError).
        """
        if not self.initialized:
            raise APIUsageError("PettingZooPufferEnv: step() called before reset()")
        if self.done:
            raise APIUsageError("PettingZooPufferEnv: step() called after every agent finished; call reset() first")
        self._check_actions(actions)
        observations, infos = self._step(actions)
        slot = self.slot
        reported = list(observations)
        return (
            self._observation_copies(reported),
            {agent: float(self.rewards[slot[agent]]) for agent in reported},
            {agent: bool(self.terminals[slot[agent]]) for agent in reported},
            {agent: bool(self.truncations[slot[agent]]) for agent in reported},
            {agent: infos.get(agent, {}) for agent in reported},
        )

    def batch_reset(self, seed=None):
        """The vector backends' reset: writes the padded buffers; returns the non-empty infos as a list."""
        _, infos = self._start_episode(seed, None)
        return [info for info in infos.values() if info]

    def batch_step(self):
        """The vector backends' step: acts with ``self.actions``, resets finished episodes in place.

        The final step's rewards/terminals/truncations stay in the buffers; the observations (and
        masks) are already the next episode's first.
        """
        _, infos = self._step(self.actions)
        if self.done:
            self._reset_env(None, None)
        return [info for info in infos.values() if info]

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()
