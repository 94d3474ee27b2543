"""PuffeRL: PPO on a vectorized env, the algorithm only. Read top to bottom:

1. the advantage kernel: GAE with V-trace importance clipping, as a parallel scan over time;
2. prioritized segment replay: segments sampled by summed |advantage| ** alpha, importance
   weights with beta annealed to 1;
3. the PPO loss of a minibatch: clipped policy and value losses, entropy bonus;
4. the optimizer: Adam, or Muon for the hidden weight matrices;
5. ``SegmentBuffer``: the batch as fixed-length segments of one agent each, and which row and step
   each agent writes next;
6. ``PuffeRL``: ``collect`` fills the buffer from the env, ``train`` replays prioritized minibatches
   of it with a cosine learning-rate schedule and gradient clipping; recurrent policies replay each
   segment from the memory it started with.

On a GPU the trainer adds bf16 autocast, ``torch.compile`` and CUDA graphs; on a CPU those cost
more than they give and stay off. The commands around it (``puffer train``, ...) are in
``pufferlib.cli``; configs, checkpoints and the dashboard have modules of their own.
"""

import collections
import contextlib
import functools
import math
import time

import numpy as np
import torch

from pufferlib.assemble import resolve_device, set_torch_threads
from pufferlib.checkpoint import CHECKPOINT_FORMAT, architecture, check_architecture, load_weights, save_atomic
from pufferlib.config import ConfigError
from pufferlib.distributed import World
from pufferlib.environment import mean_infos
from pufferlib.pytorch import (
    CombinedOptimizer,
    allow_recompiles,
    capture_graph,
    clear_finished,
    linear_scan,
    load_optimizer_state,
    sample_logits,
    sampling_noise,
    side_stream,
    top_k_indices,
    torch_dtype,
)

# The advantage kernel -------------------------------------------------------------------------


def compute_advantages(values, rewards, dones, truncations, ratio, gamma, gae_lambda, rho_clip, c_clip):
    """GAE with V-trace importance clipping over segments [S, T].

    Step t of a segment holds an observation with the reward and done flag that arrived with it,
    so the transition out of step t is (rewards[t + 1], dones[t + 1]); ``dones`` marks every
    episode end, ``truncations`` those cut by a time limit. With rho_t = min(ratio_t, rho_clip) and
    c_t = min(ratio_t, c_clip), ratio being pi_new / pi_behaviour:

        delta_t = rho_t * (r_{t+1} + gamma * B_{t+1} - V_t)
        A_t     = delta_t + gamma * lambda * c_t * (1 - d_{t+1}) * A_{t+1}

    which is GAE when the ratios are 1. B_{t+1} bootstraps: V_{t+1} within an episode, 0 after a
    terminal step, and after a truncation V_t, standing in for the value of the state the episode
    was cut in (the env has already reset it: its observation is the next episode's first). The
    last step of a segment only bootstraps (A = 0). The backward recursion is a linear recurrence,
    so it runs as a log-depth parallel scan over time (``linear_scan`` on the reversed segment)
    instead of a Python loop over T.
    """
    rho = ratio[:, :-1].clamp(max=rho_clip)
    c = ratio[:, :-1].clamp(max=c_clip)
    nonterminal = 1.0 - dones[:, 1:]
    bootstrap = values[:, 1:] * nonterminal + values[:, :-1] * truncations[:, 1:]
    delta = rho * (rewards[:, 1:] + gamma * bootstrap - values[:, :-1])
    decay = gamma * gae_lambda * c * nonterminal
    advantages = linear_scan(decay.flip(1), delta.flip(1)).flip(1)
    return torch.cat([advantages, torch.zeros_like(values[:, :1])], dim=1)


# Prioritized segment replay -------------------------------------------------------------------


def prioritized_sample(advantages, num_samples, alpha, beta, generator=None):
    """Picks ``num_samples`` distinct segments with probability proportional to sum|A| ** alpha.

    Returns (indices, importance weights [num_samples, 1]); the weight (S * p_i) ** -beta undoes
    the sampling bias when beta is 1 and is exactly 1 for uniform sampling (alpha = 0). The small
    constant keeps every segment reachable when its advantages are all zero. The draw is the
    Gumbel top-k trick, the same distribution as drawing one by one without replacement, in a few
    elementwise kernels and a top-k (torch.multinomial makes the host wait on a GPU). The picks come
    in no particular order: a minibatch is a set.
    """
    priority = (advantages.abs().sum(dim=1) + 1e-6).pow(alpha)
    probs = priority / priority.sum()
    uniform = torch.rand(probs.shape, generator=generator, device=probs.device).clamp_(min=1e-20)
    indices = top_k_indices(probs.log() - (-uniform.log()).log(), num_samples)
    weights = (probs.numel() * probs[indices]).pow(-beta)
    return indices, weights.unsqueeze(1)


