"""Craftax C game logic against the JAX reference (PyPI `craftax`, jax on CPU).

Reference-dependent tests skip with the reason when craftax/jax are absent; with CI=true a missing
reference is a failure. The reference is jitted once per module and run on a few seeds.
"""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import unavailable

import ocean
from pufferlib.exceptions import APIUsageError

ROOT = Path(__file__).resolve().parents[1]

binding = pytest.importorskip("ocean.craftax.binding", reason="build the extensions first: python setup.py build_ext --inplace")


def require_reference():
    try:
        import craftax.craftax.envs.craftax_symbolic_env  # noqa: F401
        import jax  # noqa: F401
    except ImportError as error:
        unavailable(f"craftax/jax reference not installed ({error}); pip install -r requirements-craftax.txt")


@pytest.fixture(scope="module")
def jax_random():
    require_reference()
    import jax

    return jax


@pytest.fixture(scope="module")
def reference_reset():
    require_reference()
    from ocean.craftax import parity

    _, reset = parity.reference_env()
    return reset


RNG_SEEDS = [0, 1, 42, 12345, 2**31 - 1]


@pytest.mark.reference
@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_threefry_split_and_fold_in_match_jax(jax_random, seed):
    jax = jax_random
    key = jax.random.PRNGKey(seed)
    data = np.asarray(key)
    np.testing.assert_array_equal(binding.split(data, 7), np.asarray(jax.random.split(key, 7)))
    np.testing.assert_array_equal(binding.fold_in(data, 17), np.asarray(jax.random.fold_in(key, 17)))


@pytest.mark.reference
@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_samplers_match_jax(jax_random, seed):
    jax = jax_random
    key = jax.random.PRNGKey(seed)
    data = np.asarray(key)
    np.testing.assert_array_equal(binding.bits(data, 2304), np.asarray(jax.random.bits(key, (48, 48))).ravel())
    uniform = np.asarray(jax.random.uniform(key, (48, 48))).ravel()
    assert np.array_equal(binding.uniform(data, 2304).view(np.uint32), uniform.view(np.uint32))
    for low, high in [(0, 6), (5, 10), (1, 4), (-3, 97), (0, 11), (4, 4)]:
        expected = np.asarray(jax.random.randint(key, (8,), low, high))
        np.testing.assert_array_equal(binding.randint(data, 8, low, high), expected)
    np.testing.assert_array_equal(binding.permutation(data, 6), np.asarray(jax.random.permutation(key, 6)))


@pytest.mark.reference
def test_cumsum_follows_xla_summation_order(jax_random):
    jax = jax_random
    cumsum = jax.jit(jax.numpy.cumsum)
    rng = np.random.default_rng(7)
    for n in [2, 9, 16, 17, 100, 2304]:
        values = (rng.random(n) * (rng.random(n) < 0.4)).astype(np.float32)
        assert np.array_equal(binding.cumsum(values).view(np.uint32), np.asarray(cumsum(values)).view(np.uint32)), n


@pytest.mark.reference
def test_weighted_choice_matches_jax_including_empty_weights(jax_random):
    jax = jax_random
    choice = jax.jit(lambda key, p: jax.random.choice(key, p.shape[0], p=p))
    rng = np.random.default_rng(3)
    for trial in range(20):
        key = jax.random.PRNGKey(trial)
        mask = (rng.random(2304) < rng.random() * 0.3).astype(np.float32)
        weights = mask / mask.sum()
        assert binding.choice(np.asarray(key), weights) == int(choice(key, weights))
    # An all-zero mask normalised by its zero sum: every weight is NaN.
    nan_weights = np.full(2304, np.nan, np.float32)
    assert binding.choice(np.asarray(jax.random.PRNGKey(5)), nan_weights) == int(choice(jax.random.PRNGKey(5), nan_weights))


WORLD_SEEDS = [0, 1, 101, 107]


@pytest.mark.reference
@pytest.mark.parametrize("seed", WORLD_SEEDS)
def test_world_generation_and_first_observation_are_bit_exact(reference_reset, jax_random, seed):
    from ocean.craftax import parity

    obs, state = reference_reset(jax_random.random.PRNGKey(seed))
    world = binding.World(parity.world_key(seed))
    assert parity.compare_fields(parity.reference_fields(state), world.fields()) == []
    assert np.array_equal(world.observation().view(np.uint32), np.asarray(obs).view(np.uint32))


