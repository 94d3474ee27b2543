"""A trained policy playing an env: the acting loop that `puffer eval`, `puffer watch` and the
scoring script share, agent 0's episodes followed for the viewer, and the eval command's playback
(ANSI text on a terminal, episode ends in a log, RGB frames to a GIF or MP4)."""

import inspect
import re
import sys
import time
from pathlib import Path

import numpy as np
import torch

import pufferlib.models
from pufferlib.assemble import env_family, make_policy, make_vecenv, resolve_device
from pufferlib.checkpoint import CheckpointError, check_architecture, load_weights
from pufferlib.config import ConfigError, view
from pufferlib.environment import mean_infos
from pufferlib.pytorch import clear_finished, sample_logits


class PolicyPlayer:
    """Acts for ``num_agents`` agents with ``policy``, sampling its actions from a generator seeded
    with ``seed`` and carrying its recurrent state, which an ended episode clears."""

    def __init__(self, policy, num_agents, seed, device="cpu"):
        self.policy, self.device = policy, device
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)
        self.state = policy.initial_state(num_agents, device)

    def act(self, obs, dones):
        """Actions (numpy) for the observations ``obs``; ``dones`` marks agents whose episode just
        ended, so their first observation of the next one starts from a fresh state."""
        with torch.inference_mode():
            self.state = clear_finished(self.state, torch.as_tensor(np.asarray(dones), device=self.device))
            logits, _, self.state = self.policy.forward_eval(torch.as_tensor(obs).to(self.device), self.state)
            action, _, _ = sample_logits(logits, generator=self.generator)
        return action.cpu().numpy()

    def play(self, env, seed):
        """Plays ``env`` (the vector surface: async_reset, recv, send) from ``seed``, yielding what
        each ``recv`` returns; the policy acts on it once the caller has looked."""
        env.async_reset(seed)
        while True:
            received = env.recv()
            yield received
            _, _, terminals, truncations, _, _, _ = received
            env.send(self.act(received[0], np.logical_or(terminals, truncations)))


class EpisodeFollower:
    """Agent 0's episodes, step by step: the running return and length, and the return of each
    episode that ends. The first ``update`` is the reset's, which holds no reward."""

    def __init__(self):
        self.returns, self.episode_return, self.length, self.started = [], 0.0, 0, False

    def update(self, rewards, terminals, truncations):
        """Counts one step; returns the ended episode's (return, length), or None."""
        if not self.started:
            self.started = True
            return None
        self.episode_return += float(rewards[0])
        self.length += 1
        if terminals[0] or truncations[0]:
            ended = (self.episode_return, self.length)
            self.returns.append(self.episode_return)
            self.episode_return, self.length = 0.0, 0
            return ended
        return None


ANSI_CODE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Playback:
    """Shows an eval's frames: ANSI text redrawn in place on a terminal; in a file or a pipe, each
    episode's final frame and one line per episode (every frame of a long game would be tens of
    thousands of lines); RGB frames kept for a GIF or MP4."""

    def __init__(self, fps, terminal=None):
        self.terminal = sys.stdout.isatty() if terminal is None else terminal
        self.delay = 1.0 / fps if fps > 0 and self.terminal else 0.0
        self.frames = []

    def show(self, frame, status):
        """A frame in the middle of an episode."""
        if isinstance(frame, str):
            if self.terminal:
                sys.stdout.write("\033[H\033[2J" + frame + f"\n{status}\n")
                sys.stdout.flush()
                time.sleep(self.delay)
        elif frame is not None:
            self.frames.append(np.asarray(frame))

    def episode_end(self, frame, status):
        """An episode's final frame (None where the env cannot keep it) and its summary line, once."""
        if isinstance(frame, str):
            text = frame if self.terminal else ANSI_CODE.sub("", frame)
            sys.stdout.write(("\033[H\033[2J" if self.terminal else "") + text + "\n")
        elif frame is not None:
            self.frames.append(np.asarray(frame))
        print(status, flush=True)
        if self.terminal and isinstance(frame, str):
            time.sleep(self.delay)

    def save(self, output, fps):
        """Writes the RGB frames to ``output``; returns how many frames the file holds."""
        try:
            import imageio.v2 as imageio
        except ImportError:
            raise ConfigError("Saving RGB frames needs imageio: pip install imageio (and imageio-ffmpeg for .mp4)") from None
        gif = str(output).lower().endswith(".gif")
        timing = dict(duration=1000 / max(fps, 1)) if gif else dict(fps=max(fps, 1))  # GIFs time frames in ms
        try:
            imageio.mimsave(output, self.frames, **timing)
        except ValueError as error:  # imageio's word for a format it has no backend for
            first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ConfigError(f"--eval.output {output}: {first_line} Save a .gif, or pip install imageio-ffmpeg for .mp4") from None
        if gif:
            from PIL import Image  # imageio's GIF writer

            with Image.open(output) as image:
                return image.n_frames
        return len(self.frames)


