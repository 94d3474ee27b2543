"""PuffeRL: the PPO trainer and the ``puffer`` command line.

Read top to bottom, this file is the whole algorithm:

1. configuration: ``pufferlib/config/default.ini`` plus one ``.ini`` per env, every key a flag;
2. the advantage kernel: GAE with V-trace importance clipping, as a parallel scan over time;
3. prioritized segment replay: segments sampled by summed |advantage| ** alpha, importance
   weights with beta annealed to 1;
4. the PPO loss of a minibatch: clipped policy and value losses, entropy bonus;
5. ``PuffeRL``: ``evaluate`` collects a batch of experience as fixed-length segments of one agent
   each, ``train`` replays prioritized minibatches of them with Adam or Muon, a cosine
   learning-rate schedule and gradient clipping; recurrent policies replay each segment from the
   memory it started with;
6. checkpoints (atomic, exactly resumable), metrics (JSON lines, optional wandb/tensorboard), the
   terminal dashboard, and the ``puffer train|eval|bench|list|plot|tank`` commands.

On a GPU the trainer adds bf16 autocast, ``torch.compile`` and CUDA graphs; on a CPU those cost
more than they give and stay off.
"""

import argparse
import ast
import configparser
import contextlib
import functools
import importlib
import inspect
import json
import math
import os
import re
import signal
import sys
import threading
import time
from collections import defaultdict, deque
from pathlib import Path

import numpy as np
import torch

import pufferlib
import pufferlib.models
from pufferlib.exceptions import APIUsageError, did_you_mean
from pufferlib.pytorch import linear_scan, sample_logits

CONFIG_DIR = Path(__file__).resolve().parent / "config"
CHECKPOINT_NAME = "checkpoint.pt"
CHECKPOINT_FORMAT = "pufferl-checkpoint-1"
UNASSIGNED, NO_ROW = -2, -1  # an agent's rollout row before it has one, and once none is left
# Sections whose keys belong to one env or one policy class: an env's .ini replaces them whole.
REPLACED_SECTIONS = ("env", "policy")


class ConfigError(ValueError):
    """A config file or command-line flag that cannot be used as given."""


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, corrupt, or does not fit the env and policy it is loaded into."""


# ----------------------------------------------------------------------------------------------
# 1. Configuration
# ----------------------------------------------------------------------------------------------


def parse_value(text):
    """An .ini value as a Python value: bools, None, ints (1_000_000), floats, else the string."""
    text = text.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.lower() == "none":
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def read_ini(path):
    parser = configparser.ConfigParser(inline_comment_prefixes=("#",))
    parser.optionxform = str  # keys are case-sensitive identifiers
    with open(path) as f:
        parser.read_file(f)
    return {section: {key: parse_value(value) for key, value in parser[section].items()} for section in parser.sections()}


def env_config_files():
    """{env name: .ini path} for every env config under pufferlib/config/ ([base] env_name)."""
    found = {}
    for path in sorted(CONFIG_DIR.rglob("*.ini")):
        if path.name == "default.ini":
            continue
        names = read_ini(path).get("base", {}).get("env_name")
        for name in str(names or "").replace(",", " ").split():
            found[name] = path
    return found


def canonical_env_name(env_name):
    """Ocean envs may be named without their prefix: 'squared' -> 'puffer_squared'."""
    files = env_config_files()
    if env_name not in files and f"puffer_{env_name}" in files:
        return f"puffer_{env_name}"
    return env_name


def load_config(env_name):
    """default.ini, overlaid by the env's own .ini. Unknown keys in an env .ini are errors."""
    config = read_ini(CONFIG_DIR / "default.ini")
    files = env_config_files()
    if env_name not in files:
        hint = did_you_mean(env_name, files)
        raise ConfigError(
            f"No config for env {env_name!r} in {CONFIG_DIR}.{hint} Known envs: {', '.join(sorted(files))}"
        )
    for section, values in read_ini(files[env_name]).items():
        if section in REPLACED_SECTIONS:
            config[section] = dict(values)
            continue
        if section not in config:
            raise ConfigError(f"{files[env_name]}: unknown section [{section}]; valid: {', '.join(config)}")
        for key, value in values.items():
            if key not in config[section]:
                raise ConfigError(f"{files[env_name]}: unknown key {key!r} in [{section}]")
            config[section][key] = value
    config["base"]["env_name"] = env_name
    return config


def flag_names(config):
    return [f"--{section}.{key.replace('_', '-')}" for section, values in config.items() for key in values]


def convert_flag(flag, text, default):
    """Casts a flag's text to the type of the key's default value ("1e6" is a fine integer)."""
    expected = None
    if isinstance(default, bool):
        if text.lower() in ("true", "1", "yes", "on"):
            return True
        if text.lower() in ("false", "0", "no", "off"):
            return False
        expected = "true or false"
    elif isinstance(default, int):
        with contextlib.suppress(ValueError):
            number = float(text.replace("_", ""))
            if number.is_integer():
                return int(number)
        expected = "an integer"
    elif isinstance(default, float):
        with contextlib.suppress(ValueError):
            return float(text.replace("_", ""))
        expected = "a number"
    else:
        return parse_value(text)
    raise ConfigError(f"{flag} {text!r}: expected {expected} (default: {default!r})")


def apply_flags(config, argv, extra_flags=()):
    """Applies '--section.key value' / '--section.key=value' flags; hyphens and underscores match.

    An unknown flag is an error naming the closest valid one. ``extra_flags`` are the command's
    own options, offered as suggestions too.
    """
    valid = flag_names(config)
    i = 0
    while i < len(argv):
        token = argv[i]
        if not token.startswith("--") or "." not in token.split("=")[0]:
            hint = did_you_mean(token.split("=")[0], valid + list(extra_flags), cutoff=0.5)
            raise ConfigError(f"Unknown argument {token!r}.{hint} Flags look like --train.learning-rate 0.01")
        flag, equals, text = token.partition("=")
        section, _, key = flag[2:].partition(".")
        key = key.replace("-", "_")
        if section not in config or key not in config[section]:
            hint = did_you_mean(flag.replace("_", "-"), valid + list(extra_flags), cutoff=0.5, otherwise=" Run with --help to list every flag.")
            raise ConfigError(f"Unknown flag {flag}.{hint}")
        default = config[section][key]
        if not equals:
            if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                text = argv[i + 1]
                i += 1
            elif isinstance(default, bool):
                text = "true"
            else:
                raise ConfigError(f"Flag {flag} needs a value")
        config[section][key] = convert_flag(flag, text, default)
        i += 1
    return config


# ----------------------------------------------------------------------------------------------
# Envs and policies from a config
# ----------------------------------------------------------------------------------------------


