"""Craftax as a GPU-resident env: the same game headers as ``ocean.craftax.Craftax``, compiled by
nvcc (``craftax_gpu.cu`` over ``ocean/vecenv_gpu.cuh``, with Craftax's own kernels from
``device_kernels.cuh``) into ``libcraftax_gpu.so``, one CUDA thread per env. From the same seeds
and actions its observations, rewards, terminals and truncations are bitwise those of the CPU
env. The trainer selects it with ``ocean.make(name, device="cuda")``. The library also carries the
CraftaxCells policy's kernels (``cell_embedding.cu``), which ``embed_cells`` and
``embed_cells_grad`` call, and the pixel observation's (``pixels_gpu.cu``), which
``CraftaxPixelsGPU`` draws with.

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

from ocean.craftax import COMPACT_OBS_BYTES, NUM_ACTIONS, OBS_SIZE, binding, reset_pool
from ocean.craftax.textures import REFERENCE_BLOCK_SIZES, load_atlas
from ocean.env import check_int
from ocean.gpu_env import DeviceEnv, declare_functions, import_torch_cuda

LIBRARY_PATH = Path(__file__).with_name("libcraftax_gpu.so")
WARP = 32
ENVS_PER_WARP = (1, 2, 4, 8, 16, 32)
REBUILD = "python setup.py build_ext --inplace (or pip install -e .)"
CELLS, SCALARS = binding.LAYOUT["view_cells"], binding.LAYOUT["scalars"]
CHANNELS = (OBS_SIZE - SCALARS) // CELLS  # of a cell in the full observation
CELL_WIDTHS = (8, 16, 32, 64)  # of embed_cells' table: its gradient's threads own two columns, a warp whole cells

_library = None


def load_library():
    """The CUDA library, loaded once and checked against the CPU binding's layout."""
    global _library
    if _library is not None:
        return _library
    if not LIBRARY_PATH.exists():
        raise RuntimeError(
            f"CraftaxGPU: {LIBRARY_PATH.name} was not built (nvcc was not found when the package was "
            f"built, or PUFFER_NO_CUDA=1 was set). Install the CUDA compiler (a CUDA toolkit, or "
            f"pip install nvidia-cuda-nvcc nvidia-cuda-runtime) and rebuild: {REBUILD}"
        )
    lib = declare_functions(ctypes.CDLL(str(LIBRARY_PATH)), "craftax_gpu_")
    c_int, c_void_p = ctypes.c_int, ctypes.c_void_p
    lib.craftax_gpu_state_bytes.restype = ctypes.c_size_t
    lib.craftax_gpu_sum_count.restype = c_int
    lib.craftax_gpu_obs_size.argtypes = [c_int]
    lib.craftax_gpu_obs_size.restype = c_int
    lib.craftax_gpu_create.argtypes = [ctypes.POINTER(c_void_p), c_int, c_int, c_int, c_void_p, c_int,
                                       c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_int]
    lib.craftax_gpu_expand.argtypes = [c_void_p, c_void_p, ctypes.c_long, c_int, c_int, c_void_p]
    lib.craftax_gpu_embed_cells.argtypes = [c_void_p, c_void_p, c_int, c_void_p, ctypes.c_long, c_int, c_int, c_void_p]
    lib.craftax_gpu_embed_cells_grad.argtypes = [c_void_p, c_void_p, ctypes.c_long, c_int, c_int, c_int, c_void_p, c_void_p]
    for function in ("create", "expand", "embed_cells", "embed_cells_grad"):
        getattr(lib, f"craftax_gpu_{function}").restype = c_int
    layout = {
        "game state bytes": (lib.craftax_gpu_state_bytes(), binding.STATE_BYTES),
        "log sums": (lib.craftax_gpu_sum_count(), len(binding.LOG_FIELDS) + 3),
        "observation size": (lib.craftax_gpu_obs_size(0), OBS_SIZE),
        "compact observation bytes": (lib.craftax_gpu_obs_size(1), COMPACT_OBS_BYTES),
    }
    for what, (cuda, cpu) in layout.items():
        if cuda != cpu:
            raise RuntimeError(
                f"CraftaxGPU: CUDA build mismatch: {LIBRARY_PATH.name} has {what} {cuda}, the CPU "
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
        return library.craftax_gpu_runs_here() == 0


def expand_observations(compact, dtype, columns=OBS_SIZE):
    """Full observations from compact ones on the GPU, bit for bit what the CPU env would have
    written (rounded to bfloat16 when ``dtype`` is): a [rows, 996] uint8 CUDA tensor -> a new
    [rows, columns] tensor of ``dtype`` (float32 or bfloat16), computed on the current stream.
    ``columns`` (a multiple of 4, at least 8,268) pads each row with zeros past the observation."""
    import torch

    if dtype not in (torch.float32, torch.bfloat16):
        raise ValueError(f"expand_observations: dtype must be float32 or bfloat16, got {dtype}")
    compact = _check_compact("expand_observations", compact)
    if columns < OBS_SIZE or columns % 4:
        raise ValueError(f"expand_observations: columns must be a multiple of 4 and at least {OBS_SIZE}, got {columns}")
    full = torch.empty(compact.shape[0], columns, dtype=dtype, device=compact.device)
    with torch.cuda.device(compact.device):
        _run("expand_observations", "craftax_gpu_expand", compact.data_ptr(), full.data_ptr(), compact.shape[0], columns,
             int(dtype == torch.bfloat16))
    return full


def _check_compact(name, compact):
    """``compact`` as the kernels read it: a contiguous [rows, 996] uint8 CUDA tensor, 4-byte aligned
    (they read each row as 32-bit words)."""
    import torch

    if not compact.is_cuda or compact.dtype != torch.uint8 or compact.dim() != 2 or compact.shape[1] != COMPACT_OBS_BYTES:
        raise ValueError(
            f"{name}: needs a [rows, {COMPACT_OBS_BYTES}] uint8 CUDA tensor, got "
            f"{list(compact.shape)} {compact.dtype} on {compact.device}"
        )
    compact = compact.contiguous()
    return compact.clone() if compact.data_ptr() % 4 else compact


def _check_columns(name, columns, width):
    if columns % 8 or columns < CELLS * width + SCALARS:
        raise ValueError(f"{name}: columns must be a multiple of 8 and at least {CELLS * width + SCALARS}, got {columns}")


def _run(name, function, *arguments):
    import torch

    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    status = getattr(load_library(), function)(*arguments, stream)
    if status != 0:
        raise RuntimeError(f"{name}: {load_library().craftax_gpu_error_string(status).decode()}")


def embed_cells(compact, table, columns, dtype):
    """The cell-embedding policy's input on the GPU (``ocean.craftax.policy.CraftaxCells``): each
    of a row's 99 cells as the sum of the rows of ``table`` ([83, width] float32, width 8, 16, 32
    or 64) for the channels the cell has in the full observation; then the 51 scalars; then zeros
    to ``columns`` (a multiple of 8). [rows, 996] uint8 -> a new [rows, columns] tensor of
    ``dtype`` (float32 or bfloat16), on the current stream."""
    import torch

    width = table.shape[-1]
    if dtype not in (torch.float32, torch.bfloat16):
        raise ValueError(f"embed_cells: dtype must be float32 or bfloat16, got {dtype}")
    if table.dtype != torch.float32 or table.shape != (CHANNELS, width) or width not in CELL_WIDTHS:
        raise ValueError(f"embed_cells: table must be [{CHANNELS}, width] float32, width one of {CELL_WIDTHS}; "
                         f"got {list(table.shape)} {table.dtype}")
    _check_columns("embed_cells", columns, width)
    compact = _check_compact("embed_cells", compact)
    if table.device != compact.device:
        raise ValueError(f"embed_cells: table is on {table.device}, the observations on {compact.device}")
    table = table.contiguous()
    out = torch.empty(compact.shape[0], columns, dtype=dtype, device=compact.device)
    with torch.cuda.device(compact.device):
        _run("embed_cells", "craftax_gpu_embed_cells", compact.data_ptr(), table.data_ptr(), width, out.data_ptr(),
             compact.shape[0], columns, int(dtype == torch.bfloat16))
    return out


def embed_cells_grad(compact, grad, width):
    """The gradient of ``embed_cells``' table ([83, width] float32) given its output's ``grad``
    ([rows, columns], float32 or bfloat16), on the current stream."""
    import torch

    if width not in CELL_WIDTHS:
        raise ValueError(f"embed_cells_grad: width must be one of {CELL_WIDTHS}, got {width}")
    compact = _check_compact("embed_cells_grad", compact)
    if grad.dtype not in (torch.float32, torch.bfloat16) or grad.dim() != 2 or grad.shape[0] != compact.shape[0]:
        raise ValueError(f"embed_cells_grad: grad must be [{compact.shape[0]}, columns] float32 or bfloat16, got "
                         f"{list(grad.shape)} {grad.dtype}")
    _check_columns("embed_cells_grad", grad.shape[1], width)
    if grad.device != compact.device:
        raise ValueError(f"embed_cells_grad: grad is on {grad.device}, the observations on {compact.device}")
    grad = grad.contiguous()
    table_grad = torch.empty(CHANNELS, width, dtype=torch.float32, device=compact.device)
    with torch.cuda.device(compact.device):
        _run("embed_cells_grad", "craftax_gpu_embed_cells_grad", compact.data_ptr(), grad.data_ptr(), compact.shape[0],
             grad.shape[1], width, int(grad.dtype == torch.bfloat16), table_grad.data_ptr())
    return table_grad


class CraftaxGPU(DeviceEnv):
    """``num_envs`` Craftax envs on one GPU (a multiple of 32); the full 8,268-float observation.

    ``reset_pool_size`` / ``reset_pool_seed``: as the CPU env (the pool is generated on the host
    with all cores and uploaded once). Infos of ``step``: every ``log_interval`` steps, the
    ``gpu_sync_logs()`` dict when episodes ended. ``envs_per_warp``: how many envs each warp of
    the step kernel steps (1, 2, 4, 8, 16 or 32; the trajectories are the same whatever it is); by
    default the fastest measured for the env count (ocean/craftax/device_kernels.cuh).
    """

    name = "puffer_craftax"
    log_fields = binding.LOG_FIELDS
    compact = False

    def __init__(self, num_envs, reset_pool_size=0, reset_pool_seed=0, device="cuda", log_interval=16, envs_per_warp=None):
        num_envs = check_int(self.name, "num_envs", num_envs, 1)
        if num_envs % WARP != 0:
            raise ValueError(f"{self.name}: the GPU env needs num_envs to be a multiple of {WARP}, got {num_envs}")
        if envs_per_warp is not None and envs_per_warp not in ENVS_PER_WARP:
            raise ValueError(f"{self.name}: envs_per_warp must be one of {ENVS_PER_WARP} (or None), got {envs_per_warp!r}")
        reset_pool_size = check_int(self.name, "reset_pool_size", reset_pool_size, 0, 1 << 16)
        reset_pool_seed = check_int(self.name, "reset_pool_seed", reset_pool_seed, 0, 2**31 - 1)
        log_interval = check_int(self.name, "log_interval", log_interval, 1)
        torch, device = import_torch_cuda(self.name, device, "ocean.craftax.Craftax")
        self._start_buffers(torch, device, num_envs, log_interval, load_library(), "craftax_gpu_")
        self.single_observation_space, self.observations, step_observations = self._observation_buffers()
        self.single_action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        pool = None
        if reset_pool_size:
            pool = reset_pool(reset_pool_size, reset_pool_seed, os.cpu_count() or 1)
        handle = ctypes.c_void_p()
        with torch.cuda.device(self.device):
            status = self._lib.craftax_gpu_create(
                ctypes.byref(handle), self.device.index, num_envs, int(self.compact),
                None if pool is None else pool.ctypes.data, reset_pool_size,
                step_observations.data_ptr(), self.actions.data_ptr(), self.rewards.data_ptr(),
                self.terminals.data_ptr(), self.truncations.data_ptr(), envs_per_warp or 0,
            )
        self._bind(status, handle)

    def _observation_buffers(self):
        """The observation space, the observation buffer, and the buffer the step kernels write
        (compact observations when ``compact``, else full ones: the observation buffer itself)."""
        torch = self._torch
        if self.compact:
            space = gymnasium.spaces.Box(0, 255, (COMPACT_OBS_BYTES,), np.uint8)
            observations = torch.zeros((self.num_envs, COMPACT_OBS_BYTES), dtype=torch.uint8, device=self.device)
        else:
            space = gymnasium.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32)
            observations = torch.zeros((self.num_envs, OBS_SIZE), dtype=torch.float32, device=self.device)
        return space, observations, observations

    def state(self, index=0):
        """Env ``index``'s game state, copied to the host, as {reference field name: numpy array}."""
        return binding.state_fields(self._read_state(index, "state", binding.STATE_BYTES))

    def render(self, index=0):
        """ANSI text of env ``index`` (copies its state to the host; the CPU env's renderer)."""
        state = self._read_state(index, "render", binding.STATE_BYTES)
        return binding.render_state(state, int(self.actions[index].item()))


