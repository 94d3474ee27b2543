"""The batch PuffeRL learns from: fixed-length segments of one agent each, and where each step goes.

``batch_geometry`` checks a config's batch against the env; ``Step`` is one acting step of some
agents, as the rollout hands it over; ``SegmentBuffer`` holds the batch and decides, on the host,
which row and column each agent's step fills.
"""

from typing import NamedTuple

import numpy as np
import torch

from pufferlib.config import ConfigError
from pufferlib.pytorch import torch_dtype


class BatchGeometry(NamedTuple):
    batch_size: int  # steps per batch (one rank's)
    segments: int  # rows of ``horizon`` steps
    minibatch_segments: int


def batch_geometry(train, num_agents, env_on_device):
    """The batch a ``[train]`` view (config.TrainSettings) asks for, as ``segments`` rows of ``horizon`` steps, checked
    against the env: every agent needs a row, and an env on the GPU fills every agent's row at
    each step."""
    horizon = train.horizon
    if horizon < 2:
        raise ConfigError(f"--train.horizon {horizon}: segments need at least 2 steps (the last one only bootstraps)")
    batch_size = num_agents * horizon if train.batch_size == "auto" else train.batch_size
    if batch_size % horizon:
        raise ConfigError(f"--train.batch-size {batch_size} must be a multiple of --train.horizon {horizon}")
    segments = batch_size // horizon
    if segments < num_agents:
        raise ConfigError(
            f"--train.batch-size {batch_size} gives {segments} segments of {horizon} steps, fewer than "
            f"the {num_agents} agents; use at least num_agents * horizon = {num_agents * horizon}"
        )
    minibatch_size = min(train.minibatch_size, batch_size)
    if minibatch_size % horizon:
        raise ConfigError(f"--train.minibatch-size {minibatch_size} must be a multiple of --train.horizon {horizon}")
    if env_on_device and segments % num_agents:
        raise ConfigError(
            f"--train.batch-size {batch_size}: an env on the GPU fills every agent's row each step, so the batch "
            f"must be a multiple of num_agents * horizon = {num_agents * horizon}"
        )
    return BatchGeometry(batch_size, segments, minibatch_size // horizon)


class Step(NamedTuple):
    """One acting step of some agents, in agent order (device tensors): what they observed with the
    reward and episode flags that came with it, what they did, and the recurrent ``state`` they
    acted from (read only where a segment starts; empty when the step starts none)."""

    observations: torch.Tensor
    dones: torch.Tensor
    truncations: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    state: tuple

    def pick(self, which):
        """The step of the agents ``which`` (a boolean tensor or indices) selects."""
        return Step(*(field[which] for field in self[:-1]), tuple(s[which] for s in self.state))


class SegmentBuffer:
    """The batch: ``segments`` rows of ``horizon`` consecutive steps of one agent each.

    An agent takes a free row at its first stored step and another when that one is full, so
    backends that return only some agents per step (EnvPool-style) fill the batch just as well.
    Padded agents (mask False) are not stored; once every row is taken, nothing more is. Which
    row and step each agent writes is kept in numpy on the host, so the device never has to
    report back mid-rollout. Each row also keeps the recurrent state its segment started from.
    Observations keep the env's dtype (uint8 grids stay 1 byte each); the policy casts them.
    """

    UNASSIGNED, NO_ROW = -2, -1  # an agent's row before it has one, and once none is left

    def __init__(self, segments, horizon, num_agents, observation_space, action_space, start_state, device):
        self.segments, self.horizon = segments, horizon
        shape = (segments, horizon)
        self.observations = torch.zeros(*shape, *observation_space.shape, dtype=torch_dtype(observation_space.dtype), device=device)
        # Byte observations of whole 32-bit words are written as words: the indexed write's kernel
        # then moves a quarter as many elements.
        self.observation_words = None
        if self.observations.element_size() == 1 and self.observations[0, 0].numel() % 4 == 0:
            self.observation_words = self.observations.view(*shape, -1).view(torch.int32)
        self.actions = torch.zeros(*shape, *action_space.shape, dtype=action_dtype(action_space), device=device)
        self.logprobs = torch.zeros(shape, device=device)
        self.rewards = torch.zeros(shape, device=device)
        self.dones = torch.zeros(shape, device=device)
        self.truncations = torch.zeros(shape, device=device)
        self.values = torch.zeros(shape, device=device)
        self.start_state = start_state
        self.device = device
        self.agent_ids = np.arange(num_agents)
        self.row_of = np.full(num_agents, self.UNASSIGNED)
        self.col_of = np.zeros(num_agents, dtype=np.int64)
        self.begin()

    def begin(self):
        """Frees every row for a new batch."""
        self.row_of[:] = self.UNASSIGNED
        self.col_of[:] = 0
        self.next_row = 0
        self.filled = 0
        self.runs = {}  # (start, stop): (first_row, column) of a run of agents place_run is filling

    @property
    def full(self):
        return self.filled >= self.segments

    # -- placement: which row and column each agent's step fills ---------------------------------

    def place(self, env_ids, masks, run=None):
        """Where one step of the agents ``env_ids`` (numpy ids and masks) goes, a fresh row for
        those starting one: (rows, columns, stored), the rows and columns of the agents ``stored``
        selects (padded agents and those left without a row are not stored). The rows' fill
        advances by this step, so each step is placed once. ``run``: ``run_of(env_ids)``, where
        the caller has it already."""
        self.runs.clear()
        index = self.run_of(env_ids) if run is None else run
        rows = self.row_of[index].copy()
        fresh = masks & (rows == self.UNASSIGNED)
        if fresh.any():
            new_rows = np.arange(self.next_row, self.next_row + int(fresh.sum()))
            new_rows[new_rows >= self.segments] = self.NO_ROW
            rows[fresh] = new_rows
            self.row_of[env_ids[fresh]] = new_rows
            self.next_row += len(new_rows)
        stored = masks & (rows >= 0)
        if not stored.all():
            env_ids, rows = env_ids[stored], rows[stored]
            index = env_ids
        cols = self.col_of[index].copy()
        self.col_of[index] += 1
        full = env_ids[cols + 1 == self.horizon]
        self.filled += len(full)
        self.row_of[full] = self.UNASSIGNED
        self.col_of[full] = 0
        return rows, cols, stored

    def place_run(self, run):
        """``place`` for a step of every agent of ``run`` (a slice of agent ids, none padded) when
        they fill consecutive rows at one column, as a synchronous env's steps and fixed batches
        do: (first_row, column), found without per-agent work; None where ``place`` must decide."""
        key, count = (run.start, run.stop), run.stop - run.start
        if key in self.runs:
            first_row, col = self.runs.pop(key)
        elif self.next_row + count <= self.segments and (self.row_of[run] == self.UNASSIGNED).all():
            first_row, col = self.next_row, 0
            self.row_of[run] = np.arange(first_row, first_row + count)
            self.next_row += count
        else:
            return None
        if col + 1 == self.horizon:
            self.row_of[run] = self.UNASSIGNED
            self.col_of[run] = 0
            self.filled += count
        else:
            self.col_of[run] = col + 1
            self.runs[key] = (first_row, col + 1)
        return first_row, col

    def place_step(self, env_ids, masks, run):
        """``place``, through ``place_run`` where that applies, and the first row when the step's
        agents (``run`` a slice, every one stored) fill consecutive rows at one column, else None:
        (rows, columns, stored, first_row)."""
        placed = self.place_run(run) if isinstance(run, slice) and masks.all() else None
        if placed is not None:
            first_row, col = placed
            return np.arange(first_row, first_row + len(env_ids)), np.full(len(env_ids), col), masks, first_row
        rows, cols, stored = self.place(env_ids, masks, run)
        first_row = self.first_of_row_run(rows, cols) if isinstance(run, slice) and stored.all() else None
        return rows, cols, stored, first_row

    def run_of(self, env_ids):
        """``env_ids`` as a slice when they are a run of agents in order (a synchronous env's
        step, one of its fixed batches): the per-agent records are then read and written as
        views instead of gathered and scattered."""
        if len(env_ids):
            first = int(env_ids[0])
            if np.array_equal(env_ids, self.agent_ids[first:first + len(env_ids)]):
                return slice(first, first + len(env_ids))
        return env_ids

    @staticmethod
    def first_of_row_run(rows, cols):
        """The first row when the placed agents fill consecutive rows at one column (every agent of
        a synchronous env, in order), else None."""
        count = len(rows)
        if count and np.all(cols == cols[0]) and np.array_equal(rows, np.arange(rows[0], rows[0] + count)):
            return int(rows[0])
        return None

    # -- writes ------------------------------------------------------------------------------------

    def store(self, env_ids, masks, step):
        """Stores ``step`` (a ``Step`` of the agents ``env_ids``, numpy ids and masks). Returns how
        many agents' steps were stored."""
        rows, cols, stored = self.place(env_ids, masks)
        self.write_placed(rows, cols, stored, step)
        return len(rows)

    def write_placed(self, rows, cols, stored, step):
        """Writes a step ``place`` placed at ``rows`` and ``cols``; ``step`` is every agent's, of
        which ``stored`` picks those to keep."""
        device = self.device
        if not stored.all():
            step = step.pick(torch.as_tensor(stored, device=device))
        first_row = self.first_of_row_run(rows, cols)
        if first_row is not None:  # slices, not indexed writes
            self.write_rows(first_row, int(cols[0]), step)
        elif len(rows):
            where = (torch.as_tensor(rows, device=device), torch.as_tensor(cols, device=device))
            first = cols == 0
            if first.any():
                first_t = torch.as_tensor(first, device=device)
                for k, s in enumerate(step.state):
                    self.start_state[k][where[0][first_t]] = s[first_t]
            self.write(where, step)

    def write_rows(self, first_row, col, step):
        """Writes ``step`` at column ``col`` of the consecutive rows from ``first_row``, one per
        agent; the recurrent state is kept as the rows' start at column 0."""
        rows = slice(first_row, first_row + len(step.observations))
        if col == 0:
            for k, s in enumerate(step.state):
                self.start_state[k][rows] = s
        self.write((rows, col), step)

    def write_at(self, rows, col, first_column, step):
        """Writes ``step`` at ``rows`` (device tensor, one per agent) and column ``col`` (device
        tensor of one), as ``write_rows`` does, without the host knowing either."""
        if first_column:
            for k, s in enumerate(step.state):
                self.start_state[k][rows] = s
        self.write((rows, col), step)

    def write(self, where, step):
        obs, words = step.observations, self.observation_words
        if words is not None and obs.dtype == self.observations.dtype and obs.is_contiguous() and obs.storage_offset() % 4 == 0:
            words[where] = obs.view(len(obs), 4 * words.shape[-1]).view(torch.int32)
        else:
            self.observations[where] = obs
        self.actions[where] = step.actions.to(self.actions.dtype)
        self.logprobs[where] = step.logprobs.float()
        self.rewards[where] = step.rewards
        self.dones[where] = step.dones.float()
        self.truncations[where] = step.truncations.float()
        self.values[where] = step.values.float()


def action_dtype(action_space):
    """How actions are stored: float for continuous spaces, int64 for discrete ones."""
    return torch.float32 if np.issubdtype(action_space.dtype, np.floating) else torch.int64
