"""PufferLib 3.0.0 as the peer of scripts/bench_ocean.py --peer pufferlib3: built from its PyPI
sdist into a scratch virtual environment, then stepped there on request.

Usage: python scripts/build_pufferlib3.py [--dir /tmp/pufferlib3] [--sdist pufferlib-3.0.0.tar.gz]
       DIR/venv/bin/python scripts/build_pufferlib3.py --serve   (bench_ocean starts this itself)

Nothing is downloaded but from PyPI (the sdist, checked against its published sha256, and the
packages the build and the envs import). PufferLib's setup.py fetches raylib's web build and box2d
from GitHub unless their folders exist: empty folders stand in for them, since no compared env
draws or uses box2d. Only the bindings of the games Ocean shares are compiled, by PufferLib's own
setup.py and flags, so the build takes a minute and never meets impulse_wars (the env that links
box2d). nvcc is kept off PATH and NO_TRAIN=1 set, which skip its torch extension; torch itself is
still installed because setup.py imports it. Prints the scratch venv's python.

--serve runs in that venv (PufferLib 3.0 pins numpy < 2, so it cannot share Ocean's process): it
reads one JSON request a line, {"game": "pong", "params": {...}, "seconds": 1.0}, steps that game's
envs (built on the first request, then kept, as Ocean's are) and answers {"rate": agent steps/s},
timed by the same `median_step_rate` as Ocean's side.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

VERSION = "3.0.0"
SDIST = f"pufferlib-{VERSION}.tar.gz"
SDIST_SHA256 = "7df3a3e3f5f894d78d2a1f5374097890aec01473183e748abefe4f3faa10eaa9"
INDEX = "https://pypi.org/simple/pufferlib/"
# The Ocean games PufferLib 3.0 also ships (its folder names under pufferlib/ocean).
SHARED_GAMES = ("squared", "pong", "snake", "breakout", "connect4")
# Folders setup.py downloads into when they are missing.
DOWNLOADED_FOLDERS = ("raylib-5.5_webassembly", "box2d-web", "box2d-linux-amd64")
# What setup.py and the compared envs import: its pins where it names them (gym 0.23, numpy < 2).
RUNTIME = ["numpy<2", "gym==0.23", "gymnasium==0.29.1"]
BUILD = ["setuptools", "wheel", "Cython"]
# Each shared game's class in PufferLib 3.0: module under pufferlib.ocean, class name.
GAME_CLASSES = {game: (f"pufferlib.ocean.{game}.{game}", game.capitalize()) for game in SHARED_GAMES}
WARMUP_STEPS = 20


def median_step_rate(step, action_batches, agents, seconds):
    """Agent steps per second of the median ``step(actions)`` call over at least ``seconds``: the
    one timing both sides of a comparison use. Each call is timed alone, so that the calls during
    which other processes held the core (on a shared machine) fall above the median instead of
    into the figure."""
    count = len(action_batches)
    for i in range(WARMUP_STEPS):
        step(action_batches[i % count])
    durations, clock = [], time.perf_counter
    deadline = clock() + seconds
    while True:
        start = clock()
        step(action_batches[len(durations) % count])
        end = clock()
        durations.append(end - start)
        if end >= deadline:
            break
    durations.sort()
    return agents / durations[len(durations) // 2]


def sdist_url():
    """The sdist's address from PyPI's simple index (its JSON form)."""
    request = urllib.request.Request(INDEX, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    for entry in files:
        if entry["filename"] == SDIST:
            return entry["url"]
    raise SystemExit(f"{INDEX} lists no {SDIST}; pass a downloaded copy with --sdist")


def fetch_sdist(folder):
    """Downloads the sdist into folder (atomically) unless a checked copy is there already."""
    target = folder / SDIST
    if target.exists() and sha256(target) == SDIST_SHA256:
        return target
    with tempfile.NamedTemporaryFile(dir=folder, suffix=".part", delete=False) as part:
        with urllib.request.urlopen(sdist_url(), timeout=300) as response:
            shutil.copyfileobj(response, part)
    check_sdist(Path(part.name))
    os.replace(part.name, target)
    return target


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sdist(path):
    found = sha256(path)
    if found != SDIST_SHA256:
        raise SystemExit(f"{path} has sha256 {found}, not PyPI's {SDIST} ({SDIST_SHA256}): "
                         "download it again or pass the right file with --sdist")


def unpack(sdist, folder):
    """A fresh source tree holding only the shared games' bindings, with the download folders
    stood in for."""
    source = folder / f"pufferlib-{VERSION}"
    shutil.rmtree(source, ignore_errors=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(folder, filter="data")
    for binding in (source / "pufferlib" / "ocean").glob("*/binding.c"):
        if binding.parent.name not in SHARED_GAMES:
            binding.unlink()
    for name in DOWNLOADED_FOLDERS:
        (source / name).mkdir(exist_ok=True)
    return source


def path_without_nvcc():
    """PATH minus every folder holding nvcc: setup.py builds a CUDA extension when it finds one."""
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(folder for folder in folders if not (Path(folder) / "nvcc").exists())


def torch_requirement():
    """The torch this interpreter has, so pip takes the same local CPU wheel instead of a CUDA
    build; any torch where this interpreter has none."""
    try:
        import torch
    except ImportError:
        return "torch"
    return f"torch=={torch.__version__}"


def run(command, **kwargs):
    print("+", " ".join(str(part) for part in command), flush=True)
    subprocess.run(command, check=True, **kwargs)


def build(folder, sdist):
    folder.mkdir(parents=True, exist_ok=True)
    sdist = Path(sdist) if sdist else fetch_sdist(folder)
    check_sdist(sdist)
    source = unpack(sdist, folder)
    venv = folder / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        run([sys.executable, "-m", "venv", venv])
    run([python, "-m", "pip", "install", "--quiet", *BUILD, *RUNTIME, torch_requirement()])
    environment = dict(os.environ, NO_TRAIN="1", PATH=path_without_nvcc())
    run([python, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps", "--force-reinstall", "."],
        cwd=source, env=environment)
    imports = "; ".join(f"import pufferlib.ocean.{game}.binding" for game in SHARED_GAMES)
    run([python, "-c", imports], cwd=folder)
    return python


def serve(requests, answers):
    """Answers bench_ocean's requests (see the module's doc) until its input ends."""
    import importlib

    import numpy as np

    envs = {}
    for line in requests:
        request = json.loads(line)
        game = request["game"]
        if game not in envs:
            module, name = GAME_CLASSES[game]
            env = getattr(importlib.import_module(module), name)(**request["params"])
            env.reset(0)
            space = env.single_action_space
            batches = np.random.default_rng(0).integers(0, space.n, (request["batches"], *env.actions.shape))
            envs[game] = env, batches.astype(env.actions.dtype)
        env, batches = envs[game]
        rate = median_step_rate(env.step, batches, env.num_agents, request["seconds"])
        answers.write(json.dumps({"rate": rate}) + "\n")
        answers.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "pufferlib3",
                        help="scratch folder for the sdist, its source tree and the venv")
    parser.add_argument("--sdist", help=f"a downloaded {SDIST} (checked against PyPI's sha256)")
    parser.add_argument("--serve", action="store_true", help="step the built envs on request (inside its venv)")
    args = parser.parse_args()
    if args.serve:
        # Answers go to the real stdout; whatever PufferLib or gym print goes to stderr instead.
        answers, sys.stdout = sys.stdout, sys.stderr
        serve(sys.stdin, answers)
        return
    python = build(args.dir.resolve(), args.sdist)
    print(python)


if __name__ == "__main__":
    main()