def make_vecenv(env_name, config, num_envs=None):
    """Builds the vectorized env a config describes.

    Ocean envs with backend 'native' are stepped in-process by their own C vecenv, the fastest way
    to run them; every other env or backend goes through ``pufferlib.vector``.
    """
    import ocean  # imported here: the compiled envs load only when an env is made

    vec = config["vec"]
    num_envs = num_envs or vec["num_envs"]
    env_kwargs = dict(config["env"])
    if env_name in ocean.ENVS and vec["backend"] == "native":
        return ocean.make(env_name, num_envs=num_envs, num_threads=vec["num_threads"], **env_kwargs)
    import pufferlib.vector

    if env_name in ocean.ENVS:
        creator = ocean.env_class(env_name)
    else:
        package = config["base"].get("package")
        if not package:
            raise ConfigError(f"{env_name}: its .ini must name [base] package (a pufferlib.environments module)")
        creator = importlib.import_module(f"pufferlib.environments.{package}").env_creator(env_name)
    return pufferlib.vector.make(
        creator, env_kwargs=env_kwargs, backend=vec["backend"], num_envs=num_envs,
        num_workers=None if vec["num_workers"] == "auto" else vec["num_workers"],
        batch_size=None if vec["batch_size"] == "auto" else vec["batch_size"],
        seed=config["base"]["seed"],
    )


def set_torch_threads(config):
    """Applies [train] torch_threads. Before a policy is built too: the orthogonal initialisation's
    QR factorisation rounds differently with different thread counts."""
    if config["train"]["torch_threads"] > 0:
        torch.set_num_threads(config["train"]["torch_threads"])


def make_policy(env, config):
    """The [base] policy (and [base] rnn around it) with the [policy] / [rnn] sections as arguments,
    initialised from [base] seed (without disturbing torch's global RNG)."""
    set_torch_threads(config)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config["base"]["seed"])
        return _build_policy(env, config)


def _build_policy(env, config):
    base = config["base"]
    name = str(base["policy"]).lower()
    if name not in pufferlib.models.POLICIES:
        raise ConfigError(f"Unknown policy {base['policy']!r}; valid: {', '.join(pufferlib.models.POLICIES)}")
    policy_class = pufferlib.models.POLICIES[name]
    policy = policy_class(env, **_arguments_for(policy_class, config["policy"], "policy"))
    rnn = base.get("rnn")
    if rnn in (None, "none", False):
        return policy
    if str(rnn).lower() not in pufferlib.models.RNNS:
        raise ConfigError(f"Unknown rnn {rnn!r}; valid: none, {', '.join(pufferlib.models.RNNS)}")
    rnn_class = pufferlib.models.RNNS[str(rnn).lower()]
    return rnn_class(env, policy, input_size=policy.hidden_size, **_arguments_for(rnn_class, config["rnn"], "rnn"))


def _arguments_for(cls, values, section):
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "env", "policy", "input_size"}
    unknown = set(values) - accepted
    if unknown:
        raise ConfigError(
            f"[{section}] keys {sorted(unknown)} are not arguments of {cls.__name__} (it takes {sorted(accepted)})"
        )
    return dict(values)


def resolve_device(name):
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if str(name).startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"--train.device {name}: this torch ({torch.__version__}) sees no CUDA device")
    return name


class SynchronousEnv:
    """Gives a PufferEnv that only has reset/step the async_reset/send/recv surface of the trainer.

    ``recv`` returns what the last ``send`` (a synchronous step) produced, for every agent.
    """

    def __init__(self, env):
        self.env = env
        self.agent_ids = np.arange(env.num_agents)
        self.outputs = None

    def __getattr__(self, name):
        return getattr(self.env, name)

    def async_reset(self, seed=0):
        observations, infos = self.env.reset(seed)
        quiet = np.zeros(self.env.num_agents, dtype=bool)
        rewards = np.zeros(self.env.num_agents, dtype=np.float32)
        self.outputs = (observations, rewards, quiet, quiet, infos, self.agent_ids, self.env.masks)

    def send(self, actions):
        self.outputs = (*self.env.step(actions), self.agent_ids, self.env.masks)

    def recv(self):
        return self.outputs

    def close(self):
        self.env.close()


# ----------------------------------------------------------------------------------------------
# 2. The advantage kernel
# ----------------------------------------------------------------------------------------------


def compute_advantages(values, rewards, dones, ratio, gamma, gae_lambda, rho_clip, c_clip):
    """GAE with V-trace importance clipping over segments [S, T].

    Step t of a segment holds an observation with the reward and done flag that arrived with it,
    so the transition out of step t is (rewards[t + 1], dones[t + 1]). With rho_t = min(ratio_t,
    rho_clip) and c_t = min(ratio_t, c_clip), ratio being pi_new / pi_behaviour:

        delta_t = rho_t * (r_{t+1} + gamma * V_{t+1} * (1 - d_{t+1}) - V_t)
        A_t     = delta_t + gamma * lambda * c_t * (1 - d_{t+1}) * A_{t+1}

    which is GAE when the ratios are 1. The last step of a segment only bootstraps (A = 0). The
    backward recursion is a linear recurrence, so it runs as a log-depth parallel scan over time
    (``linear_scan`` on the reversed segment) instead of a Python loop over T.
    """
    rho = ratio[:, :-1].clamp(max=rho_clip)
    c = ratio[:, :-1].clamp(max=c_clip)
    nonterminal = 1.0 - dones[:, 1:]
    delta = rho * (rewards[:, 1:] + gamma * values[:, 1:] * nonterminal - values[:, :-1])
    decay = gamma * gae_lambda * c * nonterminal
    advantages = linear_scan(decay.flip(1), delta.flip(1)).flip(1)
    return torch.cat([advantages, torch.zeros_like(values[:, :1])], dim=1)


# ----------------------------------------------------------------------------------------------
# 3. Prioritized segment replay
# ----------------------------------------------------------------------------------------------


def prioritized_sample(advantages, num_samples, alpha, beta, generator=None):
    """Picks ``num_samples`` distinct segments with probability proportional to sum|A| ** alpha.

    Returns (indices, importance weights [num_samples, 1]); the weight (S * p_i) ** -beta undoes
    the sampling bias when beta is 1 and is exactly 1 for uniform sampling (alpha = 0). The small
    constant keeps every segment reachable when its advantages are all zero. The draw is the
    Gumbel top-k trick, the same distribution as drawing one by one without replacement, in a few
    elementwise kernels (torch.multinomial makes the host wait on a GPU).
    """
    priority = (advantages.abs().sum(dim=1) + 1e-6).pow(alpha)
    probs = priority / priority.sum()
    uniform = torch.rand(probs.shape, generator=generator, device=probs.device).clamp_(min=1e-20)
    indices = (probs.log() - (-uniform.log()).log()).topk(num_samples).indices
    weights = (probs.numel() * probs[indices]).pow(-beta)
    return indices, weights.unsqueeze(1)


# ----------------------------------------------------------------------------------------------
# 4. The PPO loss of one minibatch
# ----------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------
# 5. The trainer
# ----------------------------------------------------------------------------------------------


