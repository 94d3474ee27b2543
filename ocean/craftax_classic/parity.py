"""Craftax-Classic parity harness: the C game (ocean/craftax_classic) against the JAX reference
(PyPI ``craftax``, ``craftax.craftax_classic``), from the same keys, whole states compared.

Trajectories follow the Ocean env's key flow: K = PRNGKey(seed); rng, reset_key = split(K); the
first world is generate_world(reset_key); every step does rng, step_key = split(rng) and the
auto-resetting env's step(step_key, state, action) (a finished episode restarts from
generate_world(split(step_key)[1])). Each step compares the whole state (floats bit for bit),
the observation bit for bit, the reward bit for bit and the done flag; the run stops at the
first divergence.

Policies: ``random`` (uniform over the 17 actions) from the generated world; ``scripted`` from a
scenario (the generated world with nine of every material and sapling, 50 steps before the time
limit) that mines what it faces,
fights mobs, crafts and places, sleeps when tired and otherwise walks towards the nearest
resource. Needs ``pip install -r requirements-craftax.txt`` (craftax + jax, CPU).
"""

import functools

import numpy as np

from ocean.craftax.parity import bitwise_equal, compare_fields, reference_fields
from ocean.craftax_classic.state_view import STATE_DTYPE, state_fields

POLICIES = ("random", "scripted")

# The scripted policy's scenario: inventory fields overwritten identically on both sides, and a
# timestep near the limit, so that the first episode runs out of time (a truncation's auto-reset).
SCENARIO_INVENTORY = {"wood": 9, "stone": 9, "coal": 9, "iron": 9, "sapling": 9}
SCENARIO_TIMESTEP = 9950

MOVES = {1: (0, -1), 2: (0, 1), 3: (-1, 0), 4: (1, 0)}
# The pickaxe (inventory field) each minable block needs; trees, water and ripe plants need none.
NEEDS = {5: None, 3: None, 16: None, 4: "wood_pickaxe", 8: "wood_pickaxe", 9: "stone_pickaxe", 10: "iron_pickaxe"}
NEIGHBOURS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


def scripted_action(fields, rng):
    """The scripted policy's action for a state (state_view's fields)."""
    world = fields["map"].reshape(64, 64)
    row, col = (int(v) for v in fields["player_position"])
    inventory = {name: int(fields[f"inventory.{name}"][0]) for name in ("wood", "stone", "sapling", "wood_pickaxe",
                                                                          "stone_pickaxe", "iron_pickaxe")}
    dr, dc = MOVES.get(int(fields["player_direction"][0]), (0, 0))
    fr, fc = row + dr, col + dc
    facing = int(world[fr, fc]) if 0 <= fr < 64 and 0 <= fc < 64 else 1
    mobs = [fields[f"{kind}.position"].reshape(-1, 2)[fields[f"{kind}.mask"].astype(bool)]
            for kind in ("zombies", "cows", "skeletons")]
    if any(((positions == (fr, fc)).all(axis=1)).any() for positions in mobs):
        return 5
    minable = [block for block, tool in NEEDS.items() if tool is None or inventory[tool] > 0]
    if facing in minable or (facing == 2 and rng.random() < 0.1):
        return 5
    near = {int(world[row + r, col + c]) for r, c in NEIGHBOURS if 0 <= row + r < 64 and 0 <= col + c < 64}
    if 11 in near and rng.random() < 0.5:
        return int(rng.integers(11, 17))  # the six crafting actions
    roll = rng.random()
    if 11 not in near and inventory["wood"] >= 2 and roll < 0.2:
        return 8
    if 11 in near and 12 not in near and inventory["stone"] > 0 and roll < 0.2:
        return 9
    if roll < 0.25:
        return int(rng.choice([7, 10]))  # stone or a sapling
    if int(fields["player_energy"][0]) < 4 and roll < 0.6:
        return 6
    if roll > 0.8:
        return int(rng.integers(1, 5))
    targets = np.argwhere(np.isin(world, minable))
    if len(targets) == 0:
        return int(rng.integers(1, 5))
    distances = np.abs(targets - (row, col)).sum(axis=1)
    tr, tc = targets[int(np.argmin(distances))]
    if tr != row and (tc == col or rng.random() < 0.5):
        return 3 if tr < row else 4
    return 1 if tc < col else 2


