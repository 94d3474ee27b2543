"""PuffeRL: PPO on a vectorized env, the algorithm only. Read top to bottom:

1. the advantage kernel: GAE with V-trace importance clipping, as a parallel scan over time;
2. prioritized segment replay: segments sampled by summed |advantage| ** alpha, importance
   weights with beta annealed to 1;
3. the PPO loss of a minibatch: clipped policy and value losses, entropy bonus;
4. the optimizer: Adam, or Muon for the hidden weight matrices;
5. ``PuffeRL``: ``collect`` fills the batch (``pufferlib.rollout`` into ``pufferlib.buffer``'s
   segments), ``train`` replays prioritized minibatches of it with a cosine learning-rate schedule
   and gradient clipping; recurrent policies replay each segment from the memory it started with.

On a GPU the trainer adds bf16 autocast, ``torch.compile`` and CUDA graphs; on a CPU those cost
more than they give and stay off. Configs, checkpoints, the run around the trainer and the
dashboard have modules of their own.
"""

import functools
import math
import time

import torch

from pufferlib.assemble import resolve_device, set_torch_threads
from pufferlib.buffer import SegmentBuffer, batch_geometry
from pufferlib.checkpoint import CHECKPOINT_FORMAT, architecture, check_architecture, load_weights, save_atomic
from pufferlib.config import ConfigError, view
from pufferlib.distributed import World
from pufferlib.environment import mean_infos
from pufferlib.pytorch import (
    CombinedOptimizer,
    allow_recompiles,
    capture_graph,
    linear_scan,
    load_optimizer_state,
    sample_logits,
    side_stream,
    top_k_indices,
)
from pufferlib.rollout import Rollout, gpu_speedups, on_device, trainer_device

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
    adam = dict(lr=train.learning_rate, betas=(train.adam_beta1, train.adam_beta2), eps=train.adam_eps,
                fused=on_cuda, capturable=on_cuda)
    if train.optimizer == "adam":
        return torch.optim.Adam([p for _, p in named], **adam)
    if train.optimizer != "muon":
        raise ConfigError(f"--train.optimizer {train.optimizer!r}: valid are adam and muon")
    if not hasattr(torch.optim, "Muon"):
        raise ConfigError(f"--train.optimizer muon needs torch.optim.Muon (torch >= 2.9); this is torch {torch.__version__}")
    from pufferlib.muon import StackedMuon  # defined on torch's Muon, so only where it exists

    is_hidden = {name: p.ndim == 2 and "head" not in name and "embedding" not in name for name, p in named}
    hidden = [p for name, p in named if is_hidden[name]]
    others = [p for name, p in named if not is_hidden[name]]
    if not hidden:
        raise ConfigError("--train.optimizer muon: this policy has no hidden weight matrices (add layers or an rnn)")
    muon = StackedMuon(
        hidden, lr=train.learning_rate, momentum=train.muon_momentum, weight_decay=0.0, adjust_lr_fn="match_rms_adamw"
    )
    return CombinedOptimizer([muon, torch.optim.Adam(others, **adam)])


def cosine_lr(base_lr, progress):
    """Cosine decay from base_lr at progress 0 to 0 at progress 1."""
    return base_lr * 0.5 * (1.0 + math.cos(math.pi * min(max(progress, 0.0), 1.0)))


# The trainer ----------------------------------------------------------------------------------


