"""The GPU Craftax-Classic env (ocean/craftax_classic/gpu.py) against the CPU env, bit for bit.

GPU tests are marked ``gpu`` and skip, saying why, without torch with CUDA, a visible GPU or the
CUDA library. The build and error tests run everywhere: where nvcc exists the library must have
been built.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

binding = pytest.importorskip("ocean.craftax_classic.binding",
                              reason="build the extensions first: python setup.py build_ext --inplace")

import ocean  # noqa: E402
from ocean.craftax_classic import NUM_ACTIONS, CraftaxClassic, gpu  # noqa: E402
from ocean.craftax_classic.state_view import state_fields  # noqa: E402
from pufferlib.exceptions import ParameterError, UnknownParameterError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def find_nvcc():
    """Where setup.py looks: PATH, then $CUDA_HOME/bin."""
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    candidate = Path(cuda_home, "bin", "nvcc") if cuda_home else None
    return shutil.which("nvcc") or (str(candidate) if candidate and os.access(candidate, os.X_OK) else None)


def test_cuda_library_is_built_where_nvcc_exists():
    if os.environ.get("PUFFER_NO_CUDA") == "1":
        pytest.skip("PUFFER_NO_CUDA=1: the CUDA library is opted out")
    if find_nvcc() is None:
        pytest.skip("nvcc not found (PATH, $CUDA_HOME/bin): the CUDA library is not built here")
    assert gpu.LIBRARY_PATH.exists(), f"nvcc is at {find_nvcc()} but {gpu.LIBRARY_PATH} was not built"
    gpu.load_library()  # loads without a GPU (static cudart) and matches the CPU binding's layout


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """craftax_classic_gpu.cu with setup.py's flags for parity (no FMA contraction, no fast math),
    warnings as errors, and ptxas's report of each kernel's resources."""
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found (PATH, $CUDA_HOME/bin)")
    output = tmp_path_factory.mktemp("classic") / "classic.o"
    return subprocess.run(
        [nvcc, "-x", "cu", "-std=c++17", "--fmad=false", "-Xcompiler", "-ffp-contract=off,-fno-fast-math", "-Werror",
         "all-warnings", "-Xptxas", "-v", f"-I{ROOT / 'ocean'}", f"-I{ROOT / 'ocean' / 'craftax_classic'}", "-c",
         str(ROOT / "ocean" / "craftax_classic" / "craftax_classic_gpu.cu"), "-o", str(output)],
        capture_output=True, text=True,
    )


def stack_frames(ptxas_report):
    """{kernel's mangled name: its stack frame's bytes} from ptxas -v's report."""
    frames = dict(re.findall(r"Function properties for (\w+)\n\s+(\d+) bytes stack frame", ptxas_report))
    return {name: int(size) for name, size in frames.items()}


@pytest.mark.slow
def test_the_library_compiles_without_warnings(compiled):
    """The Classic headers, the generic device vecenv and the trig tables' shim."""
    assert compiled.returncode == 0, compiled.stderr


@pytest.mark.slow
def test_step_kernels_keep_a_small_stack_frame(compiled):
    """The step leaves world generation (and its 100 KB of scratch) to Classic's reset kernel, which
    the vecenv lends scratch memory: every resident thread reserves the largest frame of any kernel,
    so the step's must stay a few KB, and the reset's must not hold the scratch either."""
    assert compiled.returncode == 0, compiled.stderr
    frames = stack_frames(compiled.stderr)
    steps = {name: size for name, size in frames.items() if name.startswith("_Z19vec_gpu_step_kernel")}
    resets = {name: size for name, size in frames.items() if name.startswith("_Z20classic_reset_kernel")}
    assert len(steps) == 2 and len(resets) == 1, sorted(frames)
    assert max(steps.values()) <= 2048, steps
    assert max(resets.values()) <= 8192, resets


def test_registered_as_the_gpu_version_of_puffer_craftax_classic():
    assert ocean.env_creator("puffer_craftax_classic", device="cuda") is gpu.CraftaxClassicGPU
    assert ocean.env_creator("craftax_classic") is CraftaxClassic


