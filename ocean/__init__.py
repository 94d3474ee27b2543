"""Ocean: first-party environments written in C, stepped in batches by the shared C vecenv.

``ocean.make("puffer_squared", num_envs=4096, size=11)`` builds one; ``ocean.ENVS`` lists them.
"""

import difflib
import importlib

ENV_MODULES = {
    "puffer_squared": ("ocean.squared", "Squared"),
}


def env_class(name):
    """The class registered under ``name`` (``puffer_squared`` or just ``squared``)."""
    key = name if name.startswith("puffer_") else f"puffer_{name}"
    if key not in ENV_MODULES:
        close = difflib.get_close_matches(key, ENV_MODULES, n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise ValueError(f"Unknown Ocean env {name!r}. Valid names: {', '.join(sorted(ENV_MODULES))}.{hint}")
    module, attribute = ENV_MODULES[key]
    return getattr(importlib.import_module(module), attribute)


def make(name, num_envs=1, **params):
    """Builds ``num_envs`` copies of the Ocean env ``name`` with the given game parameters."""
    return env_class(name)(num_envs=num_envs, **params)


ENVS = sorted(ENV_MODULES)