def scenario_bytes(raw):
    """A state's bytes with the scripted scenario's inventory."""
    record = np.frombuffer(raw, dtype=STATE_DTYPE).copy()
    for name, value in SCENARIO_INVENTORY.items():
        record["inventory"][name] = value
    record["timestep"] = SCENARIO_TIMESTEP
    return record.tobytes()


def reference_scenario(state):
    import jax.numpy as jnp

    changes = {name: jnp.int32(value) for name, value in SCENARIO_INVENTORY.items()}
    return state.replace(inventory=state.inventory.replace(**changes), timestep=jnp.int32(SCENARIO_TIMESTEP))


@functools.cache
def reference_functions():
    """The reference as its users call it: the env's jitted reset(key, params) (generate_world)
    and the auto-resetting step(key, state, action, params). The parameters go in as arguments:
    closed over as constants, XLA would fold them and round the light level differently."""
    from craftax.craftax_classic.envs.craftax_symbolic_env import CraftaxClassicSymbolicEnv

    env = CraftaxClassicSymbolicEnv()
    params = env.default_params
    return (lambda key: env.reset(key, params)), (lambda key, state, action: env.step(key, state, action, params))


def state_divergences(ref_state, world):
    return compare_fields(reference_fields(ref_state), state_fields(world.state_bytes()))


def check_worldgen(seeds, start=0):
    """Generated worlds and first observations of `seeds` seeds; returns divergence strings."""
    import jax

    from ocean.craftax_classic import binding

    reset, _ = reference_functions()
    divergences = []
    for seed in range(start, start + seeds):
        key = jax.random.split(jax.random.PRNGKey(seed))[1]
        obs, state = reset(key)
        world = binding.World(np.asarray(key))
        differing = state_divergences(state, world)
        if not bitwise_equal(np.asarray(obs), world.observation()):
            differing.append("observation")
        divergences += [f"seed {seed}: {name}" for name in differing]
    return divergences


def check_steps(seeds, steps, policy="random", start=0):
    """`steps` steps of `seeds` seeds under `policy` on both sides; returns (divergence strings,
    episodes finished)."""
    import jax

    from ocean.craftax_classic import binding

    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    reset, step = reference_functions()
    divergences, finished = [], 0
    for seed in range(start, start + seeds):
        rng, reset_key = jax.random.split(jax.random.PRNGKey(seed))
        obs, state = reset(reset_key)
        world = binding.World(np.asarray(reset_key))
        if policy == "scripted":
            state = reference_scenario(state)
            world.load_state_bytes(scenario_bytes(world.state_bytes()))
        actions = np.random.default_rng(seed)
        for t in range(steps):
            rng, step_key = jax.random.split(rng)
            if policy == "random":
                action = int(actions.integers(17))
            else:
                action = scripted_action(state_fields(world.state_bytes()), actions)
            obs, state, reward, done, _ = step(step_key, state, action)
            my_reward, my_done = world.step(np.asarray(step_key), action)
            differing = state_divergences(state, world)
            if not bitwise_equal(np.asarray(obs), world.observation()):
                differing.append("observation")
            if not bitwise_equal(np.asarray(reward, np.float32).reshape(1), np.asarray([my_reward], np.float32)):
                differing.append("reward")
            if bool(done) != my_done:
                differing.append("done")
            finished += my_done
            if differing:
                divergences += [f"seed {seed} step {t} action {action}: {name}" for name in differing]
                break
    return divergences, finished
