import gymnasium
import numpy as np

from ocean.breakout import binding
from ocean.env import OceanEnv, check_float, check_int


class Breakout(OceanEnv):
    """Breakout: break ``brick_rows`` x ``brick_cols`` bricks with a ball, keeping it up with a paddle.

    Observation (float32, 5 + bricks): paddle x, ball x and y in [0, 1], ball velocity in [-1, 1],
    then 1 per standing brick, row by row. Actions: stay, left, right. Reward 1 per brick; the
    ball's angle off the paddle depends on where it hits. ``lives`` balls per episode. Score: the
    fraction of the bricks broken (optimal 1.0).
    """

    name = "puffer_breakout"
    binding = binding
    optimal_score = 1.0

    def __init__(self, num_envs=1, brick_rows=5, brick_cols=10, lives=5, paddle_width=2.0, **kwargs):
        brick_rows = check_int(self.name, "brick_rows", brick_rows, 1, 16)
        brick_cols = check_int(self.name, "brick_cols", brick_cols, 2, 32)
        lives = check_int(self.name, "lives", lives, 1, 99)
        paddle_width = check_float(self.name, "paddle_width", paddle_width, 0.5, brick_cols)
        self.single_observation_space = gymnasium.spaces.Box(-1, 1, (5 + brick_rows * brick_cols,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(3)
        super().__init__(num_envs, brick_rows=brick_rows, brick_cols=brick_cols, lives=lives,
                         paddle_width=paddle_width, **kwargs)

    def state(self, index=0):
        """Env ``index``'s paddle, ball, lives and bricks left."""
        return binding.get_state(self.c_envs, check_int(self.name, "index", index, 0, self.num_envs - 1))

    def set_scene(self, index=0, **fields):
        """Overwrites fields of env ``index``'s state (paddle, ball, lives, tick); for tests and demos."""
        binding.set_scene(self.c_envs, check_int(self.name, "index", index, 0, self.num_envs - 1), **fields)
