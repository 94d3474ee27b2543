"""Vectorization: step many PufferEnvs (emulated or native) as one batch, in-process or in parallel.

``make(env_creator, backend=..., num_envs=..., num_workers=..., batch_size=...)`` builds a vector
env. Every backend has the same surface:

- synchronous ``reset(seed) -> (obs, infos)`` and ``step(actions) -> (obs, rewards, terminals,
  truncations, infos)`` over all envs (needs ``batch_size == num_envs``);
- asynchronous ``async_reset(seed)``, ``send(actions)``, ``recv() -> (obs, rewards, terminals,
  truncations, infos, env_ids, masks)``: with ``batch_size < num_envs`` this is an EnvPool-style
  pool, where ``recv`` returns the first workers ready and ``send`` acts for exactly those.

Envs are grouped into workers (``num_envs / num_workers`` envs each) and batches are made of whole
workers. Rows of the returned arrays are agents (an env may hold several); ``env_ids`` are their
indices in the full buffers. Returned arrays are views of the buffers when the batch is one
contiguous run of workers (always so with ``zero_copy=True``), valid until the next ``send`` to
those workers.

``env_creator(*env_args, buf=..., **env_kwargs)`` must return a PufferEnv writing the given
buffers: an emulated env (``pufferlib.emulation``) or a native one. A creator that takes a
``num_envs`` parameter (Ocean envs, ``ocean.make``) is *batched*: each worker calls it once with
``num_envs=envs_per_worker`` and the env steps them all in C; other creators are called once per
env. Env ``i`` is reset with ``seed + i``, so streams match across backends and worker counts.

Backends: ``Serial`` (in-process; debugging, cheap envs), ``Native`` (batched envs in-process, one
env object per batch, stepped off the caller's thread when there are several),
``Multiprocessing`` (one shared-memory buffer, workers woken through semaphores, infos through
pipes), ``Ray`` (one actor per worker; several machines).

Faults: ``send`` checks every batch of actions (dtype and range: ``ValueError`` naming the env and
worker); each env write checks its observation's shapes; a worker that takes longer than
``timeout`` seconds for one command is killed and reported (``WorkerTimeoutError``, with its env
ids); a worker that raises or dies is reported with its traceback or exit signal.
"""

import collections
import ctypes
import functools
import inspect
import multiprocessing
import os
import pickle
import signal
import sys
import time
import traceback
import weakref
from abc import ABC, abstractmethod
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures

import cloudpickle
import numpy as np

from pufferlib.environment import BUFFER_NAMES, PufferEnv, allocate_buffers, joint_space
from pufferlib.exceptions import APIUsageError
from pufferlib.spaces import ActionBounds

# Worker commands and results, stored in the shared ``worker_states`` array.
IDLE, STEP, RESET, RENDER, CLOSE, DONE, FAILED = range(7)
COMMAND_NAMES = {STEP: "step", RESET: "reset", RENDER: "render", IDLE: "env creation"}

# How often a blocked wait wakes to check that the processes it waits on are alive. A SIGKILLed
# worker (or a dead main process, seen from a worker) is noticed within this many seconds.
LIVENESS_INTERVAL_S = 0.25

# Non-blocking polls of a semaphore before blocking on it (a few hundred microseconds). Polling
# pays only when every process has a core of its own. When processes outnumber cores, a polling
# process steals the core the awaited one needs, so waits then block at once. Measured by
# scripts/bench_vector.py --spin (BENCHMARKS.md, vectorization).
SPIN_POLLS = 2000

ALIGNMENT = 64

# Seconds a worker may take for one command (creating its envs, a reset, a step) by default.
DEFAULT_TIMEOUT_S = 60.0
# The least a Ray actor is given to start: a new process and its imports, before its env creation
# can be timed, and slower than any env on a loaded machine.
RAY_ACTOR_START_S = 20.0

# linux/prctl.h
PR_SET_PDEATHSIG = 1


class WorkerError(RuntimeError):
    """An env raised in a worker and its exception could not be sent back as it was."""


class WorkerDiedError(RuntimeError):
    """A worker process died (killed, crashed, or out of memory) without reporting an error."""


class WorkerTimeoutError(TimeoutError):
    """A worker took longer than the timeout for one command; it was killed.

    ``worker`` is its index and ``env_ids`` the envs it ran.
    """

    def __init__(self, message, worker, env_ids):
        super().__init__(message)
        self.worker = worker
        self.env_ids = env_ids


