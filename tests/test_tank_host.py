"""The tank's host side, for real: setup/setup.sh run in Debian bookworm containers, the login hook
against real containers, and the host tools' own venv (docker-py and nothing else).

Needs what .ci/docker.sh provisions (a docker daemon and the image puffertank/bookworm-rootfs);
without it the tests skip, saying why; with CI=true a skip is a failure.
"""

import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from conftest import ROOTFS, unavailable

REPO = Path(__file__).resolve().parent.parent


def setup_in_bookworm(docker_client, script, os_release=None, unreachable=(), environment=None):
    """Runs SCRIPT (bash) in a fresh bookworm container with the repository at /repo, read-only;
    the hosts named in UNREACHABLE resolve to 127.0.0.2 (see stalled_https)."""
    volumes = {str(REPO): {"bind": "/repo", "mode": "ro"}}
    if os_release is not None:
        volumes[str(os_release)] = {"bind": "/etc/os-release", "mode": "ro"}
    container = docker_client.containers.run(
        ROOTFS,
        ["bash", "-c", script],
        volumes=volumes,
        network_mode="host",
        extra_hosts={host: "127.0.0.2" for host in unreachable},
        environment=environment,
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
    assert_lists_every_step(output)
    assert "steps would change this system" in output
    assert "ETC-UNCHANGED" in output


def assert_lists_every_step(output):
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


@pytest.mark.docker
def test_setup_dry_run_lists_every_step_despite_a_conflict(docker_client):
    # dpkg's own database says docker.io is installed, as on a box that has Debian's docker.
    status, output = setup_in_bookworm(
        docker_client,
        "printf 'Package: docker.io\\nStatus: install ok installed\\nVersion: 20.10.24\\nArchitecture: amd64\\n"
        "Maintainer: ci\\nDescription: ci\\n\\n' >> /var/lib/dpkg/status"
        " && /repo/setup/setup.sh --dry-run --gpu --docker=docker-ce --login-hook",
    )
    assert status == 1, output
    assert_lists_every_step(output)
    assert "FAILED: Debian's docker.io is installed, and it conflicts with docker-ce" in output
    assert "fix: apt-get remove docker.io" in output
    assert "setup.sh: 1 of 10 steps could not finish" in output


@pytest.fixture
def stalled_https():
    """127.0.0.2:443 accepts connections and never answers, as a host behind a network that drops
    packets does: a download from it stalls until its time limit."""
    import socket

    listener = socket.socket()
    try:
        listener.bind(("127.0.0.2", 443))
    except OSError as error:
        listener.close()
        unavailable(f"cannot listen on 127.0.0.2:443 to stand in for a stalled host ({error}); run as root")
    listener.listen(8)
    yield
    listener.close()


def setup_options():
    """The options `setup.sh --help` lists."""
    result = subprocess.run([str(REPO / "setup" / "setup.sh"), "--help"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return re.findall(r"^  (?:-[a-z], )?(--[a-z-]+(?:=[A-Z]+)?)\s", result.stdout, flags=re.M)


def test_setup_help_lists_every_option_that_parsing_accepts():
    options = setup_options()
    assert {
        "--dry-run",
        "--gpu",
        "--no-gpu",
        "--docker=KIND",
        "--no-tailscale",
        "--user=NAME",
        "--ssh-key=FILE",
        "--login-hook",
        "--help",
    } == set(options)
    for option in set(options) - {"--help"}:
        # An accepted option lets parsing go on to the next argument, which is refused.
        given = re.sub(r"=[A-Z]+$", "=value", option)
        result = subprocess.run(
            [str(REPO / "setup" / "setup.sh"), given, "--not-an-option"], capture_output=True, text=True
        )
        assert result.returncode == 2, (option, result.stderr)
        assert result.stderr.startswith("setup.sh: unknown option '--not-an-option'"), (option, result.stderr)
    readme_section = (REPO / "README.md").read_text().split("## Tank", 1)[1].split("\n## ", 1)[0]
    used = set(re.findall(r"setup/setup\.sh[^\n]*", readme_section))
    for line in used:
        for flag in re.findall(r"(--[a-z-]+)", line):
            assert any(option.split("=")[0] == flag for option in options), (flag, line)
    value_options = [option for option in options if "=" in option]
    for option in value_options:
        bare = option.split("=")[0]
        result = subprocess.run([str(REPO / "setup" / "setup.sh"), bare], capture_output=True, text=True)
        assert result.returncode == 2 and result.stderr == f"setup.sh: {bare} needs a value: {option}\n"


@pytest.mark.docker
def test_setup_runs_past_a_stalled_download_then_changes_nothing(docker_client, stalled_https):
    # The GPU and Docker-CE steps need hosts other than Debian's mirror, which these machines cannot
    # reach: the dry-run tests cover them. Everything else runs for real here, Tailscale's host
    # stalling: its download gives up at the time limit, the steps after it still run, and the script
    # says what failed and how to fix it, counting only the steps that changed something.
    flags = "--no-gpu --login-hook --ssh-key=/tmp/key.pub"
    status, output = setup_in_bookworm(
        docker_client,
        "echo 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPuffer test@ci' > /tmp/key.pub\n"
        f'/repo/setup/setup.sh {flags} > /tmp/first.log 2>&1; echo "first exit $?"\n'
        "grep -E '^\\[|^  \\+|FAILED|fix:|steps changed|could not finish|Tailscale' /tmp/first.log\n"
        "echo '=== second run'\n"
        f"/repo/setup/setup.sh {flags.replace('--no-gpu', '--no-gpu --no-tailscale')} || echo 'second run failed'\n"
        "echo '=== state'\n"
        "id puffer; dpkg-query -W docker.io openssh-server build-essential\n"
        "echo '=== login'\n"
        'su - puffer -c \'SSH_CONNECTION="10.0.0.1 1 10.0.0.2 22" script -qec "bash --login -i -c true" /dev/null\'\n'
        "su - puffer -c 'touch ~/.puffertank-host; SSH_CONNECTION=x script -qec \"bash --login -i -c true\" /dev/null'\n",
        unreachable=["pkgs.tailscale.com"],
        environment={"PUFFERTANK_DOWNLOAD_TIMEOUT": "10"},
    )
    assert status == 0, output
    first, rest = output.split("=== second run", 1)
    second, rest = rest.split("=== state", 1)
    state, login = rest.split("=== login", 1)
    assert "first exit 1" in first, first
    # curl's code 28: the download gave up at its time limit (the connection, or its TLS handshake).
    failure = r"FAILED: could not download Tailscale's signing key \(curl: \(28\) .* timed out after"
    assert re.search(failure, first), first
    assert "fix: check that this box reaches pkgs.tailscale.com" in first and "--no-tailscale" in first
    assert "[7/10] Tailscale: could not download" in first  # the summary at the end
    # Base packages, docker.io, the user, the ssh key and the login hook; not the failed Tailscale.
    assert "setup.sh: 5 steps changed this system" in first, first
    # The steps after the failed one ran.
    assert "+ useradd" in first and "+ usermod -aG docker puffer" in first
    assert (
        "+ append to /home/puffer/.ssh/authorized_keys" in first and "+ append to /home/puffer/.bash_profile" in first
    )
    assert "setup.sh: 0 steps changed this system" in second, second
    assert "  + " not in second and "second run failed" not in second
    assert "docker" in state.split("groups=", 1)[1]
    # docker is installed but its daemon is not running in this container: the hook says so.
    assert "the docker daemon (dockerd) is not running" in login and "staying on the host" in login
    assert "no image" not in login
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


def hook_image(docker_client, tag, marker):
    """A tiny image whose entrypoint says which build it is and prints its environment: the hook
    only needs that and `sleep`."""
    import io

    dockerfile = (
        f"FROM {ROOTFS}\n"
        f"RUN printf '#!/bin/sh\\necho inside build {marker}\\nenv\\n' > /usr/local/bin/puffertank-entrypoint"
        " && chmod +x /usr/local/bin/puffertank-entrypoint\n"
    )
    image, _ = docker_client.images.build(
        fileobj=io.BytesIO(dockerfile.encode()), tag=tag, network_mode="host", rm=True
    )
    return image.id


def hook_user():
    """A fresh user for a login-hook test: (user, its image's tag, its container's name)."""
    if shutil.which("script") is None:
        unavailable("script (util-linux) is not installed")
    user = f"hooktest{uuid.uuid4().hex[:8]}"
    return user, f"puffertank-ci/hook-{user}:latest", f"puffertank-{user}"


def login(home, user, image, docker_host=None, extra_env=None):
    """An interactive ssh login (as the hook sees one) that sources the hook; its output."""
    env = dict(os.environ, HOME=str(home), USER=user, PUFFERTANK_IMAGE=image, SSH_CONNECTION="10.0.0.1 1 10.0.0.2 22")
    env.update(extra_env or {})
    if docker_host:
        env["DOCKER_HOST"] = docker_host
    command = f"bash --norc -i -c '. {REPO}/scripts/login_hook.sh'"
    result = subprocess.run(
        [shutil.which("script"), "-qec", command, "/dev/null"], capture_output=True, text=True, env=env, timeout=120
    )
    return result.stdout


@pytest.mark.docker
def test_login_hook_replaces_the_container_when_the_image_changed(docker_client, tmp_path):
    user, image, name = hook_user()
    first = hook_image(docker_client, image, "one")
    try:
        output = login(tmp_path, user, image)
        assert f"starting container {name}" in output and "inside build one" in output, output
        output = login(tmp_path, user, image)
        assert "starting container" not in output and "rebuilt" not in output and "inside build one" in output, output

        hook_image(docker_client, image, "two")
        # Another login's session still runs in the container: replacing it would end that session.
        session = "echo $$ > /tmp/session.pid && exec sleep 60"
        subprocess.run(["docker", "exec", "--detach", name, "sh", "-c", session], check=True)
        output = login(tmp_path, user, image)
        assert f"{image} was rebuilt, but {name} has other sessions running: entering it as it is" in output
        assert "inside build one" in output, output
        subprocess.run(["docker", "exec", name, "sh", "-c", "kill $(cat /tmp/session.pid)"], check=True)
        for _ in range(50):  # until the session is gone from the container's process list
            if "sleep 60" not in subprocess.run(["docker", "top", name], capture_output=True, text=True).stdout:
                break
            time.sleep(0.2)

        # A file of the user's that the image does not have would be lost with the container.
        subprocess.run(["docker", "exec", name, "sh", "-c", "echo draft > /home/puffer/notes.txt"], check=True)
        output = login(tmp_path, user, image)
        assert f"{image} was rebuilt, but {name} holds files of yours that its image does not" in output, output
        assert "(1 of them, such as /home/puffer/notes.txt)" in output and "inside build one" in output, output
        subprocess.run(["docker", "exec", name, "rm", "/home/puffer/notes.txt"], check=True)

        output = login(tmp_path, user, image)
        assert f"{image} was rebuilt since {name} was created: replacing {name}" in output, output
        assert "inside build two" in output, output

        output = login(tmp_path, user, image, docker_host="unix:///nonexistent/docker.sock")
        assert "the docker daemon (dockerd) is not running" in output and "staying on the host" in output
        assert "no image" not in output
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True)
        subprocess.run(["docker", "rmi", "--force", image, first], capture_output=True)


@pytest.mark.docker
def test_login_hook_passes_the_job_variables_and_shares_the_host_network(docker_client, tmp_path):
    """A login that sets torchrun's, NCCL's or gloo's variables (~/.bash_profile, ssh's SendEnv)
    has them in the container, and the container's network is the host's: a multi-node job works."""
    user, image, name = hook_user()
    built = hook_image(docker_client, image, "one")
    job = {
        "MASTER_ADDR": "10.1.2.3",
        "WORLD_SIZE": "4",
        "PET_NNODES": "2",
        "NCCL_SOCKET_IFNAME": "eth7",
        "GLOO_SOCKET_IFNAME": "eth7",
    }
    try:
        output = login(tmp_path, user, image, extra_env={**job, "UNRELATED_SECRET": "x"})
        inside = output.split("inside build one", 1)[1]  # the container's environment, as its terminal shows it
        for variable, value in job.items():
            assert re.search(rf"\b{variable}={re.escape(value)}\r?$", inside, flags=re.M), output
        assert "UNRELATED_SECRET" not in inside
        assert docker_client.containers.get(name).attrs["HostConfig"]["NetworkMode"] == "host"
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True)
        subprocess.run(["docker", "rmi", "--force", image, built], capture_output=True)


@pytest.mark.docker
def test_host_tools_need_only_docker_py(docker_client, tmp_path):
    """`make tank-venv` makes .venv-tank: docker-py and the checkout, no torch, numpy or gymnasium,
    and its `puffer tank` talks to the daemon."""
    checkout = tmp_path / "repo"
    shutil.copytree(REPO, checkout, ignore=shutil.ignore_patterns(".git", ".venv", ".venv-tank", "wheels", "build"))
    result = subprocess.run(
        ["make", "-C", str(checkout), "tank-venv", "PYTHON=python3"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    venv = checkout / ".venv-tank"
    # As on a host where nothing else is installed: no PYTHONPATH into another checkout.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    probe = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.util, pufferlib.tank\n"
            "print(pufferlib.tank.__file__)\n"
            "print('missing', *[n for n in ('torch', 'numpy', 'gymnasium') if importlib.util.find_spec(n) is None])",
        ],
        capture_output=True,
        text=True,
        cwd="/",
        env=env,
    )
    assert probe.returncode == 0, probe.stderr
    assert str(checkout / "pufferlib" / "tank" / "__init__.py") in probe.stdout
    assert "missing torch numpy gymnasium" in probe.stdout
    status = subprocess.run([str(venv / "bin" / "puffer"), "tank", "status"], capture_output=True, text=True, env=env)
    assert status.returncode == 0, status.stderr
    assert "docker: server" in status.stdout
    other = subprocess.run(
        [str(venv / "bin" / "puffer"), "train", "puffer_squared"], capture_output=True, text=True, env=env
    )
    assert other.returncode == 2 and other.stderr.startswith("puffer: error: this puffer (.venv-tank) has only")
