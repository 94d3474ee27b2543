"""Craftax-Classic: one 64 x 64 floor, 17 actions, 22 achievements, as the JAX package's
``craftax.craftax_classic``, bit for bit: the game logic (C headers), its ``World`` binding and
the parity harness."""
