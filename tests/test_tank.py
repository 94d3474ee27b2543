"""The tank's images, for real: hadolint and shellcheck on every Dockerfile and shell script, the
three images built with a debootstrapped Debian bookworm standing in for the CUDA base (Docker Hub
is out of reach), the stage-3 image run (training, NetHack, the user, the GPU errors), a container
run as one rank of a multi-node job, and edits rebuilding only what they touch: a Python edit
compiles nothing, a C edit compiles only its env.
tests/test_tank_host.py covers the host side (setup/setup.sh, the login hook, the light venv).

Needs what .ci/docker.sh provisions: a docker daemon, the image puffertank/bookworm-rootfs (or
$PUFFERTANK_ROOTFS_TAG), the CPU torch wheel in docker/base/wheels/, hadolint and shellcheck. Without
them the tests skip, saying why; with CI=true a skip is a failure.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import ROOTFS, unavailable

REPO = Path(__file__).resolve().parent.parent
# Not the default prefix: a developer's real CUDA images keep their tags when the tests run.
PREFIX = "puffertank-ci"
# Stage 3's steps that the rebuild tests look at, as (build stage, text of the instruction).
COMPILE_STEP = ("compiled", "python setup.py build_ext --inplace")
DEPENDENCY_STEP = ("deps", "pip install --no-cache-dir -r /tmp/puffer-requirements.txt")
SOURCE_STEP = ("stage-3", "COPY --chown=puffer:puffer . .")
COPY_IGNORE = shutil.ignore_patterns(
    ".git",
    ".venv",
    ".venv-tank",
    "__pycache__",
    "build",
    "*.egg-info",
    "*.so",
    "binding.c",
    "experiments",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    ".ci-cuda",
)


def tool(name):
    path = shutil.which(name)
    if path is None:
        unavailable(f"{name} is not installed")
    return path


def tank(*args, timeout=600, input=None, env=None):
    """`python -m pufferlib.tank ARGS` with the test prefix; stdout and stderr together."""
    return subprocess.run(
        [sys.executable, "-m", "pufferlib.tank", "--prefix", PREFIX, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        input=input,
        env=None if env is None else {**os.environ, **env},
    )


def in_tank(*command, timeout=300):
    """Runs COMMAND in the stage-3 image the way users do, without the network or a mount."""
    result = tank("run", "--no-mount", "--network", "none", "--gpus", "none", "--", *command, timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def build_steps(log):
    """{stage: {step name: CACHED|DONE|ERROR}} from `puffer tank build` output (BuildKit's plain log).

    A stage that was up to date, and so not sent to the daemon, is absent."""
    stages = {}
    for chunk in re.split(r"^==> building ", log, flags=re.M)[1:]:
        stage = chunk.split(":", 1)[0].rsplit("/", 1)[1]
        names = {}
        for number, name in re.findall(r"^#(\d+) (\[.*)$", chunk, flags=re.M):
            names.setdefault(number, name)  # a step's first line names it; later ones are its output
        outcomes = dict(re.findall(r"^#(\d+) (CACHED|DONE|ERROR)", chunk, flags=re.M))
        stages[stage] = {name: outcomes.get(number) for number, name in names.items()}
    return stages


def step(steps, which):
    """The outcome of the one step of WHICH's build stage whose instruction holds WHICH's text."""
    stage, text = which
    found = [
        outcome
        for name, outcome in steps.items()
        if re.match(rf"\[{re.escape(stage)}\s+\d+/\d+\] ", name) and text in name
    ]
    assert len(found) == 1, (which, steps)
    return found[0]


def rebuild(checkout, edit_path, text):
    """Appends TEXT to a file of the checkout and rebuilds: (seconds, log)."""
    with open(checkout / edit_path, "a") as file:
        file.write(text)
    start = time.monotonic()
    result = tank("--repo", str(checkout), "build", "--base-image", ROOTFS, timeout=1200)
    seconds = time.monotonic() - start
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr
    return seconds, result.stdout


@pytest.fixture(scope="session")
def checkout(docker_client, tmp_path_factory):
    """A copy of the working tree to build from, so that the source-change test edits the copy."""
    if not list((REPO / "docker" / "base" / "wheels").glob("torch-*.whl")):
        unavailable("no torch wheel in docker/base/wheels (PyPI's torch is a multi-GB CUDA build): run .ci/docker.sh")
    copy = tmp_path_factory.mktemp("tank") / "repo"
    shutil.copytree(REPO, copy, symlinks=True, ignore=COPY_IGNORE)
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
    assert result.returncode == 2
    assert result.stderr.startswith("puffer: error: cannot reach the Docker daemon")
    assert "apt-get install docker.io" in result.stderr
    assert "Traceback" not in result.stderr


def test_repo_is_accepted_after_the_subcommand(tmp_path):
    for args in (["--repo", str(tmp_path), "build"], ["build", "--repo", str(tmp_path)]):
        result = subprocess.run(
            [sys.executable, "-m", "pufferlib.tank", *args], capture_output=True, text=True, cwd=REPO
        )
        assert result.returncode == 2, result.stderr
        assert f"puffer: error: {tmp_path} is not a PufferTank checkout" in result.stderr, result.stderr


def test_devcontainer_builds_stage_3_as_puffer():
    config = json.loads((REPO / ".devcontainer" / "devcontainer.json").read_text())
    assert (REPO / ".devcontainer" / config["build"]["dockerfile"]).resolve() == REPO / "docker/puffer/Dockerfile"
    assert config["remoteUser"] == "puffer"
    assert config["hostRequirements"]["gpu"] == "optional"
    assert config["postCreateCommand"] == "puffertank-build-inplace"


@pytest.mark.docker
def test_three_stages_build_and_are_tagged(built, docker_client):
    import pufferlib

    for stage in ("base", "envs", "puffer"):
        assert f"{PREFIX}/{stage}:{pufferlib.__version__}" in built, stage
        latest = docker_client.images.get(f"{PREFIX}/{stage}:latest")
        assert f"{PREFIX}/{stage}:{pufferlib.__version__}" in latest.tags
    if "base" in build_steps(built):
        assert "UserWarning: Failed to initialize NumPy" not in built  # torch, imported without NumPy


@pytest.mark.docker
def test_python_edit_rebuilds_without_compiling(built, checkout, docker_client):
    dangling_before = {image.id for image in docker_client.images.list(filters={"dangling": True})}
    envs_before = docker_client.images.get(f"{PREFIX}/envs:latest").id
    # Unique each run: a daemon that keeps its build cache between runs must still see a new file.
    seconds, log = rebuild(checkout, "pufferlib/spaces.py", f"\n# a Python edit {uuid.uuid4().hex}\n")
    print(f"rebuild after a Python edit: {seconds:.1f} s")
    stages = build_steps(log)
    assert set(stages) == {"puffer"}, "stages 1 and 2 were sent to the daemon again"
    assert f"{PREFIX}/base:" in log and "is up to date" in log
    assert docker_client.images.get(f"{PREFIX}/envs:latest").id == envs_before
    puffer = stages["puffer"]
    assert step(puffer, COMPILE_STEP) == "CACHED"
    assert step(puffer, DEPENDENCY_STEP) == "CACHED"
    assert step(puffer, SOURCE_STEP) == "DONE"
    assert "Cythonizing" not in log and "building 'ocean." not in log
    dangling_after = {image.id for image in docker_client.images.list(filters={"dangling": True})}
    assert dangling_after <= dangling_before, "the rebuild left an untagged image behind"
    # The image still holds every extension, compiled and importable, and the edit.
    output = in_tank(
        "python",
        "-c",
        "import glob, importlib\n"
        "names = sorted(p.split('/')[1] for p in glob.glob('ocean/*/binding*.so'))\n"
        "[importlib.import_module(f'ocean.{name}.binding') for name in names]\n"
        "print('imported', ' '.join(names))\n"
        "print(open('pufferlib/spaces.py').read().splitlines()[-1])\n",
    )
    envs = sorted(path.parent.name for path in checkout.glob("ocean/*/binding.pyx"))
    assert f"imported {' '.join(envs)}" in output
    assert "# a Python edit" in output


@pytest.mark.docker
def test_c_edit_recompiles_only_its_env(built, checkout):
    # Code, not a comment: ccache sees through comments, which leave the preprocessed source as it was.
    seconds, log = rebuild(checkout, "ocean/squared/squared.h", f"\nenum {{ tank_edit_{uuid.uuid4().hex} = 1 }};\n")
    print(f"rebuild after a C edit: {seconds:.1f} s")
    puffer = build_steps(log)["puffer"]
    assert step(puffer, DEPENDENCY_STEP) == "CACHED"
    assert step(puffer, COMPILE_STEP) == "DONE"
    compiled = re.findall(r"ccache: (\d+) C compiles from the cache, (\d+) compiled", log)
    envs = len(list(checkout.glob("ocean/*/binding.pyx")))
    assert compiled == [(str(envs - 1), "1")], compiled
    assert "building 'ocean.squared.binding' extension" in log
    if "CraftaxGPU" in log:  # BUILD_CUDA=1: the CUDA library comes from the cache, not from nvcc
        assert "libcraftax_gpu.so from the build cache" in log
    output = in_tank("python", "-c", "import ocean.squared.binding; print('squared imports')")
    assert "squared imports" in output


# A rank of a two-node job as a launcher on the host would start it, and what it must not see.
RANK_ENVIRONMENT = {
    "MASTER_ADDR": "10.1.2.3",
    "MASTER_PORT": "29400",
    "RANK": "3",
    "WORLD_SIZE": "4",
    "LOCAL_RANK": "1",
    "PET_RDZV_ENDPOINT": "10.1.2.3:29400",
    "NCCL_SOCKET_IFNAME": "eth7",
    "GLOO_SOCKET_IFNAME": "eth7",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": "3",
}


# `puffer tank run` of the bare image as one rank of a job: no checkout mounted, no GPU.
RANK_RUN = ["run", "--image", ROOTFS, "--no-mount", "--gpus", "none", "--"]


@pytest.mark.docker
def test_a_rank_in_the_tank_gets_the_job_variables_and_the_host_network(docker_client):
    """`puffer tank run` as one rank of a multi-node job: torchrun's, NCCL's and gloo's variables
    reach the container, nothing else of the caller's does, and the network is the host's."""
    result = tank(
        *RANK_RUN,
        "sh",
        "-c",
        "env; echo interfaces: $(ls /sys/class/net)",
        env={**RANK_ENVIRONMENT, "UNRELATED_SECRET": "x"},
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    inside = result.stdout.splitlines()
    for name, value in RANK_ENVIRONMENT.items():
        assert f"{name}={value}" in inside, result.stdout
    assert "UNRELATED_SECRET=x" not in inside
    assert f"interfaces: {' '.join(sorted(os.listdir('/sys/class/net')))}" in inside


@pytest.mark.docker
def test_sigterm_stops_the_container(docker_client):
    """torchrun stops the ranks of a failed job with SIGTERM: a rank that is `puffer tank run` must
    take its container down with it, not leave it running."""
    marker = f"rank-{uuid.uuid4().hex}"
    run = subprocess.Popen(
        [sys.executable, "-m", "pufferlib.tank", *RANK_RUN, "sh", "-c", f"echo {marker}; exec sleep 300"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert run.stdout.readline().strip() == marker
        run.send_signal(signal.SIGTERM)
        run.communicate(timeout=60)
        assert run.returncode == 128 + signal.SIGTERM
        containers = subprocess.run(
            ["docker", "ps", "--all", "--no-trunc", "--format", "{{.Command}}"], capture_output=True, text=True
        )
        assert marker not in containers.stdout
    finally:
        run.kill()


@pytest.mark.docker
def test_torchrun_on_the_host_starts_each_rank_in_a_container(built):
    """A launcher on the host that starts every rank as `puffer tank run` (here torchrun): the ranks
    find each other through the variables passed in and the host network, and train one policy."""
    rank = [sys.executable, "-m", "pufferlib.tank", "--prefix", PREFIX, "run", "--no-mount", "--gpus", "none", "--"]
    train = ["puffer", "train", "puffer_squared", "--vec.num-envs", "64", "--train.total-timesteps", "20000"]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "--no-python",
            *rank,
            *train,
            "--train.device",
            "cpu",
            "--train.dashboard",
            "plain",
            "--train.data-dir",
            "/tmp/runs",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert output.count("Training puffer_squared on cpu x 2 ranks") == 1, output[-5000:]
    assert "Finished 20.5k steps" in output


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
def test_craftax_parity_runs_against_the_jax_reference(built):
    output = in_tank("python", "scripts/craftax_parity.py", "steps", "--seeds", "1", "--steps", "30")
    assert "1 envs x 30 steps" in output and " 0 divergences" in output, output[-3000:]


@pytest.mark.docker
def test_runs_as_non_root_and_warns_without_gpu(built):
    output = in_tank("bash", "-c", "echo user=$(whoami) uid=$(id -u) && sudo -n true && echo sudo=ok")
    assert "user=puffer" in output and "uid=0" not in output
    assert "sudo=ok" in output
    assert "WARNING: no NVIDIA GPU visible" in output


def readme_commands(label):
    """The commands of the sh block that follows LABEL in README.md's tank section, comments dropped:
    the tests below run the lines the README gives each way in."""
    section = (REPO / "README.md").read_text().split("\n## Tank\n", 1)[1]
    block = re.search(r"^```sh\n(.*?)^```$", section[section.index(label) :], flags=re.M | re.S).group(1)
    return [re.sub(r"\s+#.*$", "", line) for line in block.splitlines() if line.strip()]


def copy_checkout(source, destination):
    """A copy of a checkout with its build outputs and their times, as another folder on the host."""
    shutil.copytree(source, destination, symlinks=True)
    return destination


def extension_names(checkout):
    return sorted(path.parent.name for path in checkout.glob("ocean/*/binding.pyx"))


@pytest.fixture(scope="module")
def mounted_run(built, checkout, tmp_path_factory):
    """README's `puffer tank run` line on a fresh checkout, mounted over the image's copy (without
    the network or GPUs): the entrypoint compiles the checkout in place first. (checkout, output);
    the checkout is left compiled, for the tests that reuse it."""
    run_line = shlex.split(readme_commands("**`puffer tank run` and `shell`**")[0])
    assert run_line[:3] == [".venv-tank/bin/puffer", "tank", "run"], run_line
    mounted = copy_checkout(checkout, tmp_path_factory.mktemp("mounted") / "repo")
    result = tank("--repo", str(mounted), "run", "--network", "none", "--gpus", "none", *run_line[3:], timeout=900)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    return mounted, output


@pytest.mark.docker
def test_mounted_checkout_builds_like_the_image_with_progress(mounted_run):
    mounted, output = mounted_run
    assert "the in-place build" not in output and "nvcc not found" not in output, output[-5000:]
    envs = extension_names(mounted)
    progress = re.findall(r"^\[\s*(\d+)/(\d+)\] compiling ocean\.(\w+)\.binding$", output, flags=re.M)
    assert sorted(name for _, _, name in progress) == envs, output[-5000:]
    assert sorted(int(number) for number, _, _ in progress) == list(range(1, len(envs) + 1))
    assert {int(total) for _, total, _ in progress} == {len(envs)}
    assert (mounted / "ocean" / "craftax" / "libcraftax_gpu.so").is_file(), "the GPU Craftax library was not built"
    assert "CraftaxGPU: built ocean/craftax/libcraftax_gpu.so" in output
    assert "Checkpoint: experiments/puffer_squared_" in output, output[-3000:]


@pytest.mark.docker
def test_root_checkout_stays_writable(mounted_run):
    if os.getuid() != 0:
        pytest.skip("the checkout must belong to root: run the tests as root")
    mounted, output = mounted_run
    assert "running as root, so that the checkout stays writable" in output
    assert "PermissionError" not in output
    runs = list(mounted.glob("experiments/puffer_squared_*/checkpoint.pt"))
    assert len(runs) == 1 and runs[0].stat().st_uid == 0, runs
    assert list(mounted.glob("ocean/squared/binding*.so")), "the in-place build wrote no extension"


@pytest.mark.docker
def test_a_failed_in_place_build_is_one_clear_line_and_the_command_still_runs(mounted_run, tmp_path):
    broken = copy_checkout(mounted_run[0], tmp_path / "repo")
    with open(broken / "ocean" / "squared" / "squared.h", "a") as header:
        header.write("\nthis is not C;\n")
    result = tank("--repo", str(broken), "run", "--network", "none", "--gpus", "none", "--", "echo", "command ran")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert "[1/1] compiling ocean.squared.binding" in output
    assert "squared.h" in output and "error" in output  # the compiler's own message is shown
    errors = [line for line in output.splitlines() if line.startswith("puffertank: ERROR")]
    assert errors == [
        "puffertank: ERROR: the in-place build of /home/puffer/pufferlib failed (the compiler's output is above); "
        "fix it, then run: puffertank-build-inplace"
    ], output[-3000:]
    assert result.stdout.rstrip().endswith("command ran")  # the container's output, after the build's


# What each way into a container runs a command through: docker exec's plain shell, a login shell
# (the ssh login hook's `bash --login`), the login interactive shell the Dev Container probes its
# environment with, a POSIX login shell, and a fresh login through PAM.
WAYS_IN = {
    "exec": ["bash", "-c"],
    "login": ["bash", "--login", "-c"],
    "login interactive": ["bash", "-lic"],
    "sh login": ["sh", "-lc"],
    "sudo -i": ["sudo", "-iu", "puffer", "bash", "-c"],
}
ENVIRONMENT_PROBE = (
    'echo "puffer=$(command -v puffer) python=$(command -v python) nvcc=$(command -v nvcc) '
    'CUDA_HOME=$CUDA_HOME VIRTUAL_ENV=$VIRTUAL_ENV"; python -c "import torch, pufferlib, nle; print(\'stack imports\')"'
)


@pytest.mark.docker
def test_every_way_in_finds_the_same_environment(built, docker_client):
    container = docker_client.containers.run(
        f"{PREFIX}/puffer:latest", ["sleep", "infinity"], network_mode="none", detach=True, auto_remove=True
    )
    try:
        seen = {}
        for way, shell in WAYS_IN.items():
            code, output = container.exec_run([*shell, ENVIRONMENT_PROBE], user="puffer")
            lines = [line for line in output.decode().splitlines() if line.startswith("puffer=") or "imports" in line]
            assert code == 0, (way, output.decode())
            seen[way] = lines
        expected = [
            "puffer=/opt/venv/bin/puffer python=/opt/venv/bin/python nvcc=/opt/cuda/bin/nvcc "
            "CUDA_HOME=/opt/cuda VIRTUAL_ENV=/opt/venv",
            "stack imports",
        ]
        assert seen == {way: expected for way in WAYS_IN}
    finally:
        container.remove(force=True)


def hook_login(user, home, image, typed):
    """An interactive ssh login of USER that sources the login hook, with TYPED typed into the shell
    it lands in; what its terminal shows."""
    env = dict(os.environ, HOME=str(home), USER=user, PUFFERTANK_IMAGE=image, SSH_CONNECTION="10.0.0.1 1 10.0.0.2 22")
    result = subprocess.run(
        [tool("script"), "-qec", f"bash --norc -i -c '. {REPO}/scripts/login_hook.sh'", "/dev/null"],
        input=typed,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    return result.stdout.replace("\r", "")


@pytest.mark.docker
def test_ssh_login_through_the_hook_lands_in_the_tank_and_trains(built, docker_client, tmp_path):
    """The login hook as an ssh login runs it, on the stage-3 image: its own `docker exec ... bash
    --login` on a terminal, with README's commands typed in. The run it trains is still there at the
    next login, and after the image is rebuilt too."""
    import io

    user = f"hooktest{uuid.uuid4().hex[:8]}"
    name = f"puffertank-{user}"
    image = f"{PREFIX}/puffer:latest"
    readme = readme_commands("**ssh into the box and train.**")
    assert readme[0] == "ssh puffer@box", readme
    typed = "; ".join([*readme[1:], 'echo "nvcc at $(command -v nvcc), CUDA_HOME at $CUDA_HOME"', "exit"]) + "\n"
    list_runs = 'echo "runs: $(ls experiments)"; exit\n'
    rebuilt = f"{PREFIX}/hook-rebuilt-{user}:latest"
    try:
        output = hook_login(user, tmp_path, image, typed)
        assert f"puffertank: entering {name}" in output, output[-3000:]
        assert "command not found" not in output, output[-3000:]
        assert "\npuffer (pufferlib) " in output, output[-3000:]
        assert "nvcc at /opt/cuda/bin/nvcc, CUDA_HOME at /opt/cuda" in output
        run = re.search(r"Checkpoint: experiments/(puffer_squared_\S+)/checkpoint\.pt", output)
        assert run, output[-3000:]
        assert "\nlogout\n" in output  # the shell the hook entered was a login shell

        output = hook_login(user, tmp_path, image, list_runs)
        assert "starting container" not in output and f"runs: {run.group(1)}" in output, output[-3000:]

        # A rebuilt image: the container holds the run, which a new one would not have.
        docker_client.images.build(
            fileobj=io.BytesIO(f"FROM {image}\nLABEL org.puffertank.test-rebuild={user}\n".encode()),
            tag=rebuilt,
            rm=True,
        )
        output = hook_login(user, tmp_path, rebuilt, list_runs)
        assert f"{rebuilt} was rebuilt, but {name} holds files of yours" in output, output[-3000:]
        assert f"/home/puffer/pufferlib/experiments/{run.group(1)}/" in output
        assert f"runs: {run.group(1)}" in output, output[-3000:]
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True)
        subprocess.run(["docker", "rmi", "--force", rebuilt], capture_output=True)


def devcontainer_mounts(config, workspace):
    """The workspaceMount of CONFIG as docker-py mounts, with ${localWorkspaceFolder} filled in."""
    import docker

    fields = dict(
        item.split("=", 1)
        for item in config["workspaceMount"].replace("${localWorkspaceFolder}", str(workspace)).split(",")
    )
    return [docker.types.Mount(target=fields["target"], source=fields["source"], type=fields["type"])]


def devcontainer_run_options(config):
    """CONFIG's runArgs as docker-py options: each that the file uses must be mapped here."""
    mapped = {"--ipc": "ipc_mode", "--network": "network_mode"}
    options = {}
    for argument in config.get("runArgs", []):
        flag, _, value = argument.partition("=")
        assert flag in mapped and value, f"runArgs {argument!r}: this test does not pass it on yet; map it here"
        options[mapped[flag]] = value
    return options


@pytest.mark.docker
def test_dev_container_as_vscode_runs_it(mounted_run, docker_client, tmp_path):
    """.devcontainer/devcontainer.json followed as the Dev Containers extension does: build its
    Dockerfile with BuildKit, run the container with its runArgs, workspaceMount and an overridden
    command, probe the user's environment with a login interactive shell, and run postCreateCommand
    in that environment as remoteUser in workspaceFolder. The workspace is a compiled checkout whose
    GPU Craftax library is gone, so the postCreateCommand must find nvcc to bring it back."""
    import io

    import pufferlib
    from pufferlib.tank.build import context_files, run_buildkit

    config = json.loads((REPO / ".devcontainer" / "devcontainer.json").read_text())
    workspace = copy_checkout(mounted_run[0], tmp_path / "workspace")
    (workspace / "ocean" / "craftax" / "libcraftax_gpu.so").unlink()
    uid = int(docker_client.images.get(f"{PREFIX}/puffer:latest").labels["org.puffertank.uid"])
    if os.getuid() == 0:
        # As a host user with the image user's UID (updateRemoteUserUID then has nothing to change).
        subprocess.run(["chown", "-R", f"{uid}:{uid}", str(workspace)], check=True)
    elif os.getuid() != uid:
        pytest.skip(f"the workspace must belong to the image's user (uid {uid}): run as root or as uid {uid}")

    devcontainer = workspace / ".devcontainer"
    context = (devcontainer / config["build"]["context"]).resolve()
    dockerfile = str((devcontainer / config["build"]["dockerfile"]).resolve().relative_to(context))
    # The file builds on puffertank/envs; the tests' images carry the test prefix.
    buildargs = {**config["build"].get("args", {}), "BASE_IMAGE": f"{PREFIX}/envs:{pufferlib.__version__}"}
    tag = f"{PREFIX}/devcontainer-{uuid.uuid4().hex[:8]}:latest"
    log = io.StringIO()
    image_id, _ = run_buildkit(
        docker_client,
        context,
        context_files(context, dockerfile),
        dockerfile=dockerfile,
        tags=[tag],
        buildargs=buildargs,
        labels={},
        no_cache=False,
        out=log,
    )
    container = None
    try:
        container = docker_client.containers.run(
            image_id,
            ["-c", 'echo Container started\ntrap "exit 0" 15\nwhile sleep 1 & wait $!; do :; done'],
            entrypoint="/bin/sh",
            mounts=devcontainer_mounts(config, workspace),
            environment=config.get("containerEnv"),
            detach=True,
            **devcontainer_run_options(config),
        )
        user = config["remoteUser"]
        code, probed = container.exec_run(["bash", "-lic", "cat /proc/self/environ"], user=user, demux=True)
        assert code == 0, probed
        environment = dict(item.split("=", 1) for item in probed[0].decode().split("\0") if "=" in item)
        environment.update(config.get("remoteEnv", {}))
        code, output = container.exec_run(
            ["/bin/sh", "-c", config["postCreateCommand"]],
            user=user,
            workdir=config["workspaceFolder"],
            environment=environment,
        )
        output = output.decode()
        assert code == 0, output[-5000:]
        assert "CraftaxGPU: built ocean/craftax/libcraftax_gpu.so" in output, output[-5000:]
        assert (workspace / "ocean" / "craftax" / "libcraftax_gpu.so").is_file()
        code, output = container.exec_run(["bash", "-lc", "command -v puffer && puffer --version"], user=user)
        assert code == 0 and output.decode().startswith("/opt/venv/bin/puffer\npuffer (pufferlib) "), output.decode()
        # README's lines for the container's terminal (an interactive shell there).
        terminal = " && ".join(readme_commands("**The Dev Container.**"))
        code, output = container.exec_run(["bash", "-lic", terminal], user=user, workdir=config["workspaceFolder"])
        output = output.decode()
        assert code == 0, output[-5000:]
        assert "Checkpoint: experiments/puffer_squared_" in output, output[-3000:]
        assert "compiling ocean." not in output  # the checkout was compiled when the container was created
    finally:
        if container is not None:
            container.remove(force=True)
        docker_client.images.remove(tag, noprune=False)


def host_gpu_runtime(docker_client):
    return "nvidia" in docker_client.info().get("Runtimes", {})


@pytest.mark.docker
def test_gpus_all_without_the_nvidia_runtime_is_a_clear_error(built, docker_client):
    if host_gpu_runtime(docker_client):
        pytest.skip("this daemon has the NVIDIA runtime: --gpus all works here")
    result = tank("run", "--no-mount", "--gpus", "all", "--", "true")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("puffer: error: docker cannot give this container GPUs"), result.stderr
    assert "NVIDIA container toolkit" in result.stderr and "--gpus none" in result.stderr
    assert "Traceback" not in result.stderr
    # `shell` needs a terminal: `script` gives it one.
    command = f"{sys.executable} -m pufferlib.tank --prefix {PREFIX} shell --no-mount --gpus all"
    shell = subprocess.run(
        [tool("script"), "-qec", command, "/dev/null"], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert shell.returncode == 2, shell.stdout
    assert "puffer: error: docker cannot give this container GPUs" in shell.stdout
    assert "Traceback" not in shell.stdout


@pytest.mark.docker
@pytest.mark.slow
def test_cuda_base_builds_from_packages(checkout, docker_client):
    """Stage 1 on plain Debian with torch's CUDA build from PyPI, stage 3 with nvcc from PyPI: the
    whole GPU pipeline, GPU Craftax included, without an image registry. Several GB to download."""
    if os.environ.get("PUFFERTANK_TEST_CUDA_PYPI") != "1":
        pytest.skip("downloads several GB (torch's CUDA build): set PUFFERTANK_TEST_CUDA_PYPI=1 to run it")
    free = shutil.disk_usage(docker_client.info()["DockerRootDir"]).free
    if free < 40 * 2**30:
        pytest.skip(f"needs 40 GiB free for the CUDA images, {free / 2**30:.0f} GiB left")
    prefix = "puffertank-ci-cuda"
    start = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pufferlib.tank",
            "build",
            "--prefix",
            prefix,
            "--repo",
            str(checkout),
            "--cuda-from",
            "pypi",
            "--base-image",
            ROOTFS,
        ],
        capture_output=True,
        text=True,
        timeout=3600,
        cwd=REPO,
    )
    print(f"CUDA-from-PyPI build: {time.monotonic() - start:.0f} s")
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr
    assert "GPU Craftax library built" in result.stdout
    image = docker_client.images.get(f"{prefix}/puffer:latest")
    print(f"CUDA-from-PyPI image: {image.attrs['Size'] / 2**30:.1f} GiB")
    output = subprocess.run(
        [
            sys.executable,
            "-m",
            "pufferlib.tank",
            "run",
            "--prefix",
            prefix,
            "--no-mount",
            "--gpus",
            "none",
            "--network",
            "none",
            "--",
            "python",
            "-c",
            "import torch, nle, ale_py, sys; from ocean.craftax import gpu; gpu.load_library(); "
            "print('cuda', torch.version.cuda, 'python', sys.version.split()[0])",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert output.returncode == 0, output.stdout + output.stderr
    assert re.search(r"cuda \d+\.\d+ python 3\.", output.stdout), output.stdout