# The PPO loss of one minibatch ----------------------------------------------------------------


def ppo_loss(policy, obs, state, resets, actions, old_logprobs, old_values, advantages, weights,
             clip_coef, vf_clip_coef, vf_coef, ent_coef):
    """Replays a minibatch of segments [n, T] and returns (loss, new importance ratios, stats).

    Clipped policy loss on advantages normalized over the minibatch, clipped value loss against
    the V-trace returns (advantage + old value), entropy bonus; the policy and value terms are
    weighted by the replay's importance weights. One graph, compiled as a whole on a GPU.
    """
    logits, new_values = policy(obs, state, resets)
    _, new_logprobs, entropy = sample_logits(logits, action=actions.reshape(-1, *actions.shape[2:]))
    new_logprobs = new_logprobs.float().reshape(old_logprobs.shape)
    logratio = new_logprobs - old_logprobs
    ratio = logratio.exp()

    # The last step of each segment only bootstraps the one before it; it has no target.
    ratio_t, logratio_t = ratio[:, :-1], logratio[:, :-1]
    entropy = entropy.float().reshape(old_logprobs.shape)[:, :-1]
    returns = (advantages + old_values)[:, :-1]
    adv = advantages[:, :-1]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    new_values, old_values = new_values.float()[:, :-1], old_values[:, :-1]

    pg_loss = (weights * torch.max(-adv * ratio_t, -adv * ratio_t.clamp(1 - clip_coef, 1 + clip_coef))).mean()
    clipped_values = old_values + (new_values - old_values).clamp(-vf_clip_coef, vf_clip_coef)
    v_loss = 0.5 * (weights * torch.max((new_values - returns) ** 2, (clipped_values - returns) ** 2)).mean()
    entropy_loss = entropy.mean()
    loss = pg_loss + vf_coef * v_loss - ent_coef * entropy_loss
    stats = dict(
        policy_loss=pg_loss.detach(), value_loss=v_loss.detach(), entropy=entropy_loss.detach(),
        approx_kl=((ratio_t - 1) - logratio_t).mean().detach(),
        clipfrac=((ratio_t - 1).abs() > clip_coef).float().mean(), importance_weight=weights.mean(),
    )
    return loss, ratio.detach(), stats


# One acting step ------------------------------------------------------------------------------


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


# The optimizer -------------------------------------------------------------------------------


def build_optimizer(policy, train):
    """Adam, or Muon (orthogonalized momentum: ``StackedMuon``, torch's Muon with the matrices of
    one shape batched) for the hidden weight matrices with Adam for everything else. As Muon's
    authors advise, embeddings and output heads stay with Adam: a 1 x n value head orthogonalized
    is just its normalized gradient, a fixed-size step. Muon's 'match_rms_adamw' scaling lets both
    share one learning rate."""
    named = [(name, p) for name, p in policy.named_parameters() if p.requires_grad]
    # The fused CUDA kernel updates every parameter in one launch instead of several per tensor;
    # capturable keeps its step counts on the device, so the update can be a CUDA graph.
    on_cuda = all(p.is_cuda for _, p in named)
    adam = dict(lr=train["learning_rate"], betas=(train["adam_beta1"], train["adam_beta2"]), eps=train["adam_eps"],
                fused=on_cuda, capturable=on_cuda)
    if train["optimizer"] == "adam":
        return torch.optim.Adam([p for _, p in named], **adam)
    if train["optimizer"] != "muon":
        raise ConfigError(f"--train.optimizer {train['optimizer']!r}: valid are adam and muon")
    if not hasattr(torch.optim, "Muon"):
        raise ConfigError(f"--train.optimizer muon needs torch.optim.Muon (torch >= 2.9); this is torch {torch.__version__}")
    from pufferlib.muon import StackedMuon  # defined on torch's Muon, so only where it exists

    is_hidden = {name: p.ndim == 2 and "head" not in name and "embedding" not in name for name, p in named}
    hidden = [p for name, p in named if is_hidden[name]]
    others = [p for name, p in named if not is_hidden[name]]
    if not hidden:
        raise ConfigError("--train.optimizer muon: this policy has no hidden weight matrices (add layers or an rnn)")
    muon = StackedMuon(
        hidden, lr=train["learning_rate"], momentum=train["muon_momentum"], weight_decay=0.0, adjust_lr_fn="match_rms_adamw"
    )
    return CombinedOptimizer([muon, torch.optim.Adam(others, **adam)])


