"""Training benchmarks for PuffeRL.

1. Training steps per second (rollout + PPO update) on an Ocean env, any policy and device:

    python scripts/bench_train.py sps                                   # puffer_squared, CPU defaults
    python scripts/bench_train.py sps --device cuda --policy mingru --hidden 256 --layers 3 --num-envs 8192
    python scripts/bench_train.py sps --env puffer_craftax_compact --device cuda --vec.device cuda --profile trace.json
    python scripts/bench_train.py sps --device cuda --policy mingru --hidden 256 --against "--train.cudagraphs false"
    git show main:pufferlib/pufferl.py > /tmp/pufferl_main.py
    python scripts/bench_train.py sps --device cuda --policy mingru --hidden 256 --against-trainer /tmp/pufferl_main.py
    torchrun --nproc-per-node 2 scripts/bench_train.py sps --env puffer_craftax_compact --device cuda --vec.device cuda

   With the GPU Craftax, ``--config gpu`` lays the recipe (ocean/craftax/gpu.ini) on the env's config;
   ``--burn-cores N`` keeps N host cores busy while it is timed (a loaded host), and
   ``--peer-craftax-cu PATH`` builds craftax.cu's full game from a checkout of its public repository
   (github.com/Infatoshi/craftax.cu) and times its own on-device PPO ``train`` at the same env count
   and horizon, in the same call:

    python scripts/bench_train.py sps --env puffer_craftax_compact --config gpu --peer-craftax-cu ~/craftax.cu
    python scripts/bench_train.py sps --env puffer_craftax_compact --config gpu --burn-cores 14

   When the env steps its batches on threads of its own (the native backend with --vec.batch-size
   below --vec.num-envs), a last line gives those threads' busy share of the rollouts: near 100%,
   the env bounds the rollout.

2. CartPole-v1 race, side by side in one process on the same cores: wall-clock time until the mean
   return of the newest 100 episodes reaches 475, for PuffeRL (pufferlib/configs/classic_control.ini),
   for Stable-Baselines3 PPO with its default settings (`pip install stable-baselines3`, the
   'bench' extra) and for CleanRL's single-file PPO recipe (written out below). Runs alternate
   between them so that background load hits all alike.

    python scripts/bench_train.py cartpole --seeds 1 2 3
    python scripts/bench_train.py all

3. CartPole-v1, the shipped config against another (a `puffer sweep` result's best.ini, laid over
   the shipped config as `puffer train --config` does), timed the same way and alternating:

    python scripts/bench_train.py cartpole-config --overlay experiments/CartPole-v1_sweep_*/best.ini --seeds 1 2 3 4 5

Both libraries get the same torch thread count (--torch-threads, default 1: on small shared
machines extra threads mostly wait on each other). Clocks start before the env is built.
"""

import argparse
import bisect
import contextlib
import importlib.util
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections import deque

import numpy as np
import torch

from pufferlib import pufferl
from pufferlib.config import ConfigError, apply_config_file, apply_flags, config_file_path, load_config
from pufferlib.distributed import make_world, torchrun_variables
from pufferlib.evaluate import SolveCheck
from pufferlib.exceptions import APIUsageError, ParameterError
from pufferlib.models import describe
from pufferlib.run import CpuClock, build_trainer

CARTPOLE_TARGET = 475.0


SPS_DEFAULTS = dict(device="cpu", num_envs=1024, policy="default", hidden=64, layers=1)


