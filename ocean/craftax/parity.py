"""Craftax parity harness: the C game (ocean/craftax) against the JAX reference (PyPI `craftax`).

Runs both from the same keys and reports the first divergence by field name, step and env.
Environment i is seeded with seed + i; for the reference its key is jax.random.PRNGKey(seed + i).

``check_worldgen``, ``check_rng`` and ``check_steps`` return the divergences they found, as text;
``scripts/craftax_parity.py`` is their command line.

A generated world (the first one or one made at an auto-reset) that differs from the reference's
(world generation, not the step, is then at fault) is reported separately with its key, the C
world is resynchronised from the reference state, and the run goes on. Everything else stops the run at the first divergence.

Trajectories follow the Ocean env's key flow: K = PRNGKey(seed + i); rng, reset_key = split(K);
the first world is reset(reset_key); every step does rng, step_key = split(rng) and the
auto-resetting env's step(step_key, state, action) (a finished episode restarts from
reset(split(step_key)[1])). Observations are compared bitwise every step, rewards bitwise,
dones exactly, and the whole state every --state-every steps and at any divergence.

Policies: `random` (uniform over the 43 actions); `descend` starts from a scenario state
(every floor cleared, a diamond pickaxe and sword, diamond armour, a bow and arrows, potions,
books, torches, the fireball spell, every attribute at its maximum) and walks to each down ladder, mining through and fighting what blocks it,
mixed with random combat, crafting, potion, spell and placing actions.

Needs `pip install -r requirements-craftax.txt` (craftax + jax, CPU).
"""

import numpy as np


def reference_env():
    """The JAX symbolic env (no auto-reset) and its jitted reset."""
    import jax
    from craftax.craftax.envs.craftax_symbolic_env import CraftaxSymbolicEnvNoAutoReset

    env = CraftaxSymbolicEnvNoAutoReset()
    return env, jax.jit(env.reset)


def reference_fields(state):
    """The reference EnvState as {field name: flat numpy array}, named like the C StateField table."""
    fields = {}
    for name, value in vars(state).items():
        if name == "fractal_noise_angles":
            continue
        if hasattr(value, "__dataclass_fields__"):
            for sub, subvalue in vars(value).items():
                fields[f"{name}.{sub}"] = np.asarray(subvalue).ravel()
        elif name == "state_rng":
            import jax

            fields[name] = np.asarray(jax.random.key_data(value)).ravel()
        else:
            fields[name] = np.asarray(value).ravel()
    return fields


def bitwise_equal(ref, mine):
    """Same shape and values; float32 arrays compared bit for bit (so -0.0 != 0.0, NaN == NaN)."""
    if ref.shape != mine.shape:
        return False
    if ref.dtype.kind == "f":
        return np.array_equal(ref.astype(np.float32).view(np.uint32), mine.astype(np.float32).view(np.uint32))
    return np.array_equal(ref.astype(np.int64), mine.astype(np.int64))


def compare_fields(reference, native):
    """Names of the fields whose values differ (bitwise for floats), in reference order."""
    differing = []
    for name, ref in reference.items():
        if name not in native:
            differing.append(f"{name} (missing in C)")
            continue
        if not bitwise_equal(ref, native[name]):
            differing.append(name)
    return differing


def world_key(seed):
    """The key reset() hands generate_world: the second half of split(PRNGKey(seed))."""
    import jax

    return np.asarray(jax.random.split(jax.random.PRNGKey(seed))[1])


def check_worldgen(seeds, start=0, verbose=True):
    """Reset states and observations of `seeds` envs; returns a list of divergence strings."""
    import jax

    from ocean.craftax import binding

    _, reset = reference_env()
    divergences = []
    for env_index in range(seeds):
        seed = start + env_index
        obs, state = reset(jax.random.PRNGKey(seed))
        world = binding.World(world_key(seed))
        differing = compare_fields(reference_fields(state), world.fields())
        if not bitwise_equal(np.asarray(obs), world.observation()):
            differing.append("observation")
        for name in differing:
            divergences.append(f"env {env_index} (seed {seed}) step 0: {name}")
        if verbose and differing:
            print(divergences[-len(differing)], f"(+{len(differing) - 1} more fields)" if len(differing) > 1 else "")
    return divergences


