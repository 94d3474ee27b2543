"""Emulation: lossless flattening of nested spaces, the Gymnasium/PettingZoo wrappers, misuse errors."""

import functools
import warnings

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pufferlib import APIUsageError, PufferEnv
from pufferlib.emulation import GymnasiumPufferEnv, PettingZooPufferEnv, nativize
from pufferlib.pytorch import nativize_dtype, nativize_tensor
from pufferlib.spaces import ActionLayout, ObservationLayout, flatten_action

# Space strategies ----------------------------------------------------------------------------

BOX_DTYPES = [np.float32, np.float64, np.float16, np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64]
shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)


@st.composite
def boxes(draw):
    dtype = np.dtype(draw(st.sampled_from(BOX_DTYPES)))
    shape = draw(shapes)
    if dtype.kind == "f":
        return spaces.Box(low=-3.0, high=3.0, shape=shape, dtype=dtype)
    low = 0 if dtype.kind == "u" else -100
    return spaces.Box(low=low, high=100, shape=shape, dtype=dtype)


discretes = st.builds(lambda n, start: spaces.Discrete(n, start=start), st.integers(1, 50), st.integers(-5, 5))
multi_discretes = st.builds(
    lambda nvec, start: spaces.MultiDiscrete(np.array(nvec), start=np.full(len(nvec), start)),
    st.lists(st.integers(1, 9), min_size=1, max_size=4),
    st.integers(-2, 2),
)
multi_binaries = st.builds(spaces.MultiBinary, st.lists(st.integers(1, 4), min_size=1, max_size=2))
keys = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)


def nested(leaves):
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.dictionaries(keys, children, min_size=1, max_size=4).map(spaces.Dict),
            st.lists(children, min_size=1, max_size=4).map(lambda items: spaces.Tuple(items)),
        ),
        max_leaves=8,
    )


