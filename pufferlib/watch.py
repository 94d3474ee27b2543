"""``puffer watch ENV``: a web page on localhost that draws a policy playing the env, beside the
learning curve of the env's newest run, live while ``puffer train`` writes it.

The policy plays on a thread of this process; the page polls ``/frame`` for the newest frame and
``/metrics`` for the run's new ``metrics.jsonl`` lines, with nothing but the standard library's
http.server behind it. A frame is what the env's ``render()`` gives, made fit for a canvas: ANSI
text (every Ocean env) becomes a grid of cells, each a character and an ANSI colour index, which
the page paints with its 16-colour palette; an RGB array becomes base64 pixels.
"""

import base64
import errno
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np

import pufferlib.models
from pufferlib.assemble import make_policy, make_vecenv
from pufferlib.checkpoint import (
    BEST_NAME,
    CHECKPOINT_NAME,
    check_architecture,
    load_weights,
    read_checkpoint,
    resolve_checkpoint,
    run_dirs,
)
from pufferlib.config import ConfigError, apply_flags, view
from pufferlib.player import EpisodeFollower, PolicyPlayer, request_pixels

PAGE = Path(__file__).with_name("watch.html")
METRICS_NAME = "metrics.jsonl"

SGR = re.compile(r"\x1b\[([0-9;]*)m")
DEFAULT_COLOUR = " "  # a cell drawn in the page's default text colour
COLOUR_CODES = "0123456789abcdef"  # ANSI colours 30-37 as 0-7, their bright forms (90-97, or bold) as 8-f


def ansi_cells(text):
    """ANSI text as ``(lines, colours)``: the visible characters of each line, and for each a
    string as long, one ``COLOUR_CODES`` character (or ``DEFAULT_COLOUR``) per cell."""
    lines, colours = [], []
    colour, bright = None, False
    for raw in text.rstrip("\n").split("\n"):
        chars, codes, position = [], [], 0
        for match in (*SGR.finditer(raw), None):
            end = match.start() if match else len(raw)
            visible = raw[position:end]
            chars.append(visible)
            code = DEFAULT_COLOUR if colour is None else COLOUR_CODES[colour + (8 if bright and colour < 8 else 0)]
            codes.append(code * len(visible))
            if match is None:
                break
            position = match.end()
            for parameter in match.group(1).split(";"):
                value = int(parameter) if parameter else 0
                if value == 0:
                    colour, bright = None, False
                elif value == 1:
                    bright = True
                elif value == 22:
                    bright = False
                elif 30 <= value <= 37:
                    colour = value - 30
                elif 90 <= value <= 97:
                    colour = value - 90 + 8
                elif value == 39:
                    colour = None
        lines.append("".join(chars))
        colours.append("".join(codes))
    return lines, colours


def frame_payload(rendered):
    """What ``render()`` gave, as the JSON the page draws: cells (from ANSI text), rgb, or none."""
    if rendered is None:
        return {"kind": "none"}
    if isinstance(rendered, str):
        lines, colours = ansi_cells(rendered)
        return {"kind": "cells", "lines": lines, "colours": colours}
    pixels = np.asarray(rendered)
    if pixels.ndim != 3 or pixels.shape[2] not in (3, 4):
        raise ValueError(f"render() gave an array of shape {pixels.shape}; the page draws text or (height, width, 3) RGB")
    pixels = pixels[:, :, :3].astype(np.uint8)
    rgba = np.concatenate([pixels, np.full(pixels.shape[:2] + (1,), 255, np.uint8)], axis=2)
    return {"kind": "rgb", "height": pixels.shape[0], "width": pixels.shape[1],
            "rgba": base64.b64encode(np.ascontiguousarray(rgba).tobytes()).decode()}


def choose_checkpoint(env_name, load_model_path, data_dir):
    """The checkpoint to play and the words that say which: the one given, else the newest run's
    best policy (its last when none scored), else None for an untrained policy."""
    if load_model_path:
        return read_checkpoint(resolve_checkpoint(load_model_path, data_dir, env_name)), "the checkpoint given"
    runs = run_dirs(data_dir, env_name)
    if not runs:
        return None, f"no run of {env_name} under {data_dir}/ has a checkpoint: an untrained policy (random weights)"
    best = runs[-1] / BEST_NAME
    if best.is_file():
        return read_checkpoint(best), "the newest run's best policy"
    return read_checkpoint(runs[-1] / CHECKPOINT_NAME), "the newest run's last checkpoint (it has no best.pt)"


def newest_run(data_dir, env_name):
    """The run of ``env_name`` whose metrics.jsonl was written last (a run training now), or None."""
    pattern = re.compile(re.escape(env_name) + r"_\d{8}-\d{6}(_\d+)?$")
    logs = [p / METRICS_NAME for p in Path(data_dir).glob(f"{env_name}_*") if pattern.match(p.name)]
    logs = [log for log in logs if log.is_file()]
    return max(logs, key=lambda log: log.stat().st_mtime).parent if logs else None


def read_curve(data_dir, env_name, metric, start):
    """The newest run's ``metric`` against steps, from its line ``start`` on; only whole lines
    count (the trainer may be writing the next one)."""
    run = newest_run(data_dir, env_name)
    if run is None:
        return {"run": None, "next": 0, "points": []}
    text = (run / METRICS_NAME).read_text()
    lines = text.splitlines()
    if not text.endswith("\n"):
        lines = lines[:-1]
    points = []
    for line in lines[start:]:
        row = json.loads(line) if line.strip() else {}
        value = row.get(metric)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            points.append([row["step"], value])
    return {"run": str(run), "next": len(lines), "points": points}


