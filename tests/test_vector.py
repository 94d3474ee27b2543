"""Vectorization: backends agree, pools hand out each env once per send, failures surface, nothing leaks.

Ray runs only inside a private network namespace (``unshare -n``): Ray addresses a local cluster
through the machine's own IP, and here tests may only talk over loopback. The outer test re-runs
this file's ``ray_`` tests inside one, where they start a real cluster (``ray start --head`` plus a
worker node) or a local ``ray.init()``, and stop it by the ids of the processes they started.
"""

import functools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import gymnasium
import numpy as np
import pytest
from conftest import IN_RAY_NAMESPACE, ROOT, random_actions, run_ray_tests_privately

import ocean
from pufferlib import APIUsageError, PufferEnv, vector
from pufferlib.emulation import GymnasiumPufferEnv
from pufferlib.environments import classic_control, pettingzoo
from pufferlib.vector import WorkerDiedError, WorkerError, WorkerTimeoutError


class CounterEnv(gymnasium.Env):
    """Observation [reset seed, steps since reset]: tells which env a row came from, and how far it is.

    ``jitter`` sleeps up to that many seconds per step, so pool workers finish out of order.
    ``fail_at`` raises ValueError on that step; ``hang_at`` sleeps for an hour on that step in
    the envs reset with a seed in ``hanging``; ``shrink_at`` returns an observation of shape (1,)
    from that step on.
    """

    observation_space = gymnasium.spaces.Box(0, 2**40, (2,), np.int64)
    action_space = gymnasium.spaces.Discrete(4)

    def __init__(self, length=5, jitter=0.0, fail_at=None, hang_at=None, hanging=(), shrink_at=None):
        self.length, self.jitter, self.fail_at = length, jitter, fail_at
        self.hang_at, self.hanging, self.shrink_at = hang_at, hanging, shrink_at
        self.identity, self.t = 0, 0
        self.rng = np.random.default_rng()

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.identity = seed
            self.rng = np.random.default_rng(seed)
        self.t = 0
        return np.array([self.identity, 0]), {}

    def step(self, action):
        self.t += 1
        if self.t == self.fail_at:
            raise ValueError(f"env {self.identity} failed on step {self.t}")
        if self.t == self.hang_at and self.identity in self.hanging:
            time.sleep(3600)
        if self.jitter:
            time.sleep(self.rng.uniform(0, self.jitter))
        done = self.t >= self.length
        info = {"identity": self.identity, "action": int(action)} if done else {}
        observation = np.array([self.identity, self.t])
        if self.shrink_at is not None and self.t >= self.shrink_at:
            observation = observation[:1]
        return observation, float(action), done, False, info


def counter(buf=None, **kwargs):
    return GymnasiumPufferEnv(env=CounterEnv(**kwargs), buf=buf)


class Unpicklable(Exception):
    def __init__(self):
        super().__init__("carries a lock")
        self.lock = threading.Lock()


class UnpicklableErrorEnv(CounterEnv):
    def step(self, action):
        raise Unpicklable()


class UnpicklableInfoEnv(CounterEnv):
    def step(self, action):
        observation, reward, terminated, truncated, _ = super().step(action)
        return observation, reward, terminated, truncated, {"callback": lambda: None}


def squared(buf=None, num_envs=1, num_threads=1):
    return ocean.make("puffer_squared", num_envs=num_envs, buf=buf, num_threads=num_threads)


def rollout(envs, steps, seed=7, action_seed=0):
    """Observations, rewards, terminals, truncations, masks and infos of a seeded random-action
    rollout."""
    observations, infos = envs.reset(seed=seed)
    frames, all_infos = [(observations.copy(), envs.masks.copy())], [infos]
    rng = np.random.default_rng(action_seed)
    for _ in range(steps):
        actions = random_actions(envs.single_action_space, envs.agents_per_batch, rng)
        observations, rewards, terminals, truncations, infos = envs.step(actions)
        frames.append((observations.copy(), rewards.copy(), terminals.copy(), truncations.copy(), envs.masks.copy()))
        all_infos.append(infos)
    envs.close()
    return frames, all_infos


def assert_same_rollouts(a, b):
    frames_a, infos_a = a
    frames_b, infos_b = b
    assert len(frames_a) == len(frames_b)
    for frame_a, frame_b in zip(frames_a, frames_b):
        for x, y in zip(frame_a, frame_b):
            assert np.array_equal(x, y)
    assert [summarize(infos) for infos in infos_a] == [summarize(infos) for infos in infos_b]


