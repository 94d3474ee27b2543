"""puffer watch: frames fit for a canvas, the checkpoint it picks, its server, and its page in a
real headless Chromium (Debian's chromium and chromium-driver, driven by Selenium)."""

import base64
import json
import re
import shutil
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from conftest import unavailable

import ocean
from pufferlib import cli, watch
from pufferlib.checkpoint import BEST_NAME, CHECKPOINT_NAME, run_dirs
from pufferlib.config import ConfigError, apply_flags, load_config
from pufferlib.dashboard import MetricsLog

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"


def watch_config(env_name, data_dir, *flags):
    return apply_flags(load_config(env_name), ["--train.data-dir", str(data_dir), *flags])


def get(server, path):
    with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=10) as response:
        return response.read()


def get_json(server, path):
    return json.loads(get(server, path))


def wait_for(condition, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"waited {seconds} s for {what}")


def new_run(data_dir, env_name, stamp="20260101-000000"):
    run = Path(data_dir) / f"{env_name}_{stamp}"
    run.mkdir(parents=True)
    return run


# -- frames ----------------------------------------------------------------------------------------


def test_ansi_text_becomes_cells_with_colour_codes():
    assert watch.ansi_cells("\033[1;31mX\033[0m.\n\033[96m==\033[0m |\n") == (["X.", "== |"], ["9 ", "ee  "])
    assert watch.ansi_cells("\033[33mo\033[39mo\033[90m#") == (["oo#"], ["3 8"])


def test_an_ocean_render_keeps_its_text_and_colours():
    env = ocean.make("puffer_breakout", num_envs=1)
    env.reset(seed=3)
    text = env.render()
    lines, colours = watch.ansi_cells(text)
    assert lines == re.sub(r"\x1b\[[0-9;]*m", "", text).rstrip("\n").split("\n")
    assert [len(c) for c in colours] == [len(line) for line in lines]
    brick_rows = [row for row, line in enumerate(lines) if "#" in line]
    # breakout.h colours its brick rows 91, 93, 33, 92, 94: bright red, bright yellow, yellow, ...
    assert [colours[row][lines[row].index("#")] for row in brick_rows] == ["9", "b", "3", "a", "c"]
    [ball_row] = [row for row, line in enumerate(lines) if "o" in line]
    assert colours[ball_row][lines[ball_row].index("o")] == "f"
    assert set(colours[0]) == {" "}  # the header line is plain text
    env.close()


def test_rgb_frames_become_rgba_pixels():
    pixels = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    payload = watch.frame_payload(pixels)
    assert (payload["kind"], payload["height"], payload["width"]) == ("rgb", 2, 3)
    rgba = np.frombuffer(base64.b64decode(payload["rgba"]), np.uint8).reshape(2, 3, 4)
    assert np.array_equal(rgba[..., :3], pixels) and (rgba[..., 3] == 255).all()
    assert watch.frame_payload(None) == {"kind": "none"}
    with pytest.raises(ValueError, match=r"shape \(4, 4\)"):
        watch.frame_payload(np.zeros((4, 4)))


# -- which policy ----------------------------------------------------------------------------------


def test_the_best_then_the_last_checkpoint_of_the_newest_run_else_an_untrained_policy(tmp_path):
    checkpoint, source = watch.choose_checkpoint("puffer_bandit", None, tmp_path)
    assert checkpoint is None and "untrained policy (random weights)" in source
    flags = ["--train.data-dir", str(tmp_path), "--train.dashboard", "plain", "--vec.num-envs", "64"]
    assert cli.main(["train", "bandit", "--train.total-timesteps", "2048", *flags]) == 0
    [run] = run_dirs(tmp_path, "puffer_bandit")

    checkpoint, source = watch.choose_checkpoint("puffer_bandit", None, tmp_path)
    assert checkpoint["path"] == str(run / BEST_NAME) and source == "the newest run's best policy"
    (run / BEST_NAME).unlink()
    checkpoint, source = watch.choose_checkpoint("puffer_bandit", None, tmp_path)
    assert checkpoint["path"] == str(run / CHECKPOINT_NAME) and "last checkpoint" in source
    checkpoint, source = watch.choose_checkpoint("puffer_bandit", str(run), tmp_path)
    assert checkpoint["path"] == str(run / CHECKPOINT_NAME) and source == "the checkpoint given"

    server, player = watch.start("puffer_bandit", watch_config("puffer_bandit", tmp_path), [], port=0)
    try:
        assert get_json(server, "/info")["policy"] == f"{run / CHECKPOINT_NAME}: the newest run's last checkpoint (it has no best.pt)"
        wait_for(lambda: get_json(server, "/frame")["index"] >= 2, 20, "frames of the trained policy")
    finally:
        watch.stop(server, player)

    shutil.copytree(run, tmp_path / "elsewhere")
    with pytest.raises(ConfigError, match="was trained on puffer_bandit, not puffer_squared"):
        watch.start("puffer_squared", watch_config("puffer_squared", tmp_path), [], str(tmp_path / "elsewhere"), port=0)


# -- the server ------------------------------------------------------------------------------------


