"""Craftax-Classic (ocean/craftax_classic) against the JAX reference (PyPI `craftax`, jax on CPU):
world generation, the step under random and scripted policies through auto-resets, and the
symbolic observation, whole states compared bit for bit; and the Ocean env's key flow, logs and
bad input without the reference."""

import importlib.util
import io
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import unavailable

import ocean
import ocean.craftax_classic as classic
from ocean.craftax import binding as craftax_binding
from ocean.craftax_classic import CraftaxClassic, binding, parity
from ocean.craftax_classic.state_view import STATE_DTYPE, state_fields
from pufferlib.exceptions import ParameterError


def require_reference():
    try:
        import craftax.craftax_classic  # noqa: F401
        import jax  # noqa: F401
    except ImportError as error:
        unavailable(f"craftax/jax reference not installed ({error}); pip install -r requirements-craftax.txt")


def seed_key(seed):
    """jax.random.PRNGKey(seed) as uint32 words."""
    return np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32)


def test_state_view_matches_the_c_layout():
    assert STATE_DTYPE.itemsize == binding.state_size()
    fields = state_fields(binding.World(seed_key(0)).state_bytes())
    assert fields["player_position"].tolist() == [32, 32] and fields["player_health"].tolist() == [9]
    assert fields["map"].reshape(64, 64)[32, 32] == 2 and (fields["map"] == 10).any()


def test_registered_with_the_reference_spaces():
    env = ocean.env_creator("puffer_craftax_classic")(num_envs=2)
    assert env.single_observation_space.shape == (1345,)
    assert env.single_action_space.n == 17
    observations, _ = env.reset(seed=3)
    assert observations.dtype == np.float32 and observations.shape == (2, 1345)
    env.close()


def test_env_plays_the_reference_key_flow_step_for_step():
    """Env i seeded with s is World(split(PRNGKey(s + i))[1]) stepped with rng, key = split(rng)."""
    env = CraftaxClassic(num_envs=3)
    observations, _ = env.reset(seed=11)
    worlds = [binding.World(binding.split(seed_key(11 + i), 1)) for i in range(3)]
    chains = [binding.split(seed_key(11 + i), 0) for i in range(3)]
    actions = np.random.default_rng(0)
    finished = 0
    for _ in range(400):
        action = actions.integers(0, 17, size=3).astype(np.int32)
        observations, rewards, terminals, truncations, _ = env.step(action)
        for i, world in enumerate(worlds):
            step_key = binding.split(chains[i], 1)
            chains[i] = binding.split(chains[i], 0)
            reward, done = world.step(step_key, int(action[i]))
            finished += done
            assert np.array_equal(binding.env_state_bytes(env.c_envs, i), world.state_bytes())
            assert np.array_equal(observations[i], world.observation())
            assert rewards[i] == np.float32(reward) and bool(terminals[i] or truncations[i]) == done
    assert finished > 0, "random play should end some episodes (lava, starvation) in 400 steps"
    env.close()


def test_episode_logs_count_achievements_and_deaths():
    env = CraftaxClassic(num_envs=8, log_interval=1)
    env.reset(seed=0)
    actions = np.random.default_rng(1)
    logs = []
    for _ in range(300):
        _, _, _, _, infos = env.step(actions.integers(0, 17, size=8).astype(np.int32))
        logs += infos
    assert logs, "random play ends episodes within 300 steps"
    for log in logs:
        rates = [log[name] for name in ("collect_wood", "place_table", "eat_cow", "make_iron_sword")]
        assert all(0.0 <= rate <= 1.0 for rate in rates)
        assert 0.0 <= log["score"] <= 100.0 and 0.0 <= log["died"] <= 1.0
    env.close()


def test_saved_state_continues_the_same_steps():
    actions = np.random.default_rng(2).integers(0, 17, size=(120, 4)).astype(np.int32)
    env = CraftaxClassic(num_envs=4)
    env.reset(seed=7)
    for action in actions[:60]:
        env.step(action)
    saved = env.get_state()
    assert saved is not None
    later = [env.step(action)[0].copy() for action in actions[60:]]
    resumed = CraftaxClassic(num_envs=4)
    resumed.set_state(saved)
    for action, expected in zip(actions[60:], later):
        assert np.array_equal(resumed.step(action)[0], expected)
    env.close()
    resumed.close()


def test_reset_pool_worlds_are_the_worlds_of_the_pools_keys():
    """World j of a pool of size n with seed s is the world generated from split(PRNGKey(s), n)[j],
    whatever the thread count; envs built with the same size and seed share one read-only pool."""
    pool = binding.make_reset_pool(20, 3, 1).reshape(20, binding.STATE_BYTES)
    for j in range(20):
        assert np.array_equal(pool[j], binding.World(binding.split(seed_key(3), j)).state_bytes()), j
    assert np.array_equal(binding.make_reset_pool(20, 3, 4).reshape(20, -1), pool)
    assert not np.array_equal(binding.make_reset_pool(20, 4, 1).reshape(20, -1), pool)
    shared = classic.reset_pool(20, 3, 2)
    assert shared is classic.reset_pool(20, 3, 1) and not shared.flags.writeable
    assert np.array_equal(shared.reshape(20, -1), pool)