class CraftaxCompactGPU(CraftaxGPU):
    """CraftaxGPU with the compact 996-byte observation (``ocean.craftax.CraftaxCompact``'s)."""

    name = "puffer_craftax_compact"
    compact = True


def declare_pixel_kernel(library):
    """``library`` with its pixel observation entry points declared; RuntimeError if it was built
    without them or from another renderer than the CPU binding's."""
    if not hasattr(library, "craftax_gpu_pixel_observations"):
        raise RuntimeError(f"CraftaxPixelsGPU: {LIBRARY_PATH.name} was built without the pixel observation kernel; "
                           f"rebuild it: {REBUILD}")
    library.craftax_gpu_pixel_observations.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                                       ctypes.c_void_p]
    library.craftax_gpu_pixel_observations.restype = ctypes.c_int
    library.craftax_gpu_atlas_bytes.argtypes = [ctypes.c_int]
    library.craftax_gpu_atlas_bytes.restype = ctypes.c_long
    for block in REFERENCE_BLOCK_SIZES:
        if library.craftax_gpu_atlas_bytes(block) != binding.atlas_bytes(block):
            raise RuntimeError(f"CraftaxPixelsGPU: CUDA build mismatch: {LIBRARY_PATH.name} reads a texture atlas of "
                               f"{library.craftax_gpu_atlas_bytes(block)} bytes at {block} pixels a cell, the CPU binding "
                               f"{binding.atlas_bytes(block)}; rebuild both: {REBUILD}")
    return library


