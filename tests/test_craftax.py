"""Craftax C game logic against the JAX reference (PyPI `craftax`, jax on CPU).

Reference-dependent tests skip with the reason when craftax/jax are absent; with CI=true a missing
reference is a failure. The reference is jitted once per module and run on a few seeds.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

binding = pytest.importorskip("ocean.craftax.binding", reason="build the extensions first: python setup.py build_ext --inplace")


def require_reference():
    try:
        import craftax.craftax.envs.craftax_symbolic_env  # noqa: F401
        import jax  # noqa: F401
    except ImportError as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must install requirements-craftax.txt: {error}")
        pytest.skip(f"craftax/jax reference not installed ({error}); pip install -r requirements-craftax.txt")


@pytest.fixture(scope="module")
def jax_random():
    require_reference()
    import jax

    return jax


@pytest.fixture(scope="module")
def reference_reset():
    require_reference()
    import craftax_parity

    _, reset = craftax_parity.reference_env()
    return reset


RNG_SEEDS = [0, 1, 42, 12345, 2**31 - 1]


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_threefry_split_and_fold_in_match_jax(jax_random, seed):
    jax = jax_random
    key = jax.random.PRNGKey(seed)
    data = np.asarray(key)
    np.testing.assert_array_equal(binding.split(data, 7), np.asarray(jax.random.split(key, 7)))
    np.testing.assert_array_equal(binding.fold_in(data, 17), np.asarray(jax.random.fold_in(key, 17)))


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


def test_cumsum_follows_xla_summation_order(jax_random):
    jax = jax_random
    cumsum = jax.jit(jax.numpy.cumsum)
    rng = np.random.default_rng(7)
    for n in [2, 9, 16, 17, 100, 2304]:
        values = (rng.random(n) * (rng.random(n) < 0.4)).astype(np.float32)
        assert np.array_equal(binding.cumsum(values).view(np.uint32), np.asarray(cumsum(values)).view(np.uint32)), n


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


@pytest.mark.parametrize("seed", WORLD_SEEDS)
def test_world_generation_and_first_observation_are_bit_exact(reference_reset, jax_random, seed):
    import craftax_parity

    obs, state = reference_reset(jax_random.random.PRNGKey(seed))
    world = binding.World(craftax_parity.world_key(seed))
    assert craftax_parity.compare_fields(craftax_parity.reference_fields(state), world.fields()) == []
    assert np.array_equal(world.observation().view(np.uint32), np.asarray(obs).view(np.uint32))


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


def test_headers_compile_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed")
    source = tmp_path / "craftax_check.cu"
    source.write_text(
        '#include "worldgen.h"\n#include "observation.h"\n'
        "__global__ void reset_kernel(GameState* states, WorldgenScratch* scratch, float* obs) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    generate_world(key_split_at(key_from_seed((uint64_t)i), 1), &states[i], &scratch[i]);\n"
        "    write_observation(&states[i], obs + (size_t)i * OBS_SIZE);\n"
        "}\n"
    )
    result = subprocess.run(
        [nvcc, "-x", "cu", "--fmad=false", "-Werror", "all-warnings", f"-I{ROOT / 'ocean' / 'craftax'}",
         "-c", str(source), "-o", str(tmp_path / "craftax_check.o")],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