class RemoteTraceback(Exception):
    """Carries a worker's formatted traceback; chained as the cause of the re-raised exception."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text

    def __str__(self):
        return f'\n"""\n{self.text}"""'


class _Pickled:
    """Sends creators through cloudpickle, so lambdas and closures work with any start method."""

    def __init__(self, value):
        self.value = value

    def __getstate__(self):
        return cloudpickle.dumps(self.value)

    def __setstate__(self, payload):
        self.value = pickle.loads(payload)


def accepts_num_envs(env_creator):
    """True for batched creators: those with a ``num_envs`` parameter (Ocean envs, ocean.make)."""
    try:
        parameters = inspect.signature(env_creator).parameters
    except (TypeError, ValueError):
        return False
    parameter = parameters.get("num_envs")
    return parameter is not None and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)


def create_env(env_creator, env_args, env_kwargs, buf, num_envs=None):
    """Calls the creator (with num_envs for batched ones) and checks it made a PufferEnv."""
    kwargs = dict(env_kwargs)
    if num_envs is not None:
        kwargs["num_envs"] = num_envs
    try:
        env = env_creator(*env_args, buf=buf, **kwargs)
    except TypeError as error:
        if "buf" in str(error):
            raise APIUsageError(
                f"env_creator {env_creator!r} must accept a buf= keyword and return a PufferEnv; wrap "
                "Gymnasium/PettingZoo envs with pufferlib.emulation (see pufferlib.environments)"
            ) from error
        raise
    if not isinstance(env, PufferEnv):
        raise APIUsageError(
            f"env_creator returned {type(env).__name__}, not a PufferEnv; wrap Gymnasium envs with "
            "pufferlib.emulation.GymnasiumPufferEnv and PettingZoo envs with PettingZooPufferEnv"
        )
    return env


class WorkerEnvs:
    """The envs of one worker, bound to its rows of the buffers, and how to step and reset them."""

    def __init__(
        self, env_creator, env_args, env_kwargs, batched, envs_per_worker, agents_per_env, buffers, index=0
    ):
        self.index = index
        self.envs_per_worker = envs_per_worker
        self.first_env = index * envs_per_worker
        self.batched = batched
        if batched:
            self.envs = [create_env(env_creator, env_args, env_kwargs, buffers, num_envs=envs_per_worker)]
        else:
            self.envs = []
            for k in range(envs_per_worker):
                rows = slice(k * agents_per_env, (k + 1) * agents_per_env)
                slices = {name: buffers[name][rows] for name in BUFFER_NAMES}
                self.envs.append(create_env(env_creator, env_args, env_kwargs, slices))
        # Emulated envs follow the Gymnasium/PettingZoo episode protocol and expose batch_step,
        # which resets finished episodes; native envs reset themselves inside step.
        self.steppers = [getattr(env, "batch_step", None) or _native_stepper(env) for env in self.envs]

    def step(self):
        infos = []
        for local, stepper in enumerate(self.steppers):
            try:
                infos.extend(stepper())
            except Exception as error:
                self._name_env(error, local)
                raise
        return infos

    def reset(self, seed):
        """Env k of this worker gets seed + k (a batched env seeds its own envs the same way)."""
        infos = []
        for k, env in enumerate(self.envs):
            try:
                if hasattr(env, "batch_reset"):
                    infos.extend(env.batch_reset(seed + k))
                else:
                    infos.extend(env.reset(seed + k)[1])
            except Exception as error:
                self._name_env(error, k)
                raise
        return infos

    def _name_env(self, error, local):
        """Notes on ``error`` which env (or, for a batched env object, which envs) raised it."""
        if self.batched:
            where = f"envs {self.first_env}..{self.first_env + self.envs_per_worker - 1}"
        else:
            where = f"env {self.first_env + local}"
        if hasattr(error, "add_note"):  # Python >= 3.11
            error.add_note(f"Raised by {where} of worker {self.index}.")

    def render(self, local_index):
        if self.batched:
            return self.envs[0].render(local_index)
        return self.envs[local_index].render()

    def close(self):
        for env in self.envs:
            env.close()


class WorkerSpec:
    """What a worker needs to build its envs; processes and actors receive it pickled (``_Pickled``)."""

    def __init__(self, env_creator, env_args, env_kwargs, batched, envs_per_worker, agents_per_env):
        self.env_creator, self.env_args, self.env_kwargs = env_creator, env_args, env_kwargs
        self.batched, self.envs_per_worker, self.agents_per_env = batched, envs_per_worker, agents_per_env
        self.agents = envs_per_worker * agents_per_env

    def build(self, buffers, index):
        """Worker ``index``'s envs, bound to ``buffers`` (its rows of each buffer)."""
        return WorkerEnvs(
            self.env_creator, self.env_args, self.env_kwargs, self.batched, self.envs_per_worker,
            self.agents_per_env, buffers, index,
        )


def _native_stepper(env):
    def step():
        return env.step(env.actions)[4]

    return step