def test_bad_counts_and_parameters_are_rejected_before_the_gpu():
    with pytest.raises(ParameterError, match="num_envs must be between 1 and"):
        gpu.CraftaxClassicGPU(0)
    with pytest.raises(ParameterError, match=r"envs_per_warp must be one of \(1, 2, 4, 8, 16, 32\), got 3"):
        gpu.CraftaxClassicGPU(64, envs_per_warp=3)
    with pytest.raises(ParameterError, match="log_interval must be >= 1, got 0"):
        gpu.CraftaxClassicGPU(64, log_interval=0)
    with pytest.raises(ParameterError, match="reset_pool_size must be between 0 and 65536, got -1"):
        gpu.CraftaxClassicGPU(64, reset_pool_size=-1)
    with pytest.raises(ParameterError, match="reset_pool_seed must be between 0 and 2147483647, got -1"):
        gpu.CraftaxClassicGPU(64, reset_pool_size=8, reset_pool_seed=-1)
    with pytest.raises(UnknownParameterError,
                       match="'reset_pool'.*Valid: reset_pool_size, reset_pool_seed, device, log_interval, envs_per_warp"):
        gpu.CraftaxClassicGPU(64, reset_pool=8)


def test_missing_cuda_library_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu, "_library", None)
    monkeypatch.setattr(gpu, "LIBRARY_PATH", tmp_path / "libcraftax_classic_gpu.so")
    with pytest.raises(RuntimeError, match="was not built.*nvcc"):
        gpu.load_library()


def test_cuda_library_built_from_other_sources_is_refused(monkeypatch):
    if not gpu.LIBRARY_PATH.exists():
        pytest.skip(f"{gpu.LIBRARY_PATH.name} not built (no nvcc at build time)")
    monkeypatch.setattr(gpu, "_library", None)
    monkeypatch.setattr(binding, "state_size", lambda: 12)
    with pytest.raises(RuntimeError, match="CUDA build mismatch: .*game state bytes .* the CPU binding 12"):
        gpu.load_library()


def test_cpu_only_torch_or_no_gpu_is_a_clear_error():
    torch = pytest.importorskip("torch", reason="the GPU env needs PyTorch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the error cases do not arise")
    with pytest.raises(RuntimeError, match="CPU-only build|no CUDA GPU is visible"):
        gpu.CraftaxClassicGPU(64)


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch", reason="the GPU env needs PyTorch")
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA GPU visible to torch {torch.__version__}")
    if not gpu.LIBRARY_PATH.exists():
        pytest.skip(f"{gpu.LIBRARY_PATH.name} not built (no nvcc at build time)")
    return torch


def make_pair(num_envs, seed, envs_per_warp=8, pool_size=0):
    # The CPU env's step() would consume its logs every log_interval steps; the tests read them.
    cpu_env = CraftaxClassic(num_envs=num_envs, reset_pool_size=pool_size, reset_pool_seed=7,
                             num_threads=os.cpu_count() or 1, log_interval=2**31 - 1)
    gpu_env = gpu.CraftaxClassicGPU(num_envs, reset_pool_size=pool_size, reset_pool_seed=7, envs_per_warp=envs_per_warp)
    cpu_env.reset(seed=seed)
    gpu_env.reset(seed=seed)
    return cpu_env, gpu_env


def assert_same(cpu_env, gpu_env, step):
    buffers = {
        "observations": (cpu_env.observations, gpu_env.observations),
        "rewards": (cpu_env.rewards, gpu_env.rewards),
        "terminals": (cpu_env.terminals, gpu_env.terminals),
        "truncations": (cpu_env.truncations, gpu_env.truncations),
    }
    for name, (host, device) in buffers.items():
        device = device.cpu().numpy()
        host = np.asarray(host).astype(device.dtype)
        if not np.array_equal(host.view(np.uint8), device.view(np.uint8)):
            rows = np.nonzero((host.view(np.uint8) != device.view(np.uint8)).reshape(len(host), -1).any(axis=1))[0]
            pytest.fail(f"step {step}: {name} differ in envs {rows[:10].tolist()} ({len(rows)} envs)")


