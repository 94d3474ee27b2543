"""PufferTank from Python: `puffer tank build|run|shell|status` (or `python -m pufferlib.tank`).

Builds the three images in order through the Docker Engine API (docker-py), streaming the build
output, and runs the last one the way training wants it: every GPU the host has, the host's IPC
namespace (PyTorch's shared-memory tensors outgrow docker's 64 MB /dev/shm), and the checkout
bind-mounted over the image's copy so that edits on the host are live inside.

    stage   image              Dockerfile                context
    base    puffertank/base    docker/base/Dockerfile    docker/base   CUDA, Python, PyTorch
    envs    puffertank/envs    docker/envs/Dockerfile    repository    NetHack, Atari, PettingZoo, Ray
    puffer  puffertank/puffer  docker/puffer/Dockerfile  repository    this repository, compiled

Each image is tagged `latest` and with pufferlib's version.
"""

import argparse
import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pufferlib

STAGES = ("base", "envs", "puffer")
REPO_IN_IMAGE = "/home/puffer/pufferlib"


class TankError(Exception):
    """A failure with a message that says what to do; printed without a traceback."""


def find_repo(explicit=None):
    """The checkout to build from: --repo, else the one this module lives in, else the cwd."""
    candidates = [Path(explicit)] if explicit else [Path(__file__).resolve().parent.parent, Path.cwd()]
    for candidate in candidates:
        if (candidate / "docker" / "puffer" / "Dockerfile").is_file():
            return candidate.resolve()
    raise TankError(
        f"{candidates[0]} is not a PufferTank checkout (no docker/puffer/Dockerfile); "
        "run from the repository or pass --repo"
    )


def connect():
    """A docker-py client for a daemon that answers, or a TankError naming the fix."""
    try:
        import docker
    except ImportError:
        raise TankError("the Docker SDK for Python is missing: pip install docker") from None
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as error:
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        raise TankError(
            f"cannot reach the Docker daemon at {where} ({error}).\n"
            "  Not installed: sudo apt-get install docker.io (or run setup/setup.sh on a Debian 12 box).\n"
            "  Not running:   sudo systemctl start docker\n"
            "  Permission denied: sudo usermod -aG docker $USER, then log in again."
        ) from None
    return client


def image_name(prefix, stage, tag="latest"):
    return f"{prefix}/{stage}:{tag}"


def default_id(value):
    # The image user takes the host user's ids, so that files in the bind-mounted checkout keep
    # their owner; but it must not be root, so root on the host gets 1000.
    return value if value != 0 else 1000


def build(client, repo, stages, *, prefix, base_image, torch_index_url, uid, gid, no_cache, out):
    import docker

    version = pufferlib.__version__
    for stage in stages:
        if stage == "base":
            context, dockerfile = repo / "docker" / "base", "Dockerfile"
            buildargs = {"PUFFER_UID": str(uid), "PUFFER_GID": str(gid)}
            if base_image:
                buildargs["BASE_IMAGE"] = base_image
            if torch_index_url:
                buildargs["TORCH_INDEX_URL"] = torch_index_url
        else:
            context, dockerfile = repo, f"docker/{stage}/Dockerfile"
            parent = image_name(prefix, STAGES[STAGES.index(stage) - 1], version)
            try:
                client.images.get(parent)
            except docker.errors.ImageNotFound:
                raise TankError(f"no image {parent} to build {stage} on: build the earlier stages first") from None
            buildargs = {"BASE_IMAGE": parent}
        tag = image_name(prefix, stage, version)
        print(f"==> building {tag} from {context / dockerfile}", file=out, flush=True)
        image_id = None
        # Daemons started by .ci/docker.sh have no bridge network: RUN steps use the host's.
        for chunk in client.api.build(
            path=str(context),
            dockerfile=dockerfile,
            tag=tag,
            buildargs=buildargs,
            network_mode="host",
            nocache=no_cache,
            rm=True,
            forcerm=True,
            decode=True,
        ):
            if "error" in chunk:
                raise TankError(f"building {tag} failed: {chunk['error'].strip()}")
            if "stream" in chunk:
                out.write(chunk["stream"])
                out.flush()
            image_id = chunk.get("aux", {}).get("ID", image_id)
        if image_id is None:
            raise TankError(f"building {tag} produced no image")
        client.api.tag(image_id, f"{prefix}/{stage}", "latest")
        print(f"==> {tag} and {image_name(prefix, stage)} are {image_id}", file=out, flush=True)