@pytest.mark.reference
def test_observation_layout_matches_reference_space(jax_random):
    from craftax.craftax.envs.craftax_symbolic_env import CraftaxSymbolicEnv

    env = CraftaxSymbolicEnv()
    assert env.observation_space(env.default_params).shape == (8268,)
    assert env.action_space(env.default_params).n == 43
    world = binding.World(np.array([0, 1], np.uint32))
    assert world.observation().shape == (8268,)


def decode_compact(compact):
    """Expands a compact observation into the full 8,268-float layout."""
    cells = compact[:792].reshape(99, 8)
    full = np.zeros((99, 83), np.float32)
    lit = cells[:, 7] == 1
    rows = np.nonzero(lit)[0]
    full[rows, cells[lit, 0]] = 1
    full[rows, 37 + cells[lit, 1]] = 1
    for mob_class in range(5):
        for mob_type in range(8):
            full[:, 42 + mob_class * 8 + mob_type] = (cells[:, 2 + mob_class] >> mob_type) & 1
    full[:, 82] = lit
    return np.concatenate([full.ravel(), compact[792:].view(np.float32)])


@pytest.mark.parametrize("seed", [0, 9, 23])
def test_compact_observation_holds_the_same_information(seed):
    world = binding.World(binding.split(np.array([0, seed], np.uint32), 2)[1])
    compact = world.compact_observation()
    assert compact.dtype == np.uint8 and compact.shape == (996,)
    assert np.array_equal(decode_compact(compact).view(np.uint32), world.observation().view(np.uint32))


def test_compact_policy_sees_the_full_observation():
    torch = pytest.importorskip("torch")
    from ocean.craftax.policy import CraftaxCompact
    from pufferlib.models import Default

    full = ocean.make("puffer_craftax", num_envs=8, reset_pool_size=4)
    compact = ocean.make("puffer_craftax_compact", num_envs=8, reset_pool_size=4)
    torch.manual_seed(0)
    policy = CraftaxCompact(compact, hidden_size=16)
    torch.manual_seed(0)
    full_policy = Default(full, hidden_size=16)
    padded_weight = policy.embedding.weight
    assert torch.equal(padded_weight[:, :8268], full_policy.embedding.weight) and not padded_weight[:, 8268:].any()
    full_obs, _ = full.reset(5)
    compact_obs, _ = compact.reset(5)
    rng = np.random.default_rng(0)
    for _ in range(60):
        expanded = policy.expand(torch.from_numpy(compact_obs))
        assert expanded.shape == (8, 8272) and not expanded[:, 8268:].any()
        assert torch.equal(expanded[:, :8268].contiguous().view(torch.int32), torch.from_numpy(full_obs).view(torch.int32))
        actions = rng.integers(0, 43, 8, dtype=np.int32)
        full_obs = full.step(actions)[0]
        compact_obs = compact.step(actions)[0]
    logits, values, _ = policy.forward_eval(torch.from_numpy(compact_obs), ())
    assert logits.shape == (8, 43) and values.shape == (8,)
    full_logits, full_values, _ = full_policy.forward_eval(torch.from_numpy(full_obs), ())
    assert torch.allclose(logits, full_logits, atol=1e-5) and torch.allclose(values, full_values, atol=1e-5)
    with pytest.raises(APIUsageError, match="996 uint8"):
        CraftaxCompact(full)