class PuffeRL:
    """PPO on a vectorized env (``pufferlib.vector``'s async surface, or an env with device hooks).
    ``collect()`` fills the batch, ``train()`` learns from it."""

    GRAPH_WARMUP = 3  # eager minibatches before the update's CUDA graph is captured
    COMPILED_VERSIONS = 8  # what one trainer may add to each compiled function's versions

    def __init__(self, config, vecenv, policy, world=None):
        self.config = config
        train = self.train_settings = view(config, "train")
        self.seed = config["base"]["seed"]
        self.world = world or World()  # the ranks of a data-parallel run, or just this process
        set_torch_threads(config)
        self.vecenv = vecenv
        self.env_on_device = on_device(vecenv)
        self.device = trainer_device(vecenv, resolve_device(train.device))
        self.policy = policy.to(self.device)
        self.num_agents = vecenv.num_agents

        # The batch is `segments` rows of `horizon` consecutive steps of one agent.
        self.horizon = train.horizon
        self.batch_size, self.segments, self.minibatch_segments = batch_geometry(train, self.num_agents, self.env_on_device)
        self.total_minibatches = max(1, train.update_epochs * self.segments // self.minibatch_segments)
        self.total_epochs = max(1, math.ceil(train.total_timesteps / (self.batch_size * self.world.size)))
        self.buffer = SegmentBuffer(
            self.segments, self.horizon, self.num_agents, vecenv.single_observation_space, vecenv.single_action_space,
            self.policy.initial_state(self.segments, self.device), self.device,
        )
        self.ratio = torch.ones((self.segments, self.horizon), device=self.device)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(self.seed + self.world.rank)
        self.optimizer = build_optimizer(self.policy, train)
        # What the update reads on the device, so that one CUDA graph serves every epoch.
        self.lr_scale = torch.ones((), device=self.device)  # the schedule's rate over the base rate
        self.beta = torch.zeros((), device=self.device)  # the replay's importance-weight exponent
        self.totals = {}  # each loss statistic summed over the epoch's minibatches
        self.halted = torch.zeros((), dtype=torch.bool, device=self.device)  # a non-finite minibatch this epoch
        self.finite_minibatches = torch.zeros((), dtype=torch.int64, device=self.device)  # this epoch's, before it

        use_compile, use_graphs, self.autocast = gpu_speedups(train, self.device)
        self.minibatch_loss = functools.partial(
            ppo_loss, self.policy, clip_coef=train.clip_coef, vf_clip_coef=train.vf_clip_coef,
            vf_coef=train.vf_coef, ent_coef=train.ent_coef,
        )
        self.advantage_kernel = compute_advantages
        if use_compile:
            allow_recompiles(self.COMPILED_VERSIONS)
            self.minibatch_loss = torch.compile(self.minibatch_loss, dynamic=False)
            self.advantage_kernel = torch.compile(compute_advantages, dynamic=False)
            self.clip_gradients = torch.compile(self.clip_gradients, dynamic=False)
            self.scale_step = torch.compile(self.scale_step, dynamic=False)
        self.rollout = Rollout(vecenv, self.policy, self.buffer, self.generator, self.autocast, self.world,
                               use_compile, use_graphs)
        # Gradients are averaged across ranks outside the graph's reach.
        self.graph_update = use_graphs and self.world.size == 1
        self.update_graph = None

        self.global_step, self.epoch = 0, 0
        self.elapsed = 0.0  # training seconds in earlier sessions of a resumed run
        self.start_time = time.time()
        self.env_stats = {}  # the newest episode statistics, for display
        self.episode_stats = {}  # statistics of the episodes that ended in the last epoch
        self.losses, self.timings = {}, {}
        self.solved = None  # (step, seconds, value): when fresh episodes first confirmed the target score
        # The (epoch, progress) the learning-rate and replay schedules run on from: a run resumed
        # with a larger total anneals what is left of them over the new budget.
        self.schedule_anchor = (0, 0.0)
        self.stop_requested = False  # set (from a signal handler) to end collect() at the next step
        self.rollout.reset(self.env_seed())

    # -- experience ---------------------------------------------------------------------------

    def env_seed(self):
        """Envs are reset at the start, and on resuming when their state could not be saved, with a
        seed fixed by the epoch; each rank's envs follow the last one's."""
        return self.seed + self.world.rank * self.vecenv.num_envs + 1_000_003 * self.epoch

    @property
    def state(self):
        """The agents' recurrent memory: what they act from at the next step."""
        return self.rollout.state

    def collect(self):
        """Collects one batch. Returns False, with the batch abandoned, when ``stop_requested``
        was set meanwhile."""
        start = time.time()
        collected = self.rollout.collect(stop=lambda: self.stop_requested and self.world.size == 1)  # ranks: between epochs
        if collected is None:
            return False
        steps, infos = collected
        self.global_step += steps
        self.episode_stats = self.world.merge_stats(mean_infos(infos))
        self.env_stats = self.episode_stats or self.env_stats
        self.timings["rollout"] = time.time() - start
        return True

    # -- learning -----------------------------------------------------------------------------

    def train(self):
        """One PPO update over the batch: prioritized minibatches of segments, clipped losses.

        The minibatches only queue device work: nothing waits for the GPU until the epoch's
        statistics are read at the end. A NaN or infinity in a minibatch's loss or gradients halts
        the updates on the device from that minibatch on, and the read at the end reports it."""
        start = time.time()
        train, buffer = self.train_settings, self.buffer
        progress = self.progress()
        lr = cosine_lr(train.learning_rate, progress) if train.anneal_lr else train.learning_rate
        self.lr_scale.fill_(lr / train.learning_rate if train.learning_rate else 0.0)
        self.beta.fill_(train.prio_beta0 + (1.0 - train.prio_beta0) * progress)
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
        train, buffer = self.train_settings, self.buffer
        # Recomputed every minibatch: the ratios of replayed segments change as the policy does,
        # and V-trace uses them to discount stale experience.
        advantages = self.advantage_kernel(
            buffer.values, buffer.rewards, buffer.dones, buffer.truncations, self.ratio,
            train.gamma, train.gae_lambda, train.vtrace_rho_clip, train.vtrace_c_clip,
        )
        idx, weights = prioritized_sample(advantages, self.minibatch_segments, train.prio_alpha, self.beta, self.generator)
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
        grad_norm = torch.nn.utils.clip_grad_norm_(parameters, self.train_settings.max_grad_norm)
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
                f"the weights are those of the last finite minibatch. Lower --train.learning-rate or check the env's {name}")

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
        remaining = max(0, self.train_settings.total_timesteps - self.global_step)
        self.total_epochs = max(1, self.epoch + math.ceil(remaining / (self.batch_size * self.world.size)))
        if checkpoint["total_epochs"] != self.total_epochs:
            # A new budget stretches what is left of the schedules over it; one that had run out
            # (a finished run extended) starts again where a run planned with the new budget is.
            progress = checkpoint["progress"] if checkpoint["progress"] < 1.0 else self.epoch / self.total_epochs
            self.schedule_anchor = (self.epoch, progress)
        self.start_time = time.time()
        # Ranks would all restore the one saved process's envs: they start fresh episodes instead.
        if self.world.size > 1 or not self.rollout.restore(checkpoint["env_state"], checkpoint["agent_state"]):
            self.rollout.reset(self.env_seed())

    def close(self):
        self.vecenv.close()


class NonFiniteError(RuntimeError):
    """A NaN or infinity reached the update; the message names where it first appears."""
