"""Episode statistics wrappers: infos only at episode ends, so workers rarely touch their pipes.

Gymnasium and PettingZoo envs often return a non-empty info on every step (ALE's frame counters,
NetHack's status, the turn-based converter's active agent). The vector backends forward every
non-empty info to the main process, through a pipe in Multiprocessing, so the family modules
replace those per-step infos with one summary per episode: the same ``episode_return`` and
``episode_length`` keys that native Ocean envs log.
"""

import gymnasium


class EpisodeStats(gymnasium.Wrapper):
    """Empty infos, except at the end of an episode: {'episode_return', 'episode_length'}."""

    def __init__(self, env):
        super().__init__(env)
        self.episode_return = 0.0
        self.episode_length = 0

    def reset(self, seed=None, options=None):
        self.episode_return = 0.0
        self.episode_length = 0
        observation, _ = self.env.reset(seed=seed, options=options)
        return observation, {}

    def step(self, action):
        observation, reward, terminated, truncated, _ = self.env.step(action)
        self.episode_return += float(reward)
        self.episode_length += 1
        info = {}
        if terminated or truncated:
            info = {"episode_return": self.episode_return, "episode_length": self.episode_length}
        return observation, reward, terminated, truncated, info


class ParallelEpisodeStats:
    """The PettingZoo ParallelEnv counterpart: one summary per episode, in the first agent's info.

    ``episode_return`` is the mean over possible agents of each agent's summed reward.
    """

    def __init__(self, env):
        self.env = env
        self.possible_agents = env.possible_agents
        self.metadata = getattr(env, "metadata", {})
        self.render_mode = getattr(env, "render_mode", None)
        self.reporter = env.possible_agents[0]
        self.episode_return = 0.0
        self.episode_length = 0

    @property
    def agents(self):
        return self.env.agents

    @property
    def unwrapped(self):
        return self.env.unwrapped

    def observation_space(self, agent):
        return self.env.observation_space(agent)

    def action_space(self, agent):
        return self.env.action_space(agent)

    def reset(self, seed=None, options=None):
        self.episode_return = 0.0
        self.episode_length = 0
        observations, _ = self.env.reset(seed=seed, options=options)
        return observations, {agent: {} for agent in observations}

    def step(self, actions):
        observations, rewards, terminations, truncations, _ = self.env.step(actions)
        self.episode_return += sum(float(reward) for reward in rewards.values()) / len(self.possible_agents)
        self.episode_length += 1
        infos = {agent: {} for agent in observations}
        if not self.env.agents:
            infos[self.reporter] = {"episode_return": self.episode_return, "episode_length": self.episode_length}
        return observations, rewards, terminations, truncations, infos

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()
