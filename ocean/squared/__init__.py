import gymnasium
import numpy as np

from ocean.env import OceanEnv, check_int
from ocean.squared import binding


class Squared(OceanEnv):
    """Walk from the centre of a ``size`` x ``size`` grid to a target on its border.

    Observation: the grid as uint8 (0 empty, 1 agent, 2 target). Actions: stay, down, up, left,
    right. Reward 1 on reaching the target; the episode ends there, or fails after 2 * size steps.
    Optimal score: 1.0 (every target reached); a uniform random policy scores about 0.02 at size 11.
    """

    name = "puffer_squared"
    binding = binding
    optimal_score = 1.0

    def __init__(self, num_envs=1, size=11, **kwargs):
        size = check_int(self.name, "size", size, 3, 255)
        self.single_observation_space = gymnasium.spaces.Box(0, 2, (size * size,), np.uint8)
        self.single_action_space = gymnasium.spaces.Discrete(5)
        super().__init__(num_envs, size=size, **kwargs)
