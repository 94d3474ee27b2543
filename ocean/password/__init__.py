import gymnasium
import numpy as np

from ocean.env import OceanEnv, check_int
from ocean.password import binding

MAX_LENGTH = 64


class Password(OceanEnv):
    """Guess a fixed binary password of ``length`` bits, one bit per step.

    Observation: one float per position (+1 guessed 1, -1 guessed 0, 0 not yet). Actions: 0 or 1.
    Reward 1 at the end of the episode when every bit matched, else 0. The password is drawn from
    ``password_seed`` and shared by every env. Optimal score: 1.0; random: 2 ** -length.
    """

    name = "puffer_password"
    binding = binding
    optimal_score = 1.0

    def __init__(self, num_envs=1, length=5, password_seed=0, **kwargs):
        length = check_int(self.name, "length", length, 1, MAX_LENGTH)
        password_seed = check_int(self.name, "password_seed", password_seed, 0)
        self.password = np.random.default_rng(password_seed).integers(0, 2, length).astype(np.uint8)
        self.single_observation_space = gymnasium.spaces.Box(-1, 1, (length,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(2)
        super().__init__(num_envs, length=length, password=self.password.tolist(), **kwargs)