class CombinedOptimizer:
    """Muon for weight matrices and Adam for the rest, stepped as one optimizer."""

    def __init__(self, optimizers):
        self.optimizers = optimizers

    @property
    def param_groups(self):
        return [group for optimizer in self.optimizers for group in optimizer.param_groups]

    def zero_grad(self, set_to_none=True):
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=set_to_none)

    def step(self):
        for optimizer in self.optimizers:
            optimizer.step()

    def state_dict(self):
        return {str(i): optimizer.state_dict() for i, optimizer in enumerate(self.optimizers)}

    def load_state_dict(self, state):
        for i, optimizer in enumerate(self.optimizers):
            optimizer.load_state_dict(state[str(i)])


def build_optimizer(policy, train):
    """Adam, or Muon (``torch.optim.Muon``: orthogonalized momentum) for the hidden weight matrices
    with Adam for everything else. As Muon's authors advise, embeddings and output heads stay with
    Adam: a 1 x n value head orthogonalized is just its normalized gradient, a fixed-size step.
    Muon's 'match_rms_adamw' scaling lets both share one learning rate."""
    named = [(name, p) for name, p in policy.named_parameters() if p.requires_grad]
    # The fused CUDA kernel updates every parameter in one launch instead of several per tensor.
    fused = all(p.is_cuda for _, p in named)
    adam = dict(lr=train["learning_rate"], betas=(train["adam_beta1"], train["adam_beta2"]), eps=train["adam_eps"], fused=fused)
    if train["optimizer"] == "adam":
        return torch.optim.Adam([p for _, p in named], **adam)
    if train["optimizer"] != "muon":
        raise ConfigError(f"--train.optimizer {train['optimizer']!r}: valid are adam and muon")
    if not hasattr(torch.optim, "Muon"):
        raise ConfigError(f"--train.optimizer muon needs torch.optim.Muon (torch >= 2.9); this is torch {torch.__version__}")
    is_hidden = {name: p.ndim == 2 and "head" not in name and "embedding" not in name for name, p in named}
    hidden = [p for name, p in named if is_hidden[name]]
    others = [p for name, p in named if not is_hidden[name]]
    if not hidden:
        raise ConfigError("--train.optimizer muon: this policy has no hidden weight matrices (add layers or an rnn)")
    muon = torch.optim.Muon(
        hidden, lr=train["learning_rate"], momentum=train["muon_momentum"], weight_decay=0.0, adjust_lr_fn="match_rms_adamw"
    )
    return CombinedOptimizer([muon, torch.optim.Adam(others, **adam)])


def cosine_lr(base_lr, progress):
    """Cosine decay from base_lr at progress 0 to 0 at progress 1."""
    return base_lr * 0.5 * (1.0 + math.cos(math.pi * min(max(progress, 0.0), 1.0)))


