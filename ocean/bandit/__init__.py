import gymnasium
import numpy as np

from ocean.bandit import binding
from ocean.env import OceanEnv, check_float, check_int


class Bandit(OceanEnv):
    """One-step multi-armed bandit with ``arms`` arms.

    The paying arm is drawn from ``solution_seed`` (the same for every env) and pays 1; the others
    pay 0; Gaussian noise of standard deviation ``reward_noise`` is added to every payout.
    Optimal score: 1.0; a uniform random policy scores 1 / arms.
    """

    name = "puffer_bandit"
    binding = binding
    optimal_score = 1.0

    def __init__(self, num_envs=1, arms=4, reward_noise=0.0, solution_seed=0, **kwargs):
        arms = check_int(self.name, "arms", arms, 2, 1024)
        reward_noise = check_float(self.name, "reward_noise", reward_noise, 0.0, 100.0)
        solution_seed = check_int(self.name, "solution_seed", solution_seed, 0)
        self.solution = int(np.random.default_rng(solution_seed).integers(arms))
        self.single_observation_space = gymnasium.spaces.Box(0, 1, (1,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(arms)
        super().__init__(num_envs, arms=arms, solution=self.solution, reward_noise=reward_noise, **kwargs)
