"""Filling the batch from the env: the policy acts, each step goes into the ``SegmentBuffer``.

Two ways, by where the env lives:

- an env on the host (``pufferlib.vector``'s async surface): each step's observations go to the
  device, the actions come back; the buffer places each agent's step on the host;
- an env with device hooks (``gpu_reset``, ``gpu_step``, ``gpu_sync_logs``): observations never
  leave the GPU, agent i fills row i (and i + N, ...) column by column, and nothing waits for the
  device until the episode logs are fetched at the end.

On a GPU the steps replay CUDA graphs: one per step of each fixed batch of a host env's agents
(between the copies in and out), and, for an env with device hooks, one per segment: its
``horizon`` steps of policy, sampling, buffer write and env step in a single launch.
"""

import collections
import contextlib
import functools

import numpy as np
import torch

from pufferlib.buffer import Step, action_dtype
from pufferlib.config import ConfigError
from pufferlib.exceptions import APIUsageError
from pufferlib.pytorch import capture_graph, clear_finished, sample_logits, sampling_noise, side_stream, torch_dtype

# Consecutive batches without a live agent after which a rollout stops as one that cannot fill.
EMPTY_BATCHES_LIMIT = 1000


def policy_act(policy, obs, state, dones, noise, into=None):
    """One acting step: the memory of agents whose episode just ended cleared, the forward pass,
    and actions sampled with ``noise`` (``sampling_noise``). One graph, compiled as a whole on a
    GPU, so the memory reset and the sampling fuse with the kernels around them (the cleared
    memory is not returned, so it is never written out). Returns (actions, log-probabilities,
    values, the new state); with ``into`` (buffers shaped as ``state``), the new state is written
    there by the layers' own kernels instead, and () is returned in its place."""
    logits, value, new_state = policy.forward_eval(obs, clear_finished(state, dones))
    action, logprob, _ = sample_logits(logits, noise=noise)
    if into is None:
        return action, logprob, value, new_state
    for buffer, memory in zip(into, new_state):
        buffer.copy_(memory)
    return action, logprob, value, ()


def on_device(vecenv):
    """Whether ``vecenv`` lives on the GPU behind device hooks."""
    return hasattr(vecenv, "gpu_step")


def trainer_device(vecenv, device):
    """The device to train on: ``device``, or for an env with device hooks the env's own GPU (its
    observations never leave it); a trainer on another device is a config error."""
    if not on_device(vecenv):
        return device
    env_device, mine = torch.device(vecenv.device), torch.device(device)
    if env_device.type != mine.type or mine.index not in (None, env_device.index):
        raise ConfigError(f"the env runs on {env_device} and the trainer on {mine}: use --train.device {env_device}")
    return str(env_device)


def gpu_speedups(train, device):
    """(torch.compile?, CUDA graphs?, the autocast context) for a ``[train]`` view (config.TrainSettings) on ``device``.
    By default all on a GPU, where graphs remove the launch cost of small kernels and bf16 halves
    the training math, and off on a CPU, where they cost more than they give."""
    on_cuda = device.startswith("cuda")
    use_compile = on_cuda if train.compile == "auto" else train.compile
    use_graphs = on_cuda if train.cudagraphs == "auto" else train.cudagraphs
    precision = ("bfloat16" if on_cuda else "float32") if train.precision == "auto" else train.precision
    if precision not in ("float32", "bfloat16"):
        raise ConfigError(f"--train.precision {precision!r}: valid are auto, float32, bfloat16")
    if precision == "float32":
        return use_compile, use_graphs, contextlib.nullcontext
    return use_compile, use_graphs, functools.partial(torch.autocast, device.split(":")[0], dtype=torch.bfloat16)


class HostStepStaging:
    """A host env's step of ``count`` agents as ``Rollout.device_step`` sees an env with device
    hooks: device copies of the env's observations, rewards and flags, loaded before each step, and
    the actions the step chose, fetched after it. The copies sit outside the step's CUDA graph,
    which then reads and writes the same tensors at every replay."""

    def __init__(self, vecenv, count, device):
        observation_space, action_space = vecenv.single_observation_space, vecenv.single_action_space
        self.observations = torch.zeros((count, *observation_space.shape), dtype=torch_dtype(observation_space.dtype), device=device)
        self.rewards = torch.zeros(count, device=device)
        self.terminals = torch.zeros(count, dtype=torch.bool, device=device)
        self.truncations = torch.zeros(count, dtype=torch.bool, device=device)
        self.actions = torch.zeros((count, *action_space.shape), dtype=action_dtype(action_space), device=device)
        self.host_actions = torch.zeros(self.actions.shape, dtype=self.actions.dtype, pin_memory=True)

    def load(self, obs, rewards, terminals, truncations):
        for target, source in zip((self.observations, self.rewards, self.terminals, self.truncations),
                                  (obs, rewards, terminals, truncations)):
            target.copy_(torch.as_tensor(source), non_blocking=True)

    def gpu_step(self, actions):
        self.actions.copy_(actions)

    def fetch_actions(self):
        """The step's actions in host memory (numpy), once the device has computed them."""
        self.host_actions.copy_(self.actions, non_blocking=True)
        torch.cuda.current_stream(self.actions.device).synchronize()
        return self.host_actions.numpy()


