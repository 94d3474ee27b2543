"""A policy playing an env (pufferlib.player): the statistics it reports, counting those at zero
instead of listing them, and its playback saved as a GIF or, with a backend, a video."""

import numpy as np
import pytest

from pufferlib import player
from pufferlib.config import ConfigError


def test_summaries_count_the_statistics_at_zero_instead_of_listing_them():
    stats = {"score": 0.0, "collect_wood": 0.3654, "eat_cow": 0.0, "defeat_zombie": 0.0, "episodes": 104.0}
    assert player.describe_stats(stats, "score") == "score 0, collect_wood 0.3654, episodes 104, 2 more at 0"
    assert player.describe_stats({"score": 1.0}, "score") == "score 1"
    assert player.describe_stats({}, "score") == ""


def test_gif_frame_count_reported_is_the_files(tmp_path):
    from PIL import Image

    dark, light = np.zeros((8, 8, 3), np.uint8), np.full((8, 8, 3), 255, np.uint8)
    playback = player.Playback(fps=8)
    for frame in [dark, dark, dark, light, light, dark]:
        playback.show(frame, "")
    stored = playback.save(tmp_path / "eval.gif", fps=8)
    with Image.open(tmp_path / "eval.gif") as image:
        assert stored == image.n_frames == 3  # repeated frames are stored once, shown for longer


def test_a_video_format_without_its_backend_is_a_config_error(tmp_path):
    import importlib.util

    if importlib.util.find_spec("imageio_ffmpeg") or importlib.util.find_spec("av"):
        pytest.skip("an MP4 backend is installed here")
    playback = player.Playback(fps=8)
    playback.show(np.zeros((8, 8, 3), np.uint8), "")
    with pytest.raises(ConfigError, match=r"cartpole\.mp4: .*pip install imageio-ffmpeg") as error:
        playback.save(tmp_path / "cartpole.mp4", fps=8)
    assert "\n" not in str(error.value)
