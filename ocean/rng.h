// Per-env random numbers: splitmix64 over a 64-bit state. Each env owns its state, so results do
// not depend on which thread steps which env.
#pragma once
#include <math.h>
#include <stdint.h>

static inline uint64_t rng_next(uint64_t* state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Uniform integer in [0, n): multiply-shift instead of modulo (no division on the hot path).
static inline int rng_below(uint64_t* state, uint32_t n) {
    return (int)(((rng_next(state) >> 32) * (uint64_t)n) >> 32);
}

// Uniform float in [0, 1) with 24 random bits.
static inline float rng_unit(uint64_t* state) {
    return (float)(rng_next(state) >> 40) * (1.0f / 16777216.0f);
}

// Standard normal sample (Box-Muller).
static inline float rng_normal(uint64_t* state) {
    float u1 = 1.0f - rng_unit(state);
    float u2 = rng_unit(state);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530718f * u2);
}