def measure_sps(args):
    """Steps per second of full training epochs, after warm-up epochs (compilation on GPU)."""
    # A recipe (--config) sets the model and the env count itself: only the options given override it.
    given = {key: getattr(args, key) for key in SPS_DEFAULTS if getattr(args, key) is not None}
    for key, value in (given if args.config else {**SPS_DEFAULTS, **given}).items():
        setattr(args, key, value)
    flags = ["--train.torch-threads", str(args.torch_threads)]
    if args.device is not None:
        flags += ["--train.device", args.device]
    if args.num_envs is not None:
        flags += ["--vec.num-envs", str(args.num_envs)]
    if args.policy not in (None, "default"):
        flags += ["--base.rnn", args.policy]
    if args.hidden is not None:
        flags += ["--rnn.hidden-size", str(args.hidden), "--policy.hidden-size", str(args.hidden)]
    if args.layers is not None:
        flags += ["--rnn.num-layers", str(args.layers)]
    for key in ("horizon", "minibatch_size", "optimizer"):
        if getattr(args, key) is not None:
            flags += [f"--train.{key.replace('_', '-')}", str(getattr(args, key))]
    config = sps_config(args, flags)
    if args.against is not None or args.against_trainer is not None:
        if torchrun_variables(required=False):
            raise ConfigError("--against and --against-trainer run both trainers in one process: launch it without torchrun")
        peer_flags = shlex.split(args.against or "")
        peer_class = trainer_class_from(args.against_trainer) if args.against_trainer else pufferl.PuffeRL
        with busy_cores(args.burn_cores):
            rate = compare_sps(args, config, sps_config(args, flags + peer_flags), peer_class)
    else:
        world = make_world(config, config["train"]["device"])
        try:
            with busy_cores(args.burn_cores):
                rate = measure_ranks(args, config, world)
        finally:
            world.close()
    if args.peer_craftax_cu:
        craftax_cu_sps(args.peer_craftax_cu, config["vec"]["num_envs"], config["train"]["horizon"], args.peer_iters, rate)
    return rate


def sps_config(args, flags):
    """The env's config, ``--config``'s recipe laid on it, then the flags."""
    config = load_config(args.env)
    if args.config:
        apply_config_file(config, config_file_path(args.env, args.config))
    return apply_flags(config, flags + args.flags)