observation_spaces = nested(st.one_of(boxes(), discretes, multi_discretes, multi_binaries))
action_spaces = nested(st.one_of(discretes, multi_discretes, multi_binaries))
hypothesis_settings = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def equivalent(a, b):
    """Same structure, and leaves with the same dtype, shape and values.

    Numpy scalars and 0-d arrays count as the same (Gymnasium's samples use either, by dtype).
    """
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b) and all(equivalent(a[k], b[k]) for k in a)
        )
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and all(map(equivalent, a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def leaves_of(value):
    """Leaves of a nested sample in depth-first order, as numpy arrays."""
    if isinstance(value, dict):
        return [leaf for key in value for leaf in leaves_of(value[key])]
    if isinstance(value, tuple):
        return [leaf for item in value for leaf in leaves_of(item)]
    return [np.asarray(value)]


# Round trips -----------------------------------------------------------------------------------


@hypothesis_settings
@given(space=observation_spaces, seed=st.integers(0, 2**31 - 1))
def test_observation_round_trip_numpy(space, seed):
    space.seed(seed)
    sample = space.sample()
    layout = ObservationLayout(space)
    row = np.zeros(layout.flat_space.shape, layout.flat_space.dtype)
    layout.writer(row)(sample)
    assert equivalent(layout.nativize(row), sample)
    if not layout.passthrough and layout.typed:
        # Typed rows keep the leaves' bounds, so the row is a valid sample of the flat space.
        assert layout.flat_space.contains(row)


@hypothesis_settings
@given(space=observation_spaces, seed=st.integers(0, 2**31 - 1), batch=st.integers(1, 3))
def test_observation_round_trip_torch(space, seed, batch):
    space.seed(seed)
    samples = [space.sample() for _ in range(batch)]
    layout = ObservationLayout(space)
    rows = np.zeros((batch, *layout.flat_space.shape), layout.flat_space.dtype)
    for index, sample in enumerate(samples):
        layout.writer(rows[index, ...])(sample)
    restored = nativize_tensor(torch.from_numpy(rows), nativize_dtype(layout))
    for index, sample in enumerate(samples):
        expected = leaves_of(sample)
        got = [leaf[index].numpy() for leaf in leaves_of_tensor(restored)]
        assert len(got) == len(expected)
        for want, have in zip(expected, got):
            assert have.shape == want.shape
            assert np.array_equal(have, want.astype(have.dtype)) and have.dtype == want.dtype


def leaves_of_tensor(value):
    if isinstance(value, dict):
        return [leaf for key in value for leaf in leaves_of_tensor(value[key])]
    if isinstance(value, tuple):
        return [leaf for item in value for leaf in leaves_of_tensor(item)]
    return [value]


@hypothesis_settings
@given(space=action_spaces, seed=st.integers(0, 2**31 - 1))
def test_action_round_trip(space, seed):
    space.seed(seed)
    sample = space.sample()
    layout = ActionLayout(space)
    flat = flatten_action(space, sample)
    assert layout.flat_space.contains(np.asarray(flat, dtype=layout.flat_space.dtype))
    assert equivalent(layout.nativizer()(flat), sample)


def test_flat_action_spaces_pass_through_and_start_at_zero():
    assert ActionLayout(spaces.Discrete(5)).flat_space == spaces.Discrete(5)
    box = spaces.Box(-1, 1, (3,))
    assert ActionLayout(box).flat_space is box
    shifted = ActionLayout(spaces.Discrete(4, start=-2))
    assert shifted.flat_space == spaces.Discrete(4)
    assert shifted.nativizer()(0) == -2
    grid = ActionLayout(spaces.MultiDiscrete([[2, 3], [4, 5]]))
    assert grid.flat_space == spaces.MultiDiscrete([2, 3, 4, 5])


def test_mixed_dtypes_become_bytes_and_shared_dtypes_stay_typed():
    mixed = ObservationLayout(spaces.Dict({"a": spaces.Box(0, 1, (3,), np.float32), "b": spaces.Discrete(7)}))
    assert mixed.flat_space.dtype == np.uint8 and not mixed.typed
    assert mixed.dtype.names == ("a", "b")
    same = ObservationLayout(spaces.Tuple([spaces.Box(0, 1, (2,), np.int8), spaces.MultiBinary(3)]))
    assert same.flat_space.dtype == np.int8 and same.flat_space.shape == (5,)


def test_unsupported_spaces_raise_api_usage_error():
    with pytest.raises(APIUsageError, match="Text"):
        ObservationLayout(spaces.Dict({"name": spaces.Text(5)}))
    with pytest.raises(APIUsageError, match="continuous Box components"):
        ActionLayout(spaces.Dict({"move": spaces.Discrete(3), "force": spaces.Box(-1, 1, (2,))}))
    with pytest.raises(APIUsageError, match="Dict keys must be strings"):
        ObservationLayout(spaces.Dict({1: spaces.Discrete(2)}))


# Gymnasium wrapper ---------------------------------------------------------------------------


class StructuredEnv(gymnasium.Env):
    """Nested observations and actions; the episode ends after ``length`` steps."""

    observation_space = spaces.Dict(
        {
            "position": spaces.Box(-10, 10, (2,), np.float32),
            "inventory": spaces.Tuple([spaces.Discrete(5), spaces.MultiBinary(3)]),
            "map": spaces.Box(0, 255, (4, 4), np.uint8),
        }
    )
    action_space = spaces.Dict({"move": spaces.Discrete(4), "use": spaces.MultiDiscrete([2, 3])})

    def __init__(self, length=5):
        self.length = length
        self.t = 0
        self.actions = []

    def observe(self):
        return {
            "position": np.array([self.t, -self.t], np.float32),
            "inventory": (np.int64(self.t % 5), np.array([1, 0, self.t % 2], np.int8)),
            "map": np.full((4, 4), self.t, np.uint8),
        }

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.observe(), {}

    def step(self, action):
        self.actions.append(action)
        self.t += 1
        return self.observe(), float(self.t), self.t >= self.length, False, {}


def test_gymnasium_wrapper_flattens_and_restores_structured_observations():
    env = GymnasiumPufferEnv(env_creator=StructuredEnv, env_kwargs={"length": 5})
    assert isinstance(env, PufferEnv) and env.num_agents == 1
    assert env.single_action_space == spaces.MultiDiscrete([4, 2, 3])
    observation, _ = env.reset(seed=0)
    observation, reward, terminated, truncated, _ = env.step(np.array([3, 1, 2]))
    native = nativize(observation, env.emulated)
    assert equivalent(native, env.env.unwrapped.observe())
    assert reward == 1.0 and not terminated and not truncated
    assert env.env.unwrapped.actions[-1]["move"] == 3
    assert np.array_equal(env.env.unwrapped.actions[-1]["use"], [1, 2])
    # The buffers hold the same step: the vector backends read them instead of return values.
    assert env.rewards[0] == 1.0 and np.array_equal(env.observations[0], observation)


def test_gymnasium_wrapper_is_a_valid_gymnasium_env():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(GymnasiumPufferEnv(env_creator=gymnasium.make, env_args=["CartPole-v1"]), skip_render_check=True)
        check_env(GymnasiumPufferEnv(env=StructuredEnv()), skip_render_check=True)


class SeedIgnoringEnv(gymnasium.Env):
    """Seeds its generator as Gymnasium asks, but draws observations from an unseeded one."""

    observation_space = spaces.Box(-1, 1, (3,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self):
        self.unseeded = np.random.default_rng()

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return self.unseeded.uniform(-1, 1, 3).astype(np.float32), {}

    def step(self, action):
        return self.unseeded.uniform(-1, 1, 3).astype(np.float32), 0.0, False, False, {}


def test_check_env_catches_on_the_wrapper_what_it_catches_on_the_raw_env():
    spec = gymnasium.envs.registration.EnvSpec("SeedIgnoring-v0", entry_point=SeedIgnoringEnv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # check_env warns that the wrapper is not the unwrapped env
        with pytest.raises(AssertionError, match="non-deterministic"):
            check_env(gymnasium.make(spec, disable_env_checker=True).unwrapped, skip_render_check=True)
        with pytest.raises(AssertionError, match="non-deterministic"):
            check_env(GymnasiumPufferEnv(env_creator=gymnasium.make, env_args=[spec]), skip_render_check=True)
        # A seeded env passes both, with the determinism checks run (its spec says deterministic).
        wrapped = GymnasiumPufferEnv(env_creator=gymnasium.make, env_args=["CartPole-v1"])
        assert wrapped.spec.nondeterministic is False
        check_env(wrapped, skip_render_check=True)


def test_returned_observations_are_the_callers_so_frame_stacking_works():
    env = gymnasium.wrappers.FrameStackObservation(
        GymnasiumPufferEnv(env_creator=gymnasium.make, env_args=["CartPole-v1"]), 4
    )
    env.reset(seed=0)
    for _ in range(3):
        frames, *_ = env.step(1)
    assert len({tuple(frame) for frame in frames}) == 4


def test_gymnasium_wrapper_writes_given_buffers():
    buffers = {
        "observations": np.zeros((1, 4), np.float32),
        "actions": np.zeros(1, np.int32),
        "rewards": np.zeros(1, np.float32),
        "terminals": np.zeros(1, bool),
        "truncations": np.zeros(1, bool),
        "masks": np.zeros(1, bool),
    }
    env = GymnasiumPufferEnv(env_creator=gymnasium.make, env_args=["CartPole-v1"], buf=buffers)
    observation, _ = env.reset(seed=3)
    # The caller owns what reset returns; the buffer holds the same data for the vector layer.
    assert not np.shares_memory(observation, buffers["observations"])
    assert np.array_equal(observation, buffers["observations"][0]) and buffers["masks"][0]
    env.step(1)
    assert buffers["rewards"][0] == 1.0


def test_gymnasium_wrapper_misuse_raises_api_usage_error():
    env = GymnasiumPufferEnv(env=StructuredEnv(length=1))
    with pytest.raises(APIUsageError, match="before reset"):
        env.step(np.zeros(3, np.int64))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="outside the action space"):
        env.step(np.array([4, 0, 0]))
    with pytest.raises(ValueError, match="must be integers, got dtype float64"):
        env.step(np.array([1.9, 0, 0]))
    env.step(np.array([0, 0, 0]))
    with pytest.raises(APIUsageError, match="after the episode ended"):
        env.step(np.array([0, 0, 0]))
    with pytest.raises(APIUsageError, match="exactly one of"):
        GymnasiumPufferEnv()


class OldGymEnv(StructuredEnv):
    def step(self, action):
        observation, reward, terminated, _, info = super().step(action)
        return observation, reward, terminated, info


class WrongShapeEnv(StructuredEnv):
    def observe(self):
        observation = super().observe()
        observation["map"] = np.zeros((3, 3), np.uint8)
        return observation


def test_start_up_checks_name_the_problem():
    env = GymnasiumPufferEnv(env=OldGymEnv())
    env.reset()
    with pytest.raises(APIUsageError, match="returned 4 values"):
        env.step(np.zeros(3, np.int64))
    with pytest.raises(APIUsageError, match=r"obs\['map'\].*shape \(4, 4\)"):
        GymnasiumPufferEnv(env=WrongShapeEnv()).reset()


def test_batch_step_resets_in_place_and_keeps_the_final_step():
    env = GymnasiumPufferEnv(env=StructuredEnv(length=2))
    env.batch_reset(seed=0)
    env.actions[0] = [1, 0, 0]
    env.batch_step()
    assert not env.terminals[0]
    env.batch_step()
    # Final step: its reward and terminal stay; the observation is the next episode's first.
    assert env.terminals[0] and env.rewards[0] == 2.0
    assert nativize(env.observations[0], env.emulated)["map"][0, 0] == 0


# PettingZoo wrapper --------------------------------------------------------------------------


class Population:
    """A ParallelEnv whose agents leave at different times: agent k is done after k + 1 steps.

    ``late`` joins one step after reset. Observations encode the agent and the step.
    """

    metadata = {"name": "population"}

    def __init__(self):
        self.possible_agents = ["a", "b", "c", "late"]
        self.agents = []
        self.t = 0
        self.received = []

    def observation_space(self, agent):
        return spaces.Dict({"who": spaces.Discrete(4), "t": spaces.Box(0, 100, (2,), np.float32)})

    def action_space(self, agent):
        return spaces.Discrete(3)

    def observe(self, agent):
        return {"who": np.int64(self.possible_agents.index(agent)), "t": np.array([self.t, self.t], np.float32)}

    def reset(self, seed=None, options=None):
        self.t = 0
        self.agents = ["a", "b", "c"]
        return {agent: self.observe(agent) for agent in self.agents}, {agent: {} for agent in self.agents}

    def step(self, actions):
        self.received.append(dict(actions))
        self.t += 1
        if self.t == 1:
            self.agents.append("late")
        done = {agent: self.t >= self.possible_agents.index(agent) + 1 for agent in self.agents}
        observations = {agent: self.observe(agent) for agent in self.agents}
        rewards = {agent: 1.0 for agent in self.agents}
        truncations = {agent: False for agent in self.agents}
        infos = {agent: {} for agent in self.agents}
        self.agents = [agent for agent in self.agents if not done[agent]]
        return observations, rewards, done, truncations, infos

    def render(self):
        return None

    def close(self):
        pass


def test_pettingzoo_padding_keeps_a_stable_order_with_masks():
    """The PettingZoo interface reports the env's agents; the buffers pad every possible agent."""
    env = PettingZooPufferEnv(env=Population())
    assert env.num_agents == 4
    observations, _ = env.reset(seed=0)
    assert list(observations) == ["a", "b", "c"]
    assert env.masks.tolist() == [True, True, True, False]
    assert env.terminals.tolist() == [False, False, False, True]
    assert not env.observations[3].any()
    observations, rewards, terminals, _, _ = env.step(np.array([0, 1, 2, 0]))
    assert env.env.received[-1] == {"a": 0, "b": 1, "c": 2}  # absent agents' actions are dropped
    assert env.masks.tolist() == [True, True, True, True]
    assert terminals == {"a": True, "b": False, "c": False, "late": False}
    assert nativize(observations["late"], env.emulated)["who"] == 3
    observations, rewards, terminals, _, infos = env.step({"b": 0, "c": 0, "late": 0})
    # "a" was done after the first step: gone from every dict, padded in the buffers (zeros,
    # reward 0, terminal, mask False).
    assert "a" not in observations and "a" not in rewards and "a" not in terminals and "a" not in infos
    assert env.masks.tolist() == [False, True, True, True]
    assert env.rewards[0] == 0.0 and env.terminals[0] and not env.observations[0].any()
    assert rewards["b"] == 1.0 and terminals["b"]
    assert not np.shares_memory(observations["c"], env.observations)


def test_pettingzoo_misuse_raises_api_usage_error():
    env = PettingZooPufferEnv(env=Population())
    with pytest.raises(APIUsageError, match="before reset"):
        env.step({"a": 0})
    env.reset()
    with pytest.raises(APIUsageError, match="unknown agent 'zed'"):
        env.step({"a": 0, "b": 0, "c": 0, "zed": 1})
    with pytest.raises(APIUsageError, match="no action for live agents"):
        env.step({"a": 0})
    with pytest.raises(APIUsageError, match="unknown agent"):
        env.observation_space("zed")
    for _ in range(4):
        env.step(np.zeros(4, np.int64))
    with pytest.raises(APIUsageError, match="after every agent finished"):
        env.step(np.zeros(4, np.int64))


def test_wrappers_reject_the_other_api():
    with pytest.raises(APIUsageError, match="PettingZooPufferEnv instead"):
        GymnasiumPufferEnv(env=Population())
    with pytest.raises(APIUsageError, match="ParallelEnv"):
        PettingZooPufferEnv(env=StructuredEnv())


def test_pettingzoo_batch_step_resets_when_every_agent_finished():
    env = PettingZooPufferEnv(env=Population())
    env.batch_reset(seed=0)
    for _ in range(4):
        env.batch_step()
    # Last agent finished on step 4: the final rewards stay, the new episode's agents are masked in.
    assert env.rewards[3] == 1.0 and env.terminals[3]
    assert env.masks.tolist() == [True, True, True, False]
    assert nativize(env.observations[0], env.emulated)["t"][0] == 0


def knights_archers_zombies():
    """Zombies come fast and often, so knights and archers die mid-episode (through the family module)."""
    from pufferlib.environments import pettingzoo

    return pettingzoo.make("knights_archers_zombies", spawn_delay=2, max_zombies=20, max_cycles=300)


def test_dead_agents_leave_and_pettingzoo_checkers_pass_without_warnings():
    from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test
    from pettingzoo.utils.conversions import parallel_to_aec

    env = knights_archers_zombies()
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    died_mid_episode = False
    while env.agents:
        live = list(env.agents)
        observations, rewards, terminations, truncations, infos = env.step(
            {agent: int(rng.integers(6)) for agent in live}
        )
        for mapping in (observations, rewards, terminations, truncations, infos):
            assert set(mapping) == set(live)  # the agents that acted, the dead ones a last time
        died_mid_episode |= bool(env.agents) and len(env.agents) < len(live)
    assert died_mid_episode

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning from either checker fails the test
        parallel_api_test(knights_archers_zombies(), num_cycles=300)
        api_test(parallel_to_aec(knights_archers_zombies()), num_cycles=300)
        parallel_seed_test(knights_archers_zombies, num_cycles=300)
        parallel_api_test(PettingZooPufferEnv(env=Population()), num_cycles=10)


def test_emulated_structure_reaches_the_model():
    """A policy restores the nested observation from the flat tensor it is given."""
    env = GymnasiumPufferEnv(env_creator=functools.partial(StructuredEnv, 3))
    env.reset(seed=0)
    env.step(np.array([0, 0, 0]))
    native = nativize_tensor(torch.from_numpy(env.observations), nativize_dtype(env.emulated))
    assert native["map"].shape == (1, 4, 4) and native["map"].dtype == torch.uint8
    assert native["inventory"][0].tolist() == [1]
    assert native["position"].tolist() == [[1.0, -1.0]]
