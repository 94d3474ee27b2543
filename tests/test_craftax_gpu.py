"""The GPU Craftax env (ocean/craftax/gpu.py) against the CPU env, bit for bit.

GPU tests are marked ``gpu`` and skip, saying why, without torch with CUDA, a visible GPU or the
CUDA library. The build test runs everywhere: where nvcc exists the library must have been built.
"""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

binding = pytest.importorskip("ocean.craftax.binding", reason="build the extensions first: python setup.py build_ext --inplace")

import ocean.craftax as craftax  # noqa: E402
from ocean.craftax import gpu  # noqa: E402


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


def test_import_needs_no_gpu_and_bad_counts_are_rejected_first():
    with pytest.raises(ValueError, match="multiple of 32"):
        gpu.CraftaxGPU(100)
    with pytest.raises(ValueError, match=r"envs_per_warp must be one of \(1, 2, 4, 8, 16, 32\)"):
        gpu.CraftaxGPU(64, envs_per_warp=3)


def test_policy_kernels_reject_bad_shapes_before_the_gpu():
    torch = pytest.importorskip("torch")
    compact = torch.zeros(2, craftax.COMPACT_OBS_BYTES, dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"width one of \(8, 16, 32, 64\); got \[83, 12\]"):
        gpu.embed_cells(compact, torch.zeros(83, 12), 1240, torch.float32)
    with pytest.raises(ValueError, match="columns must be a multiple of 8 and at least 1635, got 1636"):
        gpu.embed_cells(compact, torch.zeros(83, 16), 1636, torch.float32)
    with pytest.raises(ValueError, match=r"width must be one of \(8, 16, 32, 64\), got 24"):
        gpu.embed_cells_grad(compact, torch.zeros(2, 2432), 24)
    with pytest.raises(ValueError, match="uint8 CUDA tensor"):
        gpu.embed_cells_grad(compact, torch.zeros(2, 1640), 16)


def test_missing_cuda_library_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu, "_library", None)
    monkeypatch.setattr(gpu, "LIBRARY_PATH", tmp_path / "libcraftax_gpu.so")
    with pytest.raises(RuntimeError, match="was not built.*nvcc"):
        gpu.load_library()


def test_cuda_library_built_from_other_sources_is_refused(monkeypatch):
    if not gpu.LIBRARY_PATH.exists():
        pytest.skip(f"{gpu.LIBRARY_PATH.name} not built (no nvcc at build time)")
    monkeypatch.setattr(gpu, "_library", None)
    monkeypatch.setattr(binding, "STATE_BYTES", binding.STATE_BYTES + 4)
    with pytest.raises(RuntimeError, match="CUDA build mismatch: .*game state bytes"):
        gpu.load_library()


def test_cpu_only_torch_or_no_gpu_is_a_clear_error():
    torch = pytest.importorskip("torch", reason="the GPU env needs PyTorch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the error cases do not arise")
    with pytest.raises(RuntimeError, match="CPU-only build|no CUDA GPU is visible"):
        gpu.CraftaxGPU(64)


def cuda_torch():
    torch = pytest.importorskip("torch", reason="the GPU env needs PyTorch")
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA GPU visible to torch {torch.__version__}")
    if not gpu.LIBRARY_PATH.exists():
        pytest.skip(f"{gpu.LIBRARY_PATH.name} not built (no nvcc at build time)")
    return torch


@pytest.fixture(scope="module")
def torch():
    return cuda_torch()


def make_pair(num_envs, compact, pool_size, seed, envs_per_warp=None):
    cpu_class = craftax.CraftaxCompact if compact else craftax.Craftax
    gpu_class = gpu.CraftaxCompactGPU if compact else gpu.CraftaxGPU
    threads = os.cpu_count() or 1
    # The CPU env's step() would consume its logs every log_interval steps; the test reads them.
    cpu_env = cpu_class(num_envs=num_envs, num_threads=threads, reset_pool_size=pool_size, reset_pool_seed=7,
                        log_interval=2**31 - 1)
    gpu_env = gpu_class(num_envs, reset_pool_size=pool_size, reset_pool_seed=7, envs_per_warp=envs_per_warp)
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
            rows = np.nonzero((host != device).reshape(len(host), -1).any(axis=1))[0]
            pytest.fail(f"step {step}: {name} differ in envs {rows[:10].tolist()} ({len(rows)} envs)")