@contextlib.contextmanager
def busy_cores(count):
    """``count`` processes spinning on the host's cores for the block: a host busy with other work."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def craftax_cu_sps(checkout, num_envs, horizon, iters, ours):
    """craftax.cu's own on-device PPO on this GPU: its full game with compact observations, built
    from ``checkout`` as its README builds it, trained ``iters`` iterations at ``num_envs`` envs and
    ``horizon`` steps. Prints its training steps per second beside ``ours``."""
    source = os.path.join(checkout, "craftax_full.cu")
    if not os.path.exists(source):
        raise ConfigError(f"--peer-craftax-cu {checkout}: no craftax_full.cu there; give a checkout of craftax.cu")
    major, minor = torch.cuda.get_device_capability()
    binary = os.path.join(checkout, f"craftax_full_cuda_compact_sm{major}{minor}")
    if not os.path.exists(binary) or os.path.getmtime(binary) < os.path.getmtime(source):
        build = ["nvcc", "-O3", f"-arch=sm_{major}{minor}", "--expt-relaxed-constexpr", "-fmad=false", "-DCRAFTAX_COMPACT_OBS",
                 source, "-o", binary, "-lcublas"]
        print("craftax.cu: " + " ".join(build), flush=True)
        subprocess.run(build, check=True)
    command = [binary, "train", "--envs", str(num_envs), "--horizon", str(horizon), "--iters", str(iters)]
    print("craftax.cu: " + " ".join(command), flush=True)
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    done = re.search(r"train done: ([\d.]+) s, ([\d.]+) M SPS overall", output)
    if done is None:
        raise RuntimeError(f"craftax.cu's train printed no 'train done' line:\n{output[-2000:]}")
    theirs = float(done.group(2)) * 1e6
    print(f"  craftax.cu train on {torch.cuda.get_device_name()}: {theirs / 1e6:.3f}M SPS over {iters} iterations "
          f"({done.group(1)} s); this run / craftax.cu: {ours / theirs:.3f}")


def measure_ranks(args, config, world):
    """Under torchrun, every rank trains its own envs; steps count all ranks and rank 0 prints."""
    world.place(config)
    trainer = build_trainer(args.env, config, world)
    env_clock = EnvStepClock(trainer.vecenv)
    synchronize = torch.cuda.synchronize if trainer.device.startswith("cuda") else (lambda: None)
    for _ in range(args.warmup):
        trainer.collect()
        trainer.train()
    synchronize()
    step0, start, rollout, update, epochs = trainer.global_step, time.perf_counter(), 0.0, 0.0, 0
    while not world.decide(time.perf_counter() - start >= args.seconds):  # ranks run the same epochs
        with env_clock.rollout():
            trainer.collect()
        trainer.train()
        rollout += trainer.timings["rollout"]
        update += trainer.timings["train"]
        epochs += 1
    synchronize()
    elapsed = time.perf_counter() - start
    steps = trainer.global_step - step0
    if args.profile:
        profile_epoch(trainer, args.profile, report=world.is_main)
    trainer.close()
    if not world.is_main:
        return steps / elapsed
    ranks, per_rank = (f" x {world.size} ranks", " a rank") if world.size > 1 else ("", "")
    print(f"{args.env} on {trainer.device}{ranks}: {describe(trainer.policy)}, {trainer.num_agents} agents{per_rank}, "
          f"batch {trainer.batch_size}{per_rank}, minibatch {trainer.minibatch_segments * trainer.horizon}, {trainer.train_settings.optimizer}")
    print(f"  training {steps / elapsed / 1e6:.3f}M SPS over {epochs} epochs ({elapsed:.1f} s); "
          f"rollout {steps / rollout / 1e6:.3f}M SPS alone, update {steps / update / 1e6:.3f}M SPS alone")
    if env_clock.threads:
        print(f"  {env_clock.summary()}")
    return steps / elapsed


class EnvStepClock:
    """When a native vector env steps its batches on threads of its own, the time they spend
    stepping during the rollouts: a share near 100% means the env bounds the rollout, a lower one
    that its threads wait for the trainer's actions."""

    def __init__(self, vecenv):
        self.threads = getattr(vecenv, "stepping_threads", 0)
        self.steps = []  # (start, end) of each batch's step, appended by the stepping threads
        self.rollouts = []  # (start, end) of each timed rollout
        for worker in vecenv.workers if self.threads else ():
            worker.step = self.timed(worker.step)

    def timed(self, step):
        def timed_step():
            start = time.perf_counter()
            try:
                return step()
            finally:
                self.steps.append((start, time.perf_counter()))

        return timed_step

    @contextlib.contextmanager
    def rollout(self):
        start = time.perf_counter()
        yield
        self.rollouts.append((start, time.perf_counter()))

    def summary(self):
        """The stepping threads' busy share of the timed rollouts (a step counts for the part of
        it inside one: the last batches sent step on during the update) and a batch's median step."""
        busy, durations = 0.0, []
        firsts = [first for first, _ in self.rollouts]  # in order: rollouts follow one another
        for start, end in self.steps:
            index = bisect.bisect_right(firsts, start) - 1
            if index >= 0 and start < self.rollouts[index][1]:
                busy += min(end, self.rollouts[index][1]) - start
                durations.append(end - start)
        rollout_seconds = sum(last - first for first, last in self.rollouts)
        median_step = statistics.median(durations) if durations else float("nan")
        threads = f"{self.threads} stepping threads" if self.threads > 1 else "the env's stepping thread"
        return (f"{threads} busy {100 * busy / max(rollout_seconds * self.threads, 1e-9):.1f}% of the rollouts; "
                f"a batch's step {1e3 * median_step:.3f} ms (median of {len(durations)})")


def trainer_class_from(path):
    """``PuffeRL`` of another revision's ``pufferlib/pufferl.py`` (``git show REV:pufferlib/pufferl.py
    > FILE``), imported beside this one."""
    try:
        spec = importlib.util.spec_from_file_location("pufferlib.pufferl_against", path)
        module = importlib.util.module_from_spec(spec)
        # Registered by name: torch.compile looks up the compiled functions' module.
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    except (OSError, SyntaxError, ImportError) as error:
        raise ConfigError(f"--against-trainer {path}: cannot import it ({error})") from error
    if not hasattr(module, "PuffeRL"):
        raise ConfigError(f"--against-trainer {path}: it defines no PuffeRL; give a pufferlib/pufferl.py")
    return module.PuffeRL


