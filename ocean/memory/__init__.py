import gymnasium
import numpy as np

from ocean.env import OceanEnv, check_int
from ocean.memory import binding

MAX_LENGTH = 64


class Memory(OceanEnv):
    """Copy task: see ``length`` random bits, wait ``delay`` steps, then recite them in order.

    Observation: [bit shown (+1/-1, else 0), 1 while recalling]. Actions: 0 or 1 (read while
    recalling). Reward 1/length per correct bit. Optimal score: 1.0, which needs a recurrent
    policy; a memoryless one scores 0.5.
    """

    name = "puffer_memory"
    binding = binding
    optimal_score = 1.0

    def __init__(self, num_envs=1, length=2, delay=0, **kwargs):
        length = check_int(self.name, "length", length, 1, MAX_LENGTH)
        delay = check_int(self.name, "delay", delay, 0, 1000)
        self.single_observation_space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(2)
        super().__init__(num_envs, length=length, delay=delay, **kwargs)
