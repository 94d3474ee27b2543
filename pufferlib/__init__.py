"""pufferlib: fast and sane reinforcement learning."""

from pufferlib.environment import PufferEnv
from pufferlib.exceptions import APIUsageError

__version__ = "0.1.0"
__all__ = ["PufferEnv", "APIUsageError", "__version__"]