class Rollout:
    """Fills ``buffer`` from ``vecenv`` with ``policy``'s actions, sampled from ``generator``.
    ``collect`` fills one batch; the agents' recurrent memory (``state``) carries over batches."""

    GRAPH_WARMUP = 3  # eager steps of a batch of agents before its CUDA graphs are captured

    def __init__(self, vecenv, policy, buffer, generator, autocast, world, use_compile, use_graphs):
        self.vecenv, self.policy, self.buffer = vecenv, policy, buffer
        self.generator, self.autocast, self.world = generator, autocast, world
        self.device = buffer.device
        self.num_agents = vecenv.num_agents
        self.horizon, self.segments = buffer.horizon, buffer.segments
        self.env_on_device = on_device(vecenv)
        # The recurrent memory while acting, twice: a step of every agent reads one and writes the
        # other (``state`` is the one read next), which saves copying the new memory back.
        self.memories = tuple(policy.initial_state(self.num_agents, self.device) for _ in range(2))
        self.acting = 0
        self.finished_once = np.zeros(self.num_agents, dtype=bool)
        self.policy_act = functools.partial(policy_act, policy)
        # When each step covers every agent or one fixed batch of them (an env with device hooks, a
        # synchronous env on the host, the env halves of an in-process backend), each is one graph
        # of our own (policy, buffer, and the env or the copies to and from it), so the compiled
        # policy must not make graphs of its own inside it.
        fixed_steps = self.env_on_device or vecenv.agents_per_batch == self.num_agents or vecenv.fixed_batches
        self.graph_rollout = use_graphs and fixed_steps and self.segments % self.num_agents == 0
        if use_compile or (use_graphs and not self.graph_rollout):
            mode = "reduce-overhead" if use_graphs and not self.graph_rollout else "default"
            self.policy_act = torch.compile(self.policy_act, mode=mode, dynamic=False)
        self.record = torch.compile(self.record_step, dynamic=False) if use_compile else self.record_step
        # What device_step steps, per run of agents: the env itself, or staged copies of a host
        # env's buffers (made at a batch's first step).
        self.step_envs = {(0, self.num_agents): vecenv} if self.env_on_device else {}
        self.step_graphs = {}  # a host env's steps: {(first agent, end, first column?, memory read): graph}
        self.segment_graphs = {}  # an env with device hooks: {memory read first: the graph of a segment}
        self.step_warmups = collections.Counter()  # eager steps per run of agents
        self.rollout_step = torch.zeros((), dtype=torch.int64, device=self.device)
        self.agent_rows = torch.arange(self.num_agents, device=self.device)

    def reset(self, seed):
        """Fresh episodes from ``seed``, and fresh memory."""
        if self.env_on_device:
            self.vecenv.gpu_reset(seed)
        else:
            self.vecenv.async_reset(seed)
        # In place: the rollout's CUDA graphs read and write these tensors.
        for memory, initial in zip(self.state, self.policy.initial_state(self.num_agents, self.device)):
            memory.copy_(initial)
        # Episode logs count from when every agent has ended an episode since the reset: before,
        # the envs are in step and the quickest episodes end first.
        self.finished_once[:] = False

    def restore(self, env_state, memory):
        """Puts the envs and the agents' memory back as a checkpoint saw them; False when it cannot
        (no saved state, a game that does not save its state, other env counts or parameters)."""
        if env_state is None or not hasattr(self.vecenv, "set_state"):
            return False
        if [tuple(s.shape) for s in memory] != [tuple(s.shape) for s in self.state]:
            return False
        try:
            self.vecenv.set_state(env_state)
        except ValueError:
            return False
        for mine, saved in zip(self.state, memory):
            mine.copy_(saved)
        self.finished_once[:] = True
        return True

    @property
    def state(self):
        """The agents' recurrent memory: what they act from at the next step."""
        return self.memories[self.acting]

    def act(self, obs, dones, agents=slice(None), into=None):
        """The policy's actions for ``agents``, from the memory they had (cleared where their
        episode just ended), which moves on: written back in place, or into ``into`` (the spare
        memory, for a step of every agent; the caller then flips ``acting``). Returns (actions,
        logprobs, values)."""
        noise = sampling_noise(self.vecenv.single_action_space, obs.shape[0], self.generator, self.device)
        with torch.inference_mode(), self.autocast():
            action, logprob, value, new_state = self.policy_act(obs, tuple(s[agents] for s in self.state), dones, noise, into)
        for k, s in enumerate(new_state):
            self.state[k][agents] = s
        return action, logprob, value

    def acting_state(self, dones, agents):
        """The memory ``agents`` act from at this step: what a segment starting here stores."""
        with torch.inference_mode():
            return clear_finished(tuple(s[agents] for s in self.state), dones)

    def collect(self, stop):
        """Fills the batch: steps the envs until every segment row holds ``horizon`` steps.
        Returns (steps stored, over every rank; the episode logs), or None, with the batch
        abandoned, once ``stop()`` says so."""
        if self.env_on_device:
            return self.collect_on_device(stop)
        device, buffer = self.device, self.buffer
        buffer.begin()
        infos, stored_steps, empty_batches = [], 0, 0
        while not buffer.full:
            if stop():
                return None
            obs, rewards, terminals, truncations, step_infos, env_ids, masks = self.vecenv.recv()
            env_ids, masks = np.asarray(env_ids), np.asarray(masks, dtype=bool)
            dones = np.logical_or(terminals, truncations)
            if self.finished_once.all():
                infos.extend(step_infos if isinstance(step_infos, list) else [step_infos])
            else:
                self.finished_once[env_ids[dones]] = True
            agents = buffer.run_of(env_ids)
            rows, cols, stored, first_row = buffer.place_step(env_ids, masks, agents)
            # A live agent in every step is what lets a batch fill: an env (or a backend) that
            # marks every agent as padding would keep this loop stepping forever.
            empty_batches = 0 if masks.any() else empty_batches + 1
            if empty_batches > EMPTY_BATCHES_LIMIT:
                raise APIUsageError(
                    f"{EMPTY_BATCHES_LIMIT} batches in a row held no live agent (every mask False), so the batch can "
                    "never fill: the env or its vector backend marks every agent as padding, where masks must be "
                    "True for live agents"
                )
            if self.graph_rollout and first_row is not None and first_row % self.num_agents == agents.start:
                # Agent i at row first_row - agents.start + i: the step device_step takes here.
                step = first_row // self.num_agents * self.horizon + int(cols[0])
                actions = self.host_step(step, agents, obs, rewards, terminals, truncations)
            else:
                # Every copy from the env's buffers is queued before the actions are fetched, which
                # waits for them: the env's next step cannot overwrite a buffer mid-copy.
                obs = torch.as_tensor(obs).to(device, non_blocking=True)
                rewards = torch.as_tensor(rewards).to(device, non_blocking=True)
                dones = torch.as_tensor(dones).to(device, non_blocking=True)
                truncated = torch.as_tensor(truncations).to(device, non_blocking=True)
                agents = slice(None) if agents == slice(0, self.num_agents) else torch.as_tensor(env_ids, device=device)
                state = self.acting_state(dones, agents) if (cols == 0).any() else ()
                action, logprob, value = self.act(obs, dones, agents)
                actions = action.cpu().numpy()
                buffer.write_placed(rows, cols, stored, Step(obs, dones, truncated, action, logprob, value, rewards, state))
            stored_steps += len(rows)
            self.vecenv.send(actions)
        return self.world.sum(stored_steps), infos

    def collect_on_device(self, stop):
        """The rollout of an env with device hooks: actions go from the policy to the env as they
        are, and no step copies to the host or waits for the device. The host launches one
        segment of every agent at a time; the episode logs are fetched once, at the end."""
        self.rollout_step.zero_()
        for _ in range(self.segments // self.num_agents):
            if stop():
                return None
            self.run_segment()
        logs = self.vecenv.gpu_sync_logs()
        return self.segments * self.horizon * self.world.size, [logs] if logs else []

    def run_segment(self):
        """A segment of every agent (``segment_steps``), as a replay of its CUDA graph once captured
        (after a first segment run eagerly on a side stream has compiled its steps and created
        their lazy state), or eagerly without graphs. The graph starts from one of the two
        memories; with an odd horizon the segment ends in the other, which gets a graph too."""
        start = self.acting
        if start in self.segment_graphs:
            self.segment_graphs[start].replay()
            self.acting = start ^ self.horizon % 2
        elif not self.graph_rollout:
            self.segment_steps()
        else:
            with side_stream(self.device):
                self.segment_steps()
            end = self.acting
            for memory in (start, end) if self.horizon % 2 else (start,):
                self.acting = memory
                self.segment_graphs[memory] = capture_graph(self.segment_steps, self.generator)[0]
            self.acting = end

    def segment_steps(self):
        """``horizon`` steps of every agent, each reading one memory and writing the other, from
        ``rollout_step`` on: device work only, so a CUDA graph can replay them all."""
        everyone = slice(0, self.num_agents)
        for column in range(self.horizon):
            self.device_step(column == 0, everyone)
            self.acting = 1 - self.acting

    def host_step(self, step, agents, obs, rewards, terminals, truncations):
        """Step ``step`` of the batch for the run ``agents`` (a slice) of a host env's agents, as
        device_step: the env's buffers copied in, the step's graph replayed, the actions fetched
        (numpy)."""
        key = (agents.start, agents.stop)
        if key not in self.step_envs:
            self.step_envs[key] = HostStepStaging(self.vecenv, agents.stop - agents.start, self.device)
        staging = self.step_envs[key]
        staging.load(obs, rewards, terminals, truncations)
        self.rollout_step.fill_(step)
        self.run_device_step(step % self.horizon == 0, agents)
        return staging.fetch_actions()

    def run_device_step(self, first_column, agents):
        """device_step, as a replay of its CUDA graph once captured (after eager warm-up steps on
        a side stream have compiled it and created its lazy state), or eagerly without graphs. A
        step of every agent leaves its new memory in the spare one, which becomes ``state``; each
        of the two has graphs of its own."""
        key = (agents.start, agents.stop)
        everyone = self.is_every_agent(agents)
        if (*key, first_column, self.acting) in self.step_graphs:
            self.step_graphs[(*key, first_column, self.acting)].replay()
        elif not self.graph_rollout:
            self.device_step(first_column, agents)
        else:
            with side_stream(self.device):
                self.device_step(first_column, agents)
            self.step_warmups[key] += 1
            if self.step_warmups[key] == self.GRAPH_WARMUP:
                acting = self.acting
                for memory in (acting, 1 - acting) if everyone else (acting,):
                    self.acting = memory
                    for first in (True, False):
                        step = functools.partial(self.device_step, first, agents)
                        self.step_graphs[(*key, first, memory)] = capture_graph(step, self.generator)[0]
                self.acting = acting
        if everyone:
            self.acting = 1 - self.acting

    def is_every_agent(self, agents):
        """Whether the run ``agents`` (a slice) is all of them: its steps alternate the memories."""
        return (agents.start, agents.stop) == (0, self.num_agents)

    def device_step(self, first_column, agents):
        """Step t of the batch (``rollout_step``, on the device) for the run ``agents`` (a slice)
        of a device-hook env's agents or of a host env's staged buffers (``step_envs``): act,
        store agent i's step at row (t // horizon) * num_agents + i, column t % horizon, and step
        the env. Device work only, so a CUDA graph can replay it."""
        env = self.step_envs[(agents.start, agents.stop)]
        dones = env.terminals | env.truncations
        state = self.acting_state(dones, agents) if first_column else ()
        spare = self.memories[1 - self.acting] if self.is_every_agent(agents) else None
        action, logprob, value = self.act(env.observations, dones, agents, into=spare)
        with torch.inference_mode():
            step = Step(env.observations, dones, env.truncations, action, logprob, value, env.rewards, state)
            self.record(first_column, agents, step)
        env.gpu_step(action)

    def record_step(self, first_column, agents, step):
        """Stores step t (``rollout_step``) of the run ``agents`` at row (t // horizon) * num_agents
        + i, column t % horizon, and moves t on. Compiled on a GPU into a few kernels, where the
        indices and each field's write would each be one."""
        rows = torch.div(self.rollout_step, self.horizon, rounding_mode="floor") * self.num_agents + self.agent_rows[agents]
        column = (self.rollout_step % self.horizon).reshape(1)  # a 0-d index would be read on the host
        self.buffer.write_at(rows, column, first_column, step)
        self.rollout_step.add_(1)
