"""Markers and helpers shared by the test files.

``make test-fast`` runs what no marker below names, in a couple of minutes; ``make test`` runs all.
"""

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest

MARKERS = {
    "slow": "learning runs, long simulations, compiles, and runs in fresh processes (scripts, ranks)",
    "docker": "builds and runs real images; needs a docker daemon (.ci/docker.sh)",
    "ray": "starts a real local Ray cluster",
    "reference": "checks against the JAX Craftax reference (requirements-craftax.txt)",
    "gpu": "needs a CUDA GPU; skips without one",
}


def pytest_configure(config):
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")


def pytest_collection_modifyitems(config, items):
    """The JAX reference's tests run last. Importing JAX starts threads, and a process forked
    from a threaded one (the Multiprocessing backend's workers) can deadlock on a lock one of
    those threads held."""
    items.sort(key=lambda item: item.get_closest_marker("reference") is not None)


def unavailable(reason):
    """Skips the test; under CI (CI=true), where .ci/run provisions everything, fails it instead."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: a skip is a failure here; .ci/run provisions this)", pytrace=False)
    pytest.skip(reason)


ROOT = Path(__file__).resolve().parent.parent
# For Python subprocesses of the tests: the checkout and tests/ importable.
SUBPROCESS_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "tests"), os.environ.get("PYTHONPATH")]))}


def compile_device_source(kernel, include_dir, tmp_path, with_nvcc):
    """Compiles ``kernel`` (CUDA source including a game's headers from ``include_dir``) with nvcc,
    or, since nvcc compiles the headers as C++, with the host's g++ (the kernel made a host
    function); skips when the compiler is not installed."""
    if with_nvcc:
        compiler = shutil.which("nvcc")
        source, command = tmp_path / "kernel.cu", ["-x", "cu", "--fmad=false", "-Werror", "all-warnings"]
        text = kernel
    else:
        compiler = shutil.which("g++")
        source, command = tmp_path / "kernel.cpp", ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-D_Static_assert=static_assert"]
        text = kernel.replace("__global__ ", "").replace("blockIdx.x * blockDim.x + threadIdx.x", "0")
    if compiler is None:
        pytest.skip(f"{'nvcc' if with_nvcc else 'g++'} not installed")
    source.write_text(text)
    result = subprocess.run([compiler, *command, f"-I{include_dir}", "-c", str(source), "-o", str(tmp_path / "kernel.o")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def side_runs():
    """Starts Python runs (``code`` and its arguments, as ``python -c``, the checkout and tests/
    importable) that proceed side by side on the cores while the module's tests wait for them:
    for long seeded single-threaded runs, whose results do not depend on what else runs. Each
    prints its result as a line 'RESULT <json>' (see ``result_of``). Those still running when the
    module ends are killed."""
    started = []

    def start(code, *args):
        process = subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=SUBPROCESS_ENV, cwd=ROOT)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.communicate()


def result_of(process):
    """Waits for a run of ``side_runs``; returns the JSON of its 'RESULT ' line."""
    stdout, stderr = process.communicate()
    assert process.returncode == 0, f"the run failed:\n{stderr[-4000:]}"
    line = next((line for line in reversed(stdout.splitlines()) if line.startswith("RESULT ")), None)
    assert line is not None, f"the run printed no RESULT line:\n{stdout[-2000:]}\n{stderr[-2000:]}"
    return json.loads(line[len("RESULT "):])


# Ray's tests run in a network namespace of their own, where loopback is the only network: the
# outer test re-runs its file's Ray tests there. Token authentication with a token made for the
# run (passed by environment, so nothing is written to ~/.ray), and no usage reporting.
IN_RAY_NAMESPACE = os.environ.get("PUFFER_RAY_NETNS") == "1"
RAY_TEST_ENVIRONMENT = {"PUFFER_RAY_NETNS": "1", "RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}


def run_ray_tests_privately(test_file, selection, passed, timeout):
    """Runs ``test_file``'s tests that ``selection`` (pytest arguments) picks in a network
    namespace of their own, and asserts that ``passed`` of them passed."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare to give Ray a loopback-only network namespace")
    command = (f"ip link set lo up && exec {sys.executable} -m pytest {os.path.abspath(test_file)} {selection} "
               "-q -p no:cacheprovider -o addopts=''")
    result = subprocess.run(["unshare", "--net", "--", "sh", "-c", command], capture_output=True, text=True,
                            timeout=timeout, cwd=ROOT,
                            env={**SUBPROCESS_ENV, **RAY_TEST_ENVIRONMENT, "RAY_AUTH_TOKEN": secrets.token_hex(32)})
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert f"{passed} passed" in result.stdout, result.stdout[-3000:]


# The image the tank tests build stage 1 on (.ci/docker.sh makes it), standing in for Docker Hub's.
ROOTFS = os.environ.get("PUFFERTANK_ROOTFS_TAG", "puffertank/bookworm-rootfs")


@pytest.fixture(scope="session")
def docker_sdk():
    try:
        import docker
    except ImportError:
        unavailable("the Docker SDK for Python (pip install docker) is not installed")
    return docker


@pytest.fixture(scope="session")
def docker_client(docker_sdk):
    docker = docker_sdk
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as error:
        unavailable(f"no docker daemon to talk to ({error})")
    try:
        client.images.get(ROOTFS)
    except docker.errors.ImageNotFound:
        unavailable(f"no image {ROOTFS}: .ci/docker.sh makes it with debootstrap")
    return client



def random_actions(space, count, rng):
    """``count`` random actions of ``space`` (Discrete, MultiDiscrete or Box) as one array."""
    if isinstance(space, gymnasium.spaces.Discrete):
        return rng.integers(0, space.n, count).astype(np.int32)
    if isinstance(space, gymnasium.spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, (count, *space.shape)).astype(np.int32)
    return rng.uniform(space.low, space.high, (count, *space.shape)).astype(space.dtype)