class PuffeRL:
    """PPO on a vectorized env. ``evaluate()`` fills the batch, ``train()`` learns from it."""

    def __init__(self, config, vecenv, policy):
        self.config = config
        train = self.train_config = config["train"]
        self.device = resolve_device(train["device"])
        self.seed = config["base"]["seed"]
        set_torch_threads(config)
        self.vecenv = vecenv if hasattr(vecenv, "recv") else SynchronousEnv(vecenv)
        self.policy = policy.to(self.device)
        self.num_agents = vecenv.num_agents
        self.agent_ids = np.arange(self.num_agents)

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
        self.batch_size = batch_size
        self.minibatch_segments = minibatch_size // self.horizon
        self.total_minibatches = max(1, train["update_epochs"] * self.segments // self.minibatch_segments)
        self.total_epochs = max(1, math.ceil(train["total_timesteps"] / batch_size))

        # Rollout storage, [segments, horizon, ...]. Observations keep the env's dtype (uint8 grids
        # stay 1 byte each); the policy casts them.
        obs_space, action_space = vecenv.single_observation_space, vecenv.single_action_space
        shape = (self.segments, self.horizon)
        device = self.device
        obs_dtype = torch.from_numpy(np.empty(0, obs_space.dtype)).dtype
        self.observations = torch.zeros(*shape, *obs_space.shape, dtype=obs_dtype, device=device)
        action_dtype = torch.float32 if np.issubdtype(action_space.dtype, np.floating) else torch.int64
        self.actions = torch.zeros(*shape, *action_space.shape, dtype=action_dtype, device=device)
        self.logprobs = torch.zeros(shape, device=device)
        self.rewards = torch.zeros(shape, device=device)
        self.dones = torch.zeros(shape, device=device)
        self.values = torch.zeros(shape, device=device)
        self.ratio = torch.ones(shape, device=device)
        # Recurrent memory: per agent while acting, and per segment as it was at the segment's start.
        self.state = self.policy.initial_state(self.num_agents, device)
        self.start_state = self.policy.initial_state(self.segments, device)

        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(self.seed)
        self.optimizer = build_optimizer(self.policy, train)

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
        self.forward_eval = self.policy.forward_eval
        self.minibatch_loss = functools.partial(
            ppo_loss, self.policy, clip_coef=train["clip_coef"], vf_clip_coef=train["vf_clip_coef"],
            vf_coef=train["vf_coef"], ent_coef=train["ent_coef"],
        )
        self.advantage_kernel = compute_advantages
        if use_compile:
            self.minibatch_loss = torch.compile(self.minibatch_loss, dynamic=False)
            self.advantage_kernel = torch.compile(compute_advantages, dynamic=False)
        if use_graphs or use_compile:
            self.forward_eval = torch.compile(self.policy.forward_eval, mode="reduce-overhead" if use_graphs else "default", dynamic=False)

        self.global_step = 0
        self.epoch = 0
        self.elapsed = 0.0  # training seconds in earlier sessions of a resumed run
        self.start_time = time.time()
        self.env_stats = {}  # the newest episode statistics, for display
        self.episode_stats = {}  # statistics of the episodes that ended in the last epoch
        self.recent = deque()  # (episodes, value) of the solve metric over recent epochs
        self.losses = {}
        self.timings = {}
        self.solved = None  # (step, seconds, value) of the first epoch at the target score
        self.reset_envs()

    # -- experience ---------------------------------------------------------------------------

    def env_seed(self):
        """Envs are reset at the start and at every checkpoint, with a seed fixed by the epoch, so a
        run resumed from a checkpoint sees exactly the env states the uninterrupted run saw."""
        return self.seed + 1_000_003 * self.epoch

    def reset_envs(self):
        self.vecenv.async_reset(self.env_seed())
        self.state = self.policy.initial_state(self.num_agents, self.device)

    def evaluate(self):
        """Collects one batch: steps the envs until every segment row holds `horizon` steps.

        An agent takes a free row at its first stored step and another when that one is full, so
        backends that return only some agents per step (EnvPool-style) fill the batch just as well.
        Padded agents (mask False) are acted for but not stored. Which row and step each agent
        writes is kept in numpy on the host, so the device never has to report back mid-rollout.
        """
        start = time.time()
        device = self.device
        row_of = np.full(self.num_agents, UNASSIGNED)
        col_of = np.zeros(self.num_agents, dtype=np.int64)
        next_row, filled = 0, 0
        infos = []
        while filled < self.segments:
            obs, rewards, terminals, truncations, step_infos, env_ids, masks = self.vecenv.recv()
            infos.extend(step_infos if isinstance(step_infos, list) else [step_infos])
            env_ids, masks = np.asarray(env_ids), np.asarray(masks, dtype=bool)
            # A truncated episode is cut like a terminated one: the next observation already
            # belongs to a fresh episode (autoreset), so there is nothing to bootstrap from.
            dones = np.logical_or(terminals, truncations)
            obs = torch.as_tensor(obs).to(device, non_blocking=True)
            dones_t = torch.as_tensor(dones).to(device, non_blocking=True)
            everyone = len(env_ids) == self.num_agents and np.array_equal(env_ids, self.agent_ids)
            agents = slice(None) if everyone else torch.as_tensor(env_ids, device=device)

            with torch.inference_mode(), self.autocast():
                keep = (~dones_t).float()
                state = tuple(s[agents] * keep.view(-1, *[1] * (s.ndim - 1)) for s in self.state)
                logits, value, new_state = self.forward_eval(obs, state)
                action, logprob, _ = sample_logits(logits, generator=self.generator)
            for k, s in enumerate(new_state):
                self.state[k][agents] = s
            actions = action.cpu().numpy()

            # A real agent (mask) takes the next free row at its first stored step; once no row is
            # left it stores nothing more this epoch. Agents that are never real take no row.
            rows = row_of[env_ids]
            fresh = masks & (rows == UNASSIGNED)
            if fresh.any():
                new_rows = np.arange(next_row, next_row + int(fresh.sum()))
                new_rows[new_rows >= self.segments] = NO_ROW
                rows[fresh] = new_rows
                row_of[env_ids[fresh]] = new_rows
                next_row += len(new_rows)
            stored = masks & (rows >= 0)
            if not stored.all():
                pick = torch.as_tensor(stored, device=device)
                obs, dones_t, value, logprob, action = obs[pick], dones_t[pick], value[pick], logprob[pick], action[pick]
                state = tuple(s[pick] for s in state)
                env_ids, rows, rewards = env_ids[stored], rows[stored], np.asarray(rewards)[stored]
            cols = col_of[env_ids]
            count = len(env_ids)
            if count and np.all(cols == cols[0]) and np.array_equal(rows, np.arange(rows[0], rows[0] + count)):
                # Every stored agent at the same step of consecutive rows (synchronous envs): slices.
                where = (slice(int(rows[0]), int(rows[0]) + count), int(cols[0]))
                if cols[0] == 0:
                    for k, s in enumerate(state):
                        self.start_state[k][where[0]] = s
            else:
                where = (torch.as_tensor(rows, device=device), torch.as_tensor(cols, device=device))
                first = cols == 0
                if first.any():
                    first_t = torch.as_tensor(first, device=device)
                    for k, s in enumerate(state):
                        self.start_state[k][where[0][first_t]] = s[first_t]
            self.observations[where] = obs
            self.actions[where] = action.to(self.actions.dtype)
            self.logprobs[where] = logprob.float()
            self.rewards[where] = torch.as_tensor(rewards).to(device, non_blocking=True)
            self.dones[where] = dones_t.float()
            self.values[where] = value.float()
            self.global_step += count

            col_of[env_ids] = cols + 1
            full = env_ids[cols + 1 == self.horizon]
            filled += len(full)
            row_of[full] = UNASSIGNED
            col_of[full] = 0
            self.vecenv.send(actions)
        self.episode_stats = mean_infos(infos)
        self.env_stats = self.episode_stats or self.env_stats
        self.timings["rollout"] = time.time() - start

    def train(self):
        """One PPO update over the batch: prioritized minibatches of segments, clipped losses."""
        start = time.time()
        train = self.train_config
        progress = self.epoch / self.total_epochs
        lr = cosine_lr(train["learning_rate"], progress) if train["anneal_lr"] else train["learning_rate"]
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        beta = train["prio_beta0"] + (1.0 - train["prio_beta0"]) * progress
        self.ratio.fill_(1.0)
        totals = defaultdict(int)

        for _ in range(self.total_minibatches):
            # Recomputed every minibatch: the ratios of replayed segments change as the policy does,
            # and V-trace uses them to discount stale experience.
            advantages = self.advantage_kernel(
                self.values, self.rewards, self.dones, self.ratio,
                train["gamma"], train["gae_lambda"], train["vtrace_rho_clip"], train["vtrace_c_clip"],
            )
            idx, weights = prioritized_sample(advantages, self.minibatch_segments, train["prio_alpha"], beta, self.generator)
            with self.autocast():
                loss, ratio, stats = self.minibatch_loss(
                    self.observations[idx], tuple(s[idx] for s in self.start_state), self.dones[idx].bool(),
                    self.actions[idx], self.logprobs[idx], self.values[idx], advantages[idx], weights,
                )
            self.ratio[idx] = ratio

            self.optimizer.zero_grad()
            loss.backward()
            stats["grad_norm"] = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), train["max_grad_norm"])
            self.optimizer.step()
            # Summed on the device and read once per epoch: a .item() per minibatch would make
            # the host wait for the GPU every time.
            for key, value in stats.items():
                totals[key] = totals[key] + value.detach().float()

        self.losses = {key: value.item() / self.total_minibatches for key, value in totals.items()}
        values, returns = self.values[:, :-1], (advantages + self.values)[:, :-1]
        variance = returns.var().item()
        self.losses["explained_variance"] = float("nan") if variance == 0 else 1 - (returns - values).var().item() / variance
        self.losses["learning_rate"] = lr
        self.epoch += 1
        self.timings["train"] = time.time() - start

    # -- bookkeeping ---------------------------------------------------------------------------

    def seconds(self):
        return self.elapsed + time.time() - self.start_time

    def check_solved(self, metric, target, tolerance, min_episodes):
        """Records when the mean of `metric` over the newest `min_episodes` (or a few more: whole
        epochs) episodes first reaches `target` - `tolerance`. Averaging over many episodes keeps
        the first epochs, where only the quickest episodes have ended, from counting."""
        if metric in self.episode_stats:
            self.recent.append((self.episode_stats["episodes"], self.episode_stats[metric]))
        while len(self.recent) > 1 and sum(n for n, _ in self.recent) - self.recent[0][0] >= min_episodes:
            self.recent.popleft()
        episodes = sum(n for n, _ in self.recent)
        if self.solved is not None or target is None or episodes < min_episodes:
            return False
        value = sum(n * v for n, v in self.recent) / episodes
        if value >= target - tolerance:
            self.solved = (self.global_step, self.seconds(), value)
            return True
        return False

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
        )

    def save_checkpoint(self, path):
        """Writes the checkpoint atomically, then resets the envs (see ``env_seed``)."""
        save_atomic(self.state_dict(), path)
        self.reset_envs()  # the step already sent belongs to the old env states; reset drops it

    def load_checkpoint(self, checkpoint):
        """Continues from a checkpoint (``read_checkpoint``'s result): weights, optimizer, counters,
        RNG, and the env states of that moment."""
        check_architecture(checkpoint, self.policy, self.vecenv)
        load_weights(self.policy, checkpoint)
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        self.global_step, self.epoch, self.elapsed = checkpoint["global_step"], checkpoint["epoch"], checkpoint["elapsed"]
        self.solved = tuple(checkpoint["solved"]) if checkpoint["solved"] else None
        self.generator.set_state(checkpoint["generator"])
        torch.set_rng_state(checkpoint["torch_rng"])
        self.start_time = time.time()
        self.reset_envs()

    def close(self):
        self.vecenv.close()