def rng_check_keys(count, rng):
    """``count`` raw threefry keys (uint32 pairs) with both 32-bit words drawn at random: a key
    from PRNGKey of a small seed has a high word of 0, which would leave half of every key's bits
    unchecked."""
    return rng.integers(0, 2**32, size=(count, 2), dtype=np.uint32)


def check_rng(keys):
    """threefry and samplers against jax.random for `keys` keys; returns divergence strings."""
    import jax
    import jax.numpy as jnp

    from ocean.craftax import binding

    divergences = []
    split3 = jax.jit(lambda k: jax.random.split(k, 3))
    bits = jax.jit(lambda k: jax.random.bits(k, (37,)))
    uniform = jax.jit(lambda k: jax.random.uniform(k, (37,)))
    randint = jax.jit(lambda k, lo, hi: jax.random.randint(k, (5,), lo, hi))
    fold = jax.jit(jax.random.fold_in)
    perm = jax.jit(lambda k: jax.random.permutation(k, 6))
    choice = jax.jit(lambda k, p: jax.random.choice(k, p.shape[0], p=p))
    cumsum = jax.jit(jnp.cumsum)
    rng = np.random.default_rng(0)
    for i, data in enumerate(rng_check_keys(keys, rng)):
        key = jnp.asarray(data)
        checks = {
            "split": (split3(key), binding.split(data, 3)),
            "fold_in": (fold(key, i), binding.fold_in(data, i)),
            "bits": (bits(key), binding.bits(data, 37)),
            "uniform": (uniform(key), binding.uniform(data, 37)),
            "permutation": (perm(key), binding.permutation(data, 6)),
        }
        lo = int(rng.integers(-50, 50))
        hi = lo + int(rng.integers(1, 100))
        checks["randint"] = (randint(key, lo, hi), binding.randint(data, 5, lo, hi))
        weights = (rng.random(2304) < rng.random()).astype(np.float32)
        weights = weights / max(weights.sum(), 1)
        checks["cumsum"] = (cumsum(weights), binding.cumsum(weights))
        checks["choice"] = (choice(key, weights), binding.choice(data, weights))
        for name, (ref, mine) in checks.items():
            if not bitwise_equal(np.asarray(ref), np.asarray(mine)):
                divergences.append(f"key {i}: {name}")
    return divergences


# The scenario of the `descend` policy: state fields overwritten identically on both sides.
DESCEND_SCENARIO = {
    "monsters_killed": np.full(9, 10, np.int32),
    "inventory.pickaxe": np.int32(4),
    "inventory.sword": np.int32(4),
    "inventory.bow": np.int32(1),
    "inventory.arrows": np.int32(60),
    "inventory.torches": np.int32(30),
    "inventory.wood": np.int32(30),
    "inventory.stone": np.int32(30),
    "inventory.coal": np.int32(10),
    "inventory.iron": np.int32(10),
    "inventory.diamond": np.int32(10),
    "inventory.ruby": np.int32(5),
    "inventory.sapphire": np.int32(5),
    "inventory.potions": np.full(6, 4, np.int32),
    "inventory.books": np.int32(2),
    "inventory.armour": np.full(4, 2, np.int32),
    "learned_spells": np.array([True, False]),
    "player_strength": np.int32(5),
    "player_dexterity": np.int32(5),
    "player_intelligence": np.int32(5),
    "player_health": np.float32(13.0),
}

# Actions mixed into the descend policy's walk: combat, crafting, potions, spells, placing.
RICH_ACTIONS = [5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33,
                34, 35, 36, 37, 38, 39, 40, 41, 42, 17]

# Blocks the descend policy walks through (after mining them) and blocks it avoids.
MINEABLE = {4, 5, 8, 9, 10, 11, 12, 20, 21, 22, 23, 28, 29}
IMPASSABLE = {3, 14, 15, 16, 17, 19, 24, 30, 31, 32, 33, 34, 35}
MOVES = {1: (0, -1), 2: (0, 1), 3: (-1, 0), 4: (1, 0)}


def ladder_distances(block_map, target):
    """Breadth-first step counts to `target` over the cells the descend policy can cross."""
    from collections import deque

    distance = np.full(block_map.shape, 1 << 20, np.int64)
    blocked = np.isin(block_map, list(IMPASSABLE))
    distance[target] = 0
    queue = deque([target])
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES.values():
            nr, nc = r + dr, c + dc
            if 0 <= nr < 48 and 0 <= nc < 48 and not blocked[nr, nc] and distance[nr, nc] > distance[r, c] + 1:
                distance[nr, nc] = distance[r, c] + 1
                queue.append((nr, nc))
    return distance