def compare_sps(args, config, peer_config, peer_class):
    """Two trainers in one process, this run's and a peer (``--against``'s flags added, and/or
    ``--against-trainer``'s code), alternating whole epochs for ``--seconds`` each: load on the
    machine hits both alike, so their ratio holds where separate runs minutes apart would
    disagree."""
    trainers = []
    for trainer_class, trainer_config in ((pufferl.PuffeRL, config), (peer_class, peer_config)):
        trainers.append(build_trainer(args.env, trainer_config, trainer_class=trainer_class))
    synchronize = torch.cuda.synchronize if trainers[0].device.startswith("cuda") else (lambda: None)
    totals = [dict(steps=0, seconds=0.0, rollout=0.0, update=0.0, epochs=0) for _ in trainers]
    for _ in range(args.warmup):
        for trainer in trainers:
            trainer.collect()
            trainer.train()
    while min(total["seconds"] for total in totals) < args.seconds:
        for trainer, total in zip(trainers, totals):
            synchronize()
            step0, start = trainer.global_step, time.perf_counter()
            trainer.collect()
            trainer.train()
            synchronize()
            total["seconds"] += time.perf_counter() - start
            total["steps"] += trainer.global_step - step0
            total["rollout"] += trainer.timings["rollout"]
            total["update"] += trainer.timings["train"]
            total["epochs"] += 1
    rates = []
    peer = " and ".join(part for part in (args.against and repr(args.against), args.against_trainer) if part)
    for name, trainer, total in zip(("this run", f"against {peer}"), trainers, totals):
        trainer.close()
        steps = total["steps"]
        rates.append((steps / total["seconds"], steps / total["rollout"], steps / total["update"]))
        print(f"{args.env}, {name}: training {rates[-1][0] / 1e6:.3f}M SPS over {total['epochs']} epochs; "
              f"rollout {rates[-1][1] / 1e6:.3f}M SPS alone, update {rates[-1][2] / 1e6:.3f}M SPS alone")
    ratios = [mine / theirs for mine, theirs in zip(*rates)]
    print(f"  ratio (this run / against): training {ratios[0]:.3f}, rollout {ratios[1]:.3f}, update {ratios[2]:.3f}")
    return rates[0][0]


def profile_epoch(trainer, trace_path, report=True):
    """One more epoch under torch.profiler: the top operators by device time (by CPU time on a
    CPU) for the rollout and the update, and a Chrome trace at ``trace_path``."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if trainer.device.startswith("cuda") else [])
    sort = "cuda_time_total" if trainer.device.startswith("cuda") else "cpu_time_total"
    for name, phase in (("rollout", trainer.collect), ("update", trainer.train)):
        with profile(activities=activities) as profiler:
            phase()
            if trainer.device.startswith("cuda"):
                torch.cuda.synchronize()
        if report:
            print(f"-- {name}: top operators")
            print(profiler.key_averages().table(sort_by=sort, row_limit=20, max_name_column_width=60))
            profiler.export_chrome_trace(trace_path.replace(".json", f"_{name}.json"))


def puffer_cartpole(seed, budget, overlay=None):
    """(wall seconds from before the env is built, steps, CPU seconds from when the trainer is ready
    as `puffer sweep`'s cpu_seconds cost counts them) to the target; seconds None if unsolved."""
    wall = time.perf_counter()
    config = load_config("CartPole-v1")
    if overlay:
        apply_config_file(config, overlay)
    config = apply_flags(config, ["--base.seed", str(seed)])
    trainer = build_trainer("CartPole-v1", config)

    cpu = CpuClock(trainer.vecenv)
    # The criterion SB3's runs below are held to: the mean return of the newest 100 training episodes.
    check = SolveCheck("episode_return", CARTPOLE_TARGET, 0.0, 100)
    try:
        while trainer.epoch < trainer.total_epochs and time.perf_counter() - wall < budget:
            trainer.collect()
            trainer.train()
            if check.candidate(trainer.episode_stats):
                return time.perf_counter() - wall, trainer.global_step, cpu()
        return None, trainer.global_step, cpu()
    finally:
        trainer.close()


def sb3_cartpole(seed, budget, n_envs):
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    class StopAtTarget(BaseCallback):
        """Stops once the newest 100 episodes (SB3's own ep_info_buffer) average the target."""

        def __init__(self, start):
            super().__init__()
            self.start = start
            self.solved = False

        def _on_step(self):
            episodes = self.model.ep_info_buffer
            if len(episodes) == 100 and np.mean([e["r"] for e in episodes]) >= CARTPOLE_TARGET:
                self.solved = True
            return not self.solved and time.perf_counter() - self.start < budget

    wall = time.perf_counter()
    model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=n_envs, seed=seed), seed=seed, device="cpu")
    callback = StopAtTarget(wall)
    model.learn(total_timesteps=10_000_000, callback=callback)
    return (time.perf_counter() - wall if callback.solved else None), model.num_timesteps


