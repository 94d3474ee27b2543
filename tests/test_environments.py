"""Third-party env families, stepped for real through vector.make."""

import warnings

import gymnasium
import numpy as np
import pytest
import torch
from conftest import random_actions
from gymnasium.utils.env_checker import check_env

import pufferlib
from pufferlib import vector
from pufferlib.environments import atari, classic_control, nethack, pettingzoo
from pufferlib.pytorch import nativize_dtype, nativize_tensor


@pytest.mark.timeout(120)
def test_nethack_steps_through_multiprocessing():
    envs = vector.make(nethack.env_creator("score"), backend="multiprocessing", num_envs=2, num_workers=2)
    observations, _ = envs.reset(seed=1)
    assert observations.dtype == np.uint8 and observations.shape == (2, envs.single_observation_space.shape[0])
    rng = np.random.default_rng(0)
    for _ in range(20):
        observations, rewards, terminals, truncations, infos = envs.step(random_actions(envs.single_action_space, envs.agents_per_batch, rng))
    native = nativize_tensor(torch.from_numpy(observations), nativize_dtype(envs.emulated))
    assert native["glyphs"].dtype == torch.int16 and native["glyphs"].shape == (2, 21, 79)
    assert native["blstats"].dtype == torch.int64 and native["blstats"].shape == (2, 27)
    # The status lines of the terminal show the hero's stats ("Dlvl:" on the bottom line).
    bottom = bytes(native["tty_chars"][0, -1].numpy()).decode("ascii")
    assert "Dlvl:" in bottom
    assert "screen_descriptions" not in native
    envs.close()


@pytest.mark.timeout(120)
def test_pistonball_steps_through_multiprocessing():
    envs = vector.make(pettingzoo.env_creator("pistonball"), backend="multiprocessing", num_envs=2, num_workers=2)
    assert envs.agents_per_env == 20 and envs.num_agents == 40
    observations, _ = envs.reset(seed=0)
    assert observations.shape == (40, 457, 120, 3)
    rng = np.random.default_rng(0)
    for _ in range(5):
        observations, rewards, terminals, truncations, infos = envs.step(random_actions(envs.single_action_space, envs.agents_per_batch, rng))
    assert envs.masks.all() and not terminals.any()
    assert observations.any(axis=(1, 2, 3)).all()  # every piston sees a rendered frame
    envs.close()


@pytest.mark.timeout(120)
def test_classic_games_pad_and_restore_action_masks():
    envs = vector.make(pettingzoo.env_creator("tictactoe"), backend="serial", num_envs=2)
    observations, _ = envs.reset(seed=0)
    assert envs.agents_per_env == 2
    native = nativize_tensor(torch.from_numpy(observations), nativize_dtype(envs.emulated))
    # player_1 moves first: only its mask has legal moves.
    assert native["action_mask"].shape == (4, 9)
    assert native["action_mask"][0].all() and not native["action_mask"][1].any()
    envs.close()


@pytest.mark.timeout(120)
def test_atari_and_classic_control_step_and_report_episodes():
    envs = vector.make(atari.env_creator("breakout"), backend="multiprocessing", num_envs=2, num_workers=2)
    observations, _ = envs.reset(seed=0)
    assert observations.shape == (2, 4, 84, 84) and observations.dtype == np.uint8
    envs.step(np.ones(2, dtype=np.int64))  # FIRE launches the ball
    envs.close()

    envs = vector.make(classic_control.env_creator("CartPole-v1"), backend="serial", num_envs=4)
    envs.reset(seed=0)
    infos = []
    for _ in range(100):
        infos += envs.step(np.zeros(4, dtype=np.int64))[4]
    # Always pushing left ends every episode quickly; each end reports its return and length.
    assert infos and all(info["episode_return"] == info["episode_length"] for info in infos)
    envs.close()


def test_unknown_names_suggest_the_right_one():
    with pytest.raises(ValueError, match="Did you mean CartPole-v1"):
        classic_control.env_creator("CartPole-v0")
    with pytest.raises(ValueError, match="Did you mean pistonball"):
        pettingzoo.env_creator("pistonbal")
    with pytest.raises(ValueError, match="Did you mean breakout"):
        atari.env_creator("breakoutt")
    with pytest.raises(ValueError, match="Did you mean score"):
        nethack.env_creator("scor")


