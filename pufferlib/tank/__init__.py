"""PufferTank from Python: `puffer tank build|run|shell|status` (or `python -m pufferlib.tank`).

Builds the three images in order with BuildKit through the Engine API (docker-py), streaming the
build's progress, and runs the last one (pufferlib.tank.run says how).

    stage   image              Dockerfile                context
    base    puffertank/base    docker/base/Dockerfile    docker/base   CUDA, Python, PyTorch
    envs    puffertank/envs    docker/envs/Dockerfile    repository    NetHack, Atari, PettingZoo, Ray
    puffer  puffertank/puffer  docker/puffer/Dockerfile  repository    this repository, compiled

Each image is tagged `latest` and with pufferlib's version. Needs docker-py and nothing else of
pufferlib's dependencies: `make tank` runs it from a small venv of its own (.venv-tank).
"""

import argparse
import os
import sys

import pufferlib
from pufferlib.tank.build import STAGES, build, default_id, find_repo
from pufferlib.tank.daemon import TankError, connect, image_name
from pufferlib.tank.run import REPO_IN_IMAGE, host_has_gpu, run


def status(client, prefix, out):
    import docker

    info = client.info()
    print(
        f"docker: server {info.get('ServerVersion')}, API {client.api.api_version}, "
        f"storage {info.get('Driver')}, runtimes {', '.join(sorted(info.get('Runtimes', {})))}",
        file=out,
    )
    print(f"GPU on this host: {'yes' if host_has_gpu() else 'no'}", file=out)
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


def common_options(defaults):
    """--prefix and --repo, accepted before and after the subcommand.

    The subcommands' copies default to SUPPRESS, so that an option given before the subcommand is
    not overwritten by the subcommand's default."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--prefix",
        default="puffertank" if defaults else argparse.SUPPRESS,
        help="image names are PREFIX/base, PREFIX/envs, PREFIX/puffer",
    )
    options.add_argument(
        "--repo",
        default=None if defaults else argparse.SUPPRESS,
        help="the checkout to build from and mount (default: this one)",
    )
    return options


def parser():
    parser = argparse.ArgumentParser(
        prog="puffer tank", description="Build and run the PufferTank images.", parents=[common_options(True)]
    )
    common = common_options(False)
    commands = parser.add_subparsers(dest="command", required=True)

    build_parser = commands.add_parser("build", help="build the images in order", parents=[common])
    build_parser.add_argument(
        "stages",
        nargs="*",
        type=stage_name,
        metavar="STAGE",
        help=f"the stages to build, from {', '.join(STAGES)} (default: all three)",
    )
    build_parser.add_argument(
        "--base-image",
        help="stage 1's FROM (default: the CUDA devel image in docker/base/Dockerfile; "
        "with --cuda-from pypi, debian:bookworm)",
    )
    build_parser.add_argument(
        "--cuda-from",
        choices=["image", "pypi"],
        default="image",
        help="image: CUDA from the base image (nvidia/cuda); pypi: a plain Debian base, torch's CUDA build and "
        "nvcc from PyPI, ignoring docker/base/wheels (no image registry but Debian's)",
    )
    build_parser.add_argument(
        "--torch-index-url", help="pip index for torch, e.g. https://download.pytorch.org/whl/cpu"
    )
    build_parser.add_argument(
        "--uid", type=int, default=default_id(os.getuid()), help="the image user's UID (default: yours; root: 1000)"
    )
    build_parser.add_argument(
        "--gid", type=int, default=default_id(os.getgid()), help="the image user's GID (default: yours; root: 1000)"
    )
    build_parser.add_argument("--no-cache", action="store_true", help="rebuild every layer")

    for name, help_text in (
        ("run", "run a command in the puffer image"),
        ("shell", "an interactive shell in the puffer image"),
    ):
        sub = commands.add_parser(name, help=help_text, parents=[common])
        sub.add_argument("--image", help="image to run (default: PREFIX/puffer:latest)")
        sub.add_argument(
            "--no-mount",
            dest="mount",
            action="store_false",
            help=f"use the image's copy of the repository instead of mounting the checkout at {REPO_IN_IMAGE}",
        )
        sub.add_argument(
            "--network",
            choices=["host", "none"],
            default="host",
            help="host: the host's network, which the ranks of a multi-node job need (default); none: no network",
        )
        sub.add_argument(
            "--gpus", choices=["auto", "all", "none"], default="auto", help="auto: all GPUs when the host has any"
        )
        if name == "run":
            sub.add_argument("cmd", nargs=argparse.REMAINDER, help="the command (default: the image's shell)")
    commands.add_parser("status", help="the daemon, GPU support, and which images are built", parents=[common])
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
                version=pufferlib.__version__,
                base_image=args.base_image,
                torch_index_url=args.torch_index_url,
                cuda_from=args.cuda_from,
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
        print(f"puffer: error: {error}", file=sys.stderr)
        return error.status