def cleanrl_cartpole(seed, budget):
    """CleanRL's single-file ppo.py, its CartPole defaults: 4 envs in a SyncVectorEnv (reset in the
    step that ends an episode, as in gymnasium 0.29), 128 steps each, 4 epochs of 4 minibatches, Adam
    lr 2.5e-4 (eps 1e-5) annealed linearly to 0 over 500k steps, gamma 0.99, GAE 0.95, normalized
    advantages, clip 0.2 on the policy and the value, entropy 0.01, value 0.5, grad norm 0.5, separate
    64-64 tanh actor and critic with orthogonal init. Episode returns are summed here as its
    RecordEpisodeStatistics would."""
    import gymnasium
    from torch import nn
    from torch.distributions import Categorical

    wall = time.perf_counter()
    num_envs, num_steps, total_timesteps, learning_rate = 4, 128, 500_000, 2.5e-4
    gamma, gae_lambda, clip, batch_size = 0.99, 0.95, 0.2, 4 * 128
    minibatch_size, num_iterations = batch_size // 4, total_timesteps // batch_size
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    envs = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("CartPole-v1")] * num_envs,
                                          autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)
    obs_size, num_actions = envs.single_observation_space.shape[0], envs.single_action_space.n

    def layer(inputs, outputs, std=2 ** 0.5):
        linear = nn.Linear(inputs, outputs)
        nn.init.orthogonal_(linear.weight, std)
        nn.init.constant_(linear.bias, 0.0)
        return linear

    def mlp(outputs, std):
        return nn.Sequential(layer(obs_size, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, outputs, std))

    critic, actor = mlp(1, 1.0), mlp(num_actions, 0.01)
    parameters = [*critic.parameters(), *actor.parameters()]
    optimizer = torch.optim.Adam(parameters, lr=learning_rate, eps=1e-5)
    obs = torch.zeros((num_steps, num_envs, obs_size))
    actions, logprobs, rewards, dones, values = (torch.zeros((num_steps, num_envs)) for _ in range(5))
    next_obs, next_done = torch.as_tensor(envs.reset(seed=seed)[0], dtype=torch.float32), torch.zeros(num_envs)
    running_returns, recent_returns, global_step = np.zeros(num_envs), deque(maxlen=100), 0
    try:
        for iteration in range(num_iterations):
            if time.perf_counter() - wall >= budget:
                break
            optimizer.param_groups[0]["lr"] = (1.0 - iteration / num_iterations) * learning_rate
            for step in range(num_steps):
                global_step += num_envs
                obs[step], dones[step] = next_obs, next_done
                with torch.no_grad():
                    distribution = Categorical(logits=actor(next_obs))
                    action = distribution.sample()
                    values[step] = critic(next_obs).flatten()
                actions[step], logprobs[step] = action, distribution.log_prob(action)
                observation, reward, terminated, truncated, _ = envs.step(action.numpy())
                done = terminated | truncated
                rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
                next_obs, next_done = torch.as_tensor(observation, dtype=torch.float32), torch.as_tensor(done, dtype=torch.float32)
                running_returns += reward
                recent_returns.extend(running_returns[done])
                running_returns[done] = 0
                if len(recent_returns) == 100 and np.mean(recent_returns) >= CARTPOLE_TARGET:
                    return time.perf_counter() - wall, global_step
            with torch.no_grad():
                advantages, last = torch.zeros_like(rewards), 0.0
                for t in reversed(range(num_steps)):
                    next_value = critic(next_obs).flatten() if t == num_steps - 1 else values[t + 1]
                    nonterminal = 1.0 - (next_done if t == num_steps - 1 else dones[t + 1])
                    delta = rewards[t] + gamma * next_value * nonterminal - values[t]
                    advantages[t] = last = delta + gamma * gae_lambda * nonterminal * last
                returns = advantages + values
            b_obs, b_actions, b_logprobs = obs.reshape(-1, obs_size), actions.reshape(-1), logprobs.reshape(-1)
            b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
            for _ in range(4):
                order = np.random.permutation(batch_size)
                for start in range(0, batch_size, minibatch_size):
                    mb = order[start:start + minibatch_size]
                    distribution = Categorical(logits=actor(b_obs[mb]))
                    ratio = (distribution.log_prob(b_actions[mb]) - b_logprobs[mb]).exp()
                    advantage = (b_advantages[mb] - b_advantages[mb].mean()) / (b_advantages[mb].std() + 1e-8)
                    pg_loss = torch.max(-advantage * ratio, -advantage * ratio.clamp(1 - clip, 1 + clip)).mean()
                    value = critic(b_obs[mb]).flatten()
                    value_clipped = b_values[mb] + (value - b_values[mb]).clamp(-clip, clip)
                    v_loss = 0.5 * torch.max((value - b_returns[mb]) ** 2, (value_clipped - b_returns[mb]) ** 2).mean()
                    loss = pg_loss - 0.01 * distribution.entropy().mean() + 0.5 * v_loss
                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(parameters, 0.5)
                    optimizer.step()
        return None, global_step
    finally:
        envs.close()