@pytest.mark.timeout(120)
def test_family_envs_pass_check_env_and_their_spec_recreates_them():
    for env in (classic_control.make("CartPole-v1"), atari.make("pong")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # check_env warns that a wrapper is not the unwrapped env
            check_env(env, skip_render_check=True)
        again = gymnasium.make(env.spec)
        assert type(again.unwrapped) is type(env.unwrapped) and again.observation_space == env.observation_space
        again.close()
        env.close()


def nethack_frames(seed, steps):
    """Every observation of a random-action run of one env, episodes reset as the backends do."""
    env = nethack.make("score", max_episode_steps=40)
    env.batch_reset(seed)
    rng = np.random.default_rng(0)
    frames = [env.observations.copy()]
    for _ in range(steps):
        env.actions[0] = rng.integers(env.single_action_space.n)
        env.batch_step()
        frames.append(env.observations.copy())
    env.close()
    return np.concatenate(frames)


@pytest.mark.timeout(120)
def test_nethack_is_deterministic_through_nle_seeding():
    first = nethack_frames(seed=3, steps=100)  # two autoresets (40-step episodes): unseeded resets too
    assert np.array_equal(first, nethack_frames(seed=3, steps=100))
    assert not np.array_equal(first, nethack_frames(seed=4, steps=100))


FAMILY_CONFIGS = {
    # env name: flags that keep the run to two epochs
    "NetHackScore-v0": ["--train.total-timesteps", "2048"],
    "Breakout-v5": ["--train.total-timesteps", "2048"],
    "Pong-v5": ["--train.total-timesteps", "2048"],
    "tictactoe": ["--train.total-timesteps", "8192"],
}


def test_every_family_the_readme_names_has_a_config():
    from pufferlib.config import env_config_files, load_config

    files = env_config_files()
    assert set(FAMILY_CONFIGS) <= set(files)
    for env_name in FAMILY_CONFIGS:
        assert load_config(env_name)["base"]["package"].startswith("pufferlib.environments.")


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("env_name", FAMILY_CONFIGS)
def test_family_config_trains_and_logs(env_name, tmp_path, capsys):
    import json

    from pufferlib import cli
    from pufferlib.checkpoint import run_dirs

    flags = ["--train.data-dir", str(tmp_path), "--train.dashboard", "plain", "--base.score-max-steps", "200"]
    assert cli.main(["train", env_name, *FAMILY_CONFIGS[env_name], *flags]) == 0
    assert "Finished" in capsys.readouterr().out
    [run] = run_dirs(tmp_path, env_name)
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and lines[-1]["step"] >= 2048
    assert all(np.isfinite(lines[-1][f"losses/{name}"]) for name in ("policy_loss", "value_loss", "entropy"))
    assert (run / "checkpoint.pt").stat().st_size > 0


def test_nethack_policy_sees_the_window_around_the_hero():
    from pufferlib.environments.nethack_policy import MAX_GLYPH, NetHackPolicy

    envs = vector.make(nethack.env_creator("score", observation_keys=("glyphs", "blstats")), backend="serial", num_envs=2)
    policy = NetHackPolicy(envs, crop=5)
    observations, _ = envs.reset(seed=3)
    native = nativize_tensor(torch.from_numpy(observations), policy.native_dtype)
    window = policy.around_hero(native["glyphs"], native["blstats"])
    x, y = (int(v) for v in native["blstats"][0, :2])
    assert window.shape == (2, 5, 5)
    assert window[0, 2, 2] == native["glyphs"][0, y, x]  # the hero is at the centre
    corner = native["glyphs"].clone()
    corner[:, :, :] = 7
    blstats = native["blstats"].clone()
    blstats[:, 0], blstats[:, 1] = 0, 0  # the top-left cell: half the window is off the map
    window = policy.around_hero(corner, blstats)
    assert (window[:, :2, :] == MAX_GLYPH).all() and (window[:, 2:, 2:] == 7).all()
    logits, values, _ = policy.forward_eval(torch.from_numpy(observations))
    assert logits.shape == (2, 23) and values.shape == (2,)
    envs.close()
    with pytest.raises(pufferlib.APIUsageError, match="glyphs and blstats"):
        NetHackPolicy(vector.make(nethack.env_creator("score", observation_keys=("chars",)), backend="serial", num_envs=1))