class Player:
    """Plays a policy in env 0 of ``env`` on a thread at ``fps`` frames per second, forever (its
    envs start new episodes themselves), keeping the newest frame for the page."""

    def __init__(self, env, policy, seed, fps):
        self.env, self.policy, self.seed, self.delay = env, policy, seed, 1.0 / fps
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.frame = {"index": 0, "step": 0, "episodes": 0, "last_return": None, "error": None, **frame_payload(None)}
        self.thread = threading.Thread(target=self.run, name="puffer-watch-player", daemon=True)

    def start(self):
        self.thread.start()

    def latest(self):
        with self.lock:
            return dict(self.frame)

    def run(self):
        try:
            self.play()
        except Exception as error:  # the page and the terminal say why the picture stopped; the server stays up
            message = f"{type(error).__name__}: {error}"
            print(f"puffer watch: the policy stopped playing: {message}", file=sys.stderr, flush=True)
            with self.lock:
                self.frame = {**self.frame, "error": message}

    def play(self):
        player, follower = PolicyPlayer(self.policy, self.env.num_agents, self.seed), EpisodeFollower()
        step = 0
        for _, rewards, terminals, truncations, _, _, _ in player.play(self.env, self.seed):
            started = time.monotonic()
            follower.update(rewards, terminals, truncations)
            last_return = follower.returns[-1] if follower.returns else None
            payload = frame_payload(self.env.render())
            with self.lock:
                self.frame = {"index": self.frame["index"] + 1, "step": step, "episodes": len(follower.returns),
                              "last_return": last_return, "error": None, **payload}
            step += 1
            if self.stopping.wait(max(0.0, self.delay - (time.monotonic() - started))):
                return

    def stop(self):
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)


class WatchServer(ThreadingHTTPServer):
    """Serves the page, the newest frame and the curve. ``port`` 0 takes any free port."""

    daemon_threads = True

    def __init__(self, host, port, player, info, data_dir, env_name, metric):
        self.player, self.info, self.data_dir, self.env_name, self.metric = player, info, data_dir, env_name, metric
        if not 0 <= port <= 65535:
            raise ConfigError(f"--port {port}: a port is a number from 1 to 65535 (0: any free port)")
        try:
            super().__init__((host, port), WatchHandler)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise ConfigError(
                    f"port {port} on {host} is in use (another puffer watch?): stop what holds it, or pick another "
                    f"port with --port {port + 1} (--port 0 takes any free one)"
                ) from None
            raise ConfigError(f"cannot serve on {host}:{port}: {error.strerror or error}; pick another with --port") from None

    @property
    def url(self):
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"


class WatchHandler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urlparse(self.path)
        server = self.server
        if url.path == "/":
            self.reply(PAGE.read_bytes(), "text/html; charset=utf-8")
        elif url.path == "/info":
            self.reply_json(server.info)
        elif url.path == "/frame":
            self.reply_json(server.player.latest())
        elif url.path == "/metrics":
            start = parse_qs(url.query).get("from", ["0"])[0]
            if not start.isdigit():
                self.send_error(400, "from must be a line number")
                return
            self.reply_json(read_curve(server.data_dir, server.env_name, server.metric, int(start)))
        else:
            self.send_error(404, "puffer watch serves /, /info, /frame and /metrics")

    def reply_json(self, payload):
        self.reply(json.dumps(payload).encode(), "application/json")

    def reply(self, body, content_type):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        """Quiet: a request line a second would bury the terminal's messages."""


def start(env_name, config, flags, load_model_path=None, host="127.0.0.1", port=8000, metric="env/score"):
    """Builds the env and policy, starts playing and serving; returns (server, player) running.
    ``config`` is the env's, with ``flags`` applied; a checkpoint's own config takes its place
    (with the same flags), as in ``puffer eval``."""
    data_dir = config["train"]["data_dir"]
    checkpoint, source = choose_checkpoint(env_name, load_model_path, data_dir)
    if checkpoint:
        if checkpoint["env_name"] != env_name:
            raise ConfigError(f"{checkpoint['path']} was trained on {checkpoint['env_name']}, not {env_name}")
        config = apply_flags(checkpoint["config"], flags)
    settings = view(config, "eval")
    fps = settings.fps
    if not fps > 0:
        raise ConfigError(f"--eval.fps {fps}: the page needs a positive frame rate (8 by default)")
    # One env on the CPU: the watched policy must not compete with a run training on the GPU.
    config["vec"]["device"] = "cpu"
    request_pixels(env_name, config)
    env = make_vecenv(env_name, config, num_envs=settings.num_envs)
    try:
        policy = make_policy(env, config)
        if checkpoint:
            check_architecture(checkpoint, policy, env)
            load_weights(policy, checkpoint)
        policy.eval()
        player = Player(env, policy, view(config, "base").seed, fps)
        info = {"env": env_name, "policy": f"{checkpoint['path']}: {source}" if checkpoint else source,
                "model": pufferlib.models.describe(policy), "metric": metric, "data_dir": str(data_dir), "fps": fps}
        server = WatchServer(host, port, player, info, data_dir, env_name, metric)
    except BaseException:
        env.close()
        raise
    player.start()
    threading.Thread(target=server.serve_forever, name="puffer-watch-server", daemon=True).start()
    return server, player


def stop(server, player):
    server.shutdown()
    server.server_close()
    player.stop()
    player.env.close()


def watch(env_name, config, flags, load_model_path=None, host="127.0.0.1", port=8000, metric="env/score"):
    """``puffer watch``: serves until Ctrl-C."""
    server, player = start(env_name, config, flags, load_model_path, host, port, metric)
    print(f"Watching {env_name}: {server.info['policy']}\nLearning curve: {metric} of the newest run under "
          f"{server.data_dir}/\nOpen {server.url} (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("\nStopped.")
    finally:
        stop(server, player)