def assert_same_states(cpu_env, gpu_env, step, indices):
    for index in indices:
        host, device = binding.env_state_bytes(cpu_env.c_envs, index), gpu_env.state_bytes(index)
        if not np.array_equal(host, device):
            fields = [name for name, value in state_fields(host).items()
                      if not np.array_equal(value, state_fields(device)[name])]
            pytest.fail(f"step {step}: env {index}'s state differs in {fields}")


def assert_parity(torch, num_envs, steps, seed, envs_per_warp=8, state_every=50, pool_size=0):
    """Random actions from the same seeds (and reset pool) on both envs: every buffer after every
    step, and whole states every ``state_every`` steps, equal bit for bit, through episodes that end."""
    cpu_env, gpu_env = make_pair(num_envs, seed, envs_per_warp, pool_size)
    rng = np.random.default_rng(seed)
    assert_same(cpu_env, gpu_env, 0)
    assert_same_states(cpu_env, gpu_env, 0, range(num_envs))
    ended = 0
    for step in range(1, steps + 1):
        actions = rng.integers(0, NUM_ACTIONS, size=num_envs, dtype=np.int32)
        cpu_env.step(actions)
        gpu_env.gpu_step(torch.from_numpy(actions).to(gpu_env.device))
        assert_same(cpu_env, gpu_env, step)
        if step % state_every == 0:
            assert_same_states(cpu_env, gpu_env, step, rng.choice(num_envs, size=min(num_envs, 64), replace=False))
        ended += int(np.count_nonzero(cpu_env.terminals | cpu_env.truncations))
    assert ended > 0, "no episode ended: the autoreset's world generation went unchecked"
    gpu_env.close()
    cpu_env.close()
    return ended


