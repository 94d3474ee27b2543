#!/usr/bin/env bash
# Sourced by .ci/run: makes nvcc available, so that the build compiles the GPU Craftax library
# and a CUDA compile error fails CI. Uses nvcc from PATH or $CUDA_HOME/bin when there is one;
# otherwise installs CUDA's compiler from PyPI into .ci-cuda/ (ignored) and points CUDA_HOME at it.
cuda_pip_version=13.5.37
cccl_pip_version=13.3.5.0.6
if command -v nvcc >/dev/null 2>&1; then
    echo "CI: nvcc $(command -v nvcc)"
elif [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
    echo "CI: nvcc $CUDA_HOME/bin/nvcc"
else
    target="$PWD/.ci-cuda"
    # The CUDA headers include CCCL's (cuda_bf16.h needs <nv/target>), a package of their own.
    if [ ! -x "$target/nvidia/cu13/bin/nvcc" ] || [ ! -e "$target/nvidia/cu13/include/nv/target" ]; then
        echo "CI: no nvcc here; installing CUDA ${cuda_pip_version}'s compiler from PyPI into $target"
        python3 -m pip install -q --no-deps --target "$target" "nvidia-cuda-nvcc==${cuda_pip_version}" \
            "nvidia-cuda-runtime==${cuda_pip_version}" "nvidia-cuda-crt==${cuda_pip_version}" \
            "nvidia-nvvm==${cuda_pip_version}" "nvidia-cuda-cccl==${cccl_pip_version}"
    fi
    export CUDA_HOME="$target/nvidia/cu13"
    "$CUDA_HOME/bin/nvcc" --version | tail -1
fi