def action_stream(rng, num_envs):
    return rng.integers(0, craftax.NUM_ACTIONS, size=num_envs, dtype=np.int32)


@pytest.mark.gpu
@pytest.mark.parametrize("num_envs,steps", [(256, 500), (4096, 300)])
@pytest.mark.parametrize("pool_size", [0, 64])
@pytest.mark.parametrize("compact", [False, True], ids=["full", "compact"])
def test_gpu_env_matches_cpu_env_bitwise(torch, num_envs, steps, pool_size, compact):
    assert_parity(torch, num_envs, steps, pool_size, compact)


@pytest.mark.gpu
def test_gpu_env_matches_cpu_env_in_blocks_of_four_warps(torch):
    """128 envs per SM: the most at which every warp of the step fits on the GPU at once (8 envs
    per warp), in blocks of four warps, where 256 envs run one warp a block."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert_parity(torch, sms * 128, 300, 64, True)


@pytest.mark.gpu
@pytest.mark.parametrize("envs_per_warp", [1, 16, 32])
def test_gpu_env_matches_cpu_env_at_any_envs_per_warp(torch, envs_per_warp):
    """The tests above step 8 envs per warp, the default at their counts; the lanes of a warp
    choose mob spawns together, so other warp widths are checked too."""
    assert_parity(torch, 256, 300, 64, True, envs_per_warp)


def assert_parity(torch, num_envs, steps, pool_size, compact, envs_per_warp=None):
    cpu_env, gpu_env = make_pair(num_envs, compact, pool_size, seed=1000 + num_envs, envs_per_warp=envs_per_warp)
    rng = np.random.default_rng(num_envs + pool_size + compact)
    episodes = 0
    assert_same(cpu_env, gpu_env, 0)
    for step in range(1, steps + 1):
        actions = action_stream(rng, num_envs)
        cpu_env.step(actions)
        gpu_env.gpu_step(torch.from_numpy(actions).to(gpu_env.device))
        assert_same(cpu_env, gpu_env, step)
        episodes += int(np.count_nonzero(cpu_env.terminals | cpu_env.truncations))
    assert episodes > 0, "no episode ended: autoreset went unchecked"
    assert gpu_env.gpu_sync_logs() is not None
    gpu_env.close()


@pytest.mark.gpu
def test_torches_and_floors_after_pool_resets_match_the_cpu_env(torch, monkeypatch):
    """A pool reset on the device leaves the env's light maps in the pool world until it places a
    torch. Every pool world here starts with torches in hand and the player on the surface's cleared
    down ladder, so random play lights torches, on the surface and below, early in its episodes,
    over light maps that must then be the world's own; the states read back from the device,
    borrowed light maps included, equal the CPU env's field for field."""
    pool = craftax.reset_pool(64, 7, os.cpu_count() or 1).copy()
    for world in pool.reshape(64, binding.STATE_BYTES):
        fields = binding.state_fields(world)
        fields["player_position"][:] = fields["down_ladders"][:2]
        fields["monsters_killed"][:] = 100
        fields["inventory.torches"][:] = 50
    monkeypatch.setattr(craftax, "reset_pool", lambda size, seed, num_threads: pool)
    monkeypatch.setattr(gpu, "reset_pool", lambda size, seed, num_threads: pool)
    cpu_env, gpu_env = make_pair(256, True, 64, seed=11)
    rng = np.random.default_rng(11)
    for step in range(1, 301):
        actions = action_stream(rng, 256)
        cpu_env.step(actions)
        gpu_env.gpu_step(torch.from_numpy(actions).to(gpu_env.device))
        assert_same(cpu_env, gpu_env, step)
    for index in range(256):
        host, device = cpu_env.state(index), gpu_env.state(index)
        for name in host:
            assert np.array_equal(host[name], device[name]), f"env {index}: {name}"
    logs = gpu_env.gpu_sync_logs()
    assert logs is not None and logs["place_torch"] > 0 and logs["deepest_floor"] > 0, (
        "no torch or no floor change after a pool reset: the borrowed light maps went unchecked")
    gpu_env.close()