@pytest.mark.gpu
@pytest.mark.parametrize("num_envs,steps,seed", [(256, 600, 0), (2048, 300, 1000), (100, 400, 7)])
def test_gpu_env_matches_cpu_env_bitwise(torch, num_envs, steps, seed):
    assert_parity(torch, num_envs, steps, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("num_envs,steps,seed", [(2048, 300, 21), (100, 400, 8)])
def test_gpu_env_with_a_reset_pool_matches_cpu_env_bitwise(torch, num_envs, steps, seed):
    """Resets copy pool worlds, a warp's lanes together (100 envs: the last warp part empty); the
    pool is the CPU env's, generated on the host and uploaded."""
    assert_parity(torch, num_envs, steps, seed, pool_size=64)


@pytest.mark.gpu
@pytest.mark.parametrize("envs_per_warp", [1, 32])
def test_gpu_env_matches_cpu_env_at_any_envs_per_warp(torch, envs_per_warp):
    assert_parity(torch, 256, 300, 5, envs_per_warp)


@pytest.mark.gpu
def test_first_worlds_of_many_seeds_match(torch):
    """World generation alone (its noise gradients read from the host's tables) over many seeds,
    more envs than the reset kernel's 8,192 scratch buffers: some threads generate two worlds in turn."""
    cpu_env, gpu_env = make_pair(12288, 123, 32)
    assert_same(cpu_env, gpu_env, 0)
    for index in range(0, 12288, 97):
        assert np.array_equal(binding.env_state_bytes(cpu_env.c_envs, index), gpu_env.state_bytes(index)), index
    gpu_env.close()
    cpu_env.close()


@pytest.mark.gpu
def test_light_levels_of_a_whole_day_match(torch):
    """The light level (its cosine read from the host's table) at every step of a day and a half,
    in the state and in the observation."""
    cpu_env, gpu_env = make_pair(64, 31)
    sleep = np.full(64, 6, dtype=np.int32)
    for step in range(1, 451):
        cpu_env.step(sleep)
        gpu_env.gpu_step(torch.from_numpy(sleep).to(gpu_env.device))
        assert_same(cpu_env, gpu_env, step)
    assert_same_states(cpu_env, gpu_env, 450, range(64))
    gpu_env.close()
    cpu_env.close()


@pytest.mark.gpu
def test_logs_equal_cpu_logs(torch):
    cpu_env, gpu_env = make_pair(512, 5)
    rng = np.random.default_rng(3)
    compared = 0
    for step in range(400):
        actions = rng.integers(0, NUM_ACTIONS, size=512, dtype=np.int32)
        cpu_env.step(actions)
        gpu_env.gpu_step(torch.from_numpy(actions).cuda())
        if step % 50 == 49:
            cpu_log, gpu_log = cpu_env.log(), gpu_env.gpu_sync_logs()
            assert (cpu_log is None) == (gpu_log is None)
            if cpu_log is None:
                continue
            assert list(gpu_log) == list(cpu_log)
            assert gpu_log["episodes"] == cpu_log["episodes"]
            # Sums run in another order on the device (a tree, not one float accumulator).
            for key, value in cpu_log.items():
                assert gpu_log[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
            compared += 1
    assert compared > 0, "no episode ended"


@pytest.mark.gpu
def test_gpu_step_never_synchronizes(torch):
    env = gpu.CraftaxClassicGPU(1024)
    env.gpu_reset(0)
    generator = torch.Generator(device=env.device).manual_seed(0)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(50):
            env.gpu_step(torch.randint(0, NUM_ACTIONS, (1024,), device=env.device, generator=generator))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    env.gpu_sync_logs()  # no action was out of range
    env.close()


@pytest.mark.gpu
def test_cuda_graph_replay_equals_eager(torch):
    graphed, eager = gpu.CraftaxClassicGPU(256), gpu.CraftaxClassicGPU(256)
    actions = torch.zeros(256, dtype=torch.int64, device=graphed.device)

    def policy(observations):  # the policy's stand-in: actions computed from the observations on the device
        return (observations.sum(dim=1) * 7).long() % NUM_ACTIONS

    graphed.gpu_reset(9)
    eager.gpu_reset(9)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up, as capture requires
        actions.copy_(policy(graphed.observations))
        graphed.gpu_step(actions)
        eager.gpu_step(policy(eager.observations))
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        actions.copy_(policy(graphed.observations))
        graphed.gpu_step(actions)
    for step in range(200):
        graph.replay()
        eager.gpu_step(policy(eager.observations))
        for name in ("observations", "rewards", "terminals", "truncations"):
            assert torch.equal(getattr(graphed, name), getattr(eager, name)), f"step {step}: {name}"
    assert graphed.gpu_sync_logs() == eager.gpu_sync_logs()
    graphed.close()
    eager.close()


@pytest.mark.gpu
def test_out_of_range_action_is_reported_at_sync(torch):
    env = gpu.CraftaxClassicGPU(64)
    env.reset(seed=0)
    actions = torch.zeros(64, dtype=torch.int64, device=env.device)
    actions[17] = NUM_ACTIONS
    actions[40] = -1
    env.gpu_step(actions)
    with pytest.raises(ValueError, match=f"action {NUM_ACTIONS} for agent 17"):
        env.gpu_sync_logs()
    env.gpu_step(torch.zeros(64, dtype=torch.int32, device=env.device))
    assert env.gpu_sync_logs() is None  # the record is cleared once reported
    with pytest.raises(ValueError, match="int32 or int64"):
        env.gpu_step(torch.zeros(64, dtype=torch.float32, device=env.device))
    with pytest.raises(ValueError, match="shape"):
        env.gpu_step(torch.zeros(32, dtype=torch.int32, device=env.device))
    env.close()


@pytest.mark.gpu
def test_puffer_surface_and_close(torch):
    env = ocean.make("puffer_craftax_classic", num_envs=32, device="cuda", log_interval=1)
    observations, infos = env.reset(seed=3)
    assert observations.shape == (32, 1345) and observations.is_cuda and infos == []
    assert env.masks.all() and env.num_agents == 32
    _, rewards, terminals, _, infos = env.step(np.full(32, 5))
    assert rewards.dtype == torch.float32 and terminals.dtype == torch.bool and isinstance(infos, list)
    cpu_env = CraftaxClassic(num_envs=32)
    cpu_env.reset(seed=3)
    cpu_env.step(np.full(32, 5, dtype=np.int32))
    for name, value in cpu_env.state(7).items():
        assert np.array_equal(env.state(7)[name], value), name
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.gpu_step(env.actions)