def summarize(infos):
    """Infos as comparable across worker layouts: native envs log one aggregate per env object, so
    their logs are compared as totals (episodes, and returns and lengths summed over episodes)."""
    if not infos or "episodes" not in infos[0]:
        return infos
    episodes = sum(info["episodes"] for info in infos)
    total = {
        key: round(sum(info[key] * info["episodes"] for info in infos), 3)
        for key in ("episode_return", "episode_length")
    }
    return episodes, total


CREATORS = {
    "cartpole": (classic_control.env_creator("CartPole-v1"), 8),
    "squared_native": (squared, 8),
    "tictactoe_padded": (pettingzoo.env_creator("tictactoe"), 4),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", CREATORS)
def test_serial_and_multiprocessing_give_identical_streams(name):
    creator, num_envs = CREATORS[name]
    reference = rollout(vector.make(creator, backend="Serial", num_envs=num_envs), 60)
    for workers in (2, 4):
        other = rollout(
            vector.make(creator, backend=vector.Multiprocessing, num_envs=num_envs, num_workers=workers), 60
        )
        assert_same_rollouts(reference, other)
    if name == "squared_native":
        assert_same_rollouts(reference, rollout(vector.make(creator, backend="native", num_envs=num_envs), 60))
    # Episodes ended within 60 steps, so infos did travel through the pipes.
    assert any(reference[1])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend, batch_size", [("serial", 8), ("native", 8), ("native", 4), ("multiprocessing", 8), ("multiprocessing", 4)])
def test_every_agent_of_an_ocean_env_is_live_in_every_backend(backend, batch_size):
    """A trainer stores only the agents whose mask is set: an Ocean env's agents are all live, at
    reset and at every step, whoever allocated the buffers they write."""
    num_workers = None if backend == "native" else 2  # native: one env object per batch
    envs = vector.make(squared, backend=backend, num_envs=8, num_workers=num_workers, batch_size=batch_size)
    envs.async_reset(seed=0)
    returned = 0
    for _ in range(6):
        *_, env_ids, masks = envs.recv()
        assert masks.dtype == bool and masks.all(), (backend, env_ids, masks)
        returned += len(env_ids)
        envs.send(np.zeros(len(env_ids), np.int32))
    envs.close()
    assert returned == 6 * batch_size


def native_streams(envs, steps, actions, state=None, start=0):
    """Each env's (observation, reward, terminal) per step of a recv/send loop acting from the table
    ``actions`` [step, env], and the env ids of each batch. From a reset; with ``start`` > 0, on from
    where the envs are after that many steps, or from ``state`` (``get_state``'s) when given.
    Returns the state after the loop's last send too."""
    if state is not None:
        envs.set_state(state)
    elif start == 0:
        envs.async_reset(7)
    taken = np.full(envs.num_envs, start)
    seen, order = {env: [] for env in range(envs.num_envs)}, []
    for _ in range(steps * envs.num_envs // envs.batch_size):
        observations, rewards, terminals, _, _, env_ids, _ = envs.recv()
        order.append(tuple(env_ids.tolist()))
        for row, env in enumerate(env_ids):
            seen[env].append((observations[row].tobytes(), float(rewards[row]), bool(terminals[row])))
        envs.send(actions[taken[env_ids], env_ids])
        taken[env_ids] += 1
    return seen, order, envs.get_state()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("num_threads, stepping_threads", [(1, 2), (2, 1)])
def test_native_batches_step_in_threads_in_send_order_as_one_env_object_would(num_threads, stepping_threads):
    """Single-threaded env objects step side by side, a thread each; multithreaded ones one after
    another on one thread. Either way the streams are one env object's."""
    num_envs, steps = 8, 80
    actions = np.random.default_rng(0).integers(0, 5, (2 * steps, num_envs)).astype(np.int32)
    kwargs = dict(num_threads=num_threads)
    one = vector.make(squared, backend="native", num_envs=num_envs, env_kwargs=kwargs)
    halves = vector.make(squared, backend="native", num_envs=num_envs, batch_size=4, env_kwargs=kwargs)
    assert halves.num_workers == 2 and halves.stepping_threads == stepping_threads
    reference, _, _ = native_streams(one, steps, actions)
    streams, order, _ = native_streams(halves, steps, actions)
    assert streams == reference
    assert order == [(0, 1, 2, 3), (4, 5, 6, 7)] * steps  # the order they were sent in
    assert any(terminal for stream in reference.values() for _, _, terminal in stream)

    # A checkpoint's moment: the state taken after a send continues as the run itself does.
    first, _, state = native_streams(halves, steps // 2, actions)
    later, _, _ = native_streams(halves, steps // 2, actions, start=steps // 2)
    restored = vector.make(squared, backend="native", num_envs=num_envs, batch_size=4, env_kwargs=kwargs)
    resumed, _, _ = native_streams(restored, steps // 2, actions, state=state, start=steps // 2)
    assert resumed == later
    with pytest.raises(ValueError, match="2 env objects, this vector env 1"):
        one.set_state(state)
    for envs in (one, halves, restored):
        envs.close()


class OneNumberEnvs(PufferEnv):
    """A batched env of one number per env, to be given a behaviour by subclasses."""

    def __init__(self, buf=None, num_envs=1):
        self.single_observation_space = gymnasium.spaces.Box(0, 9, (1,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(2)
        self.num_agents = num_envs
        super().__init__(buf)

    def reset(self, seed=0):
        return self.observations, []


class SlowReset(OneNumberEnvs):
    """A batched env whose reset takes a while and then marks its observations 1; its state is its
    observations."""

    def reset(self, seed=0):
        time.sleep(0.3)
        self.observations[:] = 1
        return self.observations, []

    def step(self, actions):
        return self.observations, self.rewards, self.terminals, self.truncations, []

    def get_state(self):
        return self.observations.copy()

    def set_state(self, state):
        self.observations[:] = state


@pytest.mark.timeout(60)
def test_restoring_native_batches_waits_for_the_reset_still_running_in_their_threads():
    envs = vector.make(SlowReset, backend="native", num_envs=4, batch_size=2)
    saved = dict(envs=[np.full((2, 1), 5, np.float32)] * 2, results=[(0, []), (1, [])])
    envs.async_reset()  # both batches reset in their threads for 0.3 s
    envs.set_state(saved)
    for _ in range(4):
        observations = envs.recv()[0]
        assert (observations == 5).all()  # the late reset's 1s would have overwritten the restore
        envs.send(np.zeros(2, np.int32))
    envs.close()


class BreaksOnStep(OneNumberEnvs):
    """A batched env whose step raises."""

    def step(self, actions):
        raise RuntimeError("the env broke on its step")


@pytest.mark.timeout(60)
def test_a_native_batch_that_raises_in_its_thread_raises_in_recv():
    envs = vector.make(BreaksOnStep, backend="native", num_envs=4, batch_size=2)
    envs.async_reset()
    envs.recv()
    envs.send(np.zeros(2, np.int32))
    envs.recv()  # the other batch's reset
    envs.send(np.zeros(2, np.int32))
    with pytest.raises(RuntimeError, match="the env broke on its step"):
        envs.recv()
    envs.close()
    with pytest.raises(APIUsageError, match="num_workers must be num_envs / batch_size \\(2\\), got 4"):
        vector.make(squared, backend="native", num_envs=8, batch_size=4, num_workers=4)


def test_page_locked_buffers_need_cuda():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is visible: tests/test_trainer_gpu.py steps envs on page-locked buffers")
    with pytest.raises(APIUsageError, match="pinned buffers need torch with a CUDA device"):
        vector.make(functools.partial(ocean.make, "puffer_squared"), backend="native", num_envs=4, pin_memory=True)


@pytest.mark.timeout(60)
def test_spawn_start_method_takes_lambdas():
    creator = lambda buf=None: counter(buf, length=3)  # noqa: E731  (cloudpickle carries it)
    frames, _ = rollout(vector.make(creator, backend="multiprocessing", num_envs=2, num_workers=2, context="spawn"), 4)
    assert frames[0][0].tolist() == [[7, 0], [8, 0]]
    assert frames[4][0].tolist() == [[7, 1], [8, 1]]  # autoreset after step 3


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "backend, num_workers, zero_copy",
    [("serial", None, True), ("multiprocessing", 4, True), ("multiprocessing", 8, False)],
)
def test_pool_returns_each_env_exactly_once_per_send(backend, num_workers, zero_copy):
    """Rows belong to the env_ids they claim, and each send yields exactly one return of its envs."""
    creator = functools.partial(counter, length=1000, jitter=0.002)
    envs = vector.make(
        creator, backend=backend, num_envs=16, num_workers=num_workers, batch_size=4, zero_copy=zero_copy, seed=100
    )
    returned = np.zeros(16, dtype=int)
    sent = np.zeros(16, dtype=int)
    envs.async_reset()
    orders = set()
    for _ in range(120):
        observations, rewards, _, _, _, env_ids, masks = envs.recv()
        assert len(env_ids) == 4 and len(set(env_ids.tolist())) == 4 and masks.all()
        returned[env_ids] += 1
        assert (returned[env_ids] == sent[env_ids] + 1).all()
        # Each row is the env it claims to be, after exactly as many steps as it was sent.
        assert observations[:, 0].tolist() == (100 + env_ids).tolist()
        assert observations[:, 1].tolist() == sent[env_ids].tolist()
        orders.add(tuple(env_ids.tolist()))
        actions = env_ids % 4
        envs.send(actions)
        sent[env_ids] += 1
    envs.close()
    assert returned.sum() == 120 * 4 and (sent > 0).all()
    if not zero_copy:
        assert len(orders) > 4  # first-ready batches really do mix workers


@pytest.mark.timeout(60)
def test_zero_copy_batches_are_views_of_the_shared_buffer():
    envs = vector.make(
        functools.partial(counter, length=9), backend="multiprocessing", num_envs=8, num_workers=4, batch_size=4
    )
    envs.async_reset(seed=0)
    observations, *_ = envs.recv()
    assert np.shares_memory(observations, envs.observations)
    envs.close()


@pytest.mark.timeout(60)
def test_render_works_in_every_backend():
    serial = vector.make(squared, backend="serial", num_envs=4, num_workers=2)
    processes = vector.make(squared, backend="multiprocessing", num_envs=4, num_workers=2)
    serial.reset(seed=3)
    processes.reset(seed=3)
    assert serial.render(3) == processes.render(3) and "\x1b[" in serial.render(3)
    serial.close()
    processes.close()


def test_misuse_raises_api_usage_error():
    with pytest.raises(APIUsageError, match="multiple of num_workers"):
        vector.make(counter, num_envs=6, num_workers=4, backend="multiprocessing")
    with pytest.raises(APIUsageError, match="whole workers"):
        vector.make(counter, num_envs=8, num_workers=2, batch_size=2, backend="serial")
    with pytest.raises(APIUsageError, match="unknown backend"):
        vector.make(counter, backend="threads")
    with pytest.raises(APIUsageError, match="batched env_creator"):
        vector.make(counter, backend="native")
    with pytest.raises(APIUsageError, match="buf= keyword"):
        vector.make(lambda: GymnasiumPufferEnv(env=CounterEnv()), backend="serial")
    with pytest.raises(APIUsageError, match="not a PufferEnv"):
        vector.make(lambda buf=None: CounterEnv(), backend="serial")
    envs = vector.make(counter, num_envs=4, batch_size=2, backend="serial")
    with pytest.raises(APIUsageError, match="reset"):
        envs.recv()
    with pytest.raises(APIUsageError, match="async_reset"):
        envs.step(np.zeros(4, np.int32))
    envs.async_reset()
    with pytest.raises(APIUsageError, match="send"):
        envs.send(np.zeros(2, np.int32))
    envs.recv()
    with pytest.raises(APIUsageError, match="recv\\(\\) called twice"):
        envs.recv()
    with pytest.raises(ValueError, match="shape"):
        envs.send(np.zeros(3, np.int32))
    envs.close()
    with pytest.raises(APIUsageError, match="closed"):
        envs.async_reset()


# Failures ------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("backend", ["serial", "multiprocessing"])
def test_every_send_checks_actions_dtype_and_range(backend):
    envs = vector.make(counter, backend=backend, num_envs=4, num_workers=2)
    envs.reset(seed=0)
    good = np.array([0, 1, 2, 3], np.int32)
    envs.step(good)
    bad_actions = {
        "float": (np.array([0, 1.9, 0, 0]), r"must be integers, got dtype float64; sent to worker 0 .*worker 1"),
        "bool": (np.array([True, False, True, False]), "must be integers, got dtype bool"),
        "beyond int32": (np.array([0, 0, 0, 2**32 + 1], np.int64), r"action 4294967297 for env 3 \(worker 1, row 3"),
        "negative": (np.array([0, 0, -1, 0], np.int32), r"action -1 for env 2 \(worker 1, row 2 of the batch\)"),
        "too large": (np.array([4, 0, 0, 5]), r"action 4 for env 0 \(worker 0.*1 more rows"),
    }
    for actions, message in bad_actions.values():
        with pytest.raises(ValueError, match=message):
            envs.step(actions)
    # A rejected send changes nothing: the same batch steps on with valid actions.
    observations, *_ = envs.step(good)
    assert observations[:, 1].tolist() == [2, 2, 2, 2]
    envs.close()


@pytest.mark.timeout(60)
def test_wrong_observation_shape_is_caught_before_it_reaches_the_shared_rows():
    envs = vector.make(
        functools.partial(counter, length=100, shrink_at=2), backend="multiprocessing", num_envs=4, num_workers=2
    )
    envs.reset(seed=0)
    envs.step(np.zeros(4, np.int32))
    with pytest.raises(ValueError, match=r"expected shape \(2,\).*got shape \(1,\)") as raised:
        envs.step(np.zeros(4, np.int32))
    assert re.fullmatch(r"Raised by env \d of worker \d\.", raised.value.__notes__[0])
    assert envs.observations[:, 1].tolist() == [1, 1, 1, 1]  # no row was broadcast over
    envs.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("pool", [False, True])
def test_hung_worker_is_killed_after_the_timeout_and_named(pool):
    # A finished result left uncollected for longer than the timeout is not a hang.
    envs = vector.make(
        functools.partial(counter, length=1000), backend="multiprocessing", num_envs=4, num_workers=2,
        batch_size=2 if pool else None, timeout=0.3,
    )
    envs.async_reset(seed=0)
    for _ in range(3):
        envs.recv()
        time.sleep(0.6)  # a slow learner between recv and send
        envs.send(np.zeros(envs.agents_per_batch, np.int32))
    envs.recv()
    envs.close()

    envs = vector.make(
        functools.partial(counter, length=1000, hang_at=2, hanging=(2, 3)),
        backend="multiprocessing",
        num_envs=4,
        num_workers=2,
        batch_size=2 if pool else None,
        timeout=30,
    )
    envs.async_reset(seed=0)
    message = r"worker 1 \(pid \d+, envs 2..3\) did not finish its step within 0.5 s, so it was killed"
    with pytest.raises(WorkerTimeoutError, match=message) as raised:
        while True:  # a pool goes on with worker 0 until worker 1's step is overdue
            envs.recv(timeout=0.5)
            envs.send(np.zeros(envs.agents_per_batch, np.int32))
    assert raised.value.worker == 1 and raised.value.env_ids == [2, 3]
    assert not envs.processes[1].is_alive() and envs.processes[0].is_alive()
    with pytest.raises(APIUsageError, match="earlier failure"):
        envs.recv()
    envs.close()
    assert not any(process.is_alive() for process in envs.processes)


@pytest.mark.timeout(60)
def test_env_exception_reraises_with_the_worker_traceback():
    envs = vector.make(functools.partial(counter, fail_at=3), backend="multiprocessing", num_envs=4, num_workers=2)
    envs.reset(seed=0)
    envs.step(np.zeros(4, np.int32))
    envs.step(np.zeros(4, np.int32))
    with pytest.raises(ValueError, match="failed on step 3") as raised:
        envs.step(np.zeros(4, np.int32))
    assert "in step" in str(raised.value.__cause__) and "test_vector.py" in str(raised.value.__cause__)
    # The notes name the env that raised and its worker (both workers' envs fail on step 3).
    env_note, worker_note = raised.value.__notes__
    env, worker = map(int, re.fullmatch(r"Raised by env (\d) of worker (\d)\.", env_note).groups())
    assert env // 2 == worker and worker_note.startswith(f"Raised in worker {worker} (pid")
    with pytest.raises(APIUsageError, match="earlier failure"):
        envs.step(np.zeros(4, np.int32))
    envs.close()
    assert not any(process.is_alive() for process in envs.processes)


@pytest.mark.timeout(60)
def test_unpicklable_exception_and_creation_failure_still_surface():
    envs = vector.make(
        lambda buf=None: GymnasiumPufferEnv(env=UnpicklableErrorEnv(), buf=buf),
        backend="multiprocessing",
        num_envs=2,
        num_workers=2,
    )
    envs.reset()
    with pytest.raises(WorkerError, match="Unpicklable"):
        envs.step(np.zeros(2, np.int32))
    envs.close()

    envs = vector.make(
        lambda buf=None: GymnasiumPufferEnv(env=UnpicklableInfoEnv(), buf=buf),
        backend="multiprocessing",
        num_envs=2,
        num_workers=2,
    )
    envs.reset()
    with pytest.raises(Exception, match="pickle") as raised:
        envs.step(np.zeros(2, np.int32))
    assert "_worker_main" in str(raised.value.__cause__)  # the worker's traceback came along
    envs.close()

    created = []

    def creator(buf=None):
        created.append(1)
        if len(created) > 1:  # the driver env in the main process is the first call
            raise RuntimeError("cannot build this env in a worker")
        return counter(buf)

    with pytest.raises(RuntimeError, match="cannot build this env"):
        vector.make(creator, backend="multiprocessing", num_envs=2, num_workers=2)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("pool", [False, True])
def test_sigkilled_worker_is_detected(pool):
    envs = vector.make(
        functools.partial(counter, length=1000),
        backend="multiprocessing",
        num_envs=4,
        num_workers=2,
        batch_size=2 if pool else None,
    )
    envs.async_reset(seed=0)
    envs.recv()
    os.kill(envs.processes[1].pid, signal.SIGKILL)
    with pytest.raises(WorkerDiedError, match=r"worker 1 .*SIGKILL"):
        while True:  # a pool goes on with worker 0 until the periodic liveness check sees worker 1
            envs.send(np.zeros(envs.agents_per_batch, np.int32))
            envs.recv()
    envs.close()
    assert not any(process.is_alive() for process in envs.processes)


CHILD_SCRIPT = textwrap.dedent(
    """
    import functools, os, signal, sys
    sys.path.insert(0, {tests!r})
    from pufferlib import vector
    from test_vector import counter
    creator = functools.partial(counter, length=5, hang_at=2, hanging=(2, 3))
    envs = vector.make(creator, backend="multiprocessing", num_envs=4, num_workers=2)
    envs.reset(seed=0)
    envs.step([0, 0, 0, 0])
    print(" ".join(str(process.pid) for process in envs.processes), flush=True)
    if sys.argv[1] == "kill-main":
        os.kill(os.getpid(), signal.SIGKILL)
    if sys.argv[1].endswith("-while-hung"):
        envs.send([0, 0, 0, 0])  # worker 1's envs hang in this step
        envs.recv(timeout=float("inf"))  # blocks: the test SIGKILLs this process meanwhile
    if sys.argv[1] == "close":
        envs.close()
    # "exit": the interpreter exits with the vector env still open
    """
)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def shared_memory_entries():
    return set(os.listdir("/dev/shm"))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("ending", ["close", "exit", "kill-main", "kill-main-while-hung", "term-main-while-hung"])
def test_no_process_or_shared_memory_outlives_the_vector_env(ending):
    before = shared_memory_entries()
    script = CHILD_SCRIPT.format(tests=str(ROOT / "tests"))
    if ending.endswith("-while-hung"):
        # Killed from outside once worker 1 is stuck in its env, where no liveness check runs;
        # SIGTERM's default action, like SIGKILL, runs no cleanup in the main process.
        child = subprocess.Popen([sys.executable, "-c", script, ending], stdout=subprocess.PIPE, text=True)
        pids = [int(pid) for pid in child.stdout.readline().split()]
        time.sleep(1.0)
        assert alive(pids[1])
        sent = signal.SIGKILL if ending.startswith("kill") else signal.SIGTERM
        child.send_signal(sent)
        assert child.wait(timeout=10) == -sent
    else:
        result = subprocess.run([sys.executable, "-c", script, ending], capture_output=True, text=True, timeout=50)
        assert result.returncode == (-signal.SIGKILL if ending == "kill-main" else 0), result.stderr
        pids = [int(pid) for pid in result.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in pids)
    leaked = {name for name in shared_memory_entries() - before if name.startswith(("sem.mp", "psm_", "pym-"))}
    assert not leaked


# Ray -----------------------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.timeout(240)
@pytest.mark.skipif(IN_RAY_NAMESPACE, reason="this is the outer runner")
def test_ray_in_a_private_network_namespace():
    run_ray_tests_privately(__file__, "-k ray_", passed=3, timeout=230)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(autouse=IN_RAY_NAMESPACE)
def envs_by_value():
    """Ray workers cannot import this test module: send its envs and creators by value."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.fixture
def ray_cluster():
    """A head node and a worker node of one CPU each, started with `ray start`, on loopback."""
    import ray

    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    port = free_port()
    common = [
        "--block",
        "--node-ip-address=127.0.0.1",
        "--num-cpus=1",
        "--object-store-memory=100000000",
        "--disable-usage-stats",
    ]
    ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
    nodes = []

    def start(arguments, log_name):
        log = open(os.path.join(temp_dir, log_name), "w")
        # Own session per node: stopping it is one signal to its process group, no name lookups.
        nodes.append(
            subprocess.Popen(
                [ray_cli, "start", *arguments, *common], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            with open(log.name) as text:
                if "block forever" in text.read():
                    return
            assert nodes[-1].poll() is None, open(log.name).read()
            time.sleep(0.2)
        raise TimeoutError(open(log.name).read())

    try:
        start(["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={temp_dir}"], "head.log")
        start([f"--address=127.0.0.1:{port}"], "worker.log")
        ray.init(address=f"127.0.0.1:{port}", log_to_driver=False)
        yield ray
    finally:
        ray.shutdown()
        # Each node is its own process group (gcs, raylet, agents): SIGTERM lets them shut down,
        # SIGKILL after a short grace ends whatever ignored it.
        for node in reversed(nodes):
            try:
                os.killpg(node.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        time.sleep(2)
        for node in reversed(nodes):
            try:
                os.killpg(node.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            node.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.mark.ray
@pytest.mark.timeout(180)
@pytest.mark.skipif(not IN_RAY_NAMESPACE, reason="run by test_ray_in_a_private_network_namespace")
def test_ray_cluster_matches_serial(ray_cluster):
    for creator, num_envs in (CREATORS["cartpole"], CREATORS["squared_native"]):
        envs = vector.make(creator, backend="Ray", num_envs=num_envs, num_workers=2)
        assert len(set(envs.node_ids())) == 2  # one actor on each node of the cluster
        assert_same_rollouts(rollout(vector.make(creator, backend="Serial", num_envs=num_envs), 40), rollout(envs, 40))

    pool = vector.make(
        functools.partial(counter, length=1000), backend="ray", num_envs=8, num_workers=2, batch_size=4, seed=10
    )
    pool.async_reset()
    sent = np.zeros(8, dtype=int)
    for _ in range(10):
        observations, _, _, _, _, env_ids, _ = pool.recv()
        assert observations[:, 0].tolist() == (10 + env_ids).tolist()
        assert observations[:, 1].tolist() == sent[env_ids].tolist()
        pool.send(np.zeros(4, np.int32))
        sent[env_ids] += 1
    pool.close()

    failing = vector.make(functools.partial(counter, fail_at=2), backend="ray", num_envs=2, num_workers=2)
    failing.reset()
    failing.step(np.zeros(2, np.int32))
    with pytest.raises(ValueError, match="failed on step 2"):
        failing.step(np.zeros(2, np.int32))
    failing.close()


@pytest.mark.ray
@pytest.mark.timeout(120)
@pytest.mark.skipif(not IN_RAY_NAMESPACE, reason="run by test_ray_in_a_private_network_namespace")
def test_ray_local_init_matches_serial():
    import ray

    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
    try:
        creator, num_envs = CREATORS["tictactoe_padded"]
        reference = rollout(vector.make(creator, backend="serial", num_envs=num_envs), 40)
        assert_same_rollouts(
            reference, rollout(vector.make(creator, backend="ray", num_envs=num_envs, num_workers=2), 40)
        )
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.mark.ray
@pytest.mark.timeout(120)
@pytest.mark.skipif(not IN_RAY_NAMESPACE, reason="run by test_ray_in_a_private_network_namespace")
def test_ray_hung_actor_is_killed_after_the_timeout():
    import ray

    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
    try:
        envs = vector.make(
            functools.partial(counter, length=1000, hang_at=2, hanging=(2, 3)),
            backend="ray",
            num_envs=4,
            num_workers=2,
            timeout=1.0,
        )
        envs.reset(seed=0)
        envs.step(np.zeros(4, np.int32))
        with pytest.raises(WorkerTimeoutError, match=r"worker 1 \(envs 2..3\) did not finish its step within 1 s"):
            envs.step(np.zeros(4, np.int32))
        envs.close()
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