class DescendPolicy:
    """Walks each env to its floor's down ladder and descends; reads the C state (identical to the
    reference's until a divergence). Random rich actions a fifth of the time."""

    def __init__(self, worlds, seed):
        self.worlds = worlds
        self.rng = np.random.default_rng(seed)
        self.cache = {}

    def __call__(self, step):
        actions = np.empty(len(self.worlds), np.int32)
        for i, world in enumerate(self.worlds):
            actions[i] = self.act(i, world, step)
        return actions

    def act(self, i, world, step):
        if self.rng.random() < 0.2:
            return int(self.rng.choice(RICH_ACTIONS))
        level = int(world.field("player_level")[0])
        r, c = (int(x) for x in world.field("player_position"))
        ladder = tuple(int(x) for x in world.field("down_ladders").reshape(9, 2)[level])
        if level == 8:
            return int(self.rng.choice([1, 2, 3, 4, 5]))
        if (r, c) == ladder:
            return 18
        key = (i, level)
        if key not in self.cache or step % 50 == 0:
            block_map = world.field("map").reshape(9, 48, 48)[level]
            self.cache[key] = ladder_distances(block_map, ladder)
        distance = self.cache[key]
        best = None
        for action, (dr, dc) in MOVES.items():
            nr, nc = r + dr, c + dc
            if 0 <= nr < 48 and 0 <= nc < 48 and (best is None or distance[nr, nc] < distance[best[1]]):
                best = (action, (nr, nc))
        if best is None or distance[best[1]] >= distance[r, c]:
            return int(self.rng.integers(1, 5))
        action, (nr, nc) = best
        facing = int(world.field("player_direction")[0]) == action
        block = int(world.field("map").reshape(9, 48, 48)[level, nr, nc])
        occupied = bool(world.field("mob_map").reshape(9, 48, 48)[level, nr, nc])
        if facing and (block in MINEABLE or occupied):
            return 5
        return action


def apply_scenario(state, worlds, scenario):
    """Overwrites the scenario's fields in the batched reference state and in every C world."""
    import jax.numpy as jnp

    n = len(worlds)
    replaced = {}
    inventory = {}
    for name, value in scenario.items():
        batched = jnp.asarray(np.broadcast_to(value, (n,) + np.shape(value)))
        if name.startswith("inventory."):
            inventory[name.split(".", 1)[1]] = batched
        else:
            replaced[name] = batched
        for world in worlds:
            world.set_field(name, value)
    return state.replace(inventory=state.inventory.replace(**inventory), **replaced)