@pytest.mark.gpu
@pytest.mark.parametrize("pool_size", [0, 32])
def test_logs_equal_cpu_logs(torch, pool_size):
    cpu_env, gpu_env = make_pair(512, True, pool_size, seed=5)
    rng = np.random.default_rng(3)
    compared = 0
    for step in range(400):
        actions = action_stream(rng, 512)
        cpu_env.step(actions)
        gpu_env.gpu_step(torch.from_numpy(actions).cuda())
        if step % 50 == 49:
            cpu_log, gpu_log = cpu_env.log(), gpu_env.gpu_sync_logs()
            assert (cpu_log is None) == (gpu_log is None)
            if cpu_log is None:
                continue
            assert gpu_log.keys() == cpu_log.keys()
            assert gpu_log["episodes"] == cpu_log["episodes"]
            # Sums run in another order on the device (a tree, not one float accumulator).
            for key, value in cpu_log.items():
                assert gpu_log[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
            compared += 1
    assert compared > 0, "no episode ended"


@pytest.mark.gpu
def test_gpu_step_never_synchronizes(torch):
    env = gpu.CraftaxCompactGPU(1024, reset_pool_size=32)
    env.gpu_reset(0)
    generator = torch.Generator(device=env.device).manual_seed(0)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(50):
            actions = torch.randint(0, craftax.NUM_ACTIONS, (1024,), device=env.device, generator=generator)
            env.gpu_step(actions)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    env.gpu_sync_logs()  # no action was out of range
    env.close()


@pytest.mark.gpu
@pytest.mark.parametrize("compact", [False, True], ids=["full", "compact"])
def test_cuda_graph_replay_equals_eager(torch, compact):
    env_class = gpu.CraftaxCompactGPU if compact else gpu.CraftaxGPU
    graphed, eager = env_class(256, reset_pool_size=16), env_class(256, reset_pool_size=16)
    actions = torch.zeros(256, dtype=torch.int64, device=graphed.device)
    # The policy's stand-in: actions computed from the observations on the device.
    def policy(observations):
        return (observations.float().sum(dim=1) * 7).long() % craftax.NUM_ACTIONS

    graphed.gpu_reset(9)
    eager.gpu_reset(9)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up, as capture requires, on the graphed env's side
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
    graphed_log, eager_log = graphed.gpu_sync_logs(), eager.gpu_sync_logs()
    assert graphed_log == eager_log
    graphed.close()
    eager.close()


@pytest.mark.gpu
def test_out_of_range_action_is_reported_at_sync(torch):
    env = gpu.CraftaxGPU(64, reset_pool_size=8)
    env.reset(seed=0)
    actions = torch.zeros(64, dtype=torch.int64, device=env.device)
    actions[17] = 43
    actions[40] = -1
    env.gpu_step(actions)
    with pytest.raises(ValueError, match="action 43 for agent 17"):
        env.gpu_sync_logs()
    env.gpu_step(torch.zeros(64, dtype=torch.int32, device=env.device))
    assert env.gpu_sync_logs() is None  # the record is cleared once reported
    with pytest.raises(ValueError, match="int32 or int64"):
        env.gpu_step(torch.zeros(64, dtype=torch.float32, device=env.device))
    with pytest.raises(ValueError, match="shape"):
        env.gpu_step(torch.zeros(32, dtype=torch.int32, device=env.device))
    env.close()


@pytest.mark.gpu
def test_rejected_step_leaves_the_envs_as_they_were(torch):
    # Every env is prepared for its next step before the actions are checked; a batch with an
    # action out of range steps no env, and what follows it is what would have followed without it.
    rejecting, plain = (gpu.CraftaxCompactGPU(256, reset_pool_size=16) for _ in range(2))
    rejecting.gpu_reset(3)
    plain.gpu_reset(3)
    generator = torch.Generator(device=plain.device).manual_seed(0)
    for step in range(300):
        if step == 150:
            rejecting.gpu_step(torch.full((256,), -1, dtype=torch.int32, device=plain.device))
            with pytest.raises(ValueError, match="action -1 for agent 0"):
                rejecting.gpu_sync_logs()
        actions = torch.randint(0, craftax.NUM_ACTIONS, (256,), device=plain.device, generator=generator)
        rejecting.gpu_step(actions)
        plain.gpu_step(actions)
        for name in ("observations", "rewards", "terminals", "truncations"):
            assert torch.equal(getattr(rejecting, name), getattr(plain, name)), f"step {step}: {name}"
    assert plain.gpu_sync_logs()["episodes"] > 0  # episodes ended: resets were prepared for too
    rejecting.close()
    plain.close()


@pytest.mark.gpu
def test_puffer_surface_render_and_close(torch):
    env = gpu.CraftaxCompactGPU(32, reset_pool_size=4, log_interval=1)
    observations, infos = env.reset(seed=3)
    assert observations.shape == (32, craftax.COMPACT_OBS_BYTES) and observations.is_cuda and infos == []
    assert env.masks.all() and env.num_agents == 32
    obs, rewards, terminals, truncations, infos = env.step(np.full(32, 5))
    assert rewards.dtype == torch.float32 and terminals.dtype == torch.bool and isinstance(infos, list)
    cpu_env = craftax.CraftaxCompact(num_envs=32, reset_pool_size=4)
    cpu_env.reset(seed=3)
    cpu_env.step(np.full(32, 5, dtype=np.int32))
    assert env.render(7) == cpu_env.render(7)
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.gpu_step(env.actions)


def random_play_observations(torch, env, seed, steps=40):
    """The observations of ``steps`` steps of uniformly random actions from reset ``seed``, in one
    [steps * num_envs, ...] tensor."""
    env.gpu_reset(seed)
    generator = torch.Generator(device=env.device).manual_seed(seed)
    batches = []
    for _ in range(steps):
        env.actions.random_(0, craftax.NUM_ACTIONS, generator=generator)
        env.gpu_step(env.actions)
        batches.append(env.observations.clone())
    return torch.cat(batches)


@pytest.mark.gpu
def test_compact_policy_kernel_expands_as_its_tensor_code_does(torch):
    """CraftaxCompact's CUDA expansion (the library's kernel) against its tensor code, bit for bit,
    in float32 and under bf16 autocast, eager and inside a compiled graph."""
    from ocean.craftax.policy import CraftaxCompact, kernel_expands_on

    env = gpu.CraftaxCompactGPU(1024, reset_pool_size=32)
    policy = CraftaxCompact(env, hidden_size=16).to(env.device)
    assert kernel_expands_on(env.device.index)
    compact = random_play_observations(torch, env, seed=3)
    compiled = torch.compile(policy.expand, fullgraph=True, dynamic=False)
    for dtype in (torch.float32, torch.bfloat16):
        expected = policy.expand_with_tensors(compact, dtype)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            for expand in (policy.expand, compiled):
                full = expand(compact)
                assert full.dtype == dtype and torch.equal(full, expected)
    with pytest.raises(ValueError, match="uint8 CUDA tensor"):
        gpu.expand_observations(compact.cpu(), torch.float32)
    with pytest.raises(ValueError, match="multiple of 4"):
        gpu.expand_observations(compact, torch.float32, policy.input_size - 2)
    env.close()


@pytest.mark.gpu
@pytest.mark.parametrize("width", [8, 16, 32, 64])
def test_cell_policy_kernels_embed_as_its_tensor_code_does(torch, width):
    """CraftaxCells' CUDA kernels against its tensor code: the input in float32 and under bf16
    autocast (rounded once), eager and inside a compiled graph, and the table's gradient."""
    from ocean.craftax.policy import CraftaxCells

    env = gpu.CraftaxCompactGPU(1024, reset_pool_size=32)
    policy = CraftaxCells(env, hidden_size=16, cell_width=width).to(env.device)
    compact = random_play_observations(torch, env, seed=5)
    generator = torch.Generator(device=env.device).manual_seed(5)
    channels, _ = policy.channel_rule(compact)
    assert channels[..., 42:82].any(), "no mob in view: the batch does not exercise the mob channels"
    expected = policy.embed_cells_with_tensors(compact, torch.float32)
    compiled = torch.compile(policy.embed_cells, fullgraph=True, dynamic=False)
    for embed in (policy.embed_cells, compiled):
        embedded = embed(compact)
        assert embedded.dtype == torch.float32 and torch.allclose(embedded, expected, rtol=1e-6, atol=1e-6)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            rounded = embed(compact)
        assert rounded.dtype == torch.bfloat16 and torch.allclose(rounded.float(), expected, rtol=2**-7, atol=1e-6)
    grad = torch.randn(expected.shape, generator=generator, device=env.device)
    # A bf16 gradient on a 16-byte boundary takes the tensor-core kernel; 4 bytes later, the atomics one.
    storage = torch.empty(grad.numel() + 2, dtype=torch.bfloat16, device=env.device)
    shifted = storage[2:].view(grad.shape).copy_(grad)
    for dtype, kernel_grad in ((torch.float32, grad), (torch.bfloat16, grad.to(torch.bfloat16)), (torch.bfloat16, shifted)):
        (policy.embed_cells_with_tensors(compact, torch.float32) * grad.to(dtype).float()).sum().backward()
        reference, policy.cell_embedding.grad = policy.cell_embedding.grad, None
        gradient = gpu.embed_cells_grad(compact, kernel_grad, width)
        # Sums of some 10^5 gradient values each, in another order: compared at the largest's scale.
        tolerance = 1e-5 * reference.abs().max()
        assert (gradient - reference).abs().max() <= tolerance, (dtype, (gradient - reference).abs().max(), tolerance)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            (policy.embed_cells(compact).float() * grad.to(dtype).float()).sum().backward()
        assert (policy.cell_embedding.grad - reference).abs().max() <= tolerance
        policy.cell_embedding.grad = None
    with pytest.raises(ValueError, match="uint8 CUDA tensor"):
        gpu.embed_cells(compact.cpu(), policy.cell_embedding, policy.input_size, torch.float32)
    with pytest.raises(ValueError, match="columns must be a multiple of 8"):
        gpu.embed_cells(compact, policy.cell_embedding, policy.input_size - 4, torch.float32)
    env.close()


@pytest.mark.parametrize("seed", [0, 11])
def test_observation_parts_in_any_order_make_the_compact_observation(seed):
    """The GPU env's observation kernel writes an observation's parts (view rows with their mobs,
    then the scalars) side by side: each part writes bytes of its own and reads none of another's."""
    world = binding.World(binding.split(np.array([0, seed], dtype=np.uint32))[1])
    rng = np.random.default_rng(seed)
    layout = binding.LAYOUT
    parts = np.arange(layout["observation_parts"])
    mobs_seen = 0
    for step in range(300):
        whole = world.compact_observation()
        cells = whole[: layout["view_cells"] * layout["cell_bytes"]].reshape(layout["view_cells"], layout["cell_bytes"])
        mobs_seen += int(cells[:, 2 : 2 + layout["mob_classes"]].any())
        for order in (parts, parts[::-1], rng.permutation(parts)):
            assert np.array_equal(world.compact_observation_in_parts(order.tolist()), whole), f"step {step}"
        world.step(binding.split(np.array([1, step], dtype=np.uint32))[0], int(rng.integers(0, craftax.NUM_ACTIONS)))
    assert mobs_seen > 30
    with pytest.raises(ValueError, match="part 10 is not in"):
        world.compact_observation_in_parts([10])


@pytest.mark.parametrize("seed", [0, 11])
def test_full_observation_expands_from_compact_bitwise(seed):
    """The GPU env's full observations are its compact ones expanded (full_observation_from_compact)."""
    world = binding.World(binding.split(np.array([0, seed], dtype=np.uint32))[1])
    rng = np.random.default_rng(seed)
    for step in range(300):
        expanded = binding.full_from_compact(world.compact_observation())
        assert np.array_equal(expanded.view(np.uint32), world.observation().view(np.uint32)), f"step {step}"
        world.step(binding.split(np.array([1, step], dtype=np.uint32))[0], int(rng.integers(0, craftax.NUM_ACTIONS)))
