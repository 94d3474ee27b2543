// The full game's Perlin noise (perlin.h) on its 48 x 48 floors.
#pragma once
#include "constants.h"
#include "perlin.h"

// fractal_noise_shifted(key, res_rows, res_cols, out): the noise on the full game's 48 x 48 floors
// before its last multiplication (DEFINE_PERLIN_NOISE_SHIFTED); out has MAP_CELLS floats.
DEFINE_PERLIN_NOISE_SHIFTED(fractal_noise_shifted, MAP_SIZE)

// generate_fractal_noise_2d(key, (48, 48), (res_rows, res_cols), octaves=1), normalised to [0, 1].
CRAFTAX_FN void fractal_noise(Key key, int res_rows, int res_cols, float* out) {
    float inverse_range = fractal_noise_shifted(key, res_rows, res_cols, out);
    for (int i = 0; i < MAP_CELLS; i++) out[i] *= inverse_range;
}
