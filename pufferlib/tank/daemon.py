"""The Docker daemon, reached through docker-py, and the error type every tank failure raises."""

import os


class TankError(Exception):
    """A failure with a message that says what to do; printed as `puffer: error: ...`, no traceback.

    status is the exit status: 2 for what the user can fix (the default), 1 for a failed build."""

    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


def connect():
    """A docker-py client for a daemon that answers, or a TankError naming the fix."""
    try:
        import docker
    except ImportError:
        raise TankError("the Docker SDK for Python is missing: pip install docker (or use `make tank`)") from None
    try:
        client = docker.from_env(timeout=120)
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
