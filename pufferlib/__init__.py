"""pufferlib: fast and sane reinforcement learning.

`import pufferlib` alone needs no third-party package (PufferEnv is imported on first use), so
that the tank's host tools, which need only docker-py, import it without numpy or gymnasium.
"""

from pufferlib.exceptions import APIUsageError

__version__ = "0.1.0"
__all__ = ["PufferEnv", "APIUsageError", "__version__"]


def __getattr__(name):
    if name == "PufferEnv":
        from pufferlib.environment import PufferEnv

        return PufferEnv
    raise AttributeError(f"module 'pufferlib' has no attribute {name!r}")
