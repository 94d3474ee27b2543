"""Craftax-Classic as a GPU-resident env: the same game headers as ``ocean.craftax_classic.CraftaxClassic``,
compiled by nvcc (``craftax_classic_gpu.cu`` over the generic device vecenv ``ocean/vecenv_gpu.cuh``)
into ``libcraftax_classic_gpu.so``, one CUDA thread per env. From the same seeds and actions its
observations, rewards, terminals and truncations are bitwise those of the CPU env. The trainer
selects it with ``ocean.make("puffer_craftax_classic", device="cuda")`` or ``[vec] device = cuda``.

The device hooks a GPU-aware trainer calls (``gpu_reset``, ``gpu_step``, ``gpu_sync_logs``,
``gpu_close``), the CUDA buffers written in place and the plain PufferEnv surface are
``ocean.gpu_env.DeviceEnv``'s.

Importing this module needs neither torch nor a GPU; constructing an env needs both and the CUDA
library (built by ``pip install`` / ``setup.py build_ext`` when nvcc is found).
"""

import ctypes
import os
from pathlib import Path

import gymnasium
import numpy as np

from ocean.craftax_classic import NUM_ACTIONS, binding, reset_pool
from ocean.craftax_classic.state_view import state_fields
from ocean.env import check_int
from ocean.gpu_env import DeviceEnv, declare_functions, import_torch_cuda
from pufferlib.exceptions import ParameterError, check_keywords

LIBRARY_PATH = Path(__file__).with_name("libcraftax_classic_gpu.so")
ENVS_PER_WARP = (1, 2, 4, 8, 16, 32)
REBUILD = "python setup.py build_ext --inplace (or pip install -e .)"
# The Log struct's fields in order (craftax_classic.h), as the CPU env's log() names them.
LOG_FIELDS = (
    "score", "died", "collect_wood", "place_table", "eat_cow", "collect_sapling", "collect_drink", "make_wood_pickaxe",
    "make_wood_sword", "place_plant", "defeat_zombie", "collect_stone", "place_stone", "eat_plant", "defeat_skeleton",
    "make_stone_pickaxe", "make_stone_sword", "wake_up", "place_furnace", "collect_coal", "collect_iron",
    "collect_diamond", "make_iron_pickaxe", "make_iron_sword",
)

_library = None


def load_library():
    """The CUDA library, loaded once and checked against the CPU binding's layout."""
    global _library
    if _library is not None:
        return _library
    if not LIBRARY_PATH.exists():
        raise RuntimeError(
            f"CraftaxClassicGPU: {LIBRARY_PATH.name} was not built (nvcc was not found when the package was "
            f"built, or PUFFER_NO_CUDA=1 was set). Install the CUDA compiler (a CUDA toolkit, or "
            f"pip install nvidia-cuda-nvcc nvidia-cuda-runtime) and rebuild: {REBUILD}"
        )
    lib = declare_functions(ctypes.CDLL(str(LIBRARY_PATH)), "craftax_classic_gpu_")
    c_int, c_void_p = ctypes.c_int, ctypes.c_void_p
    lib.craftax_classic_gpu_state_bytes.restype = ctypes.c_size_t
    lib.craftax_classic_gpu_sum_count.restype = c_int
    lib.craftax_classic_gpu_obs_size.restype = c_int
    lib.craftax_classic_gpu_create.argtypes = [ctypes.POINTER(c_void_p), c_int, c_int, c_void_p, c_int, c_void_p,
                                               c_void_p, c_void_p, c_void_p, c_void_p, c_int]
    lib.craftax_classic_gpu_create.restype = c_int
    layout = {
        "game state bytes": (lib.craftax_classic_gpu_state_bytes(), binding.state_size()),
        "log sums": (lib.craftax_classic_gpu_sum_count(), len(LOG_FIELDS) + 3),
        "observation size": (lib.craftax_classic_gpu_obs_size(), binding.OBS_SIZE),
    }
    for what, (cuda, cpu) in layout.items():
        if cuda != cpu:
            raise RuntimeError(
                f"CraftaxClassicGPU: CUDA build mismatch: {LIBRARY_PATH.name} has {what} {cuda}, the CPU "
                f"binding {cpu}; the two were built from different sources. Rebuild both: {REBUILD}"
            )
    _library = lib
    return lib