def cartpole_race(args):
    peers = [("PuffeRL", lambda seed: puffer_cartpole(seed, args.budget))]
    try:
        import stable_baselines3

        peers.append((f"SB3 {stable_baselines3.__version__}", lambda seed: sb3_cartpole(seed, args.budget, args.sb3_envs)))
    except ImportError:
        print("Stable-Baselines3 is not installed, so it sits out the race: pip install -e '.[bench]' (or pip install stable-baselines3)")
    peers.append(("CleanRL-style", lambda seed: cleanrl_cartpole(seed, args.budget)))
    print(f"CartPole-v1 to mean return >= {CARTPOLE_TARGET:.0f} over the newest 100 episodes; SB3 PPO defaults "
          f"({args.sb3_envs} env); torch threads {torch.get_num_threads()}; budget {args.budget:.0f} s per run")
    print("| seed | " + " | ".join(f"{name} s | {name} steps" for name, _ in peers) + " |")
    print("| --- |" + " --- | --- |" * len(peers))
    results = {name: [] for name, _ in peers}
    for index, seed in enumerate(args.seeds):
        # Each seed starts with the next peer, so no library always runs first (or right after another).
        for name, run in peers[index % len(peers):] + peers[:index % len(peers)]:
            results[name].append(run(seed))
        show = lambda t: f"{t:.1f}" if t is not None else f"> {args.budget:.0f} (unsolved)"  # noqa: E731
        print(f"| {seed} | " + " | ".join(f"{show(results[name][-1][0])} | {results[name][-1][1]}" for name, _ in peers) + " |", flush=True)
    medians = {}
    for name, _ in peers:
        solved = [run[0] for run in results[name] if run[0] is not None]
        medians[name] = statistics.median(solved) if solved else None
        print(f"{name}: median {medians[name]:.1f} s" if solved else f"{name}: never solved", f"({len(solved)}/{len(args.seeds)} solved)")
    ours = medians["PuffeRL"]
    for name, _ in peers[1:]:
        if ours and medians[name]:
            print(f"PuffeRL is {medians[name] / ours:.1f}x faster than {name} (median over median)")
    return results


