"""Craftax-Classic as a GPU-resident env: the same game headers as ``ocean.craftax_classic.CraftaxClassic``,
compiled by nvcc (``craftax_classic_gpu.cu`` over the generic device vecenv ``ocean/vecenv_gpu.cuh``)
into ``libcraftax_classic_gpu.so``, one CUDA thread per env. From the same seeds and actions its
observations, rewards, terminals and truncations are bitwise those of the CPU env. The trainer
selects it with ``ocean.make("puffer_craftax_classic", device="cuda")`` or ``[vec] device = cuda``.

Device hooks (what a GPU-aware trainer calls): ``gpu_reset(seed)``, ``gpu_step(actions)`` (a CUDA
tensor, used in place: no host copy, no synchronization, capturable in a CUDA graph),
``gpu_sync_logs()`` (the one synchronizing call) and ``gpu_close()``. The buffers
``observations``, ``rewards``, ``terminals``, ``truncations``, ``masks`` and ``actions`` are CUDA
tensors owned by the env and written in place. ``reset``/``step``/``close``/``render`` give the
plain PufferEnv surface on top.

Importing this module needs neither torch nor a GPU; constructing an env needs both and the CUDA
library (built by ``pip install`` / ``setup.py build_ext`` when nvcc is found).
"""

import ctypes
from pathlib import Path

import gymnasium
import numpy as np

from ocean.craftax_classic import NUM_ACTIONS, binding
from ocean.craftax_classic.state_view import state_fields
from ocean.env import check_int
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
    lib = ctypes.CDLL(str(LIBRARY_PATH))
    c_int, c_void_p = ctypes.c_int, ctypes.c_void_p
    lib.craftax_classic_gpu_error_string.argtypes = [c_int]
    lib.craftax_classic_gpu_error_string.restype = ctypes.c_char_p
    lib.craftax_classic_gpu_state_bytes.restype = ctypes.c_size_t
    lib.craftax_classic_gpu_sum_count.restype = c_int
    lib.craftax_classic_gpu_obs_size.restype = c_int
    lib.craftax_classic_gpu_create.argtypes = [ctypes.POINTER(c_void_p), c_int, c_int, c_void_p, c_void_p, c_void_p,
                                               c_void_p, c_void_p, c_int]
    lib.craftax_classic_gpu_reset.argtypes = [c_void_p, ctypes.c_uint64, c_void_p]
    lib.craftax_classic_gpu_step.argtypes = [c_void_p, c_void_p, c_int, c_void_p]
    lib.craftax_classic_gpu_sync_logs.argtypes = [c_void_p, c_void_p, ctypes.POINTER(ctypes.c_longlong),
                                                  ctypes.POINTER(c_int), c_void_p]
    lib.craftax_classic_gpu_read_state.argtypes = [c_void_p, c_int, c_void_p, c_void_p]
    lib.craftax_classic_gpu_destroy.argtypes = [c_void_p]
    lib.craftax_classic_gpu_destroy.restype = None
    for function in ("create", "reset", "step", "sync_logs", "read_state", "runs_here"):
        getattr(lib, f"craftax_classic_gpu_{function}").restype = c_int
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


def import_torch_cuda(name, device):
    """torch, and ``device`` as a CUDA torch.device with its index; a clear error without either."""
    try:
        import torch
    except ImportError as error:
        raise RuntimeError(f"{name}: the GPU env needs PyTorch with CUDA ({error})") from error
    if torch.version.cuda is None:
        raise RuntimeError(
            f"{name}: this PyTorch ({torch.__version__}) is a CPU-only build; install a CUDA build of "
            f"torch, or use the CPU env ocean.craftax_classic.CraftaxClassic"
        )
    if not torch.cuda.is_available():
        raise RuntimeError(
            f"{name}: no CUDA GPU is visible (torch.cuda.is_available() is False); run on a machine "
            f"with an NVIDIA GPU and driver, or use the CPU env ocean.craftax_classic.CraftaxClassic"
        )
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"{name}: device must be a CUDA device, got {device}")
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return torch, device