def mean_infos(infos):
    """Episode statistics averaged over a list of info dicts, weighted by their episode counts."""
    sums, weights, episodes = defaultdict(float), defaultdict(float), 0
    for info in infos:
        if not isinstance(info, dict):
            continue
        weight = float(info.get("episodes", 1))
        episodes += weight
        for key, value in info.items():
            if key != "episodes" and isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
                sums[key] += float(value) * weight
                weights[key] += weight
    stats = {key: sums[key] / weights[key] for key in sums if weights[key] > 0}
    if stats:
        stats["episodes"] = episodes
    return stats


# ----------------------------------------------------------------------------------------------
# 6. Checkpoints
# ----------------------------------------------------------------------------------------------


def save_atomic(payload, path):
    """torch.save to a temporary file beside `path`, fsync, then rename over it: a reader (or a
    crash) never sees a half-written checkpoint."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()


def architecture(policy, env):
    """What a checkpoint must agree with to be loaded: the policy's classes and the env's spaces."""
    inner = type(policy.policy).__name__ if hasattr(policy, "policy") else None
    return dict(
        policy=type(policy).__name__,
        inner=inner,
        observation_space=repr(env.single_observation_space),
        action_space=repr(env.single_action_space),
    )


def read_checkpoint(path):
    """Loads a checkpoint file, or raises CheckpointError saying why it cannot be used."""
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_NAME
    if not path.is_file():
        raise CheckpointError(f"No checkpoint at {path}")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many kinds for damaged files
        raise CheckpointError(f"{path} is not a readable checkpoint (corrupt or truncated?): {type(error).__name__}: {error}") from None
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} is not a PuffeRL checkpoint (expected format {CHECKPOINT_FORMAT})")
    checkpoint["path"] = str(path)
    return checkpoint


def check_architecture(checkpoint, policy, env):
    saved, current = checkpoint["architecture"], architecture(policy, env)
    different = {key: (saved.get(key), value) for key, value in current.items() if saved.get(key) != value}
    if different:
        lines = "; ".join(f"{key}: checkpoint {a}, now {b}" for key, (a, b) in different.items())
        raise CheckpointError(f"{checkpoint['path']} does not fit this env and policy ({lines})")


def load_weights(policy, checkpoint):
    """Loads the model weights strictly, naming every missing, extra or reshaped parameter."""
    saved, current = checkpoint["model"], policy.state_dict()
    missing = sorted(set(current) - set(saved))
    extra = sorted(set(saved) - set(current))
    reshaped = [f"{key} {tuple(saved[key].shape)} vs {tuple(value.shape)}" for key, value in current.items() if key in saved and saved[key].shape != value.shape]
    if missing or extra or reshaped:
        problems = [f"{label}: {', '.join(items)}" for label, items in (("missing", missing), ("unexpected", extra), ("shape (checkpoint vs now)", reshaped)) if items]
        raise CheckpointError(f"{checkpoint['path']} has weights for a different model; " + "; ".join(problems))
    policy.load_state_dict(saved)


def run_dirs(data_dir, env_name):
    """Runs of one env, oldest first (by the time their checkpoint was last written)."""
    pattern = re.compile(re.escape(env_name) + r"_\d{8}-\d{6}(_\d+)?$")
    runs = [p for p in Path(data_dir).glob(f"{env_name}_*") if pattern.match(p.name) and (p / CHECKPOINT_NAME).is_file()]
    return sorted(runs, key=lambda p: (p / CHECKPOINT_NAME).stat().st_mtime)


def resolve_checkpoint(spec, data_dir, env_name):
    """'latest' -> the newest run of this env; a run directory or a checkpoint file otherwise."""
    if spec == "latest":
        runs = run_dirs(data_dir, env_name)
        if not runs:
            raise CheckpointError(f"No runs of {env_name} with a checkpoint under {data_dir}/; train one first: puffer train {env_name}")
        return runs[-1] / CHECKPOINT_NAME
    return Path(spec)


def new_run_dir(data_dir, env_name):
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = Path(data_dir) / f"{env_name}_{stamp}"
    n = 1
    while path.exists():
        path = Path(data_dir) / f"{env_name}_{stamp}_{n}"
        n += 1
    path.mkdir(parents=True)
    return path


# ----------------------------------------------------------------------------------------------
# Metrics and the dashboard
# ----------------------------------------------------------------------------------------------


class MetricsLog:
    """Appends one JSON line per epoch to <run>/metrics.jsonl; mirrors to wandb/tensorboard if on."""

    def __init__(self, run_dir, config):
        self.file = open(Path(run_dir) / "metrics.jsonl", "a")
        train = config["train"]
        self.wandb = self.tensorboard = None
        if train["wandb"]:
            try:
                import wandb
            except ImportError:
                raise ConfigError("--train.wandb true needs the wandb package: pip install wandb") from None
            self.wandb = wandb.init(project=train["wandb_project"], name=Path(run_dir).name, config=config, dir=str(run_dir))
        if train["tensorboard"]:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise ConfigError("--train.tensorboard true needs the tensorboard package: pip install tensorboard") from None
            self.tensorboard = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"))

    def log(self, metrics):
        self.file.write(json.dumps(metrics) + "\n")
        self.file.flush()
        numeric = {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if self.wandb:
            self.wandb.log(numeric, step=metrics["step"])
        if self.tensorboard:
            for key, value in numeric.items():
                self.tensorboard.add_scalar(key, value, metrics["step"])

    def close(self):
        self.file.close()
        if self.wandb:
            self.wandb.finish()
        if self.tensorboard:
            self.tensorboard.close()


def epoch_metrics(trainer, sps):
    """One metrics.jsonl line; NaN (e.g. explained variance of constant returns) is written as null."""
    metrics = dict(step=trainer.global_step, epoch=trainer.epoch, time=round(trainer.seconds(), 3), sps=round(sps, 1))
    metrics.update({f"losses/{k}": v for k, v in trainer.losses.items()})
    metrics.update({f"env/{k}": v for k, v in trainer.episode_stats.items()})
    metrics.update({f"timing/{k}": round(v, 4) for k, v in trainer.timings.items()})
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in metrics.items()}


def human(number):
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(number) >= size:
            return f"{number / size:.1f}{unit}"
    return f"{number:.0f}" if float(number).is_integer() else f"{number:.3g}"


def duration(seconds):
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


class SystemUsage:
    """CPU and memory of this process (psutil), and GPU memory and load when training on CUDA."""

    def __init__(self, device):
        self.device = device
        try:
            import psutil

            self.psutil, self.process = psutil, psutil.Process()
            self.process.cpu_percent()  # the first reading only starts the interval
        except ImportError:
            self.psutil = None

    def read(self):
        usage = {}
        if self.psutil:
            usage["CPU"] = f"{self.process.cpu_percent():.0f}%"
            usage["RAM"] = f"{self.process.memory_info().rss / 2**30:.2f} GiB ({self.psutil.virtual_memory().percent:.0f}% of system)"
        else:
            usage["CPU"] = "(pip install psutil)"
        if self.device.startswith("cuda"):
            usage["GPU RAM"] = f"{torch.cuda.memory_allocated() / 2**30:.2f} GiB"
            with contextlib.suppress(Exception):  # needs pynvml, which not every install has
                usage["GPU"] = f"{torch.cuda.utilization()}%"
        return usage


class Dashboard:
    """Live rich dashboard on a terminal; a plain line every `print_interval` seconds otherwise."""

    def __init__(self, trainer, run_dir, mode, print_interval):
        self.trainer = trainer
        self.run_dir = run_dir
        self.live = mode == "rich" or (mode == "auto" and sys.stdout.isatty())
        self.print_interval = print_interval
        self.last = 0.0
        self.sps = 0.0
        self.messages = []
        self.usage = SystemUsage(trainer.device)
        if self.live:
            from rich.console import Console
            from rich.live import Live

            self.console = Console()
            self.display = Live(console=self.console, auto_refresh=False, transient=False)
            self.display.start()

    def say(self, message):
        """A message that stays: printed now in plain mode, kept under the dashboard in rich mode."""
        if self.live:
            self.messages.append(message)
            self.refresh(force=True)
        else:
            print(message, flush=True)

    def refresh(self, sps=None, force=False):
        """Redraws (rich) or prints a line (plain), at most every 0.25 s / print_interval."""
        self.sps = self.sps if sps is None else sps
        sps = self.sps
        now = time.time()
        if not force and now - self.last < (0.25 if self.live else self.print_interval):
            return
        self.last = now
        if self.live:
            self.display.update(self.render(sps), refresh=True)
        else:
            print(self.line(sps), flush=True)

    def remaining(self, sps):
        steps_left = self.trainer.total_epochs * self.trainer.batch_size - self.trainer.global_step
        return steps_left / sps if sps > 0 else float("nan")

    def line(self, sps):
        t = self.trainer
        total = t.total_epochs * t.batch_size
        env = " ".join(f"{k} {v:.3g}" for k, v in list(t.env_stats.items())[:4])
        losses = " ".join(f"{k.split('_')[0]} {t.losses[k]:.3g}" for k in ("policy_loss", "value_loss", "entropy") if k in t.losses)
        left = self.remaining(sps)
        return (
            f"[{t.config['base']['env_name']}] epoch {t.epoch}/{t.total_epochs} step {human(t.global_step)}/{human(total)} "
            f"{human(sps)} SPS {duration(t.seconds())} elapsed {duration(left) if left == left else '?'} left | {env} | {losses}"
        )

    def render(self, sps):
        from rich.console import Group
        from rich.panel import Panel
        from rich.table import Table

        t = self.trainer
        total = t.total_epochs * t.batch_size
        left = self.remaining(sps)
        summary = Table.grid(padding=(0, 3))
        for _ in range(4):
            summary.add_column()
        summary.add_row(f"[bold]SPS[/] {human(sps)}", f"[bold]Steps[/] {human(t.global_step)} / {human(total)}",
                        f"[bold]Epoch[/] {t.epoch} / {t.total_epochs}",
                        f"[bold]Time[/] {duration(t.seconds())} (left {duration(left) if left == left else '?'})")
        usage = list(self.usage.read().items())[:4]
        summary.add_row(*[f"[bold]{k}[/] {v}" for k, v in usage] + [""] * (4 - len(usage)))

        def table(title, rows):
            grid = Table(title=title, title_justify="left", show_header=False, box=None, padding=(0, 2))
            grid.add_column(style="cyan")
            grid.add_column(justify="right")
            for key, value in rows:
                grid.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
            return grid

        columns = Table.grid(padding=(0, 6))
        columns.add_row(table("Losses", t.losses.items()), table("Environment", t.env_stats.items()),
                        table("Time per epoch (s)", t.timings.items()))
        title = f"PuffeRL · {t.config['base']['env_name']} · {t.device} · {self.run_dir}"
        return Panel(Group(summary, "", columns, *self.messages), title=title, border_style="magenta")

    def close(self):
        if self.live:
            self.display.stop()


# ----------------------------------------------------------------------------------------------
# Commands
# ----------------------------------------------------------------------------------------------


def solve_target(config, env):
    base = config["base"]
    if base["solve_score"] == "auto":
        inner = getattr(env, "driver_env", env)
        return getattr(inner, "optimal_score", None)
    return base["solve_score"]


def describe_target(config, target):
    base = config["base"]
    what = "the optimal score" if base["solve_score"] == "auto" else f"the target {base['solve_metric']}"
    within = f" within {base['solve_tolerance']:g}" if base["solve_tolerance"] else ""
    return f"{what} {target:.4g}{within} (mean of the newest {base['solve_episodes']}+ episodes)"


def train(env_name, config, resume=None, load_model_path=None):
    """Trains until total_timesteps; returns the trainer (closed) for inspection.

    ``resume`` continues a run from its checkpoint in its own directory; ``load_model_path`` starts
    a new run from saved weights only. Ctrl-C (in the main thread) finishes the epoch, saves a
    checkpoint and returns; a second Ctrl-C stops at once.
    """
    train_config = config["train"]
    checkpoint = None
    if resume:
        checkpoint = read_checkpoint(resolve_checkpoint(resume, train_config["data_dir"], env_name))
        if checkpoint["env_name"] != env_name:
            raise CheckpointError(f"{checkpoint['path']} was trained on {checkpoint['env_name']}, not {env_name}")
        run_dir = Path(checkpoint["path"]).parent
    else:
        run_dir = new_run_dir(train_config["data_dir"], env_name)
    with open(run_dir / "config.json", "w") as f:
        json.dump(config, f, indent=2)

    vecenv = make_vecenv(env_name, config)
    policy = make_policy(vecenv, config)
    trainer = PuffeRL(config, vecenv, policy)
    if checkpoint:
        trainer.load_checkpoint(checkpoint)
    elif load_model_path:
        weights = read_checkpoint(resolve_checkpoint(load_model_path, train_config["data_dir"], env_name))
        check_architecture(weights, trainer.policy, trainer.vecenv)
        load_weights(trainer.policy, weights)

    base = config["base"]
    target = solve_target(config, vecenv)
    metrics = MetricsLog(run_dir, config)
    dashboard = Dashboard(trainer, run_dir, train_config["dashboard"], train_config["print_interval"])
    checkpoint_path = run_dir / CHECKPOINT_NAME
    dashboard.say(
        f"Training {env_name} on {trainer.device}: {pufferlib.models.describe(policy)}, {trainer.num_agents} agents, "
        f"batch {trainer.batch_size}, {trainer.total_minibatches} minibatches of {trainer.minibatch_segments * trainer.horizon}, "
        f"{human(trainer.total_epochs * trainer.batch_size)} steps. Run: {run_dir}"
    )

    interrupted = []

    def on_interrupt(signum, frame):
        interrupted.append(True)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C stops at once

    handle_interrupt = threading.current_thread() is threading.main_thread()  # where signals arrive
    previous_handler = signal.signal(signal.SIGINT, on_interrupt) if handle_interrupt else None
    try:
        while trainer.epoch < trainer.total_epochs and not interrupted:
            epoch_start, step_start = time.time(), trainer.global_step
            trainer.evaluate()
            trainer.train()
            sps = (trainer.global_step - step_start) / max(time.time() - epoch_start, 1e-9)
            metrics.log(epoch_metrics(trainer, sps))
            if trainer.check_solved(base["solve_metric"], target, base["solve_tolerance"], base["solve_episodes"]):
                step, seconds, value = trainer.solved
                dashboard.say(
                    f"Solved: reached {describe_target(config, target)} ({base['solve_metric']} {value:.4f}) at step "
                    f"{human(step)}, {seconds:.1f} s into training"
                )
                if base["stop_on_solve"]:
                    break
            if train_config["checkpoint_interval"] and trainer.epoch % train_config["checkpoint_interval"] == 0:
                trainer.save_checkpoint(checkpoint_path)
            dashboard.refresh(sps)
        save_atomic(trainer.state_dict(), checkpoint_path)
        dashboard.refresh(force=True)
    finally:
        dashboard.close()
        metrics.close()
        trainer.close()
        if handle_interrupt:
            signal.signal(signal.SIGINT, previous_handler)

    stats = ", ".join(f"{k} {v:.4g}" for k, v in trainer.env_stats.items()) or "no episode finished"
    if interrupted:
        print(f"Interrupted at step {trainer.global_step}: checkpoint saved to {checkpoint_path}")
        print(f"Continue with: puffer train {env_name} --resume {run_dir}")
    else:
        print(f"Finished {human(trainer.global_step)} steps in {trainer.seconds():.1f} s. Final episodes: {stats}")
    if target is not None:
        if trainer.solved:
            step, seconds, value = trainer.solved
            print(f"Reached {describe_target(config, target)}: {base['solve_metric']} {value:.4f} at step {human(step)}, after {seconds:.1f} s.")
        else:
            print(f"Did not reach {describe_target(config, target)}.")
    print(f"Checkpoint: {checkpoint_path}\nEval: puffer eval {env_name} --load-model-path latest\nPlot: puffer plot {run_dir}")
    trainer.run_dir = run_dir
    return trainer


def evaluate_policy(env_name, config, checkpoint):
    """Runs a trained policy in one env and renders it: ANSI text in the terminal for Ocean envs,
    a GIF or MP4 (imageio) for envs that render RGB frames. ``config`` is normally the run's own
    (from the checkpoint) with the command's flags applied."""
    eval_config = config["eval"]
    if checkpoint["env_name"] != env_name:
        raise CheckpointError(f"{checkpoint['path']} was trained on {checkpoint['env_name']}, not {env_name}")
    device = resolve_device(config["train"]["device"])
    env = make_vecenv(env_name, config, num_envs=eval_config["num_envs"])
    policy = make_policy(env, config).to(device)
    check_architecture(checkpoint, policy, env)
    load_weights(policy, checkpoint)
    policy.eval()

    generator = torch.Generator(device=device)
    generator.manual_seed(config["base"]["seed"])
    env = env if hasattr(env, "recv") else SynchronousEnv(env)
    env.async_reset(config["base"]["seed"])
    state = policy.initial_state(env.num_agents, device)
    frames, returns, infos, steps = [], [], [], 0
    episode_return, episode_length = 0.0, 0
    delay = 1.0 / eval_config["fps"] if eval_config["fps"] > 0 else 0.0
    print(f"Evaluating {checkpoint['path']} on {env_name} ({pufferlib.models.describe(policy)})")
    try:
        while len(returns) < eval_config["episodes"] and steps < eval_config["max_steps"]:
            obs, rewards, terminals, truncations, step_infos, env_ids, masks = env.recv()
            infos.extend(step_infos if isinstance(step_infos, list) else [step_infos])
            if steps > 0:  # agent 0, the one rendered, is followed episode by episode
                episode_return += float(rewards[0])
                episode_length += 1
                if terminals[0] or truncations[0]:
                    returns.append(episode_return)
                    print(f"Episode {len(returns)}: return {episode_return:.4g}, length {episode_length}")
                    episode_return, episode_length = 0.0, 0
            frame = env.render()
            if isinstance(frame, str):
                sys.stdout.write("\033[H\033[2J" + frame + f"\nstep {steps}  reward {float(rewards[0]):+.3f}  episodes {len(returns)}\n")
                sys.stdout.flush()
                time.sleep(delay)
            elif frame is not None:
                frames.append(np.asarray(frame))
            with torch.inference_mode():
                done = torch.as_tensor(np.logical_or(terminals, truncations), device=device)
                state = tuple(s * (~done).float().view(-1, *[1] * (s.ndim - 1)) for s in state)
                logits, _, state = policy.forward_eval(torch.as_tensor(obs).to(device), state)
                action, _, _ = sample_logits(logits, generator=generator)
            env.send(action.cpu().numpy())
            steps += 1
    except KeyboardInterrupt:
        print("\nStopped.")
    finally:
        env.close()
    stats = mean_infos(infos)
    if returns:
        print(f"Mean return of agent 0 over {len(returns)} episodes: {np.mean(returns):.4g}")
    if stats:
        print("Env episode statistics (all agents): " + ", ".join(f"{k} {v:.4g}" for k, v in stats.items()))
    if frames:
        output = eval_config["output"]
        if output == "auto":
            output = str(Path(checkpoint["path"]).parent / "eval.gif")
        try:
            import imageio.v2 as imageio
        except ImportError:
            raise ConfigError("Saving RGB frames needs imageio: pip install imageio (and imageio-ffmpeg for .mp4)") from None
        imageio.mimsave(output, frames, fps=max(eval_config["fps"], 1))
        print(f"Saved {len(frames)} frames to {output}")
    return stats


