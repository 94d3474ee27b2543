"""Ocean: the shared C vecenv and the sanity suite."""

import hashlib
import io

import numpy as np
import pytest
import torch
from conftest import random_actions

import ocean
from pufferlib import APIUsageError


def rollout(env, seed, steps, action_seed=0):
    rng = np.random.default_rng(action_seed)
    obs, _ = env.reset(seed)
    trace = [obs.copy()]
    for _ in range(steps):
        obs, rewards, terminals, truncations, _ = env.step(random_actions(env.single_action_space, env.num_agents, rng))
        trace += [obs.copy(), rewards.copy(), terminals.copy(), truncations.copy()]
    return trace


def run_policy(env, policy, steps, seed=0):
    """Steps env with policy(obs) -> actions; returns the mean score over all finished episodes."""
    obs, _ = env.reset(seed)
    logs = []
    for _ in range(steps):
        obs, *_, infos = env.step(policy(obs))
        logs += infos
    logs.append(env.log())
    logs = [log for log in logs if log is not None]
    assert logs, "no episode finished"
    episodes = sum(log["episodes"] for log in logs)
    return sum(log["score"] * log["episodes"] for log in logs) / episodes


@pytest.mark.parametrize("name", ocean.ENVS)
def test_buffers_are_written_in_place(name):
    env = ocean.make(name, num_envs=8)
    buffers = [env.observations, env.rewards, env.terminals, env.truncations]
    before = [b.copy() for b in buffers]
    obs, _ = env.reset(3)
    assert obs is env.observations
    rng = np.random.default_rng(0)
    changed = False
    for _ in range(30):
        result = env.step(random_actions(env.single_action_space, env.num_agents, rng))
        for returned, owned in zip(result[:4], buffers):
            assert returned is owned
        changed |= any(not np.array_equal(a, b) for a, b in zip(before, buffers))
    assert changed, "stepping never wrote the buffers"


# The pixel env draws a 130 x 110 frame per env and step: its long rollouts run in make test only.
ENVS_SLOW_PIXELS = [pytest.param(name, marks=pytest.mark.slow) if name == "puffer_craftax_pixels" else name for name in ocean.ENVS]


@pytest.mark.parametrize("name", ENVS_SLOW_PIXELS)
def test_same_seed_same_trajectory_whatever_the_thread_count(name):
    single = rollout(ocean.make(name, num_envs=64, num_threads=1), seed=7, steps=60)
    threaded = rollout(ocean.make(name, num_envs=64, num_threads=4), seed=7, steps=60)
    for a, b in zip(single, threaded):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["puffer_squared", "puffer_memory", "puffer_spaces"])
def test_different_seeds_differ_and_env_i_uses_seed_plus_i(name):
    wide = ocean.make(name, num_envs=4)
    wide_obs, _ = wide.reset(10)
    narrow = ocean.make(name, num_envs=1)
    narrow_obs, _ = narrow.reset(12)
    agents = wide.agents_per_env
    np.testing.assert_array_equal(wide_obs[2 * agents : 3 * agents], narrow_obs)
    a = rollout(ocean.make(name, num_envs=16), seed=1, steps=20)
    b = rollout(ocean.make(name, num_envs=16), seed=2, steps=20)
    assert any(not np.array_equal(x, y) for x, y in zip(a, b))


def squared_toward_target(size):
    def policy(obs):
        grid = obs.reshape(len(obs), size, size)
        flat = grid.reshape(len(obs), -1)
        agent = np.argmax(flat == 1, axis=1)
        target = np.argmax(flat == 2, axis=1)
        ar, ac = np.divmod(agent, size)
        tr, tc = np.divmod(target, size)
        actions = np.zeros(len(obs), dtype=np.int32)
        actions[tc > ac] = 4
        actions[tc < ac] = 3
        actions[tr > ar] = 1
        actions[tr < ar] = 2
        return actions

    return policy


def test_squared_optimal_policy_always_reaches_the_target():
    env = ocean.make("squared", num_envs=256, size=9)
    assert run_policy(env, squared_toward_target(9), steps=200) == env.optimal_score == 1.0
    stay = ocean.make("squared", num_envs=256, size=9)
    assert run_policy(stay, lambda obs: np.zeros(len(obs), np.int32), steps=200) == 0.0


def test_squared_fails_after_twice_the_size_and_autoresets():
    env = ocean.make("squared", num_envs=1, size=5)
    env.reset(0)
    for t in range(10):
        _, rewards, terminals, truncations, _ = env.step(np.zeros(1, np.int32))
        assert rewards[0] == 0 and not truncations[0]
        assert terminals[0] == (t == 9)
    centre = 2 * 5 + 2
    assert env.observations[0, centre] == 1, "a finished env starts its next episode in the same step"