class CraftaxClassicGPU:
    """``num_envs`` Craftax-Classic envs on one GPU, with the CPU env's 1,345-float observation.

    Infos of ``step``: every ``log_interval`` steps, the ``gpu_sync_logs()`` dict when episodes
    ended. ``envs_per_warp``: how many envs each warp of the step kernel steps (1, 2, 4, 8, 16 or
    32; the trajectories are the same whatever it is): a warp runs its envs' diverging paths one
    after another, so fewer envs per warp spend less of a step waiting on the others.

    A step that ends an episode leaves the next world's key to the reset kernel, which generates
    the worlds after the step, a thread per world, each in a ~100 KB buffer of device memory: at
    most 8,192 buffers, so with more envs a thread generates those of envs i, i + 8,192, ... in
    turn. The step kernel holds no world generation, so its threads' stacks stay small.
    """

    name = "puffer_craftax_classic"

    def __init__(self, num_envs, device="cuda", log_interval=16, envs_per_warp=8, **params):
        check_keywords(f"{type(self).__name__}()", params, ["device", "log_interval", "envs_per_warp"])
        num_envs = check_int(self.name, "num_envs", num_envs, 1, 2**31 - 1)
        if envs_per_warp not in ENVS_PER_WARP or isinstance(envs_per_warp, bool):
            raise ParameterError(f"{self.name}: envs_per_warp must be one of {ENVS_PER_WARP}, got {envs_per_warp!r}")
        self.log_interval = check_int(self.name, "log_interval", log_interval, 1)
        torch, self.device = import_torch_cuda(self.name, device)
        self._torch = torch
        self._lib = load_library()
        self.num_envs = num_envs
        self.num_agents = num_envs
        self.agents_per_env = 1
        self.single_observation_space = gymnasium.spaces.Box(0.0, 1.0, (binding.OBS_SIZE,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        self.observations = torch.zeros((num_envs, binding.OBS_SIZE), dtype=torch.float32, device=self.device)
        self.rewards = torch.zeros(num_envs, dtype=torch.float32, device=self.device)
        self.terminals = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
        self.truncations = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
        self.masks = torch.ones(num_envs, dtype=torch.bool, device=self.device)
        self.actions = torch.zeros(num_envs, dtype=torch.int32, device=self.device)
        self._sums = np.zeros(len(LOG_FIELDS) + 3, dtype=np.float32)
        handle = ctypes.c_void_p()
        with torch.cuda.device(self.device):
            status = self._lib.craftax_classic_gpu_create(
                ctypes.byref(handle), self.device.index, num_envs, self.observations.data_ptr(),
                self.actions.data_ptr(), self.rewards.data_ptr(), self.terminals.data_ptr(),
                self.truncations.data_ptr(), envs_per_warp,
            )
        self._handle = None
        self._check(status, "create")
        self._handle = handle
        self.started = False
        self.ticks = 0

    def _check(self, status, what):
        if status != 0:
            message = self._lib.craftax_classic_gpu_error_string(status).decode()
            raise RuntimeError(f"{self.name}: CUDA error in {what}: {message}")

    def _stream(self):
        return ctypes.c_void_p(self._torch.cuda.current_stream(self.device).cuda_stream)

    def _require_open(self):
        if self._handle is None:
            raise RuntimeError(f"{self.name}: the env is closed")

    # Device hooks.

    def gpu_reset(self, seed):
        """Env i starts from seed + i, as the CPU env; asynchronous on the current stream."""
        self._require_open()
        self._check(self._lib.craftax_classic_gpu_reset(self._handle, int(seed), self._stream()), "reset")
        self.started = True

    def gpu_step(self, actions):
        """Steps every env with ``actions`` (CUDA tensor [num_envs], int32 or int64) on the current
        stream; no host synchronization and no allocation. Out-of-range actions are reported by
        the next ``gpu_sync_logs()``."""
        self._require_open()
        if actions.device != self.device:
            raise ValueError(f"{self.name}: actions must be on {self.device}, got {actions.device}")
        if actions.dtype not in (self._torch.int32, self._torch.int64):
            raise ValueError(f"{self.name}: actions must be int32 or int64, got {actions.dtype}")
        if actions.shape != (self.num_envs,) or not actions.is_contiguous():
            raise ValueError(
                f"{self.name}: actions must be a contiguous tensor of shape ({self.num_envs},), "
                f"got shape {tuple(actions.shape)}"
            )
        is_int64 = int(actions.dtype == self._torch.int64)
        self._check(self._lib.craftax_classic_gpu_step(self._handle, actions.data_ptr(), is_int64, self._stream()), "step")

    def gpu_sync_logs(self):
        """Waits for the stream, then returns the mean episode statistics since the last call (the
        CPU env's ``log()`` dict) or None when no episode ended. Raises ValueError when an action
        outside 0..16 was given since the last call (that env was not stepped)."""
        self._require_open()
        bad_index, bad_value = ctypes.c_longlong(), ctypes.c_int()
        status = self._lib.craftax_classic_gpu_sync_logs(
            self._handle, self._sums.ctypes.data, ctypes.byref(bad_index), ctypes.byref(bad_value), self._stream()
        )
        self._check(status, "sync_logs")
        if bad_index.value >= 0:
            raise ValueError(
                f"{self.name}: action {bad_value.value} for agent {bad_index.value} is outside the action "
                f"space {self.single_action_space} (valid: 0..{NUM_ACTIONS - 1}); that env was not stepped"
            )
        episodes = float(self._sums[-1])
        if episodes == 0:
            return None
        means = {field: float(self._sums[k]) / episodes for k, field in enumerate(LOG_FIELDS)}
        means["episode_return"] = float(self._sums[-3]) / episodes
        means["episode_length"] = float(self._sums[-2]) / episodes
        means["episodes"] = int(episodes)
        return means

    def gpu_close(self):
        if self._handle is not None:
            self._lib.craftax_classic_gpu_destroy(self._handle)
            self._handle = None
        self.started = False

    # The PufferEnv surface.

    def reset(self, seed=0):
        self.gpu_reset(0 if seed is None else seed)
        self.ticks = 0
        self.gpu_sync_logs()
        return self.observations, []

    def step(self, actions):
        if not self.started:
            raise RuntimeError(f"{self.name}: call reset() before step()")
        if not isinstance(actions, self._torch.Tensor):
            actions = self._torch.as_tensor(np.asarray(actions), device=self.device)
        self.gpu_step(actions.to(self.device))
        self.ticks += 1
        infos = []
        if self.ticks % self.log_interval == 0:
            log = self.gpu_sync_logs()
            if log is not None:
                infos.append(log)
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def state_bytes(self, index=0):
        """Env ``index``'s game state (state_view.STATE_DTYPE) as bytes, copied to the host."""
        self._require_open()
        index = check_int(self.name, "state index", index, 0, self.num_envs - 1)
        state = np.empty(binding.state_size(), dtype=np.uint8)
        self._check(self._lib.craftax_classic_gpu_read_state(self._handle, index, state.ctypes.data, self._stream()),
                    "state")
        return state

    def state(self, index=0):
        """Env ``index``'s game state, copied to the host, as {reference field name: numpy array}."""
        return state_fields(self.state_bytes(index))

    def close(self):
        self.gpu_close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.gpu_close()