def cartpole_configs(args):
    show = lambda t: f"{t:.1f}" if t is not None else f"> {args.budget:.0f} (unsolved)"  # noqa: E731
    print(f"CartPole-v1 to mean return >= {CARTPOLE_TARGET:.0f} over 100 episodes: the shipped config against "
          f"{args.overlay}; torch threads {torch.get_num_threads()}; budget {args.budget:.0f} s per run")
    print("| seed | shipped s | shipped CPU s | shipped steps | overlay s | overlay CPU s | overlay steps |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    shipped, overlaid = [], []
    for index, seed in enumerate(args.seeds):
        # Alternating which goes first, so that a change of load hits both alike.
        if index % 2 == 0:
            shipped.append(puffer_cartpole(seed, args.budget))
            overlaid.append(puffer_cartpole(seed, args.budget, args.overlay))
        else:
            overlaid.append(puffer_cartpole(seed, args.budget, args.overlay))
            shipped.append(puffer_cartpole(seed, args.budget))
        cells = [f"{show(run[0])} | {run[2]:.1f} | {run[1]}" for run in (shipped[-1], overlaid[-1])]
        print(f"| {seed} | {cells[0]} | {cells[1]} |", flush=True)
    for column, unit in ((0, "s"), (2, "CPU s")):
        a = [run[column] for run in shipped if run[0] is not None]
        b = [run[column] for run in overlaid if run[0] is not None]
        if a and b:
            print(f"median: shipped {statistics.median(a):.1f} {unit} ({len(a)}/{len(shipped)} solved), overlay "
                  f"{statistics.median(b):.1f} {unit} ({len(b)}/{len(overlaid)} solved): {statistics.median(a) / statistics.median(b):.2f}x")
    return shipped, overlaid


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["sps", "cartpole", "cartpole-config", "all"], nargs="?", default="all")
    parser.add_argument("--env", default="puffer_squared")
    parser.add_argument("--device", help=f"default {SPS_DEFAULTS['device']}, or --config's")
    parser.add_argument("--policy", choices=["default", "lstm", "mingru"], help=f"default {SPS_DEFAULTS['policy']}, or --config's")
    parser.add_argument("--hidden", type=int, help=f"default {SPS_DEFAULTS['hidden']}, or --config's")
    parser.add_argument("--layers", type=int, help=f"default {SPS_DEFAULTS['layers']}, or --config's")
    parser.add_argument("--num-envs", type=int, help=f"default {SPS_DEFAULTS['num_envs']}, or --config's")
    parser.add_argument("--horizon", type=int)
    parser.add_argument("--minibatch-size", type=int)
    parser.add_argument("--optimizer", choices=["adam", "muon"])
    parser.add_argument("--seconds", type=float, default=10.0, help="timed seconds of the SPS run")
    parser.add_argument("--warmup", type=int, default=3, help="untimed epochs first (compilation on GPU)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per CartPole run before it counts as unsolved")
    parser.add_argument("--sb3-envs", type=int, default=1, help="SB3's n_envs (its default is 1)")
    parser.add_argument("--overlay", metavar="FILE.ini", help="cartpole-config: the .ini laid over the shipped config")
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--config", metavar="NAME", help="sps: a recipe laid on the env's config (`puffer train --config`)")
    parser.add_argument("--burn-cores", type=int, default=0, help="sps: host cores kept busy while timed")
    parser.add_argument("--peer-craftax-cu", metavar="PATH", help="sps: a craftax.cu checkout, built and timed beside")
    parser.add_argument("--peer-iters", type=int, default=100, help="sps: craftax.cu's train iterations")
    parser.add_argument("--profile", metavar="TRACE.json", help="after the SPS run, profile one epoch and write Chrome traces")
    parser.add_argument("--against", metavar="FLAGS", help="sps: a second trainer with these flags added (one quoted "
                        "string), its epochs alternating with this run's in one process; prints both and their ratio")
    parser.add_argument("--against-trainer", metavar="PUFFERL.py", help="sps: the same, the peer built by this file's "
                        "PuffeRL: another revision's pufferlib/pufferl.py (with --against, its flags too)")
    args, args.flags = parser.parse_known_args()
    torch.set_num_threads(args.torch_threads)
    try:
        if args.what in ("sps", "all"):
            measure_sps(args)
        if args.what in ("cartpole", "all"):
            cartpole_race(args)
        if args.what == "cartpole-config":
            if not args.overlay:
                parser.error("cartpole-config needs --overlay FILE.ini (a sweep's best.ini, say)")
            apply_config_file(load_config("CartPole-v1"), args.overlay)  # a bad file fails here, before any run
            cartpole_configs(args)
    except (ConfigError, ParameterError, APIUsageError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
