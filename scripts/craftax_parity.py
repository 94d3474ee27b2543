"""Craftax parity: the C game (ocean/craftax) against the JAX reference (PyPI `craftax`).

Runs both from the same keys and reports the first divergence by field name, step and env.
Environment i is seeded with seed + i; for the reference its key is jax.random.PRNGKey(seed + i).

    python scripts/craftax_parity.py worldgen --seeds 64        # reset states + observations
    python scripts/craftax_parity.py rng --keys 256             # PRNG and samplers

Needs `pip install -r requirements-craftax.txt` (craftax + jax, CPU).
"""

import argparse
import sys

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
    for i in range(keys):
        key = jax.random.PRNGKey(int(rng.integers(0, 2**31 - 1)))
        data = np.asarray(key)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="check", required=True)
    world = sub.add_parser("worldgen", help="reset states and observations")
    world.add_argument("--seeds", type=int, default=16)
    world.add_argument("--start", type=int, default=0)
    rng = sub.add_parser("rng", help="threefry and jax.random samplers")
    rng.add_argument("--keys", type=int, default=64)
    args = parser.parse_args()
    if args.check == "worldgen":
        divergences = check_worldgen(args.seeds, args.start)
        total = args.seeds
    else:
        divergences = check_rng(args.keys)
        total = args.keys
    print(f"{args.check}: {total} cases, {len(divergences)} divergences")
    for line in divergences[:20]:
        print("  " + line)
    return 1 if divergences else 0


if __name__ == "__main__":
    sys.exit(main())