def check_steps(seeds, steps, start=0, policy="random", state_every=100, verbose=True):
    """Runs `seeds` envs for `steps` steps on both sides; returns (divergences, statistics)."""
    import jax
    from craftax.craftax.envs.craftax_symbolic_env import CraftaxSymbolicEnvNoAutoReset

    from ocean.craftax import binding

    env = CraftaxSymbolicEnvNoAutoReset()
    # No params argument: the env then uses its default EnvParams as Python constants, which XLA
    # folds (passing params makes them traced values and changes light_level's float32 rounding).
    step_batch = jax.jit(jax.vmap(lambda key, state, action: env.step(key, state, action)))
    reset_batch = jax.jit(jax.vmap(lambda key: env.reset(key)))
    reset_one = jax.jit(lambda key: env.reset(key))
    split_batch = jax.jit(jax.vmap(jax.random.split))

    roots = jax.vmap(jax.random.PRNGKey)(np.arange(start, start + seeds))
    halves = split_batch(roots)
    rng, reset_keys = halves[:, 0], halves[:, 1]
    obs, state = reset_batch(reset_keys)
    worlds = [binding.World(world_key_from(np.asarray(k))) for k in np.asarray(reset_keys)]

    divergences = []
    reset_worlds = []  # generated worlds that differ (see check_reset_world)
    episodes = 0
    deepest = np.zeros(seeds, np.int64)

    def report(step, env_index, what, into=divergences):
        line = f"env {env_index} (seed {start + env_index}) step {step}: {what}"
        into.append(line)
        if verbose:
            print(line, flush=True)

    def compare_states(step, batched_state, only=None):
        host = jax.device_get(batched_state)
        found = False
        for i in range(seeds) if only is None else only:
            single = jax.tree.map(lambda x, i=i: x[i], host)
            differing = compare_fields(reference_fields(single), worlds[i].fields())
            if differing:
                found = True
                report(step, i, "state fields " + ", ".join(differing[:8]))
        return found

    def check_reset_world(step, i, batched_state, reset_key):
        """Compares the world generated at this step's reset (step 0: the first world). One that
        differs is reported as a world generation divergence (with its key) and the C world is
        resynchronised from the reference's state. Returns whether it differed."""
        single = reference_fields(jax.device_get(jax.tree.map(lambda x: x[i], batched_state)))
        differing = compare_fields(single, worlds[i].fields())
        if not differing:
            return False
        key = np.asarray(reset_key).tolist()
        report(step, i, f"world generated from reset key {key} differs in " + ", ".join(differing), reset_worlds)
        for name, values in single.items():
            worlds[i].set_field(name, values)
        return True

    for i in range(seeds):
        if check_reset_world(0, i, state, reset_keys[i]):
            continue
        if not bitwise_equal(np.asarray(obs[i]), worlds[i].observation()):
            report(0, i, "observation")
    if policy == "descend":
        state = apply_scenario(state, worlds, DESCEND_SCENARIO)
        choose = DescendPolicy(worlds, start)
    else:
        actions_rng = np.random.default_rng(start)
        choose = lambda step: actions_rng.integers(0, 43, seeds).astype(np.int32)  # noqa: E731

    for step in range(1, steps + 1):
        if divergences:
            break
        halves = split_batch(rng)
        rng, step_keys = halves[:, 0], halves[:, 1]
        actions = choose(step)
        # EnvironmentAutoReset.step: the first half of the key steps, the second resets.
        wrapper_keys = split_batch(step_keys)
        obs, state, reward, done, _ = step_batch(wrapper_keys[:, 0], state, actions)
        step_keys_host = np.asarray(step_keys)
        done_host = np.asarray(done)
        for i in np.nonzero(done_host)[0]:
            obs_i, state_i = reset_one(wrapper_keys[i, 1])
            obs = obs.at[i].set(obs_i)
            state = jax.tree.map(lambda batch, one, i=i: batch.at[i].set(one), state, state_i)
        episodes += int(done_host.sum())
        reward_host = np.asarray(reward)
        obs_host = np.asarray(obs)
        diverged = []
        for i in range(seeds):
            native_reward, native_done = worlds[i].step(step_keys_host[i], int(actions[i]))
            what = []
            if native_done != bool(done_host[i]):
                what.append(f"done (reference {bool(done_host[i])}, C {native_done})")
            if np.float32(native_reward).view(np.uint32) != reward_host[i].view(np.uint32):
                what.append(f"reward (reference {reward_host[i]!r}, C {native_reward!r})")
            native_obs = worlds[i].observation()
            if not bitwise_equal(obs_host[i], native_obs):
                first = int(np.nonzero(obs_host[i].view(np.uint32) != native_obs.view(np.uint32))[0][0])
                what.append(f"observation (first differing index {first})")
            if done_host[i] and native_done and check_reset_world(step, i, state, wrapper_keys[i, 1]):
                # The new world's observation differs with it; the finished step's reward and
                # done still count.
                what = [item for item in what if not item.startswith("observation")]
            if what:
                report(step, i, ", ".join(what))
                diverged.append(i)
            deepest[i] = max(deepest[i], int(worlds[i].field("player_level")[0]))
        if diverged:
            compare_states(step, state, diverged)
        elif state_every and step % state_every == 0:
            compare_states(step, state)
        if verbose and step % 500 == 0:
            print(f"  step {step}: {episodes} episodes ended, deepest floors {np.bincount(deepest, minlength=9).tolist()}", flush=True)
    statistics = {"episodes": episodes, "deepest": deepest, "steps": step, "reset_worlds": reset_worlds}
    return divergences, statistics


def world_key_from(reset_key):
    """The key reset(reset_key) generates its world from."""
    from ocean.craftax import binding

    return binding.split(reset_key, 2)[1]