def cosine_lr(base_lr, progress):
    """Cosine decay from base_lr at progress 0 to 0 at progress 1."""
    return base_lr * 0.5 * (1.0 + math.cos(math.pi * min(max(progress, 0.0), 1.0)))


# Rollout storage ------------------------------------------------------------------------------


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
        action_dtype = torch.float32 if np.issubdtype(action_space.dtype, np.floating) else torch.int64
        self.actions = torch.zeros(*shape, *action_space.shape, dtype=action_dtype, device=device)
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

    def store(self, env_ids, masks, obs, dones, truncations, actions, logprobs, values, rewards, state):
        """Stores one step of the agents ``env_ids`` (numpy ids and masks; the rest in agent order,
        device tensors); ``state`` is the recurrent state they acted from, read only for the rows a
        step starts (it may be empty when it starts none). Returns how many steps were stored."""
        rows, cols, stored = self.place(env_ids, masks)
        self.write_placed(rows, cols, stored, obs, dones, truncations, actions, logprobs, values, rewards, state)
        return len(rows)

    def write_placed(self, rows, cols, stored, obs, dones, truncations, actions, logprobs, values, rewards, state):
        """Writes a step ``place`` placed at ``rows`` and ``cols``; the data is every agent's, of
        which ``stored`` picks those to keep."""
        device = self.device
        if not stored.all():
            pick = torch.as_tensor(stored, device=device)
            obs, dones, truncations = obs[pick], dones[pick], truncations[pick]
            values, logprobs, actions = values[pick], logprobs[pick], actions[pick]
            state = tuple(s[pick] for s in state)
            rewards = rewards[pick]
        first_row = self.first_of_row_run(rows, cols)
        if first_row is not None:  # slices, not indexed writes
            self.write_rows(first_row, int(cols[0]), obs, dones, truncations, actions, logprobs, values, rewards, state)
        elif len(rows):
            where = (torch.as_tensor(rows, device=device), torch.as_tensor(cols, device=device))
            first = cols == 0
            if first.any():
                first_t = torch.as_tensor(first, device=device)
                for k, s in enumerate(state):
                    self.start_state[k][where[0][first_t]] = s[first_t]
            self._write(where, obs, dones, truncations, actions, logprobs, values, rewards)

    def write_rows(self, first_row, col, obs, dones, truncations, actions, logprobs, values, rewards, state):
        """Writes step ``col`` of the consecutive rows from ``first_row``, one per agent given
        (device tensors); the recurrent state is kept as the rows' start at step 0."""
        rows = slice(first_row, first_row + len(obs))
        if col == 0:
            for k, s in enumerate(state):
                self.start_state[k][rows] = s
        self._write((rows, col), obs, dones, truncations, actions, logprobs, values, rewards)

    def write_at(self, rows, col, first_column, obs, dones, truncations, actions, logprobs, values, rewards, state):
        """Writes one step of every agent at ``rows`` (device tensor, one per agent) and column
        ``col`` (device tensor of one), as ``write_rows`` does, without the host knowing either."""
        if first_column:
            for k, s in enumerate(state):
                self.start_state[k][rows] = s
        self._write((rows, col), obs, dones, truncations, actions, logprobs, values, rewards)

    def _write(self, where, obs, dones, truncations, actions, logprobs, values, rewards):
        words = self.observation_words
        if words is not None and obs.dtype == self.observations.dtype and obs.is_contiguous() and obs.storage_offset() % 4 == 0:
            words[where] = obs.view(len(obs), 4 * words.shape[-1]).view(torch.int32)
        else:
            self.observations[where] = obs
        self.actions[where] = actions.to(self.actions.dtype)
        self.logprobs[where] = logprobs.float()
        self.rewards[where] = rewards
        self.dones[where] = dones.float()
        self.truncations[where] = truncations.float()
        self.values[where] = values.float()


