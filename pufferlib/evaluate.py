"""Scoring a policy on fresh episodes, free of the bias of training-time logs.

Training logs favour short episodes: every env starts an episode at the same moment, so the first
episodes to end are the quick ones, and a run that has just started (or resumed) looks better, or
worse, than its policy is. Here the policy plays its own envs, separate from training; nothing is
counted until every agent has finished one episode, by which time their episodes are spread out
in time, and then every episode that ends counts.
"""

import functools
from collections import deque

import numpy as np
import torch

from pufferlib.environment import mean_infos
from pufferlib.pytorch import sampling_noise
from pufferlib.rollout import policy_act


def score_policy(trainer, env, seed, min_episodes, max_steps):
    """Plays ``trainer``'s policy on ``env`` (``pufferlib.vector``'s async surface, as many agents
    as the trainer's) from fresh episodes seeded with ``seed``, until ``min_episodes`` episodes have
    been counted or ``max_steps`` steps have passed. Returns the mean episode statistics
    (``episodes``: how many were counted; empty if none). Training's RNG streams and memory are
    left untouched: its next epoch is the same whether or not this ran."""
    policy, device = trainer.policy, trainer.device
    # The trainer's compiled step is specialized to its batch; another batch would recompile it.
    act = trainer.rollout.policy_act if env.num_agents == trainer.num_agents else functools.partial(policy_act, policy)
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    state = policy.initial_state(env.num_agents, device)
    finished_once = np.zeros(env.num_agents, dtype=bool)
    counted, counting = [], False
    env.async_reset(seed)
    for _ in range(max_steps):
        obs, _, terminals, truncations, infos, env_ids, masks = env.recv()
        infos = [info for info in (infos if isinstance(infos, list) else [infos]) if info]
        if counting:
            counted += infos
            if sum(info.get("episodes", 1) for info in counted) >= min_episodes:
                break
        dones = np.logical_or(terminals, truncations)
        finished_once[np.asarray(env_ids)[dones | ~np.asarray(masks, dtype=bool)]] = True  # padding never plays
        # Counting starts with the first report after every agent has ended an episode: the
        # reports before it hold the synchronized first episodes.
        counting = counting or bool(finished_once.all())
        agents = torch.as_tensor(np.asarray(env_ids), device=device)
        noise = sampling_noise(env.single_action_space, len(env_ids), generator, device)
        with torch.inference_mode(), trainer.autocast():
            acting = tuple(s[agents] for s in state)
            action, _, _, new_state = act(torch.as_tensor(obs).to(device), acting, torch.as_tensor(dones, device=device), noise)
        for k, s in enumerate(new_state):
            state[k][agents] = s
        env.send(action.cpu().numpy())
    return mean_infos(counted)


class RecentMean:
    """The mean of a metric over the newest ``episodes`` training episodes, or a few more: the
    statistics arrive an epoch at a time, as (episodes that ended, their mean), and whole epochs
    are kept."""

    def __init__(self, episodes):
        self.episodes = episodes
        self.recent = deque()  # (episodes, mean value) of the newest epochs

    def add(self, count, value):
        self.recent.append((count, value))
        while len(self.recent) > 1 and sum(n for n, _ in self.recent) - self.recent[0][0] >= self.episodes:
            self.recent.popleft()

    def clear(self):
        self.recent.clear()

    def ready(self):
        """Enough episodes: the first epochs, where only the quickest episodes have ended, do not count."""
        return sum(n for n, _ in self.recent) >= self.episodes

    def value(self):
        return sum(n * v for n, v in self.recent) / sum(n for n, _ in self.recent)


class SolveCheck:
    """Watches training's episode statistics for the target score of ``metric``; a hit is only a
    candidate, which ``score_policy`` then confirms (or not) on fresh episodes."""

    def __init__(self, metric, target, tolerance, min_episodes):
        self.metric, self.target, self.tolerance, self.min_episodes = metric, target, tolerance, min_episodes
        self.recent = RecentMean(min_episodes)

    def reached(self, value):
        return self.target is not None and value is not None and value >= self.target - self.tolerance

    def candidate(self, episode_stats):
        """True when the mean over the newest ``min_episodes`` (or a few more: whole epochs)
        training episodes reaches the target."""
        if self.metric in episode_stats:
            self.recent.add(episode_stats["episodes"], episode_stats[self.metric])
        return self.target is not None and self.recent.ready() and self.reached(self.recent.value())

    def confirm(self, trainer, env, seed, max_steps):
        """Scores ``trainer``'s policy on fresh episodes of ``env``: returns (whether they hold the
        target, their statistics). When they do not, the training window starts anew."""
        stats = score_policy(trainer, env, seed, self.min_episodes, max_steps)
        reached = self.reached(stats.get(self.metric))
        if not reached:
            self.recent.clear()
        return reached, stats