def pool_world_of(pool, world_key):
    """The pool world a reset with ``world_key`` copies: random_bits_at(world_key, 0) % size."""
    index = int(craftax_binding.bits(world_key, 1)[0]) % len(pool)
    return pool[index], index


def test_resets_copy_the_pool_world_their_world_key_picks():
    """With a pool the key chain is the reference's: env i seeded with s starts from the pool world
    that split(PRNGKey(s + i))[1] picks and steps with rng, key = split(rng); the step that ends an
    episode resets to the pool world that split(step_key)[1] picks. Modelled with Worlds whose
    state is replaced by the picked pool world at each reset."""
    size, num_envs = 5, 8
    pool = classic.reset_pool(size, 9, 1).reshape(size, binding.STATE_BYTES)
    env = CraftaxClassic(num_envs=num_envs, reset_pool_size=size, reset_pool_seed=9)
    observations, _ = env.reset(seed=40)
    worlds, chains, picked = [], [], set()
    for i in range(num_envs):
        world = binding.World(seed_key(0))
        state, index = pool_world_of(pool, binding.split(seed_key(40 + i), 1))
        world.load_state_bytes(state.tobytes())
        worlds.append(world)
        chains.append(binding.split(seed_key(40 + i), 0))
        picked.add(index)
        assert np.array_equal(observations[i], world.observation())
    actions = np.random.default_rng(4)
    finished = 0
    for _ in range(400):
        action = actions.integers(0, 17, size=num_envs).astype(np.int32)
        observations, rewards, terminals, truncations, _ = env.step(action)
        for i, world in enumerate(worlds):
            step_key = binding.split(chains[i], 1)
            chains[i] = binding.split(chains[i], 0)
            reward, done = world.step(step_key, int(action[i]))
            if done:
                state, index = pool_world_of(pool, binding.split(step_key, 1))
                world.load_state_bytes(state.tobytes())
                picked.add(index)
                finished += 1
            assert np.array_equal(binding.env_state_bytes(env.c_envs, i), world.state_bytes())
            assert np.array_equal(observations[i], world.observation())
            assert rewards[i] == np.float32(reward) and bool(terminals[i] or truncations[i]) == done
    assert finished > 0, "random play should end some episodes in 400 steps"
    assert len(picked) > 1, "resets should pick different pool worlds"
    env.close()


def test_a_checkpoint_with_a_reset_pool_resumes_with_this_processs_pool():
    """A checkpoint holds the pool's size and seed (plain values, as the trainer reads them), not its
    memory: the resumed envs reset from their own pool, never through the saving envs' pointer."""
    torch = pytest.importorskip("torch")
    actions = np.random.default_rng(6).integers(0, 17, size=(400, 8)).astype(np.int32)
    env = CraftaxClassic(num_envs=8, reset_pool_size=3, reset_pool_seed=2, log_interval=10**9)
    env.reset(seed=5)
    for action in actions[:50]:
        env.step(action)
    checkpoint = io.BytesIO()
    torch.save(env.get_state(), checkpoint)
    checkpoint.seek(0)
    saved = torch.load(checkpoint, weights_only=True)
    assert saved["params"] == dict(reset_pool_size=3, reset_pool_seed=2)
    later = []
    for action in actions[50:]:
        later.append([array.copy() for array in env.step(action)[:4]])
    assert sum(int(np.count_nonzero(t | u)) for _, _, t, u in later) > 0, "the continuation must cross resets"
    classic.reset_pool(1, 0, 1)  # replaces the shared pool: the resumed envs get one of their own, at another address
    resumed = CraftaxClassic(num_envs=8, reset_pool_size=3, reset_pool_seed=2, log_interval=10**9)
    assert resumed._reset_pool is not env._reset_pool
    # The saving envs' pool garbled: reading it through the saved pointer would show.
    env._reset_pool.flags.writeable = True
    env._reset_pool[:] = 0xA5
    resumed.set_state(saved)
    for step, (action, expected) in enumerate(zip(actions[50:], later)):
        for got, want in zip(resumed.step(action)[:4], expected):
            assert np.array_equal(got, want), f"step {50 + step}"
    assert resumed.log() == env.log() is not None
    with pytest.raises(ValueError, match="saved state is of"):
        CraftaxClassic(num_envs=8).set_state(saved)
    env.close()
    resumed.close()