def host_has_gpu():
    if shutil.which("nvidia-smi") is None:
        return False
    result = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return result.returncode == 0 and "GPU" in result.stdout


def container_config(args, repo, command, tty):
    import docker

    environment = {}
    mounts = []
    if args.mount:
        mounts.append(docker.types.Mount(target=REPO_IN_IMAGE, source=str(repo), type="bind"))
        environment["PUFFERTANK_BUILD_INPLACE"] = "1"
    gpus = host_has_gpu() if args.gpus == "auto" else args.gpus == "all"
    device_requests = [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])] if gpus else None
    host_config = dict(
        ipc_mode="host",
        network_mode=args.network,
        mounts=mounts,
        device_requests=device_requests,
    )
    return dict(
        image=args.image or image_name(args.prefix, "puffer"),
        command=command or None,
        tty=tty,
        stdin_open=tty,
        environment=environment,
        host_config=host_config,
    )


def create_container(client, config):
    import docker

    try:
        host_config = client.api.create_host_config(**config.pop("host_config"))
        return client.api.create_container(host_config=host_config, **config)["Id"]
    except docker.errors.ImageNotFound:
        raise TankError(f"no image {config['image']}: build it with `puffer tank build`") from None
    except docker.errors.APIError as error:
        if "device driver" in str(error):
            raise TankError(
                "docker cannot hand GPUs to containers: install the NVIDIA container toolkit "
                "(setup/setup.sh does), or pass --gpus none"
            ) from None
        raise TankError(f"cannot create the container: {error.explanation or error}") from None


def run_streaming(client, container_id):
    """Runs without a terminal: output streams back, the exit status is returned."""
    try:
        client.api.start(container_id)
        for data in client.api.logs(container_id, stream=True, follow=True):
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        return client.api.wait(container_id)["StatusCode"]
    except KeyboardInterrupt:
        client.api.stop(container_id, timeout=5)
        return 130