def test_squared_episode_log_matches_the_steps_taken():
    env = ocean.make("squared", num_envs=32, size=7, log_interval=1)
    env.reset(0)
    policy = squared_toward_target(7)
    lengths, finished = [], 0
    obs = env.observations
    for _ in range(40):
        obs, _, terminals, truncations, infos = env.step(policy(obs))
        finished += int(terminals.sum() + truncations.sum())
        for info in infos:
            lengths.append((info["episode_length"], info["episodes"]))
            assert info["score"] == info["episode_return"] == 1.0
    assert sum(n for _, n in lengths) == finished
    assert all(1 <= length <= 6 for length, _ in lengths)


def test_password_rewards_only_the_exact_password():
    env = ocean.make("password", num_envs=16, length=6, password_seed=3)
    password = env.password.astype(np.int32)
    position = lambda obs: int((obs[0] != 0).sum())  # noqa: E731
    right = run_policy(env, lambda obs: np.full(16, password[position(obs)], np.int32), steps=60)
    assert right == env.optimal_score == 1.0
    wrong = password.copy()
    wrong[-1] ^= 1
    other = ocean.make("password", num_envs=16, length=6, password_seed=3)
    assert run_policy(other, lambda obs: np.full(16, wrong[position(obs)], np.int32), steps=60) == 0.0


def test_stochastic_rewards_sampling_with_probability_p():
    env = ocean.make("stochastic", num_envs=2048, p=0.75, horizon=20)
    rng = np.random.default_rng(0)
    sampled = run_policy(env, lambda obs: (rng.random(len(obs)) > 0.75).astype(np.int32), steps=20)
    assert sampled == pytest.approx(env.optimal_score, abs=0.01)
    always_zero = ocean.make("stochastic", num_envs=64, p=0.75, horizon=20)
    assert run_policy(always_zero, lambda obs: np.zeros(len(obs), np.int32), steps=20) == pytest.approx(0.75)
    assert env.optimal_score > 0.9


def test_memory_needs_memory():
    length, delay, n = 3, 2, 512
    env = ocean.make("memory", num_envs=n, length=length, delay=delay)
    seen = np.zeros((n, length), np.int32)
    tick = [0]

    def remembering(obs):
        t = tick[0] % (2 * length + delay)
        tick[0] += 1
        if t < length:
            seen[:, t] = obs[:, 0] > 0
        recall = t - length - delay
        return seen[:, recall] if recall >= 0 else np.zeros(n, np.int32)

    assert run_policy(env, remembering, steps=(2 * length + delay) * 4) == env.optimal_score == 1.0
    forgetful = ocean.make("memory", num_envs=n, length=length, delay=delay)
    score = run_policy(forgetful, lambda obs: np.ones(n, np.int32), steps=(2 * length + delay) * 4)
    assert score == pytest.approx(0.5, abs=0.05)


def test_bandit_pays_the_solution_arm():
    env = ocean.make("bandit", num_envs=64, arms=5, solution_seed=1)
    assert run_policy(env, lambda obs: np.full(64, env.solution, np.int32), steps=10) == 1.0
    wrong_arm = (env.solution + 1) % 5
    other = ocean.make("bandit", num_envs=64, arms=5, solution_seed=1)
    assert run_policy(other, lambda obs: np.full(64, wrong_arm, np.int32), steps=10) == 0.0


def test_bandit_noise_changes_rewards_not_score():
    env = ocean.make("bandit", num_envs=4096, arms=3, reward_noise=0.5)
    env.reset(0)
    _, rewards, *_ = env.step(np.full(4096, env.solution, np.int32))
    assert rewards.std() == pytest.approx(0.5, rel=0.1)
    assert rewards.mean() == pytest.approx(1.0, abs=0.05)


def test_multiagent_rewards_each_agent_for_its_own_id():
    env = ocean.make("multiagent", num_envs=32)
    assert env.num_agents == 64 and env.observations.shape == (64, 2)
    by_id = run_policy(env, lambda obs: np.argmax(obs, axis=1).astype(np.int32), steps=5)
    assert by_id == 1.0
    same = ocean.make("multiagent", num_envs=32)
    assert run_policy(same, lambda obs: np.zeros(len(obs), np.int32), steps=5) == 0.5