class CraftaxPixelsGPU(CraftaxGPU):
    """CraftaxGPU observed in pixels: ``ocean.craftax.CraftaxPixels``' observation (the reference's
    frame at ``observation_block_size`` pixels a cell, 10 by default: 130 x 110 x 3, over 255,
    float32), bit for bit, from the same seeds and actions. The step kernels write compact
    observations into a buffer of their own; after every reset and step a kernel with a thread
    per 8 pixels of a row (pixels_gpu.cu, over render_pixels.h) draws each env's frame from a
    texture atlas uploaded to the GPU once. ``textures``: the folder of the reference's PNGs, as
    the CPU env's (by default the installed ``craftax`` package's).
    """

    name = "puffer_craftax_pixels"
    compact = True  # what the step kernels write

    def __init__(self, num_envs, reset_pool_size=0, reset_pool_seed=0, device="cuda", log_interval=16, envs_per_warp=None,
                 observation_block_size=10, textures="auto"):
        self.observation_block_size = check_int(self.name, "observation_block_size", observation_block_size,
                                                binding.MIN_BLOCK_PIXELS, 64)
        # Read before anything is allocated on the GPU: a missing texture folder fails at once.
        atlas = load_atlas(self.observation_block_size, None if textures in (None, "auto") else textures)
        super().__init__(num_envs, reset_pool_size=reset_pool_size, reset_pool_seed=reset_pool_seed, device=device,
                         log_interval=log_interval, envs_per_warp=envs_per_warp)
        declare_pixel_kernel(self._lib)
        self._atlas = self._torch.from_numpy(atlas.copy()).to(self.device)  # load_atlas' array is read-only

    def _observation_buffers(self):
        torch = self._torch
        shape = binding.frame_shape(self.observation_block_size)
        space = gymnasium.spaces.Box(0.0, 1.0, shape, np.float32)
        pixels = torch.zeros((self.num_envs, *shape), dtype=torch.float32, device=self.device)
        self._compact_observations = torch.zeros((self.num_envs, COMPACT_OBS_BYTES), dtype=torch.uint8, device=self.device)
        return space, pixels, self._compact_observations

    def gpu_reset(self, seed):
        super().gpu_reset(seed)
        self._draw_observations()

    def gpu_step(self, actions):
        super().gpu_step(actions)
        self._draw_observations()

    def _draw_observations(self):
        with self._torch.cuda.device(self.device):
            status = self._lib.craftax_gpu_pixel_observations(self._handle, self._atlas.data_ptr(), self.observation_block_size,
                                                              self.observations.data_ptr(), self._stream())
        self._check(status, "pixel observations")