def describe_stats(stats, solve_metric):
    """Episode statistics for a summary line. Those at 0 are counted rather than listed (a short
    Craftax run reaches a few of its 67 achievements), except the solve metric."""
    shown = [f"{k} {v:.4g}" for k, v in stats.items() if v != 0 or k == solve_metric]
    zeros = sum(1 for k, v in stats.items() if k != solve_metric and v == 0)
    if zeros:
        shown.append(f"{zeros} more at 0")
    return ", ".join(shown)


def stepping_env(env):
    """The env object that steps env 0 of a vector env, where it lives in this process (the
    native and Serial backends), for what only it knows: the frame that ended an episode and the
    episodes it has not reported yet. None for envs in other processes."""
    workers = getattr(env, "workers", None)
    envs = getattr(workers[0], "envs", None) if workers else None
    return envs[0] if envs else None


def request_pixels(env_name, config):
    """Has the env draw RGB frames where it can: one whose creator takes a ``render_mode`` that
    its config leaves unset is built with render_mode="rgb_array"."""
    if "render_mode" in config["env"]:
        return
    try:
        parameters = inspect.signature(env_family(config).env_creator(env_name)).parameters
    except (TypeError, ValueError):
        return
    if "render_mode" in parameters:
        config["env"]["render_mode"] = "rgb_array"


def evaluate(env_name, config, checkpoint):
    """`puffer eval`: a trained policy plays one env and agent 0's episodes are shown. ``config``
    is normally the run's own (from the checkpoint) with the command's flags applied. Returns the
    env's episode statistics over the episodes played."""
    settings, seed = view(config, "eval"), view(config, "base").seed
    if checkpoint["env_name"] != env_name:
        raise CheckpointError(f"{checkpoint['path']} was trained on {checkpoint['env_name']}, not {env_name}")
    device = resolve_device(config["train"]["device"])
    # A policy trained on an env's GPU version plays its CPU version: the same game, bit for bit.
    config["vec"]["device"] = "cpu"
    # A video file named: frames in pixels from an env that can draw them.
    if settings.output != "auto":
        request_pixels(env_name, config)
    env = make_vecenv(env_name, config, num_envs=settings.num_envs)
    policy = make_policy(env, config).to(device)
    check_architecture(checkpoint, policy, env)
    load_weights(policy, checkpoint)
    policy.eval()
    # The step that ends an episode returns the next one's first frame; an env that can keeps the
    # final frame, so the episode is seen to its end.
    stepper = stepping_env(env)
    final_frames = hasattr(stepper, "keep_final_frames")
    if final_frames:
        stepper.keep_final_frames()

    player = PolicyPlayer(policy, env.num_agents, seed, device)
    follower = EpisodeFollower()
    playback = Playback(settings.fps)
    episodes = settings.episodes
    infos, steps = [], 0
    print(f"Evaluating {checkpoint['path']} on {env_name} ({pufferlib.models.describe(policy)}): {episodes} episodes of agent 0")
    try:
        for _, rewards, terminals, truncations, step_infos, _, _ in player.play(env, seed):
            infos.extend(step_infos if isinstance(step_infos, list) else [step_infos])
            ended = follower.update(rewards, terminals, truncations)
            if ended:
                line = f"Episode {len(follower.returns)} of {episodes}: return {ended[0]:.4g}, length {ended[1]}"
                playback.episode_end(stepper.final_frame(0) if final_frames else None, line)
                if len(follower.returns) >= episodes:
                    break
            if steps >= settings.max_steps:
                break
            last_reward = f"{float(rewards[0]):+.3f}" if follower.length else "-"
            playback.show(env.render(), f"episode {len(follower.returns) + 1} of {episodes}  step {follower.length}  "
                                        f"reward {last_reward}  return {follower.episode_return:.4g}")
            steps += 1
    except KeyboardInterrupt:
        print("\nStopped.")
    finally:
        # Ocean envs sum episode statistics in C and report them every few steps: the episodes
        # that ended since the last report are fetched before the env goes.
        pending = stepper.log() if hasattr(stepper, "log") else None
        if pending:
            infos.append(pending)
        env.close()
    returns = follower.returns
    stats = mean_infos([info for info in infos if info])
    if len(returns) < episodes:
        print(f"Stopped after {steps} steps ([eval] max_steps) with {len(returns)} of {episodes} episodes finished")
    if returns:
        print(f"Mean return of agent 0 over {len(returns)} episodes: {np.mean(returns):.4g}")
    if stats:
        print(f"Env episode statistics (all agents, {stats.get('episodes', 0):.0f} episodes): "
              + describe_stats({k: v for k, v in stats.items() if k != "episodes"}, view(config, "base").solve_metric))
    if playback.frames:
        output = settings.output
        if output == "auto":
            output = str(Path(checkpoint["path"]).parent / "eval.gif")
        stored = playback.save(output, settings.fps)
        merged = f" ({len(playback.frames)} steps: a GIF stores repeated frames once, shown for longer)" if stored != len(playback.frames) else ""
        print(f"Saved {stored} frames to {output}{merged}")
    return stats