def test_spaces_needs_both_parts_of_the_observation():
    env = ocean.make("spaces", num_envs=512)
    structured = lambda obs: obs.view(env.obs_dtype).reshape(len(obs))  # noqa: E731

    def both(obs):
        parts = structured(obs)
        return np.stack([parts["image"].sum(axis=(1, 2)) > 0, parts["flat"].sum(axis=1) > 0], 1).astype(np.int32)

    assert run_policy(env, both, steps=5) == 1.0

    def image_only(obs):
        answer = both(obs)
        answer[:, 1] = 0
        return answer

    half = ocean.make("spaces", num_envs=512)
    assert run_policy(half, image_only, steps=5) == pytest.approx(0.75, abs=0.03)


@pytest.mark.parametrize("name", ocean.ENVS)
def test_render_is_ansi_text(name):
    env = ocean.make(name, num_envs=2)
    env.reset(0)
    text = env.render(1)
    assert isinstance(text, str) and len(text) > 0
    with pytest.raises(ValueError, match="render index"):
        env.render(2)


def test_log_is_none_until_an_episode_ends():
    env = ocean.make("squared", num_envs=4, size=11)
    env.reset(0)
    env.step(np.zeros(4, np.int32))
    assert env.log() is None


@pytest.mark.parametrize(
    "actions, message",
    [
        (np.zeros(3, np.int32), r"shape \(4,\).*got shape \(3,\)"),
        (np.zeros(4, np.float32), "must be integers, got dtype float32"),
        (np.array([0, 1, 5, 0]), r"action 5 for agent 2 is outside.*0\.\.4"),
        (np.array([0, 1, 5, 0], np.int32), r"action 5 for agent 2 is outside.*0\.\.4"),
        (np.array([0, 0, 1, 0, 5, 0, 0, 0], np.int32)[::2], r"action 5 for agent 2 is outside"),
        (np.array([0, 1, 5, 0], ">i4"), r"action 5 for agent 2 is outside"),
        (np.array([0, -1, 0, 0]), "action -1 for agent 1"),
        (np.array([0, 1, 2**40, 0]), "do not fit in int32"),
    ],
)
def test_bad_actions_name_the_env_and_what_was_expected(actions, message):
    env = ocean.make("squared", num_envs=4)
    env.reset(0)
    with pytest.raises(ValueError, match="puffer_squared") as error:
        env.step(actions)
    assert error.match(message)


def test_check_actions_raises_what_step_would_without_stepping():
    env = ocean.make("squared", num_envs=4)
    env.reset(0)
    before = env.observations.copy()
    env.check_actions(np.array([0, 1, 2, 3], np.int32))
    with pytest.raises(ValueError, match=r"action 7 for agent 3 is outside"):
        env.check_actions([0, 1, 2, 7])
    np.testing.assert_array_equal(env.observations, before)


def test_actions_of_any_integer_layout_step_alike():
    """int32 arrays laid out as the buffer are copied directly; other layouts are converted first:
    both give the same steps."""
    rng = np.random.default_rng(0)
    batches = rng.integers(0, 5, (40, 8))
    layouts = [
        lambda batch: batch.astype(np.int32),
        lambda batch: batch,
        lambda batch: np.repeat(batch.astype(np.int32), 2)[::2],
        lambda batch: batch.astype(">i4"),
        lambda batch: batch.tolist(),
    ]
    traces = []
    for layout in layouts:
        env = ocean.make("squared", num_envs=8)
        env.reset(1)
        traces.append([env.step(layout(batch))[0].copy() for batch in batches])
    for trace in traces[1:]:
        np.testing.assert_array_equal(trace, traces[0])


def test_bad_multidiscrete_component_is_named():
    env = ocean.make("spaces", num_envs=2)
    env.reset(0)
    with pytest.raises(ValueError, match=r"agent 1, component 1.*valid: 0\.\.1"):
        env.step(np.array([[0, 1], [1, 2]]))


def test_step_before_reset_is_an_api_error():
    with pytest.raises(APIUsageError, match="reset"):
        ocean.make("bandit", num_envs=2).step(np.zeros(2, np.int32))


def test_unknown_env_lists_the_valid_ones():
    with pytest.raises(ValueError, match="puffer_squared") as error:
        ocean.make("sqared")
    assert error.match("Did you mean puffer_squared")
    assert all(name in str(error.value) for name in ocean.ENVS)


@pytest.mark.parametrize(
    "name, params, message",
    [
        ("squared", dict(size=-3), "size must be between 3 and 255, got -3"),
        ("squared", dict(num_envs=0), "num_envs must be >= 1, got 0"),
        ("squared", dict(num_threads=0), "num_threads must be >= 1"),
        ("squared", dict(size=5.5), "size must be an integer"),
        ("password", dict(length=65), "length must be between 1 and 64, got 65"),
        ("memory", dict(delay=-1), "delay must be between 0 and 1000"),
        ("stochastic", dict(p=1.0), r"p must lie in \(0.0, 1.0\)"),
        ("bandit", dict(arms=1), "arms must be between 2 and 1024"),
        ("bandit", dict(reward_noise=-0.1), "reward_noise must lie in"),
    ],
)
def test_bad_parameters_fail_at_construction(name, params, message):
    with pytest.raises(ValueError, match=message):
        ocean.make(name, **params)