def library_runs_on(device):
    """Whether the CUDA library is built and has code for the GPU ``device`` (a torch.device or
    index): a GPU of an architecture it was not compiled for has none (PUFFER_CUDA_ARCH)."""
    import torch

    if not LIBRARY_PATH.exists():
        return False
    library = load_library()
    with torch.cuda.device(device):
        return library.craftax_classic_gpu_runs_here() == 0


class CraftaxClassicGPU(DeviceEnv):
    """``num_envs`` Craftax-Classic envs on one GPU, with the CPU env's 1,345-float observation.

    Infos of ``step``: every ``log_interval`` steps, the ``gpu_sync_logs()`` dict when episodes
    ended. ``envs_per_warp``: how many envs each warp of the step kernel steps (1, 2, 4, 8, 16 or
    32; the trajectories are the same whatever it is): a warp runs its envs' diverging paths one
    after another, so fewer envs per warp spend less of a step waiting on the others.

    ``reset_pool_size`` / ``reset_pool_seed``: as the CPU env's (the pool is generated on the host
    with all cores by the CPU env's function and uploaded once); the trajectories are the CPU
    env's with the same pool.

    A step that ends an episode leaves the next world's key to the reset kernel, which runs after
    the step. With a pool, every lane of a warp in which an env resets helps copy its pool world.
    Without one it generates the worlds, a thread per world, each in a ~100 KB buffer of device
    memory: at most 8,192 buffers, so with more envs a thread generates those of envs i,
    i + 8,192, ... in turn, and any env that resets holds the reset kernel for a whole world's
    generation. The step kernel holds no world generation, so its threads' stacks stay small.
    """

    name = "puffer_craftax_classic"
    log_fields = LOG_FIELDS

    def __init__(self, num_envs, reset_pool_size=0, reset_pool_seed=0, device="cuda", log_interval=16, envs_per_warp=8,
                 **params):
        check_keywords(f"{type(self).__name__}()", params,
                       ["reset_pool_size", "reset_pool_seed", "device", "log_interval", "envs_per_warp"])
        num_envs = check_int(self.name, "num_envs", num_envs, 1, 2**31 - 1)
        if envs_per_warp not in ENVS_PER_WARP or isinstance(envs_per_warp, bool):
            raise ParameterError(f"{self.name}: envs_per_warp must be one of {ENVS_PER_WARP}, got {envs_per_warp!r}")
        reset_pool_size = check_int(self.name, "reset_pool_size", reset_pool_size, 0, 1 << 16)
        reset_pool_seed = check_int(self.name, "reset_pool_seed", reset_pool_seed, 0, 2**31 - 1)
        log_interval = check_int(self.name, "log_interval", log_interval, 1)
        torch, device = import_torch_cuda(self.name, device, "ocean.craftax_classic.CraftaxClassic")
        self._start_buffers(torch, device, num_envs, log_interval, load_library(), "craftax_classic_gpu_")
        self.single_observation_space = gymnasium.spaces.Box(0.0, 1.0, (binding.OBS_SIZE,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        self.observations = torch.zeros((num_envs, binding.OBS_SIZE), dtype=torch.float32, device=self.device)
        pool = reset_pool(reset_pool_size, reset_pool_seed, os.cpu_count() or 1) if reset_pool_size else None
        handle = ctypes.c_void_p()
        with torch.cuda.device(self.device):
            status = self._lib.craftax_classic_gpu_create(
                ctypes.byref(handle), self.device.index, num_envs, None if pool is None else pool.ctypes.data,
                reset_pool_size, self.observations.data_ptr(),
                self.actions.data_ptr(), self.rewards.data_ptr(), self.terminals.data_ptr(),
                self.truncations.data_ptr(), envs_per_warp,
            )
        self._bind(status, handle)

    def state_bytes(self, index=0):
        """Env ``index``'s game state (state_view.STATE_DTYPE) as bytes, copied to the host."""
        return self._read_state(index, "state", binding.state_size())

    def state(self, index=0):
        """Env ``index``'s game state, copied to the host, as {reference field name: numpy array}."""
        return state_fields(self.state_bytes(index))
