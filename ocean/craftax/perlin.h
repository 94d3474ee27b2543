// Perlin noise as craftax/craftax/util/noise.py, with one octave, on a square map of any size: the
// full game's 48 x 48 floors (noise.h) and Craftax-Classic's 64 x 64 world
// (../craftax_classic/worldgen.h).
//
// The reference's values are those of the XLA program of its vmapped generate_world (jax 0.10,
// x86-64 CPU with FMA; see its optimised HLO): the fade polynomial contracts into FMAs, the dot
// products of offsets and gradients and the blend run in YNNPACK fusions without FMAs, sqrt(2) * n
// is rounded before min is subtracted, and division by (max - min) is a multiplication by its
// reciprocal. (A standalone jit of generate_fractal_noise_2d fuses differently.) Classic's jitted
// reset computes its noise the same way.
#pragma once
#include "common.h"
#include "jax_random.h"

// cosf/sinf of the reference are glibc's (XLA's CPU backend calls libm). CUDA's cosf/sinf are not
// bitwise equal, so these are host-only: device code reads glibc's results from ReferenceTrig,
// tables the host fills by calling the host pass of the functions below (craftax_gpu.cu).
#ifdef __CUDACC__
#define CRAFTAX_LIBM_FN __host__ static inline
#else
#define CRAFTAX_LIBM_FN static inline
#endif
CRAFTAX_LIBM_FN float reference_cosf(float x) { return cosf(x); }
CRAFTAX_LIBM_FN float reference_sinf(float x) { return sinf(x); }

// A noise gradient's angle is 6.2831855f times a uniform whose 23 mantissa bits are the top bits
// of a 32-bit draw: 2^23 angles in all, few enough to tabulate.
#define GRADIENT_ANGLES (1 << 23)

#ifdef __CUDACC__
typedef struct {
    const float2* gradients;    // [GRADIENT_ANGLES]: (cos, sin) of angle bits >> 9
    const float* light_levels;  // [MAX_TIMESTEPS + 1]: light_level_at(timestep)
    float initial_light_level;
} ReferenceTrig;
__device__ static ReferenceTrig reference_trig;
#endif

// cos and sin of the gradient angle 6.2831855f * uniform_from_bits(bits).
CRAFTAX_FN void gradient_at(uint32_t bits, float* x, float* y) {
#ifdef __CUDA_ARCH__
    float2 g = reference_trig.gradients[bits >> 9];
    *x = g.x;
    *y = g.y;
#else
    float angle = 6.2831855f * uniform_from_bits(bits);
    *x = reference_cosf(angle);
    *y = reference_sinf(angle);
#endif
}

CRAFTAX_FN float perlin_fade(float t) { return t * t * t * fmaf(t, fmaf(t, 6.0f, -15.0f), 10.0f); }

// DEFINE_PERLIN_NOISE_SHIFTED(name, size) defines
//     CRAFTAX_FN float name(Key key, int res_rows, int res_cols, float* out):
// generate_fractal_noise_2d(key, (size, size), (res_rows, res_cols), octaves=1) before its last
// multiplication: out[i] = sqrt(2) * n - min, and the noise is out[i] * the returned
// 1 / (max - min). Callers that add to the noise contract that multiplication with their
// addition into an FMA, as XLA does. res_rows and res_cols divide size, at most size / 4 rows
// and size / 2 columns of cells (the finest noise of both games); out has size * size floats.
// A macro, not a function taking the size, so that each game's noise compiles with its size as
// a constant from the start: gcc schedules the full game's noise differently when the size
// arrives as an argument, even inlined.
#define DEFINE_PERLIN_NOISE_SHIFTED(name, size)                                                                       \
    CRAFTAX_FN float name(Key key, int res_rows, int res_cols, float* out) {                                         \
        Key octave_key = key_split_at(key, 1);                                                                        \
        Key angle_key = key_split_at(octave_key, 1);                                                                  \
        float grad_x[((size) / 4 + 1) * ((size) / 2 + 1)];                                                            \
        float grad_y[((size) / 4 + 1) * ((size) / 2 + 1)];                                                            \
        int grad_cols = res_cols + 1;                                                                                 \
        for (int i = 0; i < (res_rows + 1) * grad_cols; i++)                                                          \
            gradient_at(random_bits_at(angle_key, (uint32_t)i), &grad_x[i], &grad_y[i]);                              \
        int cell_rows = (size) / res_rows;                                                                            \
        int cell_cols = (size) / res_cols;                                                                            \
        const float sqrt2 = 1.41421354f;                                                                              \
        float lowest = INFINITY, highest = -INFINITY;                                                                 \
        for (int r = 0; r < (size); r++) {                                                                            \
            int gr = r / cell_rows;                                                                                   \
            float x = (float)(r % cell_rows) / (float)cell_rows;                                                      \
            float tx = perlin_fade(x);                                                                                \
            for (int c = 0; c < (size); c++) {                                                                        \
                int gc = c / cell_cols;                                                                               \
                float y = (float)(c % cell_cols) / (float)cell_cols;                                                  \
                float ty = perlin_fade(y);                                                                            \
                int g00 = gr * grad_cols + gc, g10 = g00 + grad_cols, g01 = g00 + 1, g11 = g10 + 1;                   \
                float n00 = x * grad_x[g00] + y * grad_y[g00];                                                        \
                float n10 = (x - 1.0f) * grad_x[g10] + y * grad_y[g10];                                               \
                float n01 = x * grad_x[g01] + (y - 1.0f) * grad_y[g01];                                               \
                float n11 = (x - 1.0f) * grad_x[g11] + (y - 1.0f) * grad_y[g11];                                      \
                float n0 = n00 * (1.0f - tx) + tx * n10;                                                              \
                float n1 = n01 * (1.0f - tx) + tx * n11;                                                              \
                float blended = (1.0f - ty) * n0 + ty * n1;                                                           \
                out[r * (size) + c] = blended;                                                                        \
                float value = sqrt2 * blended;                                                                        \
                lowest = value < lowest ? value : lowest;                                                             \
                highest = value > highest ? value : highest;                                                          \
            }                                                                                                         \
        }                                                                                                             \
        for (int i = 0; i < (size) * (size); i++) out[i] = sqrt2 * out[i] - lowest;                                   \
        return 1.0f / (highest - lowest);                                                                             \
    }
