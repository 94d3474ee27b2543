"""Trainers for the tests of the trainer's modules: a config on the CPU, a PuffeRL built from it,
and epochs of training."""

from pufferlib import assemble, pufferl
from pufferlib.config import apply_flags, load_config


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