def _cpu_count():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _default_num_workers(num_envs, batch_size, limit):
    """The most workers, up to ``limit``, that split num_envs evenly into whole-worker batches."""
    valid = [w for w in range(1, num_envs + 1) if num_envs % w == 0 and batch_size % (num_envs // w) == 0]
    fitting = [w for w in valid if w <= limit]
    return max(fitting) if fitting else min(valid)


class VecEnv(ABC):
    """Shared logic of the backends: layout, argument checks and the pool bookkeeping.

    A subclass starts commands on workers (``_launch``) and waits until at least one finishes
    (``_wait``, returning ``(worker, infos)`` pairs with the worker's rows already in the
    buffers, and calling ``_check_overdue`` while it waits). Everything else, sync and async, is
    here.
    """

    default_workers_limit = None
    # True where every recv returns the agents of one fixed run of contiguous workers, the runs in
    # turn (the in-process backends): a trainer may then prepare one step per run.
    fixed_batches = False

    def __init__(
        self,
        env_creator,
        env_args=None,
        env_kwargs=None,
        num_envs=1,
        num_workers=None,
        batch_size=None,
        zero_copy=True,
        seed=0,
        timeout=DEFAULT_TIMEOUT_S,
    ):
        if not callable(env_creator):
            raise APIUsageError(f"env_creator must be callable (a class or function), got {env_creator!r}")
        if env_kwargs is not None and "num_envs" in env_kwargs:
            raise APIUsageError(
                "pass num_envs to vector.make, not in env_kwargs: batched creators get num_envs=envs per worker"
            )
        if env_kwargs is not None and "buf" in env_kwargs:
            raise APIUsageError("env_kwargs must not hold buf: each backend passes its own buffer slices")
        self.env_creator = env_creator
        self.env_args = tuple(env_args or ())
        self.env_kwargs = dict(env_kwargs or {})
        self.batched = accepts_num_envs(env_creator)
        self.num_envs = _positive_int("num_envs", num_envs)
        self.batch_size = self.num_envs if batch_size is None else _positive_int("batch_size", batch_size)
        if self.num_envs % self.batch_size:
            raise APIUsageError(f"num_envs ({self.num_envs}) must be a multiple of batch_size ({self.batch_size})")
        if num_workers is None:
            num_workers = _default_num_workers(
                self.num_envs, self.batch_size, self.default_workers_limit or _cpu_count()
            )
        self.num_workers = _positive_int("num_workers", num_workers)
        if self.num_envs % self.num_workers:
            raise APIUsageError(
                f"num_envs ({self.num_envs}) must be a multiple of num_workers ({self.num_workers}): "
                "every worker runs the same number of envs"
            )
        self.envs_per_worker = self.num_envs // self.num_workers
        if self.batch_size % self.envs_per_worker:
            raise APIUsageError(
                f"batch_size ({self.batch_size}) must be a multiple of the envs per worker "
                f"({self.envs_per_worker} = num_envs / num_workers): batches are made of whole workers"
            )
        self.workers_per_batch = self.batch_size // self.envs_per_worker
        self.zero_copy = bool(zero_copy)
        self.seed = seed
        self.timeout = _timeout(timeout)
        # When each worker got its current command (IDLE: its envs being created), for timeouts.
        self.launched_at = [time.monotonic()] * self.num_workers
        self.commands = [IDLE] * self.num_workers

        # The driver env (never stepped) tells the spaces and agents per env before any buffer
        # exists; a batched creator builds it with one env.
        self.driver_env = create_env(
            self.env_creator, self.env_args, self.env_kwargs, None, 1 if self.batched else None
        )
        self.single_observation_space = self.driver_env.single_observation_space
        self.single_action_space = self.driver_env.single_action_space
        self.emulated = self.driver_env.emulated
        self.agents_per_env = int(self.driver_env.num_agents)
        self.num_agents = self.num_envs * self.agents_per_env
        self.agents_per_worker = self.envs_per_worker * self.agents_per_env
        self.agents_per_batch = self.batch_size * self.agents_per_env
        self.observation_space = joint_space(self.single_observation_space, self.agents_per_batch)
        self.action_space = joint_space(self.single_action_space, self.agents_per_batch)
        self.action_bounds = ActionBounds(self.single_action_space)
        self.agent_ids = np.arange(self.num_agents)

        self.ready = []
        self.is_ready = np.zeros(self.num_workers, dtype=bool)
        self.pending = set()
        self.worker_infos = [[] for _ in range(self.num_workers)]
        self.batch_workers = None
        self.batch_rows = None
        self.started = False
        self.closed = False
        self.failure = None

    def _bind_buffers(self, buffers):
        """Adopts the full buffers, and the gather targets for batches of scattered workers."""
        self.buffers = buffers
        for name in BUFFER_NAMES:
            setattr(self, name, buffers[name])
        self.run_views = {}
        if not self.zero_copy and self.workers_per_batch < self.num_workers:
            self.gathered = allocate_buffers(
                self.single_observation_space, self.single_action_space, self.agents_per_batch
            )
            self.gathered["env_ids"] = np.zeros(self.agents_per_batch, dtype=self.agent_ids.dtype)

    def worker_rows(self, worker):
        return slice(worker * self.agents_per_worker, (worker + 1) * self.agents_per_worker)

    def worker_spec(self):
        return WorkerSpec(
            self.env_creator, self.env_args, self.env_kwargs, self.batched, self.envs_per_worker, self.agents_per_env
        )

    # Guards ----------------------------------------------------------------------------------

    def _check_usable(self):
        if self.closed:
            raise APIUsageError(f"{type(self).__name__}: the vector env is closed")
        if self.failure is not None:
            raise APIUsageError(
                f"{type(self).__name__}: unusable after an earlier failure ({self.failure}); close() it and make a new one"
            )

    def _failing(self, error):
        self.failure = f"{type(error).__name__}: {error}".splitlines()[0]

    # Timeouts --------------------------------------------------------------------------------

    def _start(self, workers, command, seed=None):
        now = time.monotonic()
        for worker in workers:
            self.launched_at[worker] = now
            self.commands[worker] = command
        self._launch(workers, command, seed)

    def _check_overdue(self, timeout):
        """Kills and reports the first pending worker whose command has run longer than ``timeout``.

        A worker that finished but is not collected yet (a pool whose caller spent longer than the
        timeout between recv calls) is not overdue.
        """
        if timeout is None:
            return
        now = time.monotonic()
        for worker in self.pending:
            if now - self.launched_at[worker] > timeout and self._running(worker):
                self._kill(worker)
                first = worker * self.envs_per_worker
                env_ids = list(range(first, first + self.envs_per_worker))
                raise WorkerTimeoutError(
                    f"{self._describe(worker)} did not finish its {COMMAND_NAMES[self.commands[worker]]} within "
                    f"{timeout:g} s, so it was killed; its envs {env_ids} hang or are too slow for the timeout "
                    "(vector.make(timeout=...), recv(timeout=...)). close() this vector env and make a new one",
                    worker,
                    env_ids,
                )

    def _describe(self, worker):
        first = worker * self.envs_per_worker
        return f"worker {worker} (envs {first}..{first + self.envs_per_worker - 1})"

    def _running(self, worker):
        """Whether a pending worker is still executing its command (out-of-process backends)."""
        raise NotImplementedError(f"{type(self).__name__} runs envs in this process, where no timeout applies")

    def _kill(self, worker):
        """Ends a worker that overran its timeout (out-of-process backends)."""
        raise NotImplementedError(f"{type(self).__name__} runs envs in this process, where no timeout applies")

    # Async API -------------------------------------------------------------------------------

    def async_reset(self, seed=None):
        """Resets every env (env i with seed + i); ``recv`` then returns the first batch."""
        self._check_usable()
        seed = self.seed if seed is None else seed
        try:
            while self.pending:  # results of steps still in flight belong to the old episodes
                for worker, _ in self._wait(self.timeout):
                    self.pending.discard(worker)
            self.ready = []
            self.is_ready[:] = False
            self.worker_infos = [[] for _ in range(self.num_workers)]
            self.batch_workers = None
            self._start(range(self.num_workers), RESET, seed)
        except BaseException as error:  # Ctrl-C included: the bookkeeping may be half done
            self._failing(error)
            raise
        self.pending = set(range(self.num_workers))
        self.started = True

    def recv(self, timeout=None):
        """The next batch: (obs, rewards, terminals, truncations, infos, env_ids, masks).

        ``timeout``: seconds a worker may take for its command, for this call (default: the vector
        env's ``timeout``; ``math.inf`` waits without limit). A worker past it is killed and
        ``WorkerTimeoutError`` raised.
        """
        self._check_usable()
        timeout = self.timeout if timeout is None else _timeout(timeout)
        if not self.started:
            raise APIUsageError(f"{type(self).__name__}: call reset() or async_reset() before recv()")
        if self.batch_workers is not None:
            raise APIUsageError(f"{type(self).__name__}: recv() called twice; send() actions for the last batch first")
        try:
            workers = self._next_batch()
            while workers is None:
                for worker, infos in self._wait(timeout):
                    self._mark_ready(worker, infos)
                workers = self._next_batch()
        except BaseException as error:  # Ctrl-C included: a completion may be half collected
            self._failing(error)
            raise
        for worker in workers:
            self.is_ready[worker] = False
            self.ready.remove(worker)
        infos = []
        for worker in workers:
            if self.worker_infos[worker]:
                infos.extend(self.worker_infos[worker])
                self.worker_infos[worker] = []
        self.batch_workers = workers
        first = workers[0]
        if workers == list(range(first, first + len(workers))):
            self.batch_rows, batch = self._run_views(first, len(workers))
        else:
            rows = np.concatenate([self.agent_ids[self.worker_rows(w)] for w in workers])
            batch = self.gathered
            for name in ("observations", "rewards", "terminals", "truncations", "masks", "env_ids"):
                source = self.agent_ids if name == "env_ids" else self.buffers[name]
                np.take(source, rows, axis=0, out=batch[name])
            self.batch_rows = rows
        return (
            batch["observations"],
            batch["rewards"],
            batch["terminals"],
            batch["truncations"],
            infos,
            batch["env_ids"],
            batch["masks"],
        )

    def _run_views(self, first, count):
        """(rows, views of every returned buffer) for workers first..first+count-1, built once."""
        key = (first, count)
        if key not in self.run_views:
            rows = slice(first * self.agents_per_worker, (first + count) * self.agents_per_worker)
            views = {
                name: self.buffers[name][rows]
                for name in ("observations", "rewards", "terminals", "truncations", "masks")
            }
            views["env_ids"] = self.agent_ids[rows]
            self.run_views[key] = rows, views
        return self.run_views[key]

    def send(self, actions):
        """Actions for the batch the last ``recv`` returned, one row per agent, in its order."""
        self._check_usable()
        if self.batch_workers is None:
            raise APIUsageError(f"{type(self).__name__}: send() needs a batch from recv() (call reset() first)")
        actions = np.asarray(actions)
        expected = (self.agents_per_batch, *self.actions.shape[1:])
        if actions.shape != expected:
            raise ValueError(
                f"{type(self).__name__}: actions must have shape {expected} (one row per agent of the batch), "
                f"got shape {actions.shape}"
            )
        problem = self.action_bounds.dtype_problem(actions)
        if problem:
            described = ", ".join(self._describe(worker) for worker in self.batch_workers)
            raise ValueError(f"{type(self).__name__}: {problem}; sent to {described}")
        if self.action_bounds.out_of_range(actions):
            raise ValueError(self._describe_bad_actions(actions))
        self.actions[self.batch_rows] = actions
        workers = self.batch_workers
        self.batch_workers = None
        try:
            self._start(workers, STEP)
        except BaseException as error:
            self._failing(error)
            raise
        self.pending.update(workers)

    def _describe_bad_actions(self, actions):
        rows = self.action_bounds.bad_rows(actions)
        row = int(rows[0])
        agent = int(self.agent_ids[self.batch_rows][row])
        env = agent // self.agents_per_env
        more = f"; {len(rows) - 1} more rows of the batch are outside too" if len(rows) > 1 else ""
        return (
            f"{type(self).__name__}: action {actions[row].tolist()} for env {env} (worker "
            f"{env // self.envs_per_worker}, row {row} of the batch) is outside the action space "
            f"{self.single_action_space}{more}"
        )

    def _mark_ready(self, worker, infos):
        self.pending.discard(worker)
        self.ready.append(worker)
        self.is_ready[worker] = True
        self.worker_infos[worker] = infos

    def _next_batch(self):
        """Workers for the next batch, or None until enough of them are ready."""
        per_batch = self.workers_per_batch
        if per_batch == self.num_workers:
            return list(range(self.num_workers)) if len(self.ready) == self.num_workers else None
        if self.zero_copy:
            # The first aligned run of per_batch workers that are all ready: a view, no copy.
            for worker in self.ready:
                first = worker - worker % per_batch
                if self.is_ready[first : first + per_batch].all():
                    return list(range(first, first + per_batch))
            return None
        if len(self.ready) >= per_batch:
            return [self.ready[i] for i in range(per_batch)]
        return None

    # Sync API --------------------------------------------------------------------------------

    def reset(self, seed=None):
        """Resets every env (env i with seed + i); returns (obs, infos)."""
        self._check_sync("reset")
        self.async_reset(seed)
        observations, _, _, _, infos, _, _ = self.recv()
        return observations, infos

    def step(self, actions):
        """Steps every env; returns (obs, rewards, terminals, truncations, infos)."""
        self._check_sync("step")
        self.send(actions)
        observations, rewards, terminals, truncations, infos, _, _ = self.recv()
        return observations, rewards, terminals, truncations, infos

    def _check_sync(self, method):
        if self.batch_size != self.num_envs:
            raise APIUsageError(
                f"{type(self).__name__}: {method}() steps every env, but batch_size ({self.batch_size}) < "
                f"num_envs ({self.num_envs}); use async_reset()/send()/recv() for pools"
            )

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.driver_env.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @abstractmethod
    def _launch(self, workers, command, seed=None):
        """Starts ``command`` (STEP or RESET, with ``seed``) on each of ``workers``."""

    @abstractmethod
    def _wait(self, timeout):
        """Blocks until at least one started worker finishes; returns [(worker, infos)].

        Calls ``_check_overdue(timeout)`` at least every ``LIVENESS_INTERVAL_S`` while it blocks.
        """


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise APIUsageError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _timeout(value):
    """None (no limit) or a positive number of seconds."""
    if value is None or value == float("inf"):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or value <= 0:
        raise APIUsageError(f"timeout must be a positive number of seconds or None, got {value!r}")
    return float(value)


class Serial(VecEnv):
    """Every env in this process, stepped one after the other. For debugging and cheap envs.

    Envs run in the caller's thread, so ``timeout`` cannot interrupt them and is ignored.
    """

    default_workers_limit = 1
    fixed_batches = True

    def __init__(
        self,
        env_creator,
        env_args=None,
        env_kwargs=None,
        num_envs=1,
        num_workers=None,
        batch_size=None,
        zero_copy=True,
        seed=0,
        timeout=DEFAULT_TIMEOUT_S,
        pin_memory=False,
    ):
        if num_workers is None and batch_size is not None:
            # One worker per batch: the fewest groups, so the least bookkeeping per step.
            num_workers = num_envs // batch_size if num_envs % batch_size == 0 else None
        super().__init__(
            env_creator, env_args, env_kwargs, num_envs, num_workers, batch_size, zero_copy, seed, timeout
        )
        space = self.single_observation_space, self.single_action_space
        self._bind_buffers(allocate_buffers(*space, self.num_agents, pin_memory=pin_memory))
        spec = self.worker_spec()
        self.workers = [
            spec.build({name: self.buffers[name][self.worker_rows(w)] for name in BUFFER_NAMES}, w)
            for w in range(self.num_workers)
        ]
        self.envs = [env for worker in self.workers for env in worker.envs]
        self.completed = []

    def _launch(self, workers, command, seed=None):
        for worker in workers:
            if command == RESET:
                infos = self.workers[worker].reset(seed + worker * self.envs_per_worker)
            else:
                infos = self.workers[worker].step()
            self.completed.append((worker, infos))

    def _wait(self, timeout):
        completed, self.completed = self.completed, []
        return completed

    def render(self, env_index=0):
        worker, local = divmod(env_index, self.envs_per_worker)
        return self.workers[worker].render(local)

    def close(self):
        if self.closed:
            return
        for worker in self.workers:
            worker.close()
        super().close()


class Native(Serial):
    """Batched envs (Ocean envs) in this process, each C vecenv stepping its envs itself.

    With ``batch_size == num_envs`` there is one env object, stepped in the caller's thread. With
    ``batch_size < num_envs`` there is one env object per batch, stepped off the caller's thread
    (the C step releases the GIL): ``send`` returns at once, so the caller computes one batch's
    actions while the others step. ``recv`` returns batches in the order they were sent, so a run
    is the same from the same seed whatever the threads' timing.

    An env kwarg ``num_threads`` above 1 is the whole vector env's, and every env object gets all
    of them: one stepping thread steps the batches one after another, in the order they were sent,
    so the env's cores stay on one batch at a time and go straight on to the next while the caller
    acts on the last. Envs stepping on one thread step their batches side by side instead, a
    thread each.
    """

    def __init__(
        self,
        env_creator,
        env_args=None,
        env_kwargs=None,
        num_envs=1,
        num_workers=None,
        batch_size=None,
        zero_copy=True,
        seed=0,
        timeout=DEFAULT_TIMEOUT_S,
        pin_memory=False,
    ):
        if not accepts_num_envs(env_creator):
            raise APIUsageError(
                "the native backend needs a batched env_creator (one with a num_envs parameter, like "
                "ocean.make); use Serial, Multiprocessing or Ray for other envs"
            )
        divides = all(isinstance(n, int) and n > 0 for n in (num_envs, batch_size)) and num_envs % batch_size == 0
        batches = num_envs // batch_size if divides else 1
        if num_workers not in (None, batches):
            raise APIUsageError(
                f"the native backend runs one env object per batch: num_workers must be num_envs / batch_size "
                f"({batches}), got {num_workers}"
            )
        super().__init__(
            env_creator, env_args, env_kwargs, num_envs, batches, batch_size, zero_copy, seed, timeout, pin_memory
        )
        # Threads stepping env objects besides the caller's.
        if self.num_workers == 1:
            self.stepping_threads = 0
        elif (env_kwargs or {}).get("num_threads", 1) > 1:
            self.stepping_threads = 1  # each env object in turn, on all the env's threads
        else:
            self.stepping_threads = self.num_workers
        self.threads = ThreadPoolExecutor(self.stepping_threads, "puffer-native") if self.stepping_threads else None
        # (worker, future) in the order the commands were sent; without threads the future holds
        # the result of a command run at once, in the caller's thread
        self.in_flight = collections.deque()

    def _launch(self, workers, command, seed=None):
        for worker in workers:
            if command == RESET:
                call = functools.partial(self.workers[worker].reset, seed + worker * self.envs_per_worker)
            else:
                call = self.workers[worker].step
            self.in_flight.append((worker, self.threads.submit(call) if self.threads else finished(call())))

    def _wait(self, timeout):
        worker, future = self.in_flight.popleft()
        return [(worker, future.result())]

    def get_state(self):
        """The envs' state between a ``send`` and the ``recv`` of its results (a checkpoint's
        moment), or None when the envs cannot save their state."""
        envs = [worker.envs[0] for worker in self.workers]
        if not hasattr(envs[0], "get_state") or self.ready or self.pending != set(range(self.num_workers)):
            return None
        results = [(worker, future.result()) for worker, future in self.in_flight]
        states = [env.get_state() for env in envs]
        if len(results) != self.num_workers or any(state is None for state in states):
            return None
        return dict(envs=states, results=results)

    def set_state(self, state):
        """Restores ``get_state``'s result: the next ``recv`` returns what it would have then.
        ValueError when the state is of another layout (env objects, env counts)."""
        if "env" in state:  # a checkpoint from before batches had an env object each
            state = dict(envs=[state["env"]], results=[(0, state["infos"])])
        if len(state["envs"]) != self.num_workers:
            raise ValueError(f"the state holds {len(state['envs'])} env objects, this vector env {self.num_workers}")
        # A command still running in its thread (the reset a new vector env starts with) would
        # write over the restored envs: it finishes first, and its result is dropped.
        wait_for_futures([future for _, future in self.in_flight])
        for worker, env_state in zip(self.workers, state["envs"]):
            worker.envs[0].set_state(env_state)
        self.ready, self.is_ready[:], self.batch_workers = [], False, None
        self.worker_infos = [[] for _ in range(self.num_workers)]
        self.in_flight = collections.deque((worker, finished(infos)) for worker, infos in state["results"])
        self.pending = set(range(self.num_workers))
        self.started = True

    def close(self):
        if self.threads is not None:
            self.threads.shutdown(wait=True)  # an env must not be closed while a thread steps it
        super().close()


def finished(result):
    """A future that already holds ``result``."""
    future = Future()
    future.set_result(result)
    return future


# Multiprocessing --------------------------------------------------------------------------------


def _shared_layout(entries):
    """Byte offsets of each (name, dtype, shape) inside one shared buffer, each 64-byte aligned."""
    layout, offset = [], 0
    for name, dtype, shape in entries:
        offset = -(-offset // ALIGNMENT) * ALIGNMENT
        layout.append((name, np.dtype(dtype), tuple(shape), offset))
        offset += np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64))
    return layout, max(offset, 1)


def _shared_arrays(shared, layout):
    return {
        name: np.frombuffer(shared, dtype=dtype, count=int(np.prod(shape, dtype=np.int64)), offset=offset).reshape(
            shape
        )
        for name, dtype, shape, offset in layout
    }


def _wait_for_command(go, spin, parent):
    """Blocks until main posts ``go``; exits the process if main died meanwhile."""
    acquire = go.acquire
    for _ in range(spin):
        if acquire(False):
            return
    while not acquire(True, LIVENESS_INTERVAL_S):
        if not parent.is_alive():
            os._exit(0)


def _report_failure(index, states, done, pipe):
    text = traceback.format_exc()
    error = sys.exc_info()[1]
    try:
        payload = pickle.dumps(error)
    except Exception:
        payload = None
    states[index] = FAILED
    done.release()
    pipe.send_bytes(pickle.dumps((payload, text)))


def _die_with_parent(parent):
    """Asks Linux to SIGKILL this process when its parent dies, however the parent ends.

    The liveness check in ``_wait_for_command`` only runs between commands; this also ends a
    worker stuck inside an env. Linux sends the signal when the *thread* that started the worker
    exits, so a vector env made in a short-lived thread loses its workers with that thread.
    """
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if not parent.is_alive():  # the parent died before the request took effect
        os._exit(0)


def _worker_main(index, payload, shared, layout, go, done, pipe, spin):
    """A Multiprocessing worker: owns a few envs bound to its rows of the shared buffer."""
    parent = multiprocessing.parent_process()
    _die_with_parent(parent)
    # Ctrl-C reaches the whole process group; the main process handles it and closes workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    spec = payload.value
    arrays = _shared_arrays(shared, layout)
    rows = slice(index * spec.agents, (index + 1) * spec.agents)
    buffers = {name: arrays[name][rows] for name in BUFFER_NAMES}
    states, seeds, has_infos = arrays["worker_states"], arrays["worker_seeds"], arrays["worker_has_infos"]
    try:
        worker = spec.build(buffers, index)
    except BaseException:
        _report_failure(index, states, done, pipe)
        return
    states[index] = DONE
    done.release()
    while True:
        _wait_for_command(go, spin, parent)
        command = states[index]
        try:
            if command == STEP:
                infos = worker.step()
            elif command == RESET:
                infos = worker.reset(int(seeds[index]))
            elif command == RENDER:
                infos = [worker.render(int(seeds[index]))]
            else:
                # CLOSE, or a close() that raced a step and was overwritten by DONE: either way,
                # main posted go only to end this worker.
                break
            # Pickled before reporting DONE, so an info that cannot be sent is a worker error.
            message = pickle.dumps(infos) if infos else None
        except BaseException:
            _report_failure(index, states, done, pipe)
            break
        # Flags before the semaphore post, so main sees them as soon as it wakes; infos after
        # it, so a large info never blocks on a full pipe while main is still waiting.
        has_infos[index] = message is not None
        states[index] = DONE
        done.release()
        if message is not None:
            pipe.send_bytes(message)
    worker.close()


def _stop_workers(processes, states, go_semaphores, pipes):
    """Ends every worker: asks politely, then kills stragglers. Safe to call twice."""
    for index, process in enumerate(processes):
        if process.is_alive():
            states[index] = CLOSE
            go_semaphores[index].release()
    for process in processes:
        process.join(timeout=1.0)
        if process.is_alive():
            process.kill()
            process.join(timeout=1.0)
    for pipe in pipes:
        pipe.close()


class Multiprocessing(VecEnv):
    """Workers in processes sharing one buffer; the main process only moves flags and actions.

    Each worker steps its envs in place in one shared-memory buffer that holds every signal plus
    the per-worker command flags. Main and workers wake each other through semaphores (futexes:
    no syscall when the other side is already done), polling first only when every process has a
    core of its own. Pipes carry only infos and errors. An exception in an env re-raises here
    with the worker's traceback; a dead worker raises ``WorkerDiedError`` within
    ``LIVENESS_INTERVAL_S``; a worker past ``timeout`` is killed (``WorkerTimeoutError``); workers
    die with the main process, even inside a hung env (``PR_SET_PDEATHSIG``).

    Extra args: ``context`` (a multiprocessing context or start method name; default: the
    platform's), ``spin`` (semaphore polls before blocking; default: ``SPIN_POLLS`` when workers
    + 1 <= cores, else 0).
    """

    def __init__(
        self,
        env_creator,
        env_args=None,
        env_kwargs=None,
        num_envs=1,
        num_workers=None,
        batch_size=None,
        zero_copy=True,
        seed=0,
        timeout=DEFAULT_TIMEOUT_S,
        context=None,
        spin=None,
    ):
        super().__init__(
            env_creator, env_args, env_kwargs, num_envs, num_workers, batch_size, zero_copy, seed, timeout
        )
        if context is None or isinstance(context, str):
            context = multiprocessing.get_context(context)
        if spin is None:
            spin = SPIN_POLLS if self.num_workers + 1 <= _cpu_count() else 0
        self.spin = int(spin)
        obs_space, action_space = self.single_observation_space, self.single_action_space
        template = allocate_buffers(obs_space, action_space, 1)
        entries = [(name, template[name].dtype, (self.num_agents, *template[name].shape[1:])) for name in BUFFER_NAMES]
        entries += [
            ("worker_states", np.int32, (self.num_workers,)),
            ("worker_seeds", np.int64, (self.num_workers,)),
            ("worker_has_infos", np.int8, (self.num_workers,)),
        ]
        layout, size = _shared_layout(entries)
        # An anonymous shared mapping: nothing is named in /dev/shm, and the memory goes away with
        # the last process that maps it, however the processes end.
        self.shared = context.RawArray("B", size)
        arrays = _shared_arrays(self.shared, layout)
        # Every agent starts live, as in the buffers of the other backends (allocate_buffers): an
        # env whose agents are never padded need not write its masks.
        arrays["masks"][:] = True
        self._bind_buffers({name: arrays[name] for name in BUFFER_NAMES})
        self.states = arrays["worker_states"]
        self.seeds = arrays["worker_seeds"]
        self.has_infos = arrays["worker_has_infos"]
        self.done = context.Semaphore(0)
        self.go = [context.Semaphore(0) for _ in range(self.num_workers)]
        self.pipes = []
        self.processes = []
        payload = _Pickled(self.worker_spec())
        self.launched_at = [time.monotonic()] * self.num_workers  # env creation counts from here
        for index in range(self.num_workers):
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(
                target=_worker_main,
                args=(index, payload, self.shared, layout, self.go[index], self.done, sender, self.spin),
                name=f"puffer-worker-{index}",
                daemon=True,
            )
            process.start()
            sender.close()  # main keeps only the reading end, so a dead worker reads as EOF
            self.pipes.append(receiver)
            self.processes.append(process)
        self._finalizer = weakref.finalize(self, _stop_workers, self.processes, self.states, self.go, self.pipes)
        self.next_liveness_check = time.monotonic() + LIVENESS_INTERVAL_S
        try:
            self.pending = set(range(self.num_workers))
            while self.pending:  # each worker reports once its envs exist
                for worker, _ in self._wait(self.timeout):
                    self.pending.discard(worker)
        except BaseException:
            self.close()
            raise

    def _launch(self, workers, command, seed=None):
        states, go = self.states, self.go
        for worker in workers:
            if command == RESET:
                self.seeds[worker] = seed + worker * self.envs_per_worker
            states[worker] = command
            go[worker].release()

    def _wait(self, timeout):
        """Collects one finished worker (blocking until one finishes)."""
        # A pool keeps running on its live workers, so a dead or hung one may never be waited for
        # alone: look at every worker at least every LIVENESS_INTERVAL_S, whatever else happens.
        now = time.monotonic()
        if now >= self.next_liveness_check:
            self.next_liveness_check = now + LIVENESS_INTERVAL_S
            self._check_alive()
            self._check_overdue(timeout)
        acquire = self.done.acquire
        for _ in range(self.spin):
            if acquire(False):
                break
        else:
            while not acquire(True, LIVENESS_INTERVAL_S):
                self._check_alive()
                self._check_overdue(timeout)
        # Workers set their flag before posting, so at least one flag is up; a second one up
        # whose post is still coming is collected by that post's acquire instead. DONE and
        # FAILED are the largest states, so argmax finds one (a failure first).
        worker = int(self.states.argmax())
        state = self.states[worker]
        self.states[worker] = IDLE
        if state == FAILED:
            self._raise_worker_error(worker)
        infos = []
        if self.has_infos[worker]:
            self.has_infos[worker] = 0
            infos = pickle.loads(self._receive(worker))
        return [(worker, infos)]

    def _receive(self, worker):
        """The next message (bytes) from a worker's pipe, noticing if the worker dies first."""
        pipe = self.pipes[worker]
        while not pipe.poll(LIVENESS_INTERVAL_S):
            self._check_alive()
        try:
            return pipe.recv_bytes()
        except EOFError:
            self._check_alive()
            raise

    def _describe(self, worker):
        first = worker * self.envs_per_worker
        return f"worker {worker} (pid {self.processes[worker].pid}, envs {first}..{first + self.envs_per_worker - 1})"

    def _running(self, worker):
        return self.states[worker] not in (DONE, FAILED)  # set before the worker posts "done"

    def _kill(self, worker):
        process = self.processes[worker]
        process.kill()
        process.join(timeout=1.0)

    def _raise_worker_error(self, worker):
        payload, text = pickle.loads(self._receive(worker))
        error = None
        if payload is not None:
            try:
                error = pickle.loads(payload)
            except Exception:
                error = None
        if not isinstance(error, BaseException):
            raise WorkerError(f"{self._describe(worker)} raised:\n{text}")
        if hasattr(error, "add_note"):  # Python >= 3.11
            error.add_note(f"Raised in {self._describe(worker)}; its traceback is above.")
        raise error from RemoteTraceback(text)

    def _check_alive(self):
        for worker, process in enumerate(self.processes):
            if not process.is_alive():
                code = process.exitcode
                how = f"signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
                raise WorkerDiedError(
                    f"{self._describe(worker)} died ({how}) without reporting an error; its envs are "
                    "gone, so this vector env cannot continue: close() it and make a new one"
                )

    def render(self, env_index=0):
        """Renders env ``env_index`` in its worker (which must not be stepping)."""
        self._check_usable()
        worker, local = divmod(env_index, self.envs_per_worker)
        if worker in self.pending:
            raise APIUsageError(
                f"render(): {self._describe(worker)} is stepping; call render() after recv() returns it"
            )
        self.seeds[worker] = local
        self._start([worker], RENDER)
        self.pending.add(worker)
        while True:
            for finished, infos in self._wait(self.timeout):
                if finished == worker:
                    self.pending.discard(worker)
                    return infos[0]
                self._mark_ready(finished, infos)

    def close(self):
        """Stops every worker; no process or shared-memory segment outlives this call."""
        if self.closed:
            return
        self._finalizer()
        super().close()


# Ray ------------------------------------------------------------------------------------------


class RayWorker:
    """The actor behind one Ray worker: its envs and their own buffers."""

    def __init__(self, payload, observation_space, action_space, index):
        spec = payload.value
        self.buffers = allocate_buffers(observation_space, action_space, spec.agents)
        self.worker = spec.build(self.buffers, index)

    def _results(self, infos):
        buffers = self.buffers
        return (
            buffers["observations"],
            buffers["rewards"],
            buffers["terminals"],
            buffers["truncations"],
            buffers["masks"],
            infos,
        )

    def reset(self, seed):
        return self._results(self.worker.reset(seed))

    def step(self, actions):
        self.buffers["actions"][:] = actions
        return self._results(self.worker.step())

    def render(self, local_index):
        return self.worker.render(local_index)

    def node_id(self):
        """The Ray node this actor runs on (to check placement across machines)."""
        import ray

        return ray.get_runtime_context().get_node_id()

    def close(self):
        self.worker.close()


class Ray(VecEnv):
    """One Ray actor per worker; the backend for more than one machine.

    Connects to the cluster ``ray.init`` was called for, or starts a local one (shut down again
    by ``close``). Extra arg ``actor_options`` (passed to ``.options()``; default: 1 CPU per actor,
    spread over the nodes). Errors in envs re-raise here with the actor's traceback.
    """

    def __init__(
        self,
        env_creator,
        env_args=None,
        env_kwargs=None,
        num_envs=1,
        num_workers=None,
        batch_size=None,
        zero_copy=True,
        seed=0,
        timeout=DEFAULT_TIMEOUT_S,
        actor_options=None,
    ):
        try:
            import ray
        except ImportError as error:
            raise APIUsageError("the Ray backend needs ray: pip install -r requirements-envs.txt") from error
        super().__init__(
            env_creator, env_args, env_kwargs, num_envs, num_workers, batch_size, zero_copy, seed, timeout
        )
        self.ray = ray
        self.owns_ray = not ray.is_initialized()
        if self.owns_ray:
            ray.init(include_dashboard=False)
        options = {"num_cpus": 1, "scheduling_strategy": "SPREAD", **(actor_options or {})}
        cpus = ray.cluster_resources().get("CPU", 0)
        if options["num_cpus"] * self.num_workers > cpus:
            self.close()
            raise APIUsageError(
                f"Ray backend: {self.num_workers} actors of {options['num_cpus']} CPU each need "
                f"{options['num_cpus'] * self.num_workers} CPUs, the cluster has {cpus}; use fewer "
                "workers or actor_options={'num_cpus': <less>}"
            )
        self._bind_buffers(allocate_buffers(self.single_observation_space, self.single_action_space, self.num_agents))
        payload = _Pickled(self.worker_spec())
        remote = ray.remote(RayWorker).options(**options)
        self.actors = [
            remote.remote(payload, self.single_observation_space, self.single_action_space, index)
            for index in range(self.num_workers)
        ]
        self.futures = {}
        started = [actor.node_id.remote() for actor in self.actors]
        try:
            self.start_timeout = None if self.timeout is None else max(self.timeout, RAY_ACTOR_START_S)
            ready, waiting = ray.wait(started, num_returns=len(started), timeout=self.start_timeout)
            ray.get(ready)  # surfaces creation errors
            if waiting:
                raise self._not_started(started.index(waiting[0]), options["num_cpus"])
        except BaseException:
            self.close()
            raise

    def _not_started(self, worker, cpus_each):
        """The error for an actor still not running after the timeout: most often it waits for a
        CPU that other actors hold."""
        free = self.ray.available_resources().get("CPU", 0)
        total = self.ray.cluster_resources().get("CPU", 0)
        first = worker * self.envs_per_worker
        return WorkerTimeoutError(
            f"Ray backend: the actor of {self._describe(worker)} did not start within {self.start_timeout:g} s. The "
            f"cluster has {free:g} of its {total:g} CPUs free and each actor needs {cpus_each:g}: an actor waits "
            "until a CPU is free, so other actors (another vector env's) may hold them. Close those, use fewer "
            "workers or actor_options={'num_cpus': <less>}, or give slow env creation a longer timeout",
            worker,
            list(range(first, first + self.envs_per_worker)),
        )

    def _launch(self, workers, command, seed=None):
        for worker in workers:
            actor = self.actors[worker]
            if command == RESET:
                future = actor.reset.remote(seed + worker * self.envs_per_worker)
            else:
                future = actor.step.remote(self.actions[self.worker_rows(worker)])
            self.futures[future] = worker

    def _wait(self, timeout):
        futures = list(self.futures)
        ready, _ = self.ray.wait(futures, num_returns=1, timeout=LIVENESS_INTERVAL_S)
        while not ready:
            self._check_overdue(timeout)
            ready, _ = self.ray.wait(futures, num_returns=1, timeout=LIVENESS_INTERVAL_S)
        completed = []
        for future in ready:
            worker = self.futures.pop(future)
            try:
                observations, rewards, terminals, truncations, masks, infos = self.ray.get(future)
            except self.ray.exceptions.RayActorError as error:
                raise WorkerDiedError(
                    f"Ray actor of worker {worker} died; this vector env cannot continue: close() it and make a new one"
                ) from error
            rows = self.worker_rows(worker)
            self.observations[rows] = observations
            self.rewards[rows] = rewards
            self.terminals[rows] = terminals
            self.truncations[rows] = truncations
            self.masks[rows] = masks
            completed.append((worker, infos))
        return completed

    def _running(self, worker):
        future = next(future for future, owner in self.futures.items() if owner == worker)
        ready, _ = self.ray.wait([future], timeout=0)
        return not ready

    def _kill(self, worker):
        self.ray.kill(self.actors[worker])

    def render(self, env_index=0):
        self._check_usable()
        worker, local = divmod(env_index, self.envs_per_worker)
        return self.ray.get(self.actors[worker].render.remote(local), timeout=self.timeout)

    def node_ids(self):
        """The Ray node of each worker's actor."""
        return self.ray.get([actor.node_id.remote() for actor in self.actors])

    def close(self):
        if self.closed:
            return
        for actor in getattr(self, "actors", []):
            self.ray.kill(actor)
        self.actors = []
        super().close()
        if self.owns_ray:
            self.ray.shutdown()


BACKENDS = {"serial": Serial, "native": Native, "multiprocessing": Multiprocessing, "ray": Ray}


def resolve_backend(backend):
    """A backend class from a class, a name ('serial', 'native', 'multiprocessing', 'ray'), or PufferEnv."""
    if isinstance(backend, str):
        try:
            return BACKENDS[backend.lower()]
        except KeyError:
            raise APIUsageError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}") from None
    if backend is PufferEnv:
        return Native
    if isinstance(backend, type) and issubclass(backend, VecEnv):
        return backend
    raise APIUsageError(f"backend must be Serial, Native, Multiprocessing, Ray or one of their names, got {backend!r}")


