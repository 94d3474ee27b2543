#!/usr/bin/env bash
# puffertank-build-inplace [CHECKOUT]: compiles a checkout mounted over the image's copy (the Dev
# Container, `puffer tank run|shell`) the way the image build compiled that copy: every Ocean
# extension, and the GPU Craftax library wherever the image has nvcc (/opt/cuda). The mount hides
# the image's compiled files, so the first build compiles everything, saying which extension it is
# on; later ones rebuild only what changed. setup.py's output is shown as it comes; a failure ends
# with one line saying what failed and how to retry. CHECKOUT defaults to $PUFFERTANK_REPO, else
# /home/puffer/pufferlib.
set -euo pipefail

repo=${1:-${PUFFERTANK_REPO:-/home/puffer/pufferlib}}
if [ ! -f "$repo/setup.py" ]; then
  echo "puffertank: ERROR: $repo has no setup.py: mount a PufferTank checkout there, or pass its path" >&2
  exit 2
fi
if ! command -v nvcc >/dev/null && [ ! -x "${CUDA_HOME:-/opt/cuda}/bin/nvcc" ]; then
  echo "puffertank: this image has no CUDA toolkit (built with BUILD_CUDA=0 on a base without one): the GPU Craftax library is left out" >&2
fi
echo "puffertank: compiling $repo's extensions in place" >&2
# -q leaves the progress lines, the compiler's warnings and errors, and nvcc's command.
if ! (cd "$repo" && python setup.py -q build_ext --inplace --parallel "$(nproc)") >&2; then
  echo "puffertank: ERROR: the in-place build of $repo failed (the compiler's output is above); fix it, then run: puffertank-build-inplace" >&2
  exit 1
fi