# sha256 of each env's trajectory (below): the step path may be made faster, never different.
TRAJECTORY_HASHES = {
    "puffer_bandit": "e275d8a786d7656cd621e4858ede8b8159e02227e74cce5133bd048ff4ecd944",
    "puffer_breakout": "72bcd74205a01d84084a694936c7336b4e15e6d4b0bcc64b565df3fc4c99b634",
    "puffer_connect4": "7793691d9e8f92f42b0fd33976ecc645f8d012e99332adc600592f093a2f226e",
    "puffer_memory": "332f7531d82d14af62591720b7fb6dd6636b36b9c1205ebbf95eb96095b57718",
    "puffer_multiagent": "add7c558bfaf1b591988d6b1929b749a6ebb6d2a76439f35189c57129f442d6b",
    "puffer_password": "a61e76b91433412681f30e25035653023572e00b3138669bcc3a2fc569b7353b",
    "puffer_pong": "b482e940b89682045ebf5b1901f53cae5a991575df816657fe33691129d00537",
    "puffer_snake": "89408884b8c233ddc92bfa91991c83125b5b8180d9bacedd0963622e07894e0a",
    "puffer_spaces": "434bda78c7b1d41fd04e1638498c3b0fc7bb32bff2681aee8a9994d17247b1b7",
    "puffer_squared": "c718a2c9c466b99741abbc820785f1d50810ac3fcd9cdb513124a340c5829ffd",
    "puffer_stochastic": "5f2caca02ec50501f9e241ddf4319dc7244eef67d3633328a0293ccabde7fbf2",
}


def trajectory_hash(name):
    """Observations, rewards, terminals, truncations and episode logs of 16 envs seeded 3 for 200
    steps of seeded random actions on two threads, with the infos of every step, as one digest."""
    env = ocean.make(name, num_envs=16, num_threads=2, log_interval=25)
    digest = hashlib.sha256()
    for array in rollout(env, seed=3, steps=100, action_seed=4):
        digest.update(np.ascontiguousarray(array).tobytes())
    rng = np.random.default_rng(5)
    for _ in range(100):
        *buffers, infos = env.step(random_actions(env.single_action_space, env.num_agents, rng))
        for array in buffers:
            digest.update(array.tobytes())
        digest.update(repr(infos).encode())
    digest.update(repr(env.log()).encode())
    return digest.hexdigest()


@pytest.mark.parametrize("name", sorted(TRAJECTORY_HASHES))
def test_same_seeds_give_the_pinned_trajectory(name):
    assert trajectory_hash(name) == TRAJECTORY_HASHES[name]


def test_every_c_env_but_craftax_has_a_pinned_trajectory():
    assert sorted(TRAJECTORY_HASHES) == [name for name in ocean.ENVS if "craftax" not in name]


# Their worlds live behind pointers (VEC_NO_SAVE): a checkpoint resumes them with fresh episodes.
FRESH_ON_RESUME = {"puffer_craftax", "puffer_craftax_compact", "puffer_craftax_pixels"}


@pytest.mark.parametrize("name", [name for name in ocean.ENVS if name not in FRESH_ON_RESUME])
def test_saved_state_continues_the_same_steps_and_episode_logs(name):
    rng = np.random.default_rng(0)
    space = ocean.make(name).single_action_space
    env = ocean.make(name, num_envs=8, log_interval=10**9)
    batches = [random_actions(space, env.num_agents, rng) for _ in range(1100)]
    env.reset(2)
    for actions in batches[:60]:
        env.step(actions)
    # Through a checkpoint file, read as the trainer reads it (plain values only), into another env
    checkpoint = io.BytesIO()
    torch.save(env.get_state(), checkpoint)
    checkpoint.seek(0)
    state = torch.load(checkpoint, weights_only=True)
    resumed = ocean.make(name, num_envs=8, log_interval=10**9)
    resumed.set_state(state)
    for actions in batches[60:]:
        expected = [array.copy() for array in env.step(actions)[:4]]
        for got, want in zip(resumed.step(actions)[:4], expected):
            np.testing.assert_array_equal(got, want)
    assert resumed.log() == env.log() is not None


@pytest.mark.parametrize("name", sorted(FRESH_ON_RESUME))
def test_envs_that_cannot_be_saved_say_so(name):
    env = ocean.make(name, num_envs=2)
    env.reset(0)
    assert env.get_state() is None
