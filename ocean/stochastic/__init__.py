import math

import gymnasium
import numpy as np

from ocean.env import OceanEnv, check_float, check_int
from ocean.stochastic import binding


def expected_score(q, p, horizon):
    """Exact expected score of a policy that plays action 0 with probability q."""
    return sum(
        math.comb(horizon, k) * q**k * (1 - q) ** (horizon - k) * (1 - abs(k / horizon - p))
        for k in range(horizon + 1)
    )


class Stochastic(OceanEnv):
    """Learn to play action 0 with probability ``p`` from an observation that is always 0.

    After ``horizon`` steps the episode ends with reward 1 - |f - p|, f being the fraction of
    steps that played action 0. The best deterministic memoryless policy scores max(p, 1 - p); the
    best memoryless policy samples action 0 with a probability close to p, and ``optimal_score`` is
    its exact expected score (0.924 at the defaults p=0.75, horizon=20, sampling with q=0.758).
    Use a memoryless policy: memory trivializes it.
    """

    name = "puffer_stochastic"
    binding = binding

    def __init__(self, num_envs=1, p=0.75, horizon=20, **kwargs):
        p = check_float(self.name, "p", p, 0.0, 1.0, inclusive=False)
        horizon = check_int(self.name, "horizon", horizon, 1, 100_000)
        self.p, self.horizon = p, horizon
        self.single_observation_space = gymnasium.spaces.Box(0, 1, (1,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(2)
        super().__init__(num_envs, p=p, horizon=horizon, **kwargs)

    @property
    def optimal_score(self):
        """Best expected score of any memoryless policy (a search over q near p)."""
        candidates = np.linspace(max(self.p - 0.1, 0.0), min(self.p + 0.1, 1.0), 401)
        return max(expected_score(q, self.p, self.horizon) for q in candidates)