@pytest.mark.parametrize("params, message", [
    (dict(reset_pool_size=-1), "reset_pool_size must be between 0 and 65536, got -1"),
    (dict(reset_pool_size=1 << 17), "reset_pool_size must be between 0 and 65536, got 131072"),
    (dict(reset_pool_size=2.5), "reset_pool_size must be an integer, got 2.5"),
    (dict(reset_pool_size=4, reset_pool_seed=-3), "reset_pool_seed must be between 0 and 2147483647, got -3"),
])
def test_bad_reset_pools_are_refused_with_the_valid_range(params, message):
    with pytest.raises(ParameterError, match=message):
        CraftaxClassic(num_envs=2, **params)


def test_bad_input_is_refused_with_the_valid_range():
    with pytest.raises(ParameterError, match="num_envs"):
        CraftaxClassic(num_envs=0)
    world = binding.World(seed_key(0))
    with pytest.raises(ValueError, match="0..16"):
        world.step(seed_key(1), 17)
    with pytest.raises(ValueError, match="bytes"):
        world.load_state_bytes(b"\x00" * 10)
    with pytest.raises(ValueError, match="reset pool size must be >= 1, got 0"):
        binding.make_reset_pool(0, 1)


def test_render_shows_the_view_and_inventory():
    env = CraftaxClassic(num_envs=1)
    env.reset(seed=0)
    text = env.render(0)
    assert "health 9" in text and "wood 0" in text and "^@" in text
    env.close()


@pytest.mark.parametrize("divergences, code", [([], 0), (["seed 3: map differs at (10, 12)"], 1)],
                         ids=["identical", "a world differs"])
def test_parity_script_exits_non_zero_on_a_difference_and_prints_it(monkeypatch, capsys, divergences, code):
    path = Path(__file__).resolve().parent.parent / "scripts" / "craftax_classic_parity.py"
    spec = importlib.util.spec_from_file_location("craftax_classic_parity_script", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setattr(script, "check_worldgen", lambda seeds, start: divergences)
    monkeypatch.setattr(sys, "argv", [str(path), "worldgen", "--seeds", "4"])
    assert script.main() == code
    out = capsys.readouterr().out
    assert f"worldgen: 4 seeds, {len(divergences)} divergences" in out
    assert all("  " + line in out for line in divergences), out


@pytest.mark.reference
def test_world_generation_is_bit_exact():
    require_reference()
    assert parity.check_worldgen(8) == []


@pytest.mark.reference
@pytest.mark.parametrize("policy", parity.POLICIES)
def test_trajectories_are_bit_exact_through_autoresets(policy):
    require_reference()
    divergences, finished = parity.check_steps(2, 300, policy)
    assert divergences == []
    assert finished > 0, "the check must cross an auto-reset"



# A step key whose zombie spawn roll lies between the two roundings of the spawn chance at
# timestep 257 (0.02 + 0.1 * (1 - light)^2 with and without an FMA), found by a search over keys.
FMA_WITNESS_KEY = (0, 12670880)


def zombie_spawn_roll(step_key):
    """The uniform the auto-resetting step with `step_key` compares with the zombie spawn chance."""
    import jax

    rng = jax.random.split(step_key)[0]  # the game's step key
    for _ in range(2):  # past do_action's and update_mobs' keys
        rng = jax.random.split(rng)[0]
    spawn = jax.random.split(rng)[1]
    for _ in range(2):  # past the cow's roll and cell keys
        spawn = jax.random.split(spawn)[0]
    return np.float32(jax.random.uniform(jax.random.split(spawn)[1]))


@pytest.mark.reference
def test_zombie_spawn_chance_is_rounded_as_the_reference_rounds_it():
    require_reference()
    import jax
    import jax.numpy as jnp

    reset, step = parity.reference_functions()
    reset_key = jax.random.split(jax.random.PRNGKey(0))[1]
    _, state = reset(reset_key)
    world = binding.World(np.asarray(reset_key))
    record = np.frombuffer(world.state_bytes(), dtype=STATE_DTYPE).copy()
    record["timestep"] = 256
    world.load_state_bytes(record.tobytes())
    state = state.replace(timestep=jnp.int32(256))
    first_key = jax.random.PRNGKey(1)
    _, state, *_ = step(first_key, state, 0)
    world.step(np.asarray(first_key), 0)

    witness = jnp.asarray(np.array(FMA_WITNESS_KEY, dtype=np.uint32))
    dark = np.float32(1) - np.float32(state.light_level)
    unfused_chance = np.float32(0.02) + np.float32(0.1) * (dark * dark)
    roll = zombie_spawn_roll(witness)
    assert roll >= unfused_chance, "the witness key must tell the two roundings apart"
    zombies_before = int(np.asarray(state.zombies.mask).sum())
    assert zombies_before < 3
    _, state, *_ = step(witness, state, 0)
    world.step(np.asarray(witness), 0)
    assert int(np.asarray(state.zombies.mask).sum()) == zombies_before + 1
    assert parity.state_divergences(state, world) == []
