"""Trainers for the tests of the trainer's modules: a config on the CPU, a PuffeRL built from it,
epochs of training, and an env behind the device hooks on the CPU."""

import numpy as np
import torch

import ocean
from pufferlib import assemble, pufferl
from pufferlib.config import apply_flags, load_config
from pufferlib.environment import mean_infos


def config_for(env_name, *flags, data_dir=None):
    config = load_config(env_name)
    # CPU everywhere, so results are the same on machines with a GPU; the GPU path has its own test.
    extra = ["--train.device", "cpu", "--train.dashboard", "plain", "--train.print-interval", "1000"]
    if data_dir is not None:
        extra += ["--train.data-dir", str(data_dir)]
    return apply_flags(config, extra + list(flags))


def make_trainer(config):
    env_name = config["base"]["env_name"]
    vecenv = assemble.make_vecenv(env_name, config)
    return pufferl.PuffeRL(config, vecenv, assemble.make_policy(vecenv, config))


def run_epochs(trainer, epochs):
    for _ in range(epochs):
        trainer.collect()
        trainer.train()


class HookedSquared:
    """puffer_squared behind the device hooks, on the CPU: torch tensors share the env's numpy
    buffers, so the trainer's device path can be checked against its host path anywhere."""

    def __init__(self, num_envs, **params):
        self.env = ocean.make("puffer_squared", num_envs=num_envs, **params)
        self.device = torch.device("cpu")
        self.num_envs = self.num_agents = num_envs
        self.single_observation_space = self.env.single_observation_space
        self.single_action_space = self.env.single_action_space
        self.observations = torch.from_numpy(self.env.observations)
        self.rewards = torch.from_numpy(self.env.rewards)
        self.terminals = torch.from_numpy(self.env.terminals.view(np.bool_))
        self.truncations = torch.from_numpy(self.env.truncations.view(np.bool_))
        self.logs = []

    def gpu_reset(self, seed):
        self.env.reset(seed)

    def gpu_step(self, actions):
        self.logs += self.env.step(actions.numpy().astype(np.int32))[4]

    def gpu_sync_logs(self):
        logs, self.logs = mean_infos(self.logs + [self.env.log() or {}]), []
        return logs or None

    def close(self):
        self.env.close()