def test_cell_policy_is_the_full_policy_with_its_first_layer_factored_per_cell():
    """CraftaxCells equals a Default policy on the full observation whose first layer's weight for
    cell c and channel k is the table's row k times the cell's block of CraftaxCells' first layer."""
    torch = pytest.importorskip("torch")
    from ocean.craftax.policy import CraftaxCells
    from pufferlib.models import Default

    full = ocean.make("puffer_craftax", num_envs=8, reset_pool_size=4)
    compact = ocean.make("puffer_craftax_compact", num_envs=8, reset_pool_size=4)
    width, cells, scalars = 8, 99, 51
    policy = CraftaxCells(compact, hidden_size=16, num_layers=2, cell_width=width)
    assert policy.input_size == 848 and policy.embedding.weight.shape == (16, 848)
    full_policy = Default(full, hidden_size=16, num_layers=2)
    with torch.no_grad():
        weight = policy.embedding.weight  # [hidden, cells * width + scalars + padding]
        per_cell = weight[:, : cells * width].reshape(16, cells, width)
        factored = torch.einsum("hcw,kw->hck", per_cell, policy.cell_embedding).reshape(16, -1)
        full_policy.embedding.weight.copy_(torch.cat([factored, weight[:, cells * width : cells * width + scalars]], 1))
        full_policy.embedding.bias.copy_(policy.embedding.bias)
        for name, parameter in full_policy.named_parameters():
            if not name.startswith("embedding."):
                parameter.copy_(policy.get_parameter(name))
    assert not weight[:, cells * width + scalars :].any()
    full_obs, _ = full.reset(2)
    compact_obs, _ = compact.reset(2)
    rng = np.random.default_rng(1)
    for _ in range(40):
        actions = rng.integers(0, 43, 8, dtype=np.int32)
        full_obs, compact_obs = full.step(actions)[0], compact.step(actions)[0]
    logits, values, _ = policy.forward_eval(torch.from_numpy(compact_obs), ())
    full_logits, full_values, _ = full_policy.forward_eval(torch.from_numpy(full_obs), ())
    assert torch.allclose(logits, full_logits, atol=1e-5) and torch.allclose(values, full_values, atol=1e-5)
    logits.sum().backward()
    assert policy.cell_embedding.grad.abs().sum() > 0
    with pytest.raises(APIUsageError, match=r"cell_width must be one of \(8, 16, 32, 64\), got 12"):
        CraftaxCells(compact, cell_width=12)
    with pytest.raises(APIUsageError, match="CraftaxCells needs puffer_craftax_compact's 996 uint8"):
        CraftaxCells(full)


@pytest.mark.parametrize("seed", [2, 3])
def test_generated_worlds_satisfy_invariants(seed):
    fields = binding.World(np.array([0, seed], np.uint32)).fields()
    maps = fields["map"].reshape(9, 48, 48)
    items = fields["item_map"].reshape(9, 48, 48)
    assert maps.min() >= 1 and maps.max() <= 36
    assert items.max() <= 4
    assert maps[0, 24, 24] == 2, "the player spawns on grass"
    assert maps[8, 24, 24] == 32, "the necromancer stands at the graveyard's centre"
    down = fields["down_ladders"].reshape(9, 2)
    for level in range(8):
        assert items[level, down[level, 0], down[level, 1]] in (2, 3), f"floor {level} has its down ladder"
    light = fields["light_map"]
    assert light.min() >= 0.0 and light.max() <= 1.0
    assert fields["melee_mobs.mask"].sum() == 0 and fields["passive_mobs.mask"].sum() == 0
    assert sorted(fields["potion_mapping"]) == list(range(6))
    assert fields["player_health"][0] == 9.0 and fields["monsters_killed"][0] == 10


