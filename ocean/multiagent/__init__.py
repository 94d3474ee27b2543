import gymnasium
import numpy as np

from ocean.env import OceanEnv
from ocean.multiagent import binding


class Multiagent(OceanEnv):
    """Two agents per env, each observing a one-hot of its id; agent i is rewarded for action i.

    A policy that mixes up the agents' order or ignores the id scores 0.5. One-step episodes.
    ``num_agents`` is 2 * num_envs, agents of env i at rows 2i and 2i + 1. Optimal score: 1.0.
    """

    name = "puffer_multiagent"
    binding = binding
    agents_per_env = 2
    optimal_score = 1.0

    def __init__(self, num_envs=1, **kwargs):
        self.single_observation_space = gymnasium.spaces.Box(0, 1, (self.agents_per_env,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(self.agents_per_env)
        super().__init__(num_envs, **kwargs)
