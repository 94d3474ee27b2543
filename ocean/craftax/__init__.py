"""Craftax (the full game) in C, bit-exact against the JAX reference.

Done so far: the PRNG and samplers (rng.h), world generation for all nine floors (worldgen.h,
noise.h) and the observation encodings (observation.h), checked by tests/test_craftax.py and
scripts/craftax_parity.py through ``ocean.craftax.binding``. The step logic, and with it the
``puffer_craftax`` Ocean env, is not written yet; see docs/craftax.md.
"""
