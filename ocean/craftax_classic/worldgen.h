// Craftax-Classic's world generation, as craftax/craftax_classic/world_gen.py's generate_world
// (one 64 x 64 floor), consuming keys exactly as the reference does.
//
// The noise is util/noise.py's generate_fractal_noise_2d with one octave on 64 x 64: the full
// game's Perlin noise (../craftax/perlin.h) on Classic's map.
#pragma once
#include "../craftax/perlin.h"
#include "state.h"

typedef struct {
    float water[CLASSIC_MAP_CELLS];
    float mountain[CLASSIC_MAP_CELLS];
    float path[CLASSIC_MAP_CELLS];
    float tree[CLASSIC_MAP_CELLS];
    float weights[CLASSIC_MAP_CELLS];
    float cumulative[CLASSIC_MAP_CELLS];
    float cumsum_scratch[CLASSIC_MAP_CELLS / 7 + 32];
} ClassicScratch;

// classic_noise_shifted(key, res_rows, res_cols, out): the noise on Classic's 64 x 64 map before
// its last multiplication (DEFINE_PERLIN_NOISE_SHIFTED); out has CLASSIC_MAP_CELLS floats.
DEFINE_PERLIN_NOISE_SHIFTED(classic_noise_shifted, CLASSIC_MAP_SIZE)

// calculate_light_level: the day's light at a timestep, as the reference's jitted auto-resetting
// step stores it in the state (a true division by the day length, no FMA in 1 - c^3).
CRAFTAX_FN float classic_light_level(int32_t timestep) {
    float progress = fmodf((float)timestep / (float)CLASSIC_DAY_LENGTH, 1.0f) + 0.3f;
    float c = fabsf(cosf(3.14159274f * progress));
    return 1.0f - c * c * c;
}

// The same light as that step's observation holds it: XLA computes it again inside the
// observation's fusion, where 1 - c^3 contracts into an FMA (one ulp away at some timesteps).
CRAFTAX_FN float classic_observed_light_level(int32_t timestep) {
    float progress = fmodf((float)timestep / (float)CLASSIC_DAY_LENGTH, 1.0f) + 0.3f;
    float c = fabsf(cosf(3.14159274f * progress));
    return fmaf(-c, c * c, 1.0f);
}

// get_distance_map(centre) / 5, clipped to [0, 1].
CRAFTAX_FN float classic_proximity(int r, int c) {
    int d = abs(r - CLASSIC_MAP_SIZE / 2) + abs(c - CLASSIC_MAP_SIZE / 2);
    return fclampf((float)d / 5.0f, 0.0f, 1.0f);
}

CRAFTAX_FN void classic_generate_world(Key rng, ClassicState* s, ClassicScratch* scratch) {
    memset(s, 0, sizeof(*s));
    const int n = CLASSIC_MAP_SIZE;
    uint8_t* map = &s->map[0][0];

    Key water_key = key_split2(&rng);
    float water_scale = classic_noise_shifted(water_key, n / 16, n / 16, scratch->water);
    key_split2(&rng);
    Key mountain_key = key_split2(&rng);
    float mountain_scale = classic_noise_shifted(mountain_key, n / 16, n / 16, scratch->mountain);
    Key path_key = key_split2(&rng);
    float path_scale = classic_noise_shifted(path_key, n / 8, n / 2, scratch->path);
    key_split2(&rng);
    Key coal_key = key_split2(&rng);
    Key iron_key = key_split2(&rng);
    Key diamond_key = key_split2(&rng);
    Key tree_key = key_split2(&rng);
    float tree_scale = classic_noise_shifted(tree_key, n / 4, n / 4, scratch->tree);

    for (int r = 0; r < n; r++) {
        for (int c = 0; c < n; c++) {
            int i = r * n + c;
            float proximity = classic_proximity(r, c);
            float water = fmaf(scratch->water[i], water_scale, proximity) - 1.0f;
            float mountain = fmaf(scratch->mountain[i], mountain_scale, 0.05f) + proximity - 1.0f;
            float path_x = scratch->path[i] * path_scale;
            float path_y = scratch->path[c * n + r] * path_scale;
            float tree_noise = scratch->tree[i] * tree_scale;
            uint8_t block = water > 0.7f ? CB_WATER : CB_GRASS;
            if (water < 0.75f && water > 0.6f && block != CB_WATER) block = CB_SAND;
            if (mountain > 0.7f) block = CB_STONE;
            if (mountain > 0.7f && path_x > 0.8f) block = CB_PATH;
            if (mountain > 0.7f && path_y > 0.8f) block = CB_PATH;
            if (mountain > 0.85f && water > 0.4f) block = CB_PATH;
            if (block == CB_STONE && uniform_at(coal_key, (uint32_t)i) < 0.04f) block = CB_COAL;
            if (block == CB_STONE && uniform_at(iron_key, (uint32_t)i) < 0.03f) block = CB_IRON;
            if (mountain > 0.8f && uniform_at(diamond_key, (uint32_t)i) < 0.005f && block == CB_STONE) block = CB_DIAMOND;
            float tree = (tree_noise > 0.5f ? 1.0f : 0.0f) * uniform_at(rng, (uint32_t)i);
            if (tree > 0.8f && block == CB_GRASS) block = CB_TREE;
            if (mountain > 0.85f && tree_noise > 0.7f) block = CB_LAVA;
            map[i] = block;
        }
    }
    map[(n / 2) * n + n / 2] = CB_GRASS;

    // always_diamond: one stone cell, drawn with p = stone / stone.sum(), becomes diamond.
    float stones = 0.0f;
    for (int i = 0; i < CLASSIC_MAP_CELLS; i++) stones += (float)(map[i] == CB_STONE);
    for (int i = 0; i < CLASSIC_MAP_CELLS; i++) scratch->weights[i] = (float)(map[i] == CB_STONE) / stones;
    xla_cumsum(scratch->weights, scratch->cumulative, CLASSIC_MAP_CELLS, scratch->cumsum_scratch);
    int diamond = choice_cumulative(key_split2(&rng), scratch->cumulative, CLASSIC_MAP_CELLS);
    map[(diamond / n) * n + diamond % n] = CB_DIAMOND;

    s->player_position[0] = n / 2;
    s->player_position[1] = n / 2;
    s->player_direction = CA_UP;
    s->player_health = s->player_food = s->player_drink = s->player_energy = 9;
    for (int k = 0; k < CLASSIC_MAX_ZOMBIES; k++) s->zombies.health[k] = 1;
    for (int k = 0; k < CLASSIC_MAX_COWS; k++) s->cows.health[k] = CLASSIC_COW_HEALTH;
    for (int k = 0; k < CLASSIC_MAX_ARROWS; k++) s->arrow_directions[k][0] = s->arrow_directions[k][1] = 1;
    s->light_level = classic_light_level(0);
    s->state_rng = key_split2(&rng);
}