def bench(env_name, config):
    """Env-only SPS (random actions, no policy) and full training SPS, `[bench] seconds` each."""
    seconds = config["bench"]["seconds"]
    env = make_vecenv(env_name, config)
    env = env if hasattr(env, "recv") else SynchronousEnv(env)
    env.async_reset(config["base"]["seed"])
    space = env.single_action_space
    rng = np.random.default_rng(config["base"]["seed"])
    env.recv()
    steps, start = 0, time.time()
    while time.time() - start < seconds:
        if hasattr(space, "nvec"):
            actions = rng.integers(0, space.nvec, size=(env.num_agents, *space.shape))
        elif hasattr(space, "n"):
            actions = rng.integers(0, space.n, size=env.num_agents)
        else:
            actions = rng.uniform(space.low, space.high, size=(env.num_agents, *space.shape)).astype(space.dtype)
        env.send(actions)
        _, _, _, _, _, env_ids, _ = env.recv()
        steps += len(env_ids)
    env_sps = steps / (time.time() - start)
    env.close()

    vecenv = make_vecenv(env_name, config)
    trainer = PuffeRL(config, vecenv, make_policy(vecenv, config))
    trainer.evaluate()
    trainer.train()  # warm-up: first-call allocations (and compilation on GPU)
    step0, start, rollout, learn = trainer.global_step, time.time(), 0.0, 0.0
    while time.time() - start < seconds:
        trainer.evaluate()
        trainer.train()
        rollout += trainer.timings["rollout"]
        learn += trainer.timings["train"]
    elapsed = time.time() - start
    train_sps = (trainer.global_step - step0) / elapsed
    trainer.close()
    result = dict(env=env_name, device=trainer.device, policy=pufferlib.models.describe(trainer.policy),
                  num_agents=trainer.num_agents, env_sps=env_sps, train_sps=train_sps,
                  rollout_fraction=rollout / elapsed, train_fraction=learn / elapsed)
    print(f"{env_name}: env {human(env_sps)} SPS (random actions), training {human(train_sps)} SPS "
          f"({result['rollout_fraction']:.0%} rollout, {result['train_fraction']:.0%} update) on {trainer.device}, "
          f"{trainer.num_agents} agents, {result['policy']}")
    return result