class HostStepStaging:
    """A host env's step of ``count`` agents as ``PuffeRL.device_step`` sees an env with device
    hooks: device copies of the env's observations, rewards and flags, loaded before each step, and
    the actions the step chose, fetched after it. The copies sit outside the step's CUDA graph,
    which then reads and writes the same tensors at every replay."""

    def __init__(self, vecenv, count, device):
        observation_space, action_space = vecenv.single_observation_space, vecenv.single_action_space
        self.observations = torch.zeros((count, *observation_space.shape), dtype=torch_dtype(observation_space.dtype), device=device)
        self.rewards = torch.zeros(count, device=device)
        self.terminals = torch.zeros(count, dtype=torch.bool, device=device)
        self.truncations = torch.zeros(count, dtype=torch.bool, device=device)
        action_dtype = torch.float32 if np.issubdtype(action_space.dtype, np.floating) else torch.int64
        self.actions = torch.zeros((count, *action_space.shape), dtype=action_dtype, device=device)
        self.host_actions = torch.zeros(self.actions.shape, dtype=action_dtype, pin_memory=True)

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


# The trainer ----------------------------------------------------------------------------------


class PuffeRL:
    """PPO on a vectorized env (``pufferlib.vector``'s async surface). ``collect()`` fills the
    batch, ``train()`` learns from it."""

    GRAPH_WARMUP = 3  # eager minibatches before the update's CUDA graph is captured
    COMPILED_VERSIONS = 8  # what one trainer may add to each compiled function's versions

    def __init__(self, config, vecenv, policy, world=None):
        self.config = config
        train = self.train_config = config["train"]
        self.device = resolve_device(train["device"])
        self.seed = config["base"]["seed"]
        self.world = world or World()  # the ranks of a data-parallel run, or just this process
        set_torch_threads(config)
        self.vecenv = vecenv
        # An env with device hooks lives on the GPU: the rollout then never leaves the device.
        self.env_on_device = hasattr(vecenv, "gpu_step")
        if self.env_on_device:
            env_device, mine = torch.device(vecenv.device), torch.device(self.device)
            if env_device.type != mine.type or mine.index not in (None, env_device.index):
                raise ConfigError(f"the env runs on {env_device} and the trainer on {mine}: use --train.device {env_device}")
            self.device = str(env_device)
        self.policy = policy.to(self.device)
        self.num_agents = vecenv.num_agents

        # Batch geometry: the batch is `segments` rows of `horizon` consecutive steps of one agent.
        self.horizon = train["horizon"]
        if self.horizon < 2:
            raise ConfigError(f"--train.horizon {self.horizon}: segments need at least 2 steps (the last one only bootstraps)")
        batch_size = self.num_agents * self.horizon if train["batch_size"] == "auto" else train["batch_size"]
        if batch_size % self.horizon:
            raise ConfigError(f"--train.batch-size {batch_size} must be a multiple of --train.horizon {self.horizon}")
        self.segments = batch_size // self.horizon
        if self.segments < self.num_agents:
            raise ConfigError(
                f"--train.batch-size {batch_size} gives {self.segments} segments of {self.horizon} steps, fewer than "
                f"the {self.num_agents} agents; use at least num_agents * horizon = {self.num_agents * self.horizon}"
            )
        minibatch_size = min(train["minibatch_size"], batch_size)
        if minibatch_size % self.horizon:
            raise ConfigError(f"--train.minibatch-size {minibatch_size} must be a multiple of --train.horizon {self.horizon}")
        if self.env_on_device and self.segments % self.num_agents:
            raise ConfigError(
                f"--train.batch-size {batch_size}: an env on the GPU fills every agent's row each step, so the batch "
                f"must be a multiple of num_agents * horizon = {self.num_agents * self.horizon}"
            )
        self.batch_size = batch_size
        self.minibatch_segments = minibatch_size // self.horizon
        self.total_minibatches = max(1, train["update_epochs"] * self.segments // self.minibatch_segments)
        self.total_epochs = max(1, math.ceil(train["total_timesteps"] / (batch_size * self.world.size)))

        self.buffer = SegmentBuffer(
            self.segments, self.horizon, self.num_agents, vecenv.single_observation_space, vecenv.single_action_space,
            self.policy.initial_state(self.segments, self.device), self.device,
        )
        self.ratio = torch.ones((self.segments, self.horizon), device=self.device)
        # The recurrent memory while acting, twice: a step of every agent reads one and writes the
        # other (``state`` is the one read next), which saves copying the new memory back.
        self.memories = tuple(self.policy.initial_state(self.num_agents, self.device) for _ in range(2))
        self.acting = 0
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(self.seed + self.world.rank)
        self.optimizer = build_optimizer(self.policy, train)
        # What the update reads on the device, so that one CUDA graph serves every epoch.
        self.lr_scale = torch.ones((), device=self.device)  # the schedule's rate over the base rate
        self.beta = torch.zeros((), device=self.device)  # the replay's importance-weight exponent
        self.totals = {}  # each loss statistic summed over the epoch's minibatches
        self.halted = torch.zeros((), dtype=torch.bool, device=self.device)  # a non-finite minibatch this epoch
        self.finite_minibatches = torch.zeros((), dtype=torch.int64, device=self.device)  # this epoch's, before it

        # GPU-only speedups. CUDA graphs (torch.compile's 'reduce-overhead') remove the kernel launch
        # cost of the small per-step inference; bf16 autocast halves the training math.
        on_cuda = self.device.startswith("cuda")
        use_compile = on_cuda if train["compile"] == "auto" else train["compile"]
        use_graphs = on_cuda if train["cudagraphs"] == "auto" else train["cudagraphs"]
        precision = ("bfloat16" if on_cuda else "float32") if train["precision"] == "auto" else train["precision"]
        if precision not in ("float32", "bfloat16"):
            raise ConfigError(f"--train.precision {precision!r}: valid are auto, float32, bfloat16")
        device_type = self.device.split(":")[0]
        bf16 = functools.partial(torch.autocast, device_type, dtype=torch.bfloat16)
        self.autocast = bf16 if precision == "bfloat16" else contextlib.nullcontext
        self.policy_act = functools.partial(policy_act, self.policy)
        self.minibatch_loss = functools.partial(
            ppo_loss, self.policy, clip_coef=train["clip_coef"], vf_clip_coef=train["vf_clip_coef"],
            vf_coef=train["vf_coef"], ent_coef=train["ent_coef"],
        )
        self.advantage_kernel = compute_advantages
        if use_compile:
            allow_recompiles(self.COMPILED_VERSIONS)
            self.minibatch_loss = torch.compile(self.minibatch_loss, dynamic=False)
            self.advantage_kernel = torch.compile(compute_advantages, dynamic=False)
            self.clip_gradients = torch.compile(self.clip_gradients, dynamic=False)
            self.scale_step = torch.compile(self.scale_step, dynamic=False)
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
        self.rollout_graphs = {}  # {(first agent, end, first column of a segment?, memory read): graph}
        self.rollout_warmups = collections.Counter()  # eager steps per run of agents
        self.rollout_step = torch.zeros((), dtype=torch.int64, device=self.device)
        self.agent_rows = torch.arange(self.num_agents, device=self.device)
        # Gradients are averaged across ranks outside the graph's reach.
        self.graph_update = use_graphs and self.world.size == 1
        self.update_graph = None

        self.global_step = 0
        self.epoch = 0
        self.elapsed = 0.0  # training seconds in earlier sessions of a resumed run
        self.start_time = time.time()
        self.env_stats = {}  # the newest episode statistics, for display
        self.episode_stats = {}  # statistics of the episodes that ended in the last epoch
        self.losses = {}
        self.timings = {}
        self.solved = None  # (step, seconds, value): when fresh episodes first confirmed the target score
        # The (epoch, progress) the learning-rate and replay schedules run on from: a run resumed
        # with a larger total stretches what is left of them instead of restarting them.
        self.schedule_anchor = (0, 0.0)
        self.stop_requested = False  # set (from a signal handler) to end collect() at the next step
        self.reset_envs()

    # -- experience ---------------------------------------------------------------------------

    def env_seed(self):
        """Envs are reset at the start, and on resuming when their state could not be saved, with a
        seed fixed by the epoch; each rank's envs follow the last one's."""
        return self.seed + self.world.rank * self.vecenv.num_envs + 1_000_003 * self.epoch

    def reset_envs(self):
        if self.env_on_device:
            self.vecenv.gpu_reset(self.env_seed())
        else:
            self.vecenv.async_reset(self.env_seed())
        # In place: the rollout's CUDA graphs read and write these tensors.
        for memory, initial in zip(self.state, self.policy.initial_state(self.num_agents, self.device)):
            memory.copy_(initial)
        # Episode logs count from when every agent has ended an episode since the reset: before,
        # the envs are in step and the quickest episodes end first.
        self.finished_once = np.zeros(self.num_agents, dtype=bool)

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

    def collect(self):
        """Collects one batch: steps the envs until every segment row holds `horizon` steps.
        Returns False, with the batch abandoned, when ``stop_requested`` was set meanwhile."""
        if self.env_on_device:
            return self.collect_on_device()
        start, first_step = time.time(), self.global_step
        device, buffer = self.device, self.buffer
        buffer.begin()
        infos = []
        while not buffer.full:
            if self.stop_requested and self.world.size == 1:  # ranks stop together, between epochs
                self.global_step = first_step
                return False
            obs, rewards, terminals, truncations, step_infos, env_ids, masks = self.vecenv.recv()
            env_ids, masks = np.asarray(env_ids), np.asarray(masks, dtype=bool)
            dones = np.logical_or(terminals, truncations)
            if self.finished_once.all():
                infos.extend(step_infos if isinstance(step_infos, list) else [step_infos])
            else:
                self.finished_once[env_ids[dones]] = True
            agents = buffer.run_of(env_ids)
            rows, cols, stored, first_row = buffer.place_step(env_ids, masks, agents)
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
                buffer.write_placed(rows, cols, stored, obs, dones, truncated, action, logprob, value, rewards, state)
            self.global_step += len(rows)
            self.vecenv.send(actions)
        self.global_step = first_step + self.world.sum(self.global_step - first_step)
        self.episode_stats = self.world.merge_stats(mean_infos(infos))
        self.env_stats = self.episode_stats or self.env_stats
        self.timings["rollout"] = time.time() - start
        return True

    def collect_on_device(self):
        """The rollout of an env with device hooks: agent i fills row i (and i + N, ...) column by
        column; actions go from the policy to the env as they are, and no step copies to the host
        or waits for the device. On a GPU each step replays a CUDA graph of the policy, the buffer
        write and the env step. The episode logs are fetched once, at the end."""
        start = time.time()
        self.rollout_step.zero_()
        for step in range(self.segments // self.num_agents * self.horizon):
            if self.stop_requested and self.world.size == 1:
                return False
            self.run_device_step(step % self.horizon == 0, slice(0, self.num_agents))
        self.global_step += self.batch_size * self.world.size
        logs = self.vecenv.gpu_sync_logs()
        self.episode_stats = self.world.merge_stats(mean_infos([logs] if logs else []))
        self.env_stats = self.episode_stats or self.env_stats
        self.timings["rollout"] = time.time() - start
        return True

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
        if (*key, first_column, self.acting) in self.rollout_graphs:
            self.rollout_graphs[(*key, first_column, self.acting)].replay()
        elif not self.graph_rollout:
            self.device_step(first_column, agents)
        else:
            with side_stream(self.device):
                self.device_step(first_column, agents)
            self.rollout_warmups[key] += 1
            if self.rollout_warmups[key] == self.GRAPH_WARMUP:
                acting = self.acting
                for memory in (acting, 1 - acting) if everyone else (acting,):
                    self.acting = memory
                    for first in (True, False):
                        step = functools.partial(self.device_step, first, agents)
                        self.rollout_graphs[(*key, first, memory)] = capture_graph(step, self.generator)[0]
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
            self.record(first_column, agents, env.observations, dones, env.truncations, action, logprob, value, env.rewards, state)
        env.gpu_step(action)

    def record_step(self, first_column, agents, obs, dones, truncations, actions, logprobs, values, rewards, state):
        """Stores step t (``rollout_step``) of the run ``agents`` at row (t // horizon) * num_agents
        + i, column t % horizon, and moves t on. Compiled on a GPU into a few kernels, where the
        indices and each field's write would each be one."""
        rows = torch.div(self.rollout_step, self.horizon, rounding_mode="floor") * self.num_agents + self.agent_rows[agents]
        column = (self.rollout_step % self.horizon).reshape(1)  # a 0-d index would be read on the host
        self.buffer.write_at(rows, column, first_column, obs, dones, truncations, actions, logprobs, values, rewards, state)
        self.rollout_step.add_(1)

    def train(self):
        """One PPO update over the batch: prioritized minibatches of segments, clipped losses.

        The minibatches only queue device work: nothing waits for the GPU until the epoch's
        statistics are read at the end. A NaN or infinity in a minibatch's loss or gradients halts
        the updates on the device from that minibatch on, and the read at the end reports it."""
        start = time.time()
        train, buffer = self.train_config, self.buffer
        progress = self.progress()
        lr = cosine_lr(train["learning_rate"], progress) if train["anneal_lr"] else train["learning_rate"]
        self.lr_scale.fill_(lr / train["learning_rate"] if train["learning_rate"] else 0.0)
        self.beta.fill_(train["prio_beta0"] + (1.0 - train["prio_beta0"]) * progress)
        self.ratio.fill_(1.0)
        for total in self.totals.values():
            total.zero_()
        self.halted.zero_()
        self.finite_minibatches.zero_()

        advantages = self.run_minibatches()

        self.losses = {key: value.item() / self.total_minibatches for key, value in self.totals.items()}
        if self.halted.item() or not all(math.isfinite(value) for value in self.losses.values()):
            raise NonFiniteError(self.first_non_finite(advantages))
        values, returns = buffer.values[:, :-1], (advantages + buffer.values)[:, :-1]
        variance = returns.var().item()
        self.losses["explained_variance"] = float("nan") if variance == 0 else 1 - (returns - values).var().item() / variance
        self.losses["learning_rate"] = lr
        if not self.world.same_weights(list(self.policy.parameters())):
            raise RuntimeError(f"ranks hold different weights after epoch {self.epoch}: their updates diverged")
        self.epoch += 1
        self.timings["train"] = time.time() - start

    def minibatch_update(self):
        """One prioritized minibatch, device work only: returns the advantages it used."""
        train, buffer = self.train_config, self.buffer
        # Recomputed every minibatch: the ratios of replayed segments change as the policy does,
        # and V-trace uses them to discount stale experience.
        advantages = self.advantage_kernel(
            buffer.values, buffer.rewards, buffer.dones, buffer.truncations, self.ratio,
            train["gamma"], train["gae_lambda"], train["vtrace_rho_clip"], train["vtrace_c_clip"],
        )
        idx, weights = prioritized_sample(advantages, self.minibatch_segments, train["prio_alpha"], self.beta, self.generator)
        with self.autocast():
            loss, ratio, stats = self.minibatch_loss(
                buffer.observations[idx], tuple(s[idx] for s in buffer.start_state), buffer.dones[idx].bool(),
                buffer.actions[idx], buffer.logprobs[idx], buffer.values[idx], advantages[idx], weights,
            )
        self.ratio[idx] = ratio

        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.world.average_gradients(list(self.policy.parameters()))
        stats["grad_norm"], start = self.clip_gradients()
        self.optimizer.step()
        self.scale_step(start, loss.detach(), stats["grad_norm"])
        if not self.totals:  # views of one tensor, so that a minibatch adds its statistics in one kernel
            self.stat_totals = torch.zeros(len(stats), device=self.device)
            self.totals = dict(zip(stats, self.stat_totals.unbind()))
        self.stat_totals.add_(torch.stack([value.detach().float() for value in stats.values()]))
        return advantages

    @torch.no_grad()
    def clip_gradients(self):
        """Clips the gradients. Returns their norm before clipping and the weights before the
        optimizer's step, flat (compiled on a GPU: a few kernels where eagerly there are dozens)."""
        parameters = list(self.policy.parameters())
        grad_norm = torch.nn.utils.clip_grad_norm_(parameters, self.train_config["max_grad_norm"])
        return grad_norm, torch.cat([p.reshape(-1) for p in parameters])

    @torch.no_grad()
    def scale_step(self, start, loss, grad_norm):
        """Scales the change the optimizer's step made by the schedule's rate: the optimizer steps
        with the base learning rate, fixed in a CUDA graph, so the same replay serves every epoch
        (exact for steps linear in the rate: Adam; Muon without weight decay). The first non-finite
        loss or gradient halts the epoch's updates on the device, with no host wait: from then on
        every minibatch keeps the weights of the last finite one."""
        parameters = list(self.policy.parameters())
        stepped = torch.cat([p.reshape(-1) for p in parameters])
        self.halted |= ~(torch.isfinite(loss) & torch.isfinite(grad_norm))
        self.finite_minibatches += ~self.halted
        weights = torch.where(self.halted, start, start + (stepped - start) * self.lr_scale)
        torch._foreach_copy_(parameters, [w.view_as(p) for w, p in zip(weights.split([p.numel() for p in parameters]), parameters)])

    def run_minibatches(self):
        """The epoch's minibatches: eagerly, or on a GPU as replays of one CUDA graph of the whole
        minibatch (captured after a few eager ones have compiled it and created the optimizer's
        state), which leaves the host nothing to do per minibatch but one launch."""
        count = self.total_minibatches
        if not self.graph_update or count <= self.GRAPH_WARMUP:
            for _ in range(count):
                advantages = self.minibatch_update()
            return advantages
        done = 0
        if self.update_graph is None:
            with side_stream(self.device):
                for _ in range(self.GRAPH_WARMUP):
                    self.minibatch_update()
                    done += 1
            self.update_graph, self.graph_advantages = capture_graph(self.minibatch_update, self.generator)
        for _ in range(count - done):
            self.update_graph.replay()
        return self.graph_advantages

    # -- bookkeeping ---------------------------------------------------------------------------

    def progress(self):
        """How far the schedules are, from 0 at the start to 1 at total_timesteps."""
        epoch0, progress0 = self.schedule_anchor
        return progress0 + (1.0 - progress0) * (self.epoch - epoch0) / max(self.total_epochs - epoch0, 1)

    def first_non_finite(self, advantages):
        """Names the first quantity of the update, in data-flow order, with a NaN or infinity."""
        buffer = self.buffer
        quantities = [("rewards", buffer.rewards), ("observations", buffer.observations), ("values", buffer.values),
                      ("advantages", advantages), *self.totals.items()]
        name = next((name for name, value in quantities if value.is_floating_point() and not torch.isfinite(value).all()), "loss")
        where = f"minibatch {self.finite_minibatches.item() + 1} of {self.total_minibatches}" if self.halted.item() else "statistics"
        return (f"non-finite {name} at step {self.global_step} (epoch {self.epoch}, {where}): training stopped there, "
                f"the weights are those of the last finite minibatch and the last checkpoint is finite. "
                f"Lower --train.learning-rate or check the env's {name}")

    def seconds(self):
        return self.elapsed + time.time() - self.start_time

    def state_dict(self):
        return dict(
            format=CHECKPOINT_FORMAT,
            env_name=self.config["base"]["env_name"],
            config=self.config,
            architecture=architecture(self.policy, self.vecenv),
            model=self.policy.state_dict(),
            optimizer=self.optimizer.state_dict(),
            global_step=self.global_step,
            epoch=self.epoch,
            elapsed=self.seconds(),
            solved=list(self.solved) if self.solved else None,
            generator=self.generator.get_state(),
            torch_rng=torch.get_rng_state(),
            progress=self.progress(),
            total_epochs=self.total_epochs,
            # The envs mid-episode and the agents' memory, where the env can save its state (one
            # process's envs: a data-parallel run resumes with fresh episodes).
            env_state=self.vecenv.get_state() if hasattr(self.vecenv, "get_state") and self.world.size == 1 else None,
            agent_state=[s.cpu() for s in self.state],
        )

    def save_checkpoint(self, path):
        """Writes the checkpoint atomically; training goes on exactly as it would have without it."""
        save_atomic(self.state_dict(), path)

    def load_checkpoint(self, checkpoint):
        """Continues from a checkpoint (``read_checkpoint``'s result): weights, optimizer, counters,
        RNG, schedules, and, where the env saved them, the env and memory states of that moment
        (otherwise the envs start fresh episodes)."""
        check_architecture(checkpoint, self.policy, self.vecenv)
        load_weights(self.policy, checkpoint)
        load_optimizer_state(self.optimizer, checkpoint["optimizer"])
        self.global_step, self.epoch, self.elapsed = checkpoint["global_step"], checkpoint["epoch"], checkpoint["elapsed"]
        self.solved = tuple(checkpoint["solved"]) if checkpoint["solved"] else None
        self.generator.set_state(checkpoint["generator"])
        torch.set_rng_state(checkpoint["torch_rng"])
        # The budget is in steps: what is left of it, in epochs of this run's batch and rank count.
        remaining = max(0, self.train_config["total_timesteps"] - self.global_step)
        self.total_epochs = max(1, self.epoch + math.ceil(remaining / (self.batch_size * self.world.size)))
        if checkpoint["total_epochs"] != self.total_epochs:
            self.schedule_anchor = (self.epoch, checkpoint["progress"])
        self.start_time = time.time()
        if not self.restore_envs(checkpoint):
            self.reset_envs()

    def restore_envs(self, checkpoint):
        """Puts the envs and the agents' memory back as the checkpoint saw them; False when it
        cannot (a game that does not save its state, other env counts or parameters, or ranks that
        would all restore the one saved process's envs)."""
        saved_memory = checkpoint["agent_state"]
        if checkpoint["env_state"] is None or not hasattr(self.vecenv, "set_state") or self.world.size > 1:
            return False
        if [tuple(s.shape) for s in saved_memory] != [tuple(s.shape) for s in self.state]:
            return False
        try:
            self.vecenv.set_state(checkpoint["env_state"])
        except ValueError:
            return False
        for memory, saved in zip(self.state, saved_memory):
            memory.copy_(saved)
        self.finished_once[:] = True
        return True

    def close(self):
        self.vecenv.close()


class NonFiniteError(RuntimeError):
    """A NaN or infinity reached the update; the message names where it first appears."""
