import gymnasium
import numpy as np

from ocean.env import OceanEnv
from ocean.spaces import binding


class Spaces(OceanEnv):
    """A structured observation and action, for testing flattening and nativization.

    Observation: a 5x5 ``image`` and a 5-vector ``flat`` of +1/-1, laid out flat (30 floats) and
    described by ``obs_dtype``, a numpy structured dtype: ``obs.view(env.obs_dtype)`` names the two
    parts. Actions: [is the image sum positive, is the flat sum positive], 0.5 each.
    Optimal score: 1.0; reading only one part scores 0.75.
    """

    name = "puffer_spaces"
    binding = binding
    optimal_score = 1.0
    obs_dtype = np.dtype([("image", np.float32, (5, 5)), ("flat", np.float32, (5,))])

    def __init__(self, num_envs=1, **kwargs):
        self.single_observation_space = gymnasium.spaces.Box(-1, 1, (30,), np.float32)
        self.single_action_space = gymnasium.spaces.MultiDiscrete([2, 2])
        super().__init__(num_envs, **kwargs)