def run_interactive(client, container_id):
    """Runs on this terminal: raw keystrokes in, screen out, window size followed."""
    import termios
    import tty

    sock = client.api.attach_socket(container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
    raw = sock._sock  # the socket under docker-py's file wrapper: select() and recv() need it
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()

    def resize(*_):
        columns, lines = shutil.get_terminal_size()
        client.api.resize(container_id, height=lines, width=columns)

    client.api.start(container_id)
    resize()
    previous_handler = signal.signal(signal.SIGWINCH, resize)
    saved = termios.tcgetattr(stdin)
    tty.setraw(stdin)
    try:
        while True:
            readable, _, _ = select.select([raw, stdin], [], [])
            if raw in readable:
                data = raw.recv(65536)
                if not data:
                    break
                os.write(stdout, data)
            if stdin in readable:
                raw.sendall(os.read(stdin, 65536))
    finally:
        termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
        signal.signal(signal.SIGWINCH, previous_handler)
        sock.close()
    return client.api.wait(container_id)["StatusCode"]


def run(client, args, repo, command, interactive):
    container_id = create_container(client, container_config(args, repo, command, interactive))
    try:
        return (run_interactive if interactive else run_streaming)(client, container_id)
    finally:
        client.api.remove_container(container_id, force=True)


def status(client, prefix, out):
    info = client.info()
    print(
        f"docker: server {info.get('ServerVersion')}, API {client.api.api_version}, "
        f"storage {info.get('Driver')}, runtimes {', '.join(sorted(info.get('Runtimes', {})))}",
        file=out,
    )
    print(f"GPU on this host: {'yes' if host_has_gpu() else 'no'}", file=out)
    import docker

    for stage in STAGES:
        name = image_name(prefix, stage)
        try:
            image = client.images.get(name)
        except docker.errors.ImageNotFound:
            print(f"{name}: not built", file=out)
            continue
        print(
            f"{name}: {image.short_id}, {image.attrs['Size'] / 2**30:.1f} GiB, created {image.attrs['Created'][:19]}, "
            f"tags {' '.join(sorted(image.tags))}",
            file=out,
        )
    for container in client.containers.list(filters={"ancestor": image_name(prefix, "puffer")}):
        print(f"running: {container.name} ({container.short_id}) {container.status}", file=out)


def stage_name(value):
    if value not in STAGES:
        raise argparse.ArgumentTypeError(f"unknown stage {value!r}; the stages are {', '.join(STAGES)}")
    return value


def parser():
    parser = argparse.ArgumentParser(prog="puffer tank", description="Build and run the PufferTank images.")
    parser.add_argument(
        "--prefix", default="puffertank", help="image names are PREFIX/base, PREFIX/envs, PREFIX/puffer"
    )
    parser.add_argument("--repo", help="the checkout to build from and mount (default: this one)")
    commands = parser.add_subparsers(dest="command", required=True)

    build_parser = commands.add_parser("build", help="build the images in order")
    build_parser.add_argument(
        "stages",
        nargs="*",
        type=stage_name,
        metavar="STAGE",
        help=f"the stages to build, from {', '.join(STAGES)} (default: all three)",
    )
    build_parser.add_argument(
        "--base-image", help="stage 1's FROM (default: the CUDA devel image in docker/base/Dockerfile)"
    )
    build_parser.add_argument(
        "--torch-index-url", help="pip index for torch, e.g. https://download.pytorch.org/whl/cpu"
    )
    build_parser.add_argument(
        "--uid", type=int, default=default_id(os.getuid()), help="the image user's UID (default: yours)"
    )
    build_parser.add_argument(
        "--gid", type=int, default=default_id(os.getgid()), help="the image user's GID (default: yours)"
    )
    build_parser.add_argument("--no-cache", action="store_true", help="rebuild every layer")

    for name, help_text in (
        ("run", "run a command in the puffer image"),
        ("shell", "an interactive shell in the puffer image"),
    ):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--image", help="image to run (default: PREFIX/puffer:latest)")
        sub.add_argument(
            "--no-mount",
            dest="mount",
            action="store_false",
            help=f"use the image's copy of the repository instead of mounting the checkout at {REPO_IN_IMAGE}",
        )
        sub.add_argument("--network", choices=["host", "none"], default="host")
        sub.add_argument(
            "--gpus", choices=["auto", "all", "none"], default="auto", help="auto: all GPUs when the host has any"
        )
        if name == "run":
            sub.add_argument("cmd", nargs=argparse.REMAINDER, help="the command (default: the image's shell)")
    commands.add_parser("status", help="the daemon, GPU support, and which images are built")
    return parser


def main(argv=None):
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.command == "build":
            repo = find_repo(args.repo)
            build(
                connect(),
                repo,
                args.stages or STAGES,
                prefix=args.prefix,
                base_image=args.base_image,
                torch_index_url=args.torch_index_url,
                uid=args.uid,
                gid=args.gid,
                no_cache=args.no_cache,
                out=sys.stdout,
            )
            return 0
        if args.command == "status":
            status(connect(), args.prefix, sys.stdout)
            return 0
        command = getattr(args, "cmd", [])
        if command[:1] == ["--"]:
            command = command[1:]
        terminal = sys.stdin.isatty() and sys.stdout.isatty()
        if args.command == "shell" and not terminal:
            raise TankError("`puffer tank shell` needs a terminal; use `puffer tank run -- COMMAND` from scripts")
        repo = find_repo(args.repo) if args.mount else None
        return run(connect(), args, repo, command, interactive=terminal)
    except TankError as error:
        print(f"puffer tank: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
