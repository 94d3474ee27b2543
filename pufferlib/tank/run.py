"""Running the last image the way training wants it: every GPU the host has, the host's IPC namespace
(PyTorch's shared-memory tensors outgrow docker's 64 MB /dev/shm), the host's network (the ranks of
a multi-node job reach each other at the hosts' addresses), the data-parallel variables of the
calling shell, and the checkout bind-mounted over the image's copy so that edits on the host are
live inside."""

import os
import select
import shutil
import signal
import subprocess
import sys

from pufferlib.tank.daemon import TankError, image_name

REPO_IN_IMAGE = "/home/puffer/pufferlib"

# What a data-parallel job's ranks read from the environment: torchrun's rank variables (a launcher
# on the host sets them for a container that is one rank), torchrun's own options (PET_NNODES,
# PET_RDZV_ENDPOINT, ...), the thread count torchrun gives each rank, and the NCCL and gloo
# settings (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME: the interface that reaches the other nodes).
# scripts/login_hook.sh passes the same names into its container.
RANK_VARIABLES = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "ROLE_RANK",
    "ROLE_NAME",
    "ROLE_WORLD_SIZE",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_MAX_RESTARTS",
    "TORCHELASTIC_USE_AGENT_STORE",
    "OMP_NUM_THREADS",
)
RANK_PREFIXES = ("PET_", "NCCL_", "TORCH_NCCL_", "GLOO_")


def rank_environment():
    """The variables of RANK_VARIABLES and RANK_PREFIXES that are set here."""
    return {
        name: value for name, value in os.environ.items() if name in RANK_VARIABLES or name.startswith(RANK_PREFIXES)
    }


def host_has_gpu():
    if shutil.which("nvidia-smi") is None:
        return False
    result = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return result.returncode == 0 and "GPU" in result.stdout


def image_user(client, image):
    """(uid, gid) of the image's user puffer, from the labels stage 1 sets."""
    import docker

    try:
        labels = client.images.get(image).labels or {}
    except docker.errors.ImageNotFound:
        raise TankError(f"no image {image}: build it with `puffer tank build`") from None
    return int(labels.get("org.puffertank.uid", 1000)), int(labels.get("org.puffertank.gid", 1000))


def container_user(client, image, repo, err):
    """The user to run as when REPO is mounted: the image's, unless root owns the checkout.

    A checkout that root owns is unwritable to the image's user (root builds map it to uid 1000):
    the container then runs as root, so that builds in it work and its files stay root's."""
    owner = repo.stat()
    uid, gid = image_user(client, image)
    if owner.st_uid == uid:
        return None
    if owner.st_uid == 0:
        print(
            f"puffer tank: {repo} belongs to root, and the image's user puffer is uid {uid}: "
            "running as root, so that the checkout stays writable and its files stay root's",
            file=err,
        )
        return "0:0"
    print(
        f"puffer tank: WARNING: {repo} belongs to uid {owner.st_uid}, the image's user puffer is uid {uid}; "
        f"files written to the checkout will be {uid}'s. Rebuild for you: puffer tank build --uid {owner.st_uid} "
        f"--gid {owner.st_gid}",
        file=err,
    )
    return None


def container_config(client, args, repo, command, tty, err=sys.stderr):
    import docker

    image = args.image or image_name(args.prefix, "puffer")
    environment = rank_environment()
    mounts = []
    user = None
    if repo is not None:
        mounts.append(docker.types.Mount(target=REPO_IN_IMAGE, source=str(repo), type="bind"))
        environment["PUFFERTANK_BUILD_INPLACE"] = "1"
        user = container_user(client, image, repo, err)
    gpus = host_has_gpu() if args.gpus == "auto" else args.gpus == "all"
    device_requests = [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])] if gpus else None
    host_config = dict(
        ipc_mode="host",
        network_mode=args.network,
        mounts=mounts,
        device_requests=device_requests,
    )
    return dict(
        image=image,
        command=command or None,
        user=user,
        tty=tty,
        stdin_open=tty,
        environment=environment,
        host_config=host_config,
    )


def explain(error, doing):
    """A TankError for docker-py's APIError, with the fix for the errors users meet."""
    message = str(error.explanation or error)
    if "device driver" in message:
        return TankError(
            "docker cannot give this container GPUs: it has no NVIDIA runtime "
            f"({message.strip()}). Install the NVIDIA container toolkit and restart docker "
            "(setup/setup.sh --gpu does both), or pass --gpus none"
        )
    return TankError(f"cannot {doing}: {message}")


def create_container(client, config):
    import docker

    try:
        host_config = client.api.create_host_config(**config.pop("host_config"))
        return client.api.create_container(host_config=host_config, **config)["Id"]
    except docker.errors.ImageNotFound:
        raise TankError(f"no image {config['image']}: build it with `puffer tank build`") from None
    except docker.errors.APIError as error:
        raise explain(error, "create the container") from None


def start(client, container_id):
    import docker

    try:
        client.api.start(container_id)
    except docker.errors.APIError as error:
        raise explain(error, "start the container") from None


class Terminated(Exception):
    """SIGTERM arrived: a launcher (torchrun stopping the ranks of a failed job) ends this run."""


def raise_terminated(signum, frame):
    raise Terminated


def run_streaming(client, container_id):
    """Runs without a terminal: output streams back, the exit status is returned. Ctrl-C or
    SIGTERM stops the container, which would otherwise run on without this process."""
    start(client, container_id)
    previous_handler = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        for data in client.api.logs(container_id, stream=True, follow=True):
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        return client.api.wait(container_id)["StatusCode"]
    except KeyboardInterrupt:
        client.api.stop(container_id, timeout=5)
        return 130
    except Terminated:
        client.api.stop(container_id, timeout=5)
        return 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous_handler)


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

    try:
        start(client, container_id)
    except TankError:
        sock.close()
        raise
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
    container_id = create_container(client, container_config(client, args, repo, command, interactive))
    try:
        return (run_interactive if interactive else run_streaming)(client, container_id)
    finally:
        client.api.remove_container(container_id, force=True)
