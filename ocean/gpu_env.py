"""The Python side of the device vecenv (``ocean/vecenv_gpu.cuh``): what every GPU env class shares.

A game's CUDA library exports the vecenv's C API under its own prefix (``craftax_gpu_step``,
``craftax_classic_gpu_step``, ...): create (the game's own arguments), reset, step, sync_logs,
read_state, destroy, error_string and runs_here. ``declare_functions`` gives the shared ones their
ctypes signatures; ``DeviceEnv`` holds the buffers every game has (rewards, terminals,
truncations, masks and actions as CUDA tensors), the device hooks a GPU-aware trainer calls
(``gpu_reset``, ``gpu_step``, ``gpu_sync_logs``, ``gpu_close``) and the plain PufferEnv surface
(``reset``/``step``/``close``) on top. A game's class builds its observation buffer, calls its
library's create and hands the handle to ``DeviceEnv``.

Importing this module needs neither torch nor a GPU.
"""

import ctypes

import numpy as np

from ocean.env import check_int

# The C API every game's library exports, each name after the library's prefix.
SHARED_FUNCTIONS = ("error_string", "reset", "step", "sync_logs", "read_state", "destroy", "runs_here")


def declare_functions(library, prefix):
    """Gives ``library``'s shared functions (``prefix`` + name) their ctypes signatures."""
    c_int, c_void_p = ctypes.c_int, ctypes.c_void_p
    function = {name: getattr(library, f"{prefix}{name}") for name in SHARED_FUNCTIONS}
    function["error_string"].argtypes = [c_int]
    function["error_string"].restype = ctypes.c_char_p
    function["reset"].argtypes = [c_void_p, ctypes.c_uint64, c_void_p]
    function["step"].argtypes = [c_void_p, c_void_p, c_int, c_void_p]
    function["sync_logs"].argtypes = [c_void_p, c_void_p, ctypes.POINTER(ctypes.c_longlong), ctypes.POINTER(c_int), c_void_p]
    function["read_state"].argtypes = [c_void_p, c_int, c_void_p, c_void_p]
    function["destroy"].argtypes = [c_void_p]
    function["destroy"].restype = None
    for name in ("reset", "step", "sync_logs", "read_state", "runs_here"):
        function[name].restype = c_int
    return library


def import_torch_cuda(name, device, cpu_env):
    """torch, and ``device`` as a CUDA torch.device with its index; a clear error without either
    that names ``cpu_env``, the CPU version of the env."""
    try:
        import torch
    except ImportError as error:
        raise RuntimeError(f"{name}: the GPU env needs PyTorch with CUDA ({error})") from error
    if torch.version.cuda is None:
        raise RuntimeError(
            f"{name}: this PyTorch ({torch.__version__}) is a CPU-only build; install a CUDA build of "
            f"torch, or use the CPU env {cpu_env}"
        )
    if not torch.cuda.is_available():
        raise RuntimeError(
            f"{name}: no CUDA GPU is visible (torch.cuda.is_available() is False); run on a machine "
            f"with an NVIDIA GPU and driver, or use the CPU env {cpu_env}"
        )
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"{name}: device must be a CUDA device, got {device}")
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return torch, device


class DeviceEnv:
    """``num_envs`` envs of one game on one GPU, one agent each. A subclass sets ``name`` and
    ``log_fields`` (its Log struct's fields in order, as its CPU env's ``log()`` names them) and,
    in its ``__init__``: ``_start_buffers``, its observation buffer and spaces, its library's
    create, then ``_bind``."""

    name = None
    log_fields = ()

    def _start_buffers(self, torch, device, num_envs, log_interval, library, prefix):
        """The buffers and settings every game has, before its library's create reads them."""
        self._torch, self.device, self._lib, self._prefix = torch, device, library, prefix
        self._handle = None
        self.num_envs = self.num_agents = num_envs
        self.agents_per_env = 1
        self.log_interval = log_interval
        self.rewards = torch.zeros(num_envs, dtype=torch.float32, device=device)
        self.terminals = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.truncations = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.masks = torch.ones(num_envs, dtype=torch.bool, device=device)
        self.actions = torch.zeros(num_envs, dtype=torch.int32, device=device)
        self._sums = np.zeros(len(self.log_fields) + 3, dtype=np.float32)  # the Log fields, return, length, episodes
        self.started = False
        self.ticks = 0

    def _call(self, function, *args):
        return getattr(self._lib, f"{self._prefix}{function}")(*args)

    def _bind(self, status, handle):
        """Takes the handle of a create that returned ``status``."""
        self._check(status, "create")
        self._handle = handle

    def _check(self, status, what):
        if status != 0:
            message = self._call("error_string", status).decode()
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
        self._check(self._call("reset", self._handle, int(seed), self._stream()), "reset")
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
        self._check(self._call("step", self._handle, actions.data_ptr(), is_int64, self._stream()), "step")

    def gpu_sync_logs(self):
        """Waits for the stream, then returns the mean episode statistics since the last call (the
        CPU env's ``log()`` dict) or None when no episode ended. Raises ValueError when an action
        outside the action space was given since the last call (that env was not stepped)."""
        self._require_open()
        bad_index, bad_value = ctypes.c_longlong(), ctypes.c_int()
        status = self._call("sync_logs", self._handle, self._sums.ctypes.data, ctypes.byref(bad_index),
                            ctypes.byref(bad_value), self._stream())
        self._check(status, "sync_logs")
        if bad_index.value >= 0:
            raise ValueError(
                f"{self.name}: action {bad_value.value} for agent {bad_index.value} is outside the action "
                f"space {self.single_action_space} (valid: 0..{self.single_action_space.n - 1}); that env was not stepped"
            )
        episodes = float(self._sums[-1])
        if episodes == 0:
            return None
        means = {field: float(self._sums[k]) / episodes for k, field in enumerate(self.log_fields)}
        means["episode_return"] = float(self._sums[-3]) / episodes
        means["episode_length"] = float(self._sums[-2]) / episodes
        means["episodes"] = int(episodes)
        return means

    def gpu_close(self):
        if self._handle is not None:
            self._call("destroy", self._handle)
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

    def _read_state(self, index, what, nbytes):
        """Env ``index``'s game state (``nbytes``), copied to the host; ``what`` names the call in errors."""
        self._require_open()
        index = check_int(self.name, f"{what} index", index, 0, self.num_envs - 1)
        state = np.empty(nbytes, dtype=np.uint8)
        self._check(self._call("read_state", self._handle, index, state.ctypes.data, self._stream()), what)
        return state

    def close(self):
        self.gpu_close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.gpu_close()
