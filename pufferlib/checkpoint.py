"""Checkpoints and run folders: atomic writes, strict loads, and where runs live.

A run is a folder ``<data_dir>/<env>_<YYYYmmdd-HHMMSS>`` holding ``checkpoint.pt``, ``config.json``
and ``metrics.jsonl``. A checkpoint holds what resuming needs: weights, optimizer, counters, RNG
states and the config, plus the architecture it must agree with to be loaded.
"""

import io
import os
import re
import time
import warnings
from pathlib import Path

import torch

from pufferlib.exceptions import CheckpointError

CHECKPOINT_NAME = "checkpoint.pt"
BEST_NAME = "best.pt"  # the policy that scored best on fresh episodes, beside the last one
CHECKPOINT_FORMAT = "pufferl-checkpoint-1"


def save_atomic(payload, path):
    """torch.save of ``payload`` to ``path``, atomically (see ``write_atomic``)."""
    data = io.BytesIO()
    torch.save(payload, data)
    write_atomic(path, data.getbuffer())


def write_atomic(path, data):
    """Writes ``data`` (bytes or text) to a temporary file beside ``path``, fsyncs it, then renames
    it over ``path``: a reader, or a crash, never sees a half-written file, and a failed write
    (a full disk, a read-only folder) leaves the previous file as it was."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(temporary, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except OSError as error:
        raise CheckpointError(
            f"cannot write {path}: {error.strerror or error} (errno {error.errno}); the previous file, if any, is "
            "intact. Free space or choose another folder with --train.data-dir"
        ) from None
    finally:
        if temporary.exists():
            temporary.unlink()


def architecture(policy, env):
    """What a checkpoint must agree with to be loaded: the policy's classes and the env's spaces."""
    inner = type(policy.policy).__name__ if hasattr(policy, "policy") else None
    return dict(
        policy=type(policy).__name__,
        inner=inner,
        observation_space=repr(env.single_observation_space),
        action_space=repr(env.single_action_space),
    )


def read_checkpoint(path):
    """Loads a checkpoint file, or raises CheckpointError saying why it cannot be used."""
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_NAME
    if not path.is_file():
        raise CheckpointError(f"No checkpoint at {path}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's remarks on the pickle protocol of a foreign file
            checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many kinds for damaged files
        # torch's message on a file that holds more than tensors advises loading it with
        # weights_only=False, which runs whatever code the file holds: a checkpoint never needs that.
        if "weights_only" in str(error):
            why = "it holds objects other than tensors and plain values, which are not loaded (they could run code)"
        else:
            why = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".rstrip(": ")
        raise CheckpointError(f"{path} is not a readable checkpoint (corrupt, truncated, or not a PuffeRL checkpoint): {why}") from None
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} is not a PuffeRL checkpoint (expected format {CHECKPOINT_FORMAT})")
    checkpoint["path"] = str(path)
    return checkpoint


def check_architecture(checkpoint, policy, env):
    saved, current = checkpoint["architecture"], architecture(policy, env)
    different = {key: (saved.get(key), value) for key, value in current.items() if saved.get(key) != value}
    if different:
        lines = "; ".join(f"{key}: checkpoint {a}, now {b}" for key, (a, b) in different.items())
        raise CheckpointError(f"{checkpoint['path']} does not fit this env and policy ({lines})")


def load_weights(policy, checkpoint):
    """Loads the model weights strictly, naming every missing, extra or reshaped parameter."""
    saved, current = checkpoint["model"], policy.state_dict()
    missing = sorted(set(current) - set(saved))
    extra = sorted(set(saved) - set(current))
    reshaped = [f"{key} {tuple(saved[key].shape)} vs {tuple(value.shape)}" for key, value in current.items() if key in saved and saved[key].shape != value.shape]
    if missing or extra or reshaped:
        problems = [f"{label}: {', '.join(items)}" for label, items in (("missing", missing), ("unexpected", extra), ("shape (checkpoint vs now)", reshaped)) if items]
        raise CheckpointError(f"{checkpoint['path']} has weights for a different model; " + "; ".join(problems))
    policy.load_state_dict(saved)


def run_dirs(data_dir, env_name):
    """Runs of one env, oldest first (by the time their checkpoint was last written)."""
    pattern = re.compile(re.escape(env_name) + r"_\d{8}-\d{6}(_\d+)?$")
    runs = [p for p in Path(data_dir).glob(f"{env_name}_*") if pattern.match(p.name) and (p / CHECKPOINT_NAME).is_file()]
    return sorted(runs, key=lambda p: (p / CHECKPOINT_NAME).stat().st_mtime)


def resolve_checkpoint(spec, data_dir, env_name):
    """'latest' -> the newest run of this env; a run directory or a checkpoint file otherwise."""
    if spec == "latest":
        runs = run_dirs(data_dir, env_name)
        if not runs:
            raise CheckpointError(f"No runs of {env_name} with a checkpoint under {data_dir}/; train one first: puffer train {env_name}")
        return runs[-1] / CHECKPOINT_NAME
    return Path(spec)


def new_run_dir(data_dir, env_name):
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = Path(data_dir) / f"{env_name}_{stamp}"
    n = 1
    while path.exists():
        path = Path(data_dir) / f"{env_name}_{stamp}_{n}"
        n += 1
    try:
        path.mkdir(parents=True)
    except OSError as error:
        raise CheckpointError(
            f"cannot create the run folder {path}: {error.strerror or error}; choose another folder with --train.data-dir"
        ) from None
    return path
