#!/usr/bin/env bash
# Entrypoint of the PufferTank image (docker/puffer/Dockerfile): says what is inside, checks for a
# GPU, then runs the command. PUFFERTANK_QUIET=1 silences the banner (the GPU warning stays).
# PUFFERTANK_BUILD_INPLACE=1 (set by `puffer tank run|shell` when it mounts a checkout over the
# image's copy) first compiles that checkout's extensions, which the mount hides
# (puffertank-build-inplace); the command runs even when that fails, so that a shell can fix it.
set -euo pipefail

if [ "${PUFFERTANK_BUILD_INPLACE:-0}" = 1 ]; then
  puffertank-build-inplace || true
fi

if [ "${PUFFERTANK_QUIET:-0}" != 1 ]; then
  # One interpreter for every version: importing torch dominates start-up time.
  python - <<'PY' >&2 || echo "puffertank: WARNING: could not import the Python stack" >&2
import platform
import importlib.metadata as md

def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "not installed"

import torch
cuda = torch.version.cuda or "none (CPU build)"
print(f"PufferTank | Python {platform.python_version()} | torch {torch.__version__} (CUDA {cuda})"
      f" | pufferlib {version('pufferlib')} | gymnasium {version('gymnasium')} | nle {version('nle')}")
PY
fi

if command -v nvidia-smi >/dev/null 2>&1 && gpus=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null) && [ -n "$gpus" ]; then
  [ "${PUFFERTANK_QUIET:-0}" = 1 ] || echo "GPU: ${gpus//$'\n'/; }" >&2
else
  echo "puffertank: WARNING: no NVIDIA GPU visible; training will run on the CPU. Start the container with GPUs (docker run --gpus all, which needs the NVIDIA container toolkit); 'puffer tank run' does so when the host has one." >&2
fi

exec "$@"
