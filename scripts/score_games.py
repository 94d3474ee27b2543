"""Scores a trained policy on fresh envs of its Ocean game, one whole episode per env.

Usage: python scripts/score_games.py RUN_DIR|CHECKPOINT [--envs 512] [--env.depth 5 ...]

The training curve's score is the mean over the episodes that ended in each epoch, which favours
short episodes (a breakout game lost early ends sooner than one cleared). Here every env plays
until its first episode ends and each counts once: breakout's score is the bricks broken over the
total, pong's and connect4's the win rate; snake's is the mean length of a life over whole board
episodes (every board ends at the same step, so nothing is favoured). ``--env.KEY VALUE`` changes
a game parameter (connect4's opponent depth, pong's opponent speed) against the trained policy.
"""

import argparse

import numpy as np

import ocean
from pufferlib import assemble
from pufferlib.checkpoint import load_weights, read_checkpoint
from pufferlib.config import parse_value
from pufferlib.player import PolicyPlayer


def play(policy, env, steps, seed=1):
    """Steps env with the policy (sampling its actions) and yields each step's results."""
    player = PolicyPlayer(policy, env.num_agents, seed)
    obs, _ = env.reset(seed)
    dones = np.zeros(env.num_agents, dtype=bool)
    for _ in range(steps):
        obs, rewards, terminals, truncations, _ = env.step(player.act(obs, dones))
        dones = np.logical_or(terminals, truncations)
        yield rewards, terminals, truncations


def first_episodes(policy, env, max_steps):
    """Each agent's first episode: its return, its last reward and whether it ended terminal."""
    returns = np.zeros(env.num_agents)
    last_reward = np.zeros(env.num_agents)
    finished = np.zeros(env.num_agents, bool)
    terminal = np.zeros(env.num_agents, bool)
    for rewards, terminals, truncations in play(policy, env, max_steps):
        running = ~finished
        returns[running] += rewards[running]
        ended = running & (terminals | truncations).astype(bool)
        last_reward[ended] = rewards[ended]
        terminal[ended] = terminals[ended].astype(bool)
        finished |= ended
        if finished.all():
            break
    if not finished.all():
        raise RuntimeError(f"{int((~finished).sum())} envs did not finish an episode in {max_steps} steps")
    return returns, last_reward, terminal


def score(policy, env_name, num_envs=512, max_steps=100_000, **params):
    """The game's score for the policy: mean over num_envs fresh envs of one episode each."""
    env = ocean.make(env_name, num_envs=num_envs, log_interval=10**9, **params)
    if env_name == "puffer_snake":
        for _ in play(policy, env, 2 * env.params["episode_length"]):
            pass
        return env.log()["score"]
    returns, last_reward, terminal = first_episodes(policy, env, max_steps)
    if env_name == "puffer_breakout":
        return float(np.mean(returns / (env.params["brick_rows"] * env.params["brick_cols"])))
    if env_name == "puffer_pong":
        return float(np.mean(terminal & (last_reward > 0)))  # the match point was the agent's
    if env_name == "puffer_connect4":
        return float(np.mean(returns == 1))
    raise ValueError(f"no score for {env_name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a run directory or its checkpoint.pt")
    parser.add_argument("--envs", type=int, default=512)
    args, rest = parser.parse_known_args()
    overrides = {}
    for flag, value in zip(rest[::2], rest[1::2]):
        if not flag.startswith("--env."):
            parser.error(f"unknown argument {flag}; game parameters look like --env.depth 5")
        overrides[flag.removeprefix("--env.").replace("-", "_")] = parse_value(value)
    checkpoint = read_checkpoint(args.checkpoint)
    config = checkpoint["config"]
    env_name = checkpoint["env_name"]
    params = dict(config["env"]) | overrides
    probe = ocean.make(env_name, num_envs=1, **params)
    policy = assemble.make_policy(probe, config)
    load_weights(policy, checkpoint)
    policy.eval()
    value = score(policy, env_name, num_envs=args.envs, **params)
    shown = ", ".join(f"{key}={value}" for key, value in params.items())
    print(f"{env_name} ({shown}): score {value:.3f} over {args.envs} envs, one episode each")


if __name__ == "__main__":
    main()