def test_game_headers_compile_as_cpp(tmp_path):
    """The device build compiles the headers as C++: check that much with the host's g++."""
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ not installed")
    source = tmp_path / "craftax_check.cpp"
    source.write_text(
        '#include "observation.h"\n#include "step.h"\n#include "state_view.h"\n'
        "float step_once(GameState* s, float* obs) {\n"
        "    StepDraws draws;\n"
        "    draw_step(key_from_seed(1), &draws);\n"
        "    float reward = craftax_step(&draws, s, ACTION_DO);\n"
        "    write_observation(s, obs, 1);\n"
        "    return reward;\n"
        "}\n"
    )
    result = subprocess.run(
        [compiler, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-D_Static_assert=static_assert",
         f"-I{ROOT / 'ocean' / 'craftax'}", "-c", str(source), "-o", str(tmp_path / "craftax_check.o")],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_headers_compile_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed")
    source = tmp_path / "craftax_check.cu"
    source.write_text(
        '#include "observation.h"\n#include "step.h"\n'
        "__global__ void reset_kernel(GameState* states, WorldgenScratch* scratch, float* obs) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    generate_world(key_split_at(key_from_seed((uint64_t)i), 1), &states[i], &scratch[i]);\n"
        "    write_observation(&states[i], obs + (size_t)i * OBS_SIZE, 0);\n"
        "}\n"
        "__global__ void step_kernel(GameState* states, const int* actions, float* rewards, float* obs) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    StepDraws draws;\n"
        "    draw_step(key_from_seed((uint64_t)i), &draws);\n"
        "    rewards[i] = craftax_step(&draws, &states[i], actions[i]);\n"
        "    write_observation(&states[i], obs + (size_t)i * OBS_SIZE, 1);\n"
        "}\n"
    )
    result = subprocess.run(
        [nvcc, "-x", "cu", "--fmad=false", "-Werror", "all-warnings", f"-I{ROOT / 'ocean' / 'craftax'}",
         "-c", str(source), "-o", str(tmp_path / "craftax_check.o")],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr


# A game of the device vecenv's contract and nothing more: one counter per env, an episode of
# `action + 1` ticks; with SCRATCH its reset borrows the vecenv's scratch buffer.
GENERIC_DEVICE_GAME = """
#include <stdint.h>
typedef struct { float ticks; } Log;
typedef struct { int cells[4]; } Scratch;
typedef struct {
    void* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    unsigned char* truncations;
    uint64_t rng;
    Log log;
    int tick;
    Scratch* reset_scratch;
} Counter;
__host__ __device__ static void c_reset(Counter* env) {
    env->tick = 0;
#ifdef SCRATCH
    env->reset_scratch->cells[0] = (int)env->rng;
#endif
    ((float*)env->observations)[0] = 0.0f;
}
__host__ __device__ static int c_step(Counter* env) {
    env->tick += 1;
    int done = env->tick > env->actions[0];
    env->rewards[0] = 1.0f;
    env->terminals[0] = (unsigned char)done;
    env->truncations[0] = 0;
    if (done) env->log.ticks += (float)env->tick;
    ((float*)env->observations)[0] = (float)env->tick;
    return done;
}
#define Env Counter
#ifdef SCRATCH
#define VEC_GPU_RESET_SCRATCH Scratch
#endif
#include "vecenv_gpu.cuh"
cudaError_t run(Counter* host_envs, int num_envs, char* observations, int* actions, float* rewards,
                unsigned char* terminals, unsigned char* truncations, const long long* policy_actions, float* sums) {
    const int nvec[1] = {4};
    VecGpu* vec;
    VEC_GPU_CHECK(vec_gpu_create(&vec, host_envs, num_envs, 1, nvec, 1, observations, sizeof(float), actions, rewards,
                                 terminals, truncations, 64, sizeof(Scratch), VEC_GPU_WARP));
    VEC_GPU_CHECK(vec_gpu_reset(vec, 7, 0));
    VEC_GPU_CHECK(vec_gpu_step(vec, policy_actions, 1, 0));
    VecGpuReport report;
    VEC_GPU_CHECK(vec_gpu_sync_logs(vec, &report, 0));
    memcpy(sums, report.sums, sizeof(report.sums));
    vec_gpu_destroy(vec);
    return cudaSuccess;
}
"""


@pytest.mark.slow
@pytest.mark.parametrize("scratch", [False, True], ids=["plain", "reset-scratch"])
def test_device_vecenv_compiles_for_a_game_of_its_contract_alone(tmp_path, scratch):
    """ocean/vecenv_gpu.cuh's own step and reset kernels (Craftax launches kernels of its own, so its
    library never instantiates them) compile for any game that meets the contract at its top."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed")
    source = tmp_path / "counter.cu"
    source.write_text(GENERIC_DEVICE_GAME)
    result = subprocess.run(
        [nvcc, "-x", "cu", "-std=c++17", "-Werror", "all-warnings", *(["-DSCRATCH"] if scratch else []),
         f"-I{ROOT / 'ocean'}", "-c", str(source), "-o", str(tmp_path / "counter.o")],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr


# Trajectories: the C step against the reference's jitted step (scripts/parity.py).


@pytest.mark.reference
def test_random_trajectories_match_reference_bitwise(jax_random):
    from ocean.craftax import parity

    divergences, statistics = parity.check_steps(4, 300, start=11, policy="random", state_every=25, verbose=False)
    assert divergences == []
    assert statistics["episodes"] >= 1, "the run should cover deaths and auto-resets"


@pytest.mark.reference
def test_descending_trajectories_match_reference_bitwise(jax_random):
    from ocean.craftax import parity

    divergences, statistics = parity.check_steps(2, 250, start=3, policy="descend", state_every=25, verbose=False)
    assert divergences == []
    assert statistics["deepest"].max() >= 2, "the descend policy should leave the surface"


# The Ocean env.


def world_for_seed(seed):
    """A World on the Ocean env's key flow: (its key chain, the World of its first episode)."""
    root = np.array([0, seed], np.uint32)
    chain, reset_key = binding.split(root, 2)
    return chain, binding.World(binding.split(reset_key, 2)[1])


ACTION_PLACE_TORCH = 28


def view_light(world):
    """The full observation's light channel, the last of each view cell's, as the 9 x 11 view."""
    cells, scalars = binding.LAYOUT["view_cells"], binding.LAYOUT["scalars"]
    channels = world.observation()[:-scalars].reshape(cells, -1)
    return (channels[:, -1] == 1.0).reshape(9, 11)


def light_map_view(world):
    """Which view cells the light map lights (above 0.05); off the map, none."""
    fields = world.fields()
    row, col = fields["player_position"]
    light = fields["light_map"].reshape(9, 48, 48)[int(fields["player_level"][0])]
    lit = np.zeros((9, 11), dtype=bool)
    for i in range(9):
        for j in range(11):
            r, c = row - 4 + i, col - 5 + j
            lit[i, j] = 0 <= r < 48 and 0 <= c < 48 and light[r, c] > 0.05
    return lit


def test_the_view_is_lit_where_the_light_map_is_after_edits_and_torches():
    """The observation reads a bit per cell kept beside the light map: it must follow the map
    when a test scenario rewrites the light and when a torch lights the dark."""
    chain, world = world_for_seed(5)
    assert view_light(world).any() and np.array_equal(view_light(world), light_map_view(world))
    world.set_field("light_map", np.zeros(9 * 48 * 48))
    assert not view_light(world).any()
    world.set_field("inventory.torches", [9])
    # Grass and no items all around the player: the cell it faces takes a torch.
    row, col = world.field("player_position")
    blocks, items = world.field("map").reshape(9, 48, 48), world.field("item_map").reshape(9, 48, 48)
    blocks[0, row - 1 : row + 2, col - 1 : col + 2] = 2
    items[0, row - 1 : row + 2, col - 1 : col + 2] = 0
    world.set_field("map", blocks)
    world.set_field("item_map", items)
    chain, step_key = binding.split(chain, 2)
    world.step(step_key, ACTION_PLACE_TORCH)
    assert world.field("inventory.torches")[0] == 8, "the torch should be placed"
    assert view_light(world).any() and np.array_equal(view_light(world), light_map_view(world))


def test_the_compact_view_is_the_map_around_the_player_at_every_position():
    """Each compact view cell's block, item and light bytes against the plain definition (the
    cell's ids where the light map lights it, zeros elsewhere and off the map), with the player on
    every cell of a floor of random blocks, items and light: the view's rows are written 16 cells
    at a time on x86-64 hosts and cell by cell where the view reaches past the map's left edge."""
    _, world = world_for_seed(5)
    rng = np.random.default_rng(0)
    blocks, items = rng.integers(0, 37, (9, 48, 48)), rng.integers(0, 5, (9, 48, 48))
    light = rng.uniform(0.0, 0.1, (9, 48, 48)).astype(np.float32)
    world.set_field("map", blocks.ravel())
    world.set_field("item_map", items.ravel())
    world.set_field("light_map", light.ravel())
    world.set_field("player_level", [0])
    rows, cols = np.arange(9)[:, None], np.arange(11)[None, :]
    for row in range(48):
        for col in range(48):
            world.set_field("player_position", [row, col])
            cells = world.compact_observation()[: 99 * 8].reshape(9, 11, 8)
            r, c = row - 4 + rows, col - 5 + cols
            inside = (r >= 0) & (r < 48) & (c >= 0) & (c < 48)
            r, c = np.clip(r, 0, 47), np.clip(c, 0, 47)
            lit = inside & (light[0, r, c] > np.float32(0.05))
            assert np.array_equal(cells[..., 7], lit), (row, col)
            assert np.array_equal(cells[..., 0], np.where(lit, blocks[0, r, c], 0)), (row, col)
            assert np.array_equal(cells[..., 1], np.where(lit, items[0, r, c], 0)), (row, col)


def test_ocean_env_follows_the_parity_key_flow():
    """The vecenv draws steps for 16 envs at once: 19 envs on 2 threads cover a full batch and a
    partial one, each env against a World stepped alone."""
    from ocean.craftax import Craftax, CraftaxCompact

    seed, num_envs, steps = 40, 19, 300
    full = Craftax(num_envs=num_envs, num_threads=2)
    compact = CraftaxCompact(num_envs=num_envs, num_threads=2)
    full_obs, _ = full.reset(seed)
    compact_obs, _ = compact.reset(seed)
    chains, worlds = zip(*(world_for_seed(seed + i) for i in range(num_envs)))
    chains = list(chains)
    actions = np.random.default_rng(0).integers(0, 43, (steps, num_envs)).astype(np.int32)
    ended = 0
    for t in range(steps):
        full_obs, rewards, terminals, truncations, _ = full.step(actions[t])
        compact_obs, compact_rewards, _, _, _ = compact.step(actions[t])
        for i, world in enumerate(worlds):
            chains[i], step_key = binding.split(chains[i], 2)
            reward, done = world.step(step_key, int(actions[t, i]))
            assert np.float32(reward).view(np.uint32) == rewards[i].view(np.uint32) == compact_rewards[i].view(np.uint32)
            assert done == bool(terminals[i] or truncations[i])
            assert np.array_equal(world.observation().view(np.uint32), full_obs[i].view(np.uint32)), (t, i)
            assert np.array_equal(decode_compact(compact_obs[i]).view(np.uint32), full_obs[i].view(np.uint32)), (t, i)
            ended += done
    assert ended >= 1


def test_ocean_env_logs_and_render():

    env = ocean.make("puffer_craftax_compact", num_envs=8, reset_pool_size=4, log_interval=1)
    env.reset(1)
    actions = np.random.default_rng(1).integers(0, 43, (1500, 8)).astype(np.int32)
    logs = []
    for t in range(1500):
        _, _, _, _, infos = env.step(actions[t])
        logs += infos
    assert logs, "random play should end episodes within 1500 steps"
    log = logs[-1]
    assert 0.0 < log["score"] <= 100.0 and 0.0 <= log["deepest_floor"] <= 8.0 and log["episode_length"] > 0
    assert 0.0 <= log["collect_wood"] <= 1.0 and "defeat_necromancer" in log and "died" in log
    assert sum(key in log for key in ("collect_wood", "enchant_armour", "defeat_archer")) == 3
    text = env.render(0)
    assert "floor" in text and "pickaxe" in text and text.count("\n") >= 12


def test_reset_pool_is_deterministic():
    from ocean.craftax import CraftaxCompact

    def run(seed, pool_seed):
        env = CraftaxCompact(num_envs=4, reset_pool_size=3, reset_pool_seed=pool_seed)
        observations = [env.reset(seed)[0].copy()]
        actions = np.random.default_rng(5).integers(0, 43, (600, 4)).astype(np.int32)
        for t in range(600):
            observations.append(env.step(actions[t])[0].copy())
        return np.stack(observations)

    first = run(7, 2)
    assert np.array_equal(first, run(7, 2))
    assert not np.array_equal(first, run(8, 2))
    assert not np.array_equal(first, run(7, 3))



def test_state_fields_read_and_edit_a_states_bytes():
    from ocean.craftax import CraftaxCompact, reset_pool

    worlds = reset_pool(2, 4, 1).copy().reshape(2, binding.STATE_BYTES)
    world = binding.World(np.array([0, 9], np.uint32))
    fields = binding.state_fields(worlds[1])
    assert {name: array.nbytes for name, array in fields.items()} == {name: array.nbytes for name, array in world.fields().items()}
    fields["inventory.torches"][:] = 7
    fields["player_position"][:] = (3, 5)
    assert binding.state_fields(worlds[1])["inventory.torches"][0] == 7
    assert binding.state_fields(worlds[0])["inventory.torches"][0] == 0
    assert list(binding.state_fields(worlds[1])["player_position"]) == [3, 5]
    with pytest.raises(ValueError, match=f"a game state is {binding.STATE_BYTES} uint8 bytes"):
        binding.state_fields(worlds.reshape(-1)[:100])
    with pytest.raises(ValueError, match="uint8 bytes in one dimension, got int16"):
        binding.state_fields(np.zeros(binding.STATE_BYTES // 2, np.int16))

    env = CraftaxCompact(num_envs=2, reset_pool_size=2, reset_pool_seed=4)
    env.reset(seed=1)
    state = env.state(1)
    assert state.keys() == fields.keys() and state["timestep"][0] == 0 and state["player_level"][0] == 0
    env.step(np.zeros(2, np.int32))
    assert env.state(1)["timestep"][0] == 1 and state["timestep"][0] == 0  # a copy, not a view
    with pytest.raises(ValueError, match="state index"):
        env.state(2)

def test_bad_actions_are_rejected():
    from ocean.craftax import Craftax

    env = Craftax(num_envs=2, reset_pool_size=1)
    env.reset(0)
    with pytest.raises(ValueError, match="outside the action space"):
        env.step(np.array([0, 43], np.int32))
    with pytest.raises(ValueError, match="outside the action space"):
        env.step(np.array([-1, 0], np.int32))
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="integers"):
        env.step(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="reset_pool_size"):
        Craftax(num_envs=1, reset_pool_size=-1)
    with pytest.raises(ValueError):
        binding.World(np.array([0, 1], np.uint32)).step(np.array([0, 2], np.uint32), 43)


MAX_ATTRIBUTE = 5


def test_long_random_play_keeps_invariants():
    caps = {"melee_mobs": 3, "passive_mobs": 3, "ranged_mobs": 2, "mob_projectiles": 3, "player_projectiles": 3}
    rng = np.random.default_rng(9)
    for seed in range(3):
        chain, world = world_for_seed(100 + seed)
        for t in range(3000):
            chain, step_key = binding.split(chain, 2)
            world.step(step_key, int(rng.integers(0, 43)))
            if t % 50:
                continue
            fields = world.fields()
            inventory = np.concatenate([value for name, value in fields.items() if name.startswith("inventory.")])
            assert inventory.min() >= 0 and inventory.max() <= 99
            strength, dexterity, intelligence = (int(fields[f"player_{a}"][0]) for a in ("strength", "dexterity", "intelligence"))
            assert 1 <= min(strength, dexterity, intelligence) and max(strength, dexterity, intelligence) <= MAX_ATTRIBUTE
            assert fields["player_health"][0] <= 8 + strength
            assert 0 <= fields["player_food"][0] <= 7 + 2 * dexterity and 0 <= fields["player_drink"][0] <= 7 + 2 * dexterity
            assert 0 <= fields["player_energy"][0] <= 7 + 2 * dexterity and 0 <= fields["player_mana"][0] <= 6 + 3 * intelligence
            level = int(fields["player_level"][0])
            mob_map = fields["mob_map"].reshape(9, 48, 48)[level]
            alive = 0
            for mob_class, cap in caps.items():
                masks = fields[f"{mob_class}.mask"].reshape(9, cap)
                assert masks.sum(axis=1).max() <= cap
                if mob_class in ("melee_mobs", "passive_mobs", "ranged_mobs"):
                    positions = fields[f"{mob_class}.position"].reshape(9, cap, 2)[level]
                    for m in np.nonzero(masks[level])[0]:
                        r, c = positions[m]
                        assert 0 <= r < 48 and 0 <= c < 48 and mob_map[r, c], "a living mob stands on its mob map cell"
                    alive += int(masks[level].sum())
            assert mob_map.sum() == alive, "the mob map marks exactly the living mobs"
