"""The tank, for real: hadolint and shellcheck on every Dockerfile and shell script, the three images
built with a debootstrapped Debian bookworm standing in for the CUDA base (Docker Hub is out of
reach), the stage-3 image run (training, NetHack, the user, the GPU warning), a source-only change
rebuilding only stage 3's last layers, and setup/setup.sh run inside a bookworm container.

Needs what .ci/docker.sh provisions: a docker daemon, the image puffertank/bookworm-rootfs (or
$PUFFERTANK_ROOTFS_TAG), the CPU torch wheel in docker/base/wheels/, hadolint and shellcheck. Without
them the tests skip, saying why; with CI=true a skip is a failure.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import unavailable

REPO = Path(__file__).resolve().parent.parent
ROOTFS = os.environ.get("PUFFERTANK_ROOTFS_TAG", "puffertank/bookworm-rootfs")
# Not the default prefix: a developer's real CUDA images keep their tags when the tests run.
PREFIX = "puffertank-ci"
SOURCE_COPY = "COPY --chown=puffer:puffer . ."


def tool(name):
    path = shutil.which(name)
    if path is None:
        unavailable(f"{name} is not installed")
    return path


def tank(*args, timeout=600):
    """`python -m pufferlib.tank ARGS` with the test prefix; stdout and stderr together."""
    return subprocess.run(
        [sys.executable, "-m", "pufferlib.tank", "--prefix", PREFIX, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def in_tank(*command, timeout=300):
    """Runs COMMAND in the stage-3 image the way users do, without the network or a mount."""
    result = tank("run", "--no-mount", "--network", "none", "--gpus", "none", "--", *command, timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def build_steps(log):
    """{stage: [(instruction, cached)]} from `puffer tank build` output (the classic builder's log).

    FROM lines and arguments before the first FROM make no layer and are left out."""
    stages = {}
    for chunk in re.split(r"^==> building ", log, flags=re.M)[1:]:
        stage = chunk.split(":", 1)[0].rsplit("/", 1)[1]
        steps, seen_from = [], False
        for block in re.split(r"^Step \d+/\d+ : ", chunk, flags=re.M)[1:]:
            instruction = block.splitlines()[0].strip()
            if instruction.startswith("FROM "):
                seen_from = True
            elif seen_from:
                steps.append((instruction, "---> Using cache" in block))
        stages[stage] = steps
    return stages


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


@pytest.fixture(scope="session")
def checkout(docker_client, tmp_path_factory):
    """A copy of the working tree to build from, so that the source-change test edits the copy."""
    if not list((REPO / "docker" / "base" / "wheels").glob("torch-*.whl")):
        unavailable("no torch wheel in docker/base/wheels (PyPI's torch is a multi-GB CUDA build): run .ci/docker.sh")
    copy = tmp_path_factory.mktemp("tank") / "repo"
    shutil.copytree(
        REPO,
        copy,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            "__pycache__",
            "build",
            "*.egg-info",
            "*.so",
            "experiments",
            ".pytest_cache",
            ".ruff_cache",
            ".hypothesis",
        ),
    )
    return copy


@pytest.fixture(scope="session")
def built(checkout):
    """All three stages built; the cold build takes minutes, a warm one seconds."""
    start = time.monotonic()
    result = tank("--repo", str(checkout), "build", "--base-image", ROOTFS, timeout=2400)
    print(f"tank build: {time.monotonic() - start:.0f} s")
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr
    return result.stdout


def test_hadolint_passes_on_every_dockerfile():
    dockerfiles = sorted(REPO.glob("docker/*/Dockerfile"))
    assert [path.parent.name for path in dockerfiles] == ["base", "envs", "puffer"]
    result = subprocess.run([tool("hadolint"), *map(str, dockerfiles)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def shell_scripts():
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    scripts = []
    for name in files:
        path = REPO / name
        if not path.is_file():
            continue
        with open(path, "rb") as file:
            head = file.read(128)
        if (
            name.endswith(".sh")
            or re.match(rb"#!\s*/(usr/)?bin/(env\s+)?(ba)?sh\b", head)
            or b"shellcheck shell=" in head
        ):
            scripts.append(name)
    return scripts


def test_shellcheck_passes_on_every_shell_script():
    scripts = shell_scripts()
    assert {"setup/setup.sh", "scripts/entrypoint.sh", "scripts/login_hook.sh", ".ci/docker.sh"} <= set(scripts)
    result = subprocess.run([tool("shellcheck"), *scripts], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.docker
def test_missing_daemon_is_a_clear_error(docker_sdk):
    env = dict(os.environ, DOCKER_HOST="unix:///nonexistent/docker.sock")
    result = subprocess.run(
        [sys.executable, "-m", "pufferlib.tank", "status"], capture_output=True, text=True, env=env, cwd=REPO
    )
    assert result.returncode == 1
    assert "cannot reach the Docker daemon" in result.stderr and "apt-get install docker.io" in result.stderr
    assert "Traceback" not in result.stderr


def test_devcontainer_builds_stage_3_as_puffer():
    config = json.loads((REPO / ".devcontainer" / "devcontainer.json").read_text())
    assert (REPO / ".devcontainer" / config["build"]["dockerfile"]).resolve() == REPO / "docker/puffer/Dockerfile"
    assert config["remoteUser"] == "puffer"
    assert config["hostRequirements"]["gpu"] == "optional"
    assert "build_ext --inplace" in config["postCreateCommand"]


@pytest.mark.docker
def test_three_stages_build_and_are_tagged(built, docker_client):
    import pufferlib

    assert set(build_steps(built)) == {"base", "envs", "puffer"}
    for stage in ("base", "envs", "puffer"):
        latest = docker_client.images.get(f"{PREFIX}/{stage}:latest")
        assert f"{PREFIX}/{stage}:{pufferlib.__version__}" in latest.tags


@pytest.mark.docker
def test_source_only_change_rebuilds_only_the_last_layers(built, checkout, docker_client):
    envs_before = docker_client.images.get(f"{PREFIX}/envs:latest").id
    # Unique each run: a daemon that keeps its build cache between runs must still see a new file.
    with open(checkout / "ocean" / "squared" / "squared.h", "a") as header:
        header.write(f"\n/* a source-only change {uuid.uuid4().hex} */\n")
    start = time.monotonic()
    result = tank("--repo", str(checkout), "build", "--base-image", ROOTFS, timeout=1200)
    seconds = time.monotonic() - start
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr
    print(f"rebuild after a source-only change: {seconds:.0f} s")
    stages = build_steps(result.stdout)
    for stage in ("base", "envs"):
        assert all(cached for _, cached in stages[stage]), stages[stage]
    assert docker_client.images.get(f"{PREFIX}/envs:latest").id == envs_before
    puffer = stages["puffer"]
    first_rebuilt = next(i for i, (_, cached) in enumerate(puffer) if not cached)
    assert puffer[first_rebuilt][0] == SOURCE_COPY, puffer
    assert all(cached for _, cached in puffer[:first_rebuilt])
    stage_3_log = result.stdout.split("==> building " + PREFIX + "/puffer", 1)[1]
    assert "Downloading" not in stage_3_log, "a source-only change re-downloaded dependencies"


@pytest.mark.docker
def test_trains_puffer_squared(built):
    output = in_tank("puffer", "train", "puffer_squared", "--train.total-timesteps", "20000")
    assert "PufferTank | Python" in output  # the entrypoint's banner
    assert "Finished" in output, output[-3000:]


@pytest.mark.docker
def test_steps_nethack(built):
    output = in_tank(
        "python",
        "-c",
        "import gymnasium, nle\n"
        "env = gymnasium.make('NetHackScore-v0')\n"
        "env.reset(seed=0)\n"
        "obs, reward, terminated, truncated, info = env.step(0)\n"
        "print('nethack', obs['glyphs'].shape, reward)\n",
    )
    assert "nethack (21, 79)" in output


@pytest.mark.docker
def test_runs_as_non_root_and_warns_without_gpu(built):
    output = in_tank("bash", "-c", "echo user=$(whoami) uid=$(id -u) && sudo -n true && echo sudo=ok")
    assert "user=puffer" in output and "uid=0" not in output
    assert "sudo=ok" in output
    assert "WARNING: no NVIDIA GPU visible" in output


def setup_in_bookworm(docker_client, script, os_release=None):
    """Runs SCRIPT (bash) in a fresh bookworm container with the repository at /repo, read-only."""
    volumes = {str(REPO): {"bind": "/repo", "mode": "ro"}}
    if os_release is not None:
        volumes[str(os_release)] = {"bind": "/etc/os-release", "mode": "ro"}
    container = docker_client.containers.run(
        ROOTFS,
        ["bash", "-c", script],
        volumes=volumes,
        network_mode="host",
        detach=True,
    )
    try:
        status = container.wait(timeout=900)["StatusCode"]
        return status, container.logs().decode()
    finally:
        container.remove(force=True)


@pytest.mark.docker
def test_setup_dry_run_lists_every_step_and_changes_nothing(docker_client):
    status, output = setup_in_bookworm(
        docker_client,
        "cp -a /etc /tmp/etc-before && /repo/setup/setup.sh --dry-run --gpu --docker=docker-ce --login-hook"
        " && diff -r --no-dereference /tmp/etc-before /etc && echo ETC-UNCHANGED",
    )
    assert status == 0, output
    for title in (
        "Base packages",
        "SSH server",
        "non-free",
        "NVIDIA driver",
        "Docker (docker-ce)",
        "NVIDIA container toolkit",
        "Tailscale",
        "User puffer in the docker group",
        "SSH key",
        "Login hook",
    ):
        assert title in output, title
    for command in (
        "apt-get install",
        "nvidia-driver",
        "download.docker.com",
        "nvidia-container-toolkit",
        "pkgs.tailscale.com",
        "useradd",
        "usermod -aG docker puffer",
        ".bash_profile",
    ):
        assert command in output, command
    assert "[10/10]" in output and "would run" in output
    assert "steps would change this system" in output
    assert "ETC-UNCHANGED" in output


@pytest.mark.docker
def test_setup_runs_then_changes_nothing_the_second_time(docker_client):
    # The GPU, Tailscale and Docker-CE steps need hosts other than Debian's mirror, which these
    # machines cannot reach: the dry-run test covers them. Everything else runs for real here.
    flags = "--no-gpu --no-tailscale --login-hook --ssh-key=/tmp/key.pub"
    status, output = setup_in_bookworm(
        docker_client,
        "set -e; echo 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPuffer test@ci' > /tmp/key.pub\n"
        f"/repo/setup/setup.sh {flags} > /tmp/first.log 2>&1 || {{ cat /tmp/first.log; exit 1; }}\n"
        "grep -E '^\\[|^  \\+|steps changed' /tmp/first.log\n"
        "echo '=== second run'\n"
        f"/repo/setup/setup.sh {flags}\n"
        "echo '=== state'\n"
        "id puffer; dpkg-query -W docker.io openssh-server build-essential\n"
        "echo '=== login'\n"
        'su - puffer -c \'SSH_CONNECTION="10.0.0.1 1 10.0.0.2 22" script -qec "bash --login -i -c true" /dev/null\'\n'
        "su - puffer -c 'touch ~/.puffertank-host; SSH_CONNECTION=x script -qec \"bash --login -i -c true\" /dev/null'\n",
    )
    assert status == 0, output
    first, rest = output.split("=== second run", 1)
    second, rest = rest.split("=== state", 1)
    state, login = rest.split("=== login", 1)
    assert "+ useradd" in first and "+ usermod -aG docker puffer" in first
    assert "setup.sh: 0 steps changed this system" in second, second
    assert "  + " not in second
    assert "docker" in state.split("groups=", 1)[1]
    # docker is installed but its daemon is not running in this container: the hook declines.
    assert "no image puffertank/puffer:latest" in login and "staying on the host" in login
    assert "~/.puffertank-host exists" in login


@pytest.mark.parametrize(
    "os_release",
    [
        'PRETTY_NAME="Ubuntu 24.04 LTS"\nID=ubuntu\nVERSION_ID="24.04"\n',
        'PRETTY_NAME="Debian GNU/Linux 11 (bullseye)"\nID=debian\nVERSION_ID="11"\n',
    ],
    ids=["ubuntu-24.04", "debian-11"],
)
@pytest.mark.docker
def test_setup_refuses_other_systems(docker_client, tmp_path, os_release):
    fake = tmp_path / "os-release"
    fake.write_text(os_release)
    status, output = setup_in_bookworm(docker_client, "/repo/setup/setup.sh --dry-run", os_release=fake)
    assert status == 1
    assert "refusing to run: this script sets up Debian 12 (bookworm) only" in output
    assert "[1/" not in output
