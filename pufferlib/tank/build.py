"""Building the three images, in order, with BuildKit through the Engine API.

BuildKit, not the classic builder: stage 3 compiles with its caches in a cache mount, and
intermediate stages leave no untagged images behind. A stage whose inputs (Dockerfile, context
files, build arguments, parent image) are those its current image was built from is not sent to
the daemon at all: stage 1's context holds a torch wheel of hundreds of MB.
"""

import hashlib
import json
import os
import stat
import tarfile
import tempfile
from pathlib import Path

from pufferlib.tank.buildkit import Progress
from pufferlib.tank.daemon import TankError, image_name

STAGES = ("base", "envs", "puffer")
# The files of its context a stage's Dockerfile reads, where that is a few of the repository's:
# the rest is not sent, so that editing it leaves the stage's inputs, and its image, as they were.
CONTEXT_FILES = {"envs": ["requirements-envs.txt", "requirements-craftax.txt"]}
INPUTS_LABEL = "org.puffertank.inputs"
# Plain Debian 12 for the CUDA-from-PyPI base: torch's CUDA wheels bring the CUDA libraries.
DEBIAN_IMAGE = "debian:bookworm"


def stage_layout(repo, stage):
    """(context folder, Dockerfile path inside it) of a stage."""
    if stage == "base":
        return repo / "docker" / "base", "Dockerfile"
    return repo, f"docker/{stage}/Dockerfile"


def context_files(context, dockerfile, only=None):
    """The context's paths to send: ONLY if given, else those .dockerignore keeps; the Dockerfile first."""
    from docker.utils.build import exclude_paths

    if only is not None:
        return [dockerfile, *only]
    patterns = []
    ignore = context / ".dockerignore"
    if ignore.is_file():
        patterns = [line.strip() for line in ignore.read_text().splitlines()]
        patterns = [line for line in patterns if line and not line.startswith("#")]
    paths = exclude_paths(str(context), patterns, dockerfile=dockerfile)
    # The daemon tells a tar context from a Dockerfile by the archive's first header: a short name
    # keeps that header a single plain record.
    return [dockerfile] + sorted(path for path in paths if path != dockerfile)


