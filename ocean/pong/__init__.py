import gymnasium
import numpy as np

from ocean.env import OceanEnv, check_float, check_int
from ocean.pong import binding


class Pong(OceanEnv):
    """Pong against a scripted opponent, first to ``points_to_win`` points.

    The opponent follows the ball at up to ``opponent_speed`` per step (the agent's paddle moves
    0.5, the ball 0.35) once the ball comes toward it within ``opponent_reaction`` of the field's
    width. Observation (float32, 6): both paddles' heights, ball position and velocity. Actions:
    stay, up, down. Reward +1 per point won, -1 per point lost. Score: the match win rate
    (optimal 1.0); ``points_share`` in the logs is the fraction of points won.
    """

    name = "puffer_pong"
    binding = binding
    optimal_score = 1.0

    def __init__(self, num_envs=1, points_to_win=5, opponent_speed=0.2, opponent_reaction=0.5, **kwargs):
        points_to_win = check_int(self.name, "points_to_win", points_to_win, 1, 99)
        opponent_speed = check_float(self.name, "opponent_speed", opponent_speed, 0.0, 1.0)
        opponent_reaction = check_float(self.name, "opponent_reaction", opponent_reaction, 0.0, 1.0)
        self.single_observation_space = gymnasium.spaces.Box(-1, 1, (6,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(3)
        super().__init__(num_envs, points_to_win=points_to_win, opponent_speed=opponent_speed,
                         opponent_reaction=opponent_reaction, **kwargs)

    def state(self, index=0):
        """Env ``index``'s paddles, ball and points."""
        return binding.get_state(self.c_envs, check_int(self.name, "index", index, 0, self.num_envs - 1))

    def set_scene(self, index=0, **fields):
        """Overwrites fields of env ``index``'s state (paddles, ball, points); for tests and demos."""
        binding.set_scene(self.c_envs, check_int(self.name, "index", index, 0, self.num_envs - 1), **fields)