def test_the_server_serves_the_page_new_frames_and_the_newest_runs_curve(tmp_path):
    config = watch_config("puffer_squared", tmp_path, "--eval.fps", "50")
    server, player = watch.start("puffer_squared", config, [], port=0)
    try:
        assert b'<canvas id="env"' in get(server, "/")
        assert get_json(server, "/info")["env"] == "puffer_squared"
        first = wait_for(lambda: get_json(server, "/frame") if get_json(server, "/frame")["index"] else None, 20, "a frame")
        assert first["kind"] == "cells" and first["error"] is None
        assert any("@" in line for line in first["lines"])  # squared draws its agent as '@'
        wait_for(lambda: get_json(server, "/frame")["step"] > first["step"] + 5, 20, "frames to advance")
        # squared's episodes end within 2 * size = 22 steps
        wait_for(lambda: get_json(server, "/frame")["episodes"] >= 2, 20, "episodes to end")
        assert get_json(server, "/frame")["last_return"] is not None

        assert get_json(server, "/metrics?from=0") == {"run": None, "next": 0, "points": []}
        old, run = new_run(tmp_path, "puffer_squared", "20260101-000000"), new_run(tmp_path, "puffer_squared", "20260102-000000")
        (old / watch.METRICS_NAME).write_text(json.dumps({"step": 1, "env/score": 0.9}) + "\n")
        metrics = MetricsLog(run, config)
        metrics.log({"step": 100, "epoch": 1, "sps": 1.0})  # no episode ended yet: no score
        metrics.log({"step": 200, "epoch": 2, "env/score": 0.25})
        curve = get_json(server, "/metrics?from=0")
        assert curve == {"run": str(run), "next": 2, "points": [[200, 0.25]]}
        with open(run / watch.METRICS_NAME, "a") as log:
            log.write('{"step": 300, "epoch"')  # a line being written is not read yet
        assert get_json(server, "/metrics?from=2")["points"] == []
        with open(run / watch.METRICS_NAME, "a") as log:
            log.write(': 3, "env/score": 0.5}\n')
        assert get_json(server, "/metrics?from=2") == {"run": str(run), "next": 3, "points": [[300, 0.5]]}
        metrics.close()

        for path, code in (("/nothing", 404), ("/metrics?from=x", 400)):
            with pytest.raises(urllib.error.HTTPError) as error:
                get(server, path)
            assert error.value.code == code
    finally:
        watch.stop(server, player)
    assert not player.thread.is_alive()


def test_a_port_in_use_is_a_clear_error_naming_the_port_and_the_fix(tmp_path, capsys):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        code = cli.main(["watch", "puffer_squared", "--port", str(port), "--train.data-dir", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"puffer: error: port {port} on 127.0.0.1 is in use") and f"--port {port + 1}" in err
    assert cli.main(["watch", "puffer_squared", "--port", "70000", "--train.data-dir", str(tmp_path)]) == 2
    assert "puffer: error: --port 70000: a port is a number from 1 to 65535" in capsys.readouterr().err
    assert cli.main(["watch", "puffer_squared", "--eval.fps", "0", "--train.data-dir", str(tmp_path)]) == 2
    assert "puffer: error: --eval.fps 0: the page needs a positive frame rate" in capsys.readouterr().err


# -- the page in a real browser --------------------------------------------------------------------


@pytest.fixture
def browser():
    """Headless Chromium through Debian's chromedriver; skips (fails under CI) saying why it cannot start."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("selenium is not installed (pip install selenium; make setup installs it)")
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_path:
        unavailable("Chromium or its driver is missing (apt-get install chromium chromium-driver; .ci/run installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,800"):
        options.add_argument(argument)
    try:
        driver = webdriver.Chrome(options=options, service=Service(driver_path))
    except Exception as error:  # selenium raises several kinds when the browser cannot start
        unavailable(f"Chromium cannot start here: {type(error).__name__}: {str(error).strip().splitlines()[0]}")
    yield driver
    driver.quit()


def test_the_page_draws_frames_and_the_live_curve_and_says_when_the_server_stops(browser, tmp_path):
    config = watch_config("puffer_breakout", tmp_path, "--eval.fps", "20")
    run = new_run(tmp_path, "puffer_breakout")
    metrics = MetricsLog(run, config)
    metrics.log({"step": 1000, "epoch": 1, "env/score": 0.02})
    server, player = watch.start("puffer_breakout", config, [], port=0)
    stopped = False
    try:
        browser.get(server.url)
        wait_for(lambda: "untrained policy" in browser.find_element("id", "policy").text, 20, "the policy line")
        canvas = browser.find_element("id", "env")
        first = int(wait_for(lambda: int(canvas.get_attribute("data-index") or 0), 20, "a first frame"))
        wait_for(lambda: int(canvas.get_attribute("data-index")) >= first + 10, 20, "frames to advance")
        # Bricks are painted: breakout's red top row shows in the canvas's pixels.
        red = browser.execute_script(
            "const c = document.getElementById('env'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
            "let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] > 200 && d[i + 1] < 120 && d[i + 2] < 120) n++; return n;")
        assert red > 100
        assert "step" in browser.find_element("id", "frame-status").text

        curve = browser.find_element("id", "curve")
        wait_for(lambda: curve.get_attribute("data-points") == "1", 20, "the curve's first point")
        for epoch in range(2, 6):  # the trainer appends a line per epoch
            metrics.log({"step": 1000 * epoch, "epoch": epoch, "env/score": 0.02 * epoch**2})
        wait_for(lambda: curve.get_attribute("data-points") == "5", 20, "the curve to take the new lines")
        assert "latest 0.5000" in browser.find_element("id", "curve-status").text
        ARTIFACTS.mkdir(exist_ok=True)
        for folder in (tmp_path, ARTIFACTS):
            assert browser.save_screenshot(str(folder / "watch_breakout.png"))
        assert (tmp_path / "watch_breakout.png").stat().st_size > 10_000

        watch.stop(server, player)
        stopped = True
        banner = browser.find_element("id", "banner")
        wait_for(banner.is_displayed, 20, "the page to say that the server stopped")
        assert "server stopped" in banner.text and "puffer watch puffer_breakout" in banner.text
        browser.save_screenshot(str(ARTIFACTS / "watch_stopped.png"))
    finally:
        metrics.close()
        if not stopped:
            watch.stop(server, player)
