"""Craftax's pixel observation on the GPU (ocean.craftax.gpu.CraftaxPixelsGPU, pixels_gpu.cu)
against the CPU pixel env (ocean.craftax.CraftaxPixels), bit for bit.

The kernel's threads draw a few pixels of a row each (render_observation_run in render_pixels.h);
on the CPU that drawing is checked against whole frames over the renderer's test scenarios, and
the kernel's source compiles with nvcc. GPU tests are marked ``gpu`` and skip, saying why, without torch with CUDA, a
visible GPU or the CUDA library.
"""

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import unavailable

binding = pytest.importorskip("ocean.craftax.binding", reason="build the extensions first: python setup.py build_ext --inplace")

import ocean.craftax as craftax  # noqa: E402
from ocean.craftax import gpu, textures  # noqa: E402
from pufferlib.exceptions import ParameterError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CRAFTAX_SOURCES = ROOT / "ocean" / "craftax"


def require_textures():
    try:
        return textures.installed_assets()
    except FileNotFoundError as error:
        unavailable(str(error))


# The drawing of runs of a row, as the kernel's threads draw them, on the host.

RUN_BY_RUN = """#include "render_pixels.h"
void render_by_runs(const GameState* s, const uint8_t* atlas, int block, int run, float* out) {
    RenderTextures t = {block, atlas};
    int height = render_height(block), width = render_width(block);
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x += run)
            render_observation_run(s, s, &t, y, x, width - x < run ? width - x : run, out + ((long)y * width + x) * 3);
}
"""


@pytest.fixture(scope="module")
def run_by_run(tmp_path_factory):
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler (gcc, cc) to build the run-by-run renderer")
    folder = tmp_path_factory.mktemp("run_by_run")
    (folder / "pixels.c").write_text(RUN_BY_RUN)
    # The Craftax binding's flags: no FMA contraction, no fast math.
    result = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off",
                             "-fno-fast-math", f"-I{ROOT / 'ocean'}", f"-I{CRAFTAX_SOURCES}", str(folder / "pixels.c"),
                             "-o", str(folder / "pixels.so"), "-lm"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    library = ctypes.CDLL(str(folder / "pixels.so"))
    library.render_by_runs.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    return library


def test_frames_drawn_run_by_run_are_the_observations_bit_for_bit(run_by_run):
    from test_craftax_render import SCENARIOS

    require_textures()
    for block in (binding.MIN_BLOCK_PIXELS, 10, 16):
        atlas = textures.load_atlas(block)
        for name, state in SCENARIOS:
            expected = binding.render_pixels(state, atlas, block) * np.float32(1 / 255)
            for run in (1, 8):  # single pixels; the kernel's runs, the last of a row cut short
                drawn = np.full(binding.frame_shape(block), np.nan, np.float32)
                run_by_run.render_by_runs(state.ctypes.data, atlas.ctypes.data, block, run, drawn.ctypes.data)
                assert np.array_equal(drawn.view(np.uint32), expected.view(np.uint32)), f"{name}: {block} pixels a cell, runs of {run}"


@pytest.mark.slow
def test_pixel_kernel_compiles_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed")
    result = subprocess.run([nvcc, "-std=c++17", "--fmad=false", "-Werror", "all-warnings", f"-I{ROOT / 'ocean'}",
                             f"-I{CRAFTAX_SOURCES}", "-c", str(CRAFTAX_SOURCES / "pixels_gpu.cu"), "-o", str(tmp_path / "pixels.o")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# The env's arguments, checked before any GPU is needed.

def test_bad_arguments_are_clear_errors_before_the_gpu(tmp_path):
    with pytest.raises(ParameterError, match="observation_block_size must be between 3 and 64, got 2"):
        gpu.CraftaxPixelsGPU(64, observation_block_size=2)
    with pytest.raises(FileNotFoundError, match="no such folder"):
        gpu.CraftaxPixelsGPU(64, textures=tmp_path / "missing")
    require_textures()
    with pytest.raises(ValueError, match="multiple of 32"):
        gpu.CraftaxPixelsGPU(100)


def test_no_gpu_is_a_clear_error():
    torch = pytest.importorskip("torch", reason="the GPU env needs PyTorch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the error does not arise")
    require_textures()
    with pytest.raises(RuntimeError, match="CPU-only build|no CUDA GPU is visible"):
        gpu.CraftaxPixelsGPU(64)


def test_a_library_without_the_pixel_kernel_names_the_fix():
    class Library:  # a library built before the pixel kernel existed
        pass

    with pytest.raises(RuntimeError, match="built without the pixel observation kernel; rebuild it: python setup.py"):
        gpu.declare_pixel_kernel(Library())


# On the GPU.

@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch", reason="the GPU env needs PyTorch")
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA GPU visible to torch {torch.__version__}")
    if not gpu.LIBRARY_PATH.exists():
        pytest.skip(f"{gpu.LIBRARY_PATH.name} not built (no nvcc at build time)")
    require_textures()
    return torch


def assert_same_observations(cpu_env, gpu_env, step):
    device = gpu_env.observations.cpu().numpy()
    same = (device.view(np.uint32) == cpu_env.observations.view(np.uint32)).reshape(len(device), -1).all(axis=1)
    if not same.all():
        pytest.fail(f"step {step}: pixel observations differ in envs {np.nonzero(~same)[0][:10].tolist()} "
                    f"({int((~same).sum())} envs)")


@pytest.mark.gpu
@pytest.mark.parametrize("num_envs,steps,pool_size,block", [(256, 300, 16, 10), (64, 200, 0, 10), (32, 40, 4, 16),
                                                             (32, 40, 4, 3)])
def test_gpu_pixel_observations_equal_the_cpu_envs_bit_for_bit(torch, num_envs, steps, pool_size, block):
    """Through resets (pool worlds whose light maps the device env borrows, or generated worlds),
    autoresets and nightfall, every step's observations of every env."""
    cpu_env = craftax.CraftaxPixels(num_envs=num_envs, num_threads=os.cpu_count() or 1, reset_pool_size=pool_size,
                                    reset_pool_seed=7, observation_block_size=block)
    gpu_env = gpu.CraftaxPixelsGPU(num_envs, reset_pool_size=pool_size, reset_pool_seed=7, observation_block_size=block)
    assert gpu_env.single_observation_space == cpu_env.single_observation_space
    assert tuple(gpu_env.observations.shape) == cpu_env.observations.shape
    cpu_env.reset(seed=3)
    gpu_env.reset(seed=3)
    assert_same_observations(cpu_env, gpu_env, 0)
    rng = np.random.default_rng(block)
    ended = 0
    for step in range(1, steps + 1):
        actions = rng.integers(0, craftax.NUM_ACTIONS, size=num_envs, dtype=np.int32)
        cpu_env.step(actions)
        gpu_env.step(torch.as_tensor(actions, device=gpu_env.device))
        assert np.array_equal(cpu_env.terminals, gpu_env.terminals.cpu().numpy())
        ended += int(cpu_env.terminals.sum() + cpu_env.truncations.sum())
        assert_same_observations(cpu_env, gpu_env, step)
    if num_envs >= 64:
        assert ended > 0  # observations after autoresets were compared
    cpu_env.close()
    gpu_env.close()