def make(
    env_creator,
    env_args=None,
    env_kwargs=None,
    backend=Serial,
    num_envs=1,
    num_workers=None,
    batch_size=None,
    zero_copy=True,
    seed=0,
    timeout=DEFAULT_TIMEOUT_S,
    **backend_kwargs,
):
    """Builds a vector env; see the module docstring.

    Args:
        env_creator: returns a PufferEnv given ``buf=`` (and ``num_envs=`` if it takes one).
        env_args, env_kwargs: passed to every creator call.
        backend: Serial, Native, Multiprocessing, Ray (classes or names); PufferEnv means Native.
        num_envs: envs in total (for batched creators, the sum over workers).
        num_workers: processes/actors/groups; default: as many as cores that split num_envs evenly.
        batch_size: envs per ``recv``; less than num_envs makes an async pool.
        zero_copy: batches are aligned runs of contiguous workers, returned as views.
        seed: default seed of ``reset``/``async_reset``.
        timeout: seconds a worker may take for one command (env creation, reset, step) before it is
            killed and ``WorkerTimeoutError`` raised; None for no limit. ``recv(timeout=...)``
            overrides it for one call. Multiprocessing and Ray only (Serial and Native run envs in
            this process, where a step cannot be interrupted).
        backend_kwargs: backend-specific (Serial and Native: pin_memory, page-locked buffers for
            fast asynchronous copies to a GPU; Multiprocessing: context, spin; Ray: actor_options).
    """
    return resolve_backend(backend)(
        env_creator,
        env_args,
        env_kwargs,
        num_envs=num_envs,
        num_workers=num_workers,
        batch_size=batch_size,
        zero_copy=zero_copy,
        seed=seed,
        timeout=timeout,
        **backend_kwargs,
    )