def list_envs():
    import ocean

    files = env_config_files()
    print(f"{'env':<24} config")
    for name in sorted(set(files) | set(ocean.ENVS)):
        where = files[name].relative_to(CONFIG_DIR.parent) if name in files else "(no config: cannot train yet)"
        print(f"{name:<24} {where}")


def plot(runs, metric, output, data_dir):
    """Draws `metric` against steps for each run (a run directory, its metrics.jsonl, or an env
    name meaning that env's newest run) into one PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("puffer plot needs matplotlib: pip install matplotlib") from None
    figure, axes = plt.subplots(figsize=(8, 5))
    first_dir = None
    for run in runs:
        path = Path(run)
        if not path.exists():
            found = run_dirs(data_dir, canonical_env_name(run))
            if not found:
                raise ConfigError(f"{run!r} is neither a run directory, a metrics file, nor an env with runs under {data_dir}/")
            path = found[-1]
        metrics_file = path / "metrics.jsonl" if path.is_dir() else path
        rows = [json.loads(line) for line in open(metrics_file) if line.strip()]
        points = [(row["step"], row[metric]) for row in rows if metric in row]
        if not points:
            known = sorted({key for row in rows for key in row})
            raise ConfigError(f"{metrics_file} has no {metric!r}; it has: {', '.join(known)}")
        axes.plot(*zip(*points), label=metrics_file.parent.name)
        first_dir = first_dir or metrics_file.parent
    axes.set_xlabel("environment steps")
    axes.set_ylabel(metric)
    axes.grid(alpha=0.3)
    axes.legend()
    output = Path(output) if output else first_dir / f"{metric.replace('/', '_')}.png"
    figure.tight_layout()
    figure.savefig(output, dpi=120)
    print(f"Saved {output}")
    return output


USAGE = """usage: puffer COMMAND [ENV] [--section.key value ...]