def fingerprint(context, files, dockerfile, buildargs, parent_id):
    """A digest of everything a stage's image is built from."""
    digest = hashlib.sha256()
    digest.update(json.dumps([dockerfile, sorted(buildargs.items()), parent_id]).encode())
    for path in files:
        full = context / path
        info = full.lstat()
        digest.update(f"\0{path}\0{stat.S_IMODE(info.st_mode):o}\0".encode())
        if stat.S_ISLNK(info.st_mode):
            digest.update(os.readlink(full).encode())
        elif stat.S_ISREG(info.st_mode):
            with open(full, "rb") as file:
                for block in iter(lambda: file.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def context_tar(context, files):
    """The build context as an uncompressed tar in a temporary file, rewound."""
    archive = tempfile.TemporaryFile()
    with tarfile.open(fileobj=archive, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path in files:
            info = tar.gettarinfo(str(context / path), arcname=path)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = int(info.mtime)
            if info.isreg():
                with open(context / path, "rb") as file:
                    tar.addfile(info, file)
            else:
                tar.addfile(info)
    archive.seek(0)
    return archive


def image_id(client, name):
    import docker

    try:
        return client.images.get(name).id
    except docker.errors.ImageNotFound:
        return None


def image_labels(client, name):
    import docker

    try:
        return client.images.get(name).labels or {}
    except docker.errors.ImageNotFound:
        return {}


def stage_buildargs(stage, *, prefix, version, base_image, torch_index_url, cuda_from, uid, gid):
    if stage != "base":
        return {"BASE_IMAGE": image_name(prefix, STAGES[STAGES.index(stage) - 1], version)}
    buildargs = {"PUFFER_UID": str(uid), "PUFFER_GID": str(gid)}
    if cuda_from == "pypi":
        buildargs["BASE_IMAGE"] = base_image or DEBIAN_IMAGE
        buildargs["TORCH_WHEELS"] = "ignore"
    elif base_image:
        buildargs["BASE_IMAGE"] = base_image
    if torch_index_url:
        buildargs["TORCH_INDEX_URL"] = torch_index_url
    return buildargs


def run_buildkit(client, context, files, *, dockerfile, tags, buildargs, labels, no_cache, out):
    """One BuildKit build; returns (image id, {vertex name: CACHED|DONE|ERROR})."""
    from docker.utils.json_stream import json_stream

    params = {
        "version": "2",  # BuildKit
        "dockerfile": dockerfile,
        "t": tags,
        "buildargs": json.dumps(buildargs),
        "labels": json.dumps(labels),
        # Daemons started by .ci/docker.sh have no bridge network: RUN steps use the host's.
        "networkmode": "host",
        "nocache": "1" if no_cache else "0",
    }
    progress = Progress(out)
    built = None
    with context_tar(context, files) as archive:
        response = client.api.post(
            f"{client.api.base_url}/v{client.api.api_version}/build",
            params=params,
            data=archive,
            headers={"Content-Type": "application/x-tar"},
            stream=True,
            timeout=None,
        )
        if response.status_code != 200:
            raise TankError(f"the daemon refused the build of {tags[0]}: {response.text.strip()}", status=1)
        for message in json_stream(response.iter_content(chunk_size=None)):
            if message.get("id") == "moby.buildkit.trace":
                progress.trace(message["aux"])
            elif message.get("id") == "moby.image.id":
                built = message["aux"]["ID"]
            elif "error" in message or "errorDetail" in message:
                error = (message.get("error") or message["errorDetail"].get("message", "")).strip()
                if len(error) > 300:  # a failed RUN quotes its whole command, which the log above shows
                    error = error[:120] + " ... " + error[-120:]
                raise TankError(f"building {tags[0]} failed (its log is above): {error}", status=1)
            elif "stream" in message:
                out.write(message["stream"])
    out.flush()
    if built is None:
        raise TankError(f"building {tags[0]} produced no image", status=1)
    return built, progress.outcomes


def remove_if_untagged(client, previous, out):
    """Removes an image that a rebuild left without tags, unless a container still uses it."""
    import docker

    try:
        if client.images.get(previous).tags:
            return
        client.images.remove(previous, noprune=False)
        print(f"==> removed the previous image {previous[:19]}, now untagged", file=out)
    except docker.errors.ImageNotFound:
        pass
    except docker.errors.APIError as error:
        print(f"==> kept the previous image {previous[:19]}: {error.explanation or error}", file=out)


def build(client, repo, stages, *, prefix, version, base_image, torch_index_url, cuda_from, uid, gid, no_cache, out):
    """Builds STAGES in order; returns {stage: {vertex name: outcome}} for the stages it built."""
    outcomes = {}
    for stage in stages:
        context, dockerfile = stage_layout(repo, stage)
        buildargs = stage_buildargs(
            stage,
            prefix=prefix,
            version=version,
            base_image=base_image,
            torch_index_url=torch_index_url,
            cuda_from=cuda_from,
            uid=uid,
            gid=gid,
        )
        parent = buildargs.get("BASE_IMAGE")
        parent_id = image_id(client, parent) if parent else None
        if stage != "base" and parent_id is None:
            raise TankError(f"no image {parent} to build {stage} on: build the earlier stages first")
        tag, latest = image_name(prefix, stage, version), image_name(prefix, stage)
        files = context_files(context, dockerfile, CONTEXT_FILES.get(stage))
        inputs = fingerprint(context, files, dockerfile, buildargs, parent_id)
        current = image_labels(client, tag)
        previous = {image_id(client, tag), image_id(client, latest)} - {None}
        if not no_cache and current.get(INPUTS_LABEL) == inputs:
            if image_id(client, latest) != image_id(client, tag):
                client.api.tag(image_id(client, tag), f"{prefix}/{stage}", "latest")
            print(f"==> {tag} is up to date: its Dockerfile, context and parent are unchanged", file=out, flush=True)
            continue
        print(f"==> building {tag} from {context / dockerfile}", file=out, flush=True)
        built, outcomes[stage] = run_buildkit(
            client,
            context,
            files,
            dockerfile=dockerfile,
            tags=[tag, latest],
            buildargs=buildargs,
            labels={INPUTS_LABEL: inputs},
            no_cache=no_cache,
            out=out,
        )
        print(f"==> {tag} and {latest} are {built}", file=out, flush=True)
        for old in previous - {built}:
            remove_if_untagged(client, old, out)
    return outcomes


def default_id(value):
    # The image user takes the host user's ids, so that files in the bind-mounted checkout keep
    # their owner; but it must not be root, so root on the host gets 1000 (and `puffer tank run`
    # then runs as root: see pufferlib.tank.run).
    return value if value != 0 else 1000


def find_repo(explicit=None):
    """The checkout to build from: --repo, else the one this package lives in, else the cwd."""
    candidates = [Path(explicit)] if explicit else [Path(__file__).resolve().parents[2], Path.cwd()]
    for candidate in candidates:
        if (candidate / "docker" / "puffer" / "Dockerfile").is_file():
            return candidate.resolve()
    raise TankError(
        f"{candidates[0]} is not a PufferTank checkout (no docker/puffer/Dockerfile); "
        "run from the repository or pass --repo"
    )
