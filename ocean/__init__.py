"""Ocean: first-party environments written in C, stepped in batches by the shared C vecenv.

``ocean.make("puffer_squared", num_envs=4096, size=11)`` builds one; ``ocean.ENVS`` lists them.
Each env is one folder: its C header, its Cython binding, its class (``__init__.py``), its trainer
config (``<name>.ini``, found by ``pufferlib.config`` through this package's entry point) and any
policy of its own. The trainer reaches Ocean like any env family, through ``env_creator``.
"""

import importlib
import os

from pufferlib.exceptions import ParameterError, did_you_mean

# The C vecenv's OpenMP threads sleep instead of spinning while they wait for work: spinning
# threads starve the trainer and other processes when the cores are shared. Export
# OMP_WAIT_POLICY=active on a dedicated machine.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

ENV_MODULES = {
    "puffer_squared": ("ocean.squared", "Squared"),
    "puffer_password": ("ocean.password", "Password"),
    "puffer_stochastic": ("ocean.stochastic", "Stochastic"),
    "puffer_memory": ("ocean.memory", "Memory"),
    "puffer_bandit": ("ocean.bandit", "Bandit"),
    "puffer_multiagent": ("ocean.multiagent", "Multiagent"),
    "puffer_spaces": ("ocean.spaces", "Spaces"),
    "puffer_craftax": ("ocean.craftax", "Craftax"),
    "puffer_craftax_compact": ("ocean.craftax", "CraftaxCompact"),
    "puffer_craftax_pixels": ("ocean.craftax", "CraftaxPixels"),
    "puffer_craftax_classic": ("ocean.craftax_classic", "CraftaxClassic"),
    "puffer_breakout": ("ocean.breakout", "Breakout"),
    "puffer_pong": ("ocean.pong", "Pong"),
    "puffer_snake": ("ocean.snake", "Snake"),
    "puffer_connect4": ("ocean.connect4", "Connect4"),
}


# Envs with a GPU version: the same game compiled by nvcc, with device hooks (ocean/vecenv_gpu.cuh).
GPU_ENV_MODULES = {
    "puffer_craftax": ("ocean.craftax.gpu", "CraftaxGPU"),
    "puffer_craftax_compact": ("ocean.craftax.gpu", "CraftaxCompactGPU"),
    "puffer_craftax_classic": ("ocean.craftax_classic.gpu", "CraftaxClassicGPU"),
    "puffer_craftax_pixels": ("ocean.craftax.gpu", "CraftaxPixelsGPU"),
}


def env_creator(name, device="cpu"):
    """The class registered under ``name`` (``puffer_squared`` or just ``squared``): a batched
    creator for ``pufferlib.vector.make`` (it takes ``num_envs``). ``device`` other than cpu picks
    the env's GPU version, which runs on that device."""
    key = name if name.startswith("puffer_") else f"puffer_{name}"
    if key not in ENV_MODULES:
        hint = did_you_mean(key, ENV_MODULES, ignore_prefix="puffer_")
        raise ParameterError(f"Unknown Ocean env {name!r}. Valid names: {', '.join(sorted(ENV_MODULES))}.{hint}")
    registry = ENV_MODULES
    if str(device) != "cpu":
        if key not in GPU_ENV_MODULES:
            raise ValueError(f"{key} has no GPU version (device {device!r}); envs that have one: {', '.join(GPU_ENV_MODULES)}")
        registry = GPU_ENV_MODULES
    module, attribute = registry[key]
    return getattr(importlib.import_module(module), attribute)


def make(name, num_envs=1, device="cpu", **params):
    """Builds ``num_envs`` copies of the Ocean env ``name`` with the given game parameters; on a
    GPU (``device="cuda"``) for envs that have a GPU version."""
    if str(device) != "cpu":
        return env_creator(name, device)(num_envs=num_envs, device=device, **params)
    return env_creator(name)(num_envs=num_envs, **params)


ENVS = sorted(ENV_MODULES)