commands:
  train ENV              train; --resume [latest|RUN] continues a run, --load-model-path PATH starts from weights
  eval ENV               render a trained policy: --load-model-path latest|RUN|FILE (default latest)
  bench ENV              env-only and training steps per second
  list                   envs with configs
  plot RUN|ENV [...]     learning curves to PNG: --metric env/score --output FILE
  tank ...               build and run the PufferTank containers

Every key of pufferlib/config/default.ini and of the env's .ini is a flag: --train.learning-rate 0.01,
--env.size 11, --vec.num-envs 512. `puffer train ENV --help` lists them with their values.
"""


def print_flags(config):
    for section, values in config.items():
        for key, value in values.items():
            print(f"  --{section}.{key.replace('_', '-'):<28} {value!r}")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "tank":
        import pufferlib.tank  # written separately; imported only when asked for

        return pufferlib.tank.main(rest)
    try:
        if command == "list":
            list_envs()
            return 0
        if command == "plot":
            parser = argparse.ArgumentParser(prog="puffer plot")
            parser.add_argument("runs", nargs="+")
            parser.add_argument("--metric", default="env/score")
            parser.add_argument("--output", default=None)
            parser.add_argument("--data-dir", default="experiments")
            args = parser.parse_args(rest)
            plot(args.runs, args.metric, args.output, args.data_dir)
            return 0
        if command not in ("train", "eval", "bench"):
            hint = did_you_mean(command, ["train", "eval", "bench", "list", "plot", "tank"])
            print(f"Unknown command {command!r}.{hint}\n\n" + USAGE, file=sys.stderr)
            return 2
        if not rest or rest[0].startswith("-"):
            print(f"usage: puffer {command} ENV [--section.key value ...]; envs: puffer list", file=sys.stderr)
            return 2
        env_name, rest = canonical_env_name(rest[0]), rest[1:]
        parser = argparse.ArgumentParser(prog=f"puffer {command} {env_name}", add_help=False)
        parser.add_argument("-h", "--help", action="store_true")
        parser.add_argument("--resume", nargs="?", const="latest", default=None)
        parser.add_argument("--load-model-path", default="latest" if command == "eval" else None)
        args, flags = parser.parse_known_args(rest)
        config = load_config(env_name)
        if args.help:
            print(f"puffer {command} {env_name}: flags and their current values\n  --resume [latest|RUN]\n  --load-model-path PATH|latest")
            print_flags(config)
            return 0
        apply_flags(config, flags, extra_flags=["--resume", "--load-model-path", "--help"])
        if command == "train":
            if args.resume and args.load_model_path:
                raise ConfigError("--resume continues a run; --load-model-path starts a new one from weights: pick one")
            if args.resume:
                # A resumed run keeps the settings it was started with; flags given now still apply.
                saved = read_checkpoint(resolve_checkpoint(args.resume, config["train"]["data_dir"], env_name))
                config = apply_flags(saved["config"], flags)
            train(env_name, config, resume=args.resume, load_model_path=args.load_model_path)
        elif command == "eval":
            # The run's own settings (its policy, its env parameters), with the flags given now.
            checkpoint = read_checkpoint(resolve_checkpoint(args.load_model_path, config["train"]["data_dir"], env_name))
            evaluate_policy(env_name, apply_flags(checkpoint["config"], flags), checkpoint)
        else:
            bench(env_name, config)
        return 0
    except (ConfigError, CheckpointError, APIUsageError) as error:
        print(f"puffer: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
