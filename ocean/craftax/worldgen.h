// World generation for all nine floors, as craftax/craftax/world_gen/world_gen.py: six smooth
// (noise) floors and three dungeon floors, consuming keys exactly as the reference does.
#pragma once
#include "noise.h"
#include "state.h"

// Scratch memory for generating one floor (kept off the state so reset pools can share it).
typedef struct {
    float water[MAP_CELLS];
    float mountain[MAP_CELLS];
    float path_noise[MAP_CELLS];
    float tree_noise[MAP_CELLS];
    float weights[MAP_CELLS];
    float cumulative[MAP_CELLS];
    float cumsum_scratch[MAP_CELLS / 7 + 32];
} WorldgenScratch;

// Euclidean distance from (24, 24), in float32 as get_distance_map computes it.
CRAFTAX_FN float spawn_distance(int r, int c) {
    int dr = r - MAP_SIZE / 2, dc = c - MAP_SIZE / 2;
    return sqrtf((float)(dr * dr + dc * dc));
}

// TORCH_LIGHT_MAP[i][j] for the 9 x 9 light pattern centred on (4, 4).
CRAFTAX_FN float torch_light(int i, int j) {
    int di = i - 4, dj = j - 4;
    // The reference divides by 5 eagerly, which XLA performs as a multiplication by 0.2f.
    float d = sqrtf((float)(di * di + dj * dj)) * 0.2f;
    return fclampf(1.0f - d, 0.0f, 1.0f);
}

// jax.random.choice over the 2304 cells with weights in scratch->weights (already scaled).
CRAFTAX_FN int choose_cell(Key key, WorldgenScratch* scratch) {
    xla_cumsum(scratch->weights, scratch->cumulative, MAP_CELLS, scratch->cumsum_scratch);
    return choice_cumulative(key, scratch->cumulative, MAP_CELLS);
}

// The cell index chosen by jax.random.choice(key, 2304, p=mask / mask.sum()) over a 0/1 mask.
// When the mask is empty the weights are NaN (0 / 0) and jax's binary search lands on cell 0.
CRAFTAX_FN int choose_normalised_cell(Key key, const uint8_t* mask, WorldgenScratch* scratch) {
    float total = 0.0f;
    for (int i = 0; i < MAP_CELLS; i++) total += (float)mask[i];
    for (int i = 0; i < MAP_CELLS; i++) scratch->weights[i] = (float)mask[i] / total;
    return choose_cell(key, scratch);
}

CRAFTAX_FN int choose_masked_cell(Key key, const uint8_t* mask, WorldgenScratch* scratch) {
    for (int i = 0; i < MAP_CELLS; i++) scratch->weights[i] = (float)mask[i];
    return choose_cell(key, scratch);
}

// A flat cell index from choice() as (row, col).
CRAFTAX_FN void cell_position(int index, int16_t* position) {
    position[0] = (int16_t)(index / MAP_SIZE);
    position[1] = (int16_t)(index % MAP_SIZE);
}

CRAFTAX_FN void generate_smoothworld(Key rng, const SmoothGenConfig* config, GameState* state,
                                     int level, WorldgenScratch* scratch) {
    uint8_t* map = &state->map[level][0][0];
    uint8_t* item_map = &state->item_map[level][0][0];
    float* light_map = &state->light_map[level][0][0];
    uint8_t* mask = &state->mob_map[level][0][0];  // all-zero after generation; borrowed as scratch
    Key sub;

    // Water and mountain maps: noise + clip(distance / strength) - 1, where XLA divides by the
    // strength as a multiplication by its reciprocal and contracts the noise's last
    // multiplication with the next addition into an FMA.
    sub = key_split2(&rng);
    float water_scale = fractal_noise_shifted(sub, 3, 3, scratch->water);
    key_split2(&rng);
    float water_reciprocal = 1.0f / (float)config->water_strength;
    for (int r = 0; r < MAP_SIZE; r++) {
        for (int c = 0; c < MAP_SIZE; c++) {
            int i = r * MAP_SIZE + c;
            float distance = spawn_distance(r, c);
            float water_bias = fclampf(distance * water_reciprocal, 0.0f, config->water_max);
            float water = fmaf(scratch->water[i], water_scale, water_bias) - 1.0f;
            scratch->water[i] = water;
            uint8_t block = water > config->water_threshold ? config->sea_block : config->default_block;
            if (water > config->sand_threshold && block != config->sea_block) block = config->coast_block;
            map[i] = block;
        }
    }

    sub = key_split2(&rng);
    float mountain_scale = fractal_noise_shifted(sub, 3, 3, scratch->mountain);
    float mountain_reciprocal = 1.0f / (float)config->mountain_strength;
    for (int r = 0; r < MAP_SIZE; r++) {
        for (int c = 0; c < MAP_SIZE; c++) {
            int i = r * MAP_SIZE + c;
            float distance = spawn_distance(r, c);
            float mountain_bias = fclampf(distance * mountain_reciprocal, 0.0f, config->mountain_max);
            float mountain = (fmaf(scratch->mountain[i], mountain_scale, 0.05f) + mountain_bias) - 1.0f;
            scratch->mountain[i] = mountain;
            if (mountain > 0.7f) map[i] = config->mountain_block;
        }
    }

    sub = key_split2(&rng);
    fractal_noise(sub, 6, 24, scratch->path_noise);
    for (int r = 0; r < MAP_SIZE; r++) {
        for (int c = 0; c < MAP_SIZE; c++) {
            int i = r * MAP_SIZE + c;
            if (scratch->mountain[i] > 0.7f && scratch->path_noise[i] > 0.8f) map[i] = config->path_block;
        }
    }
    for (int r = 0; r < MAP_SIZE; r++) {
        for (int c = 0; c < MAP_SIZE; c++) {
            int i = r * MAP_SIZE + c;
            if (scratch->mountain[i] > 0.7f && scratch->path_noise[c * MAP_SIZE + r] > 0.8f) map[i] = config->path_block;
        }
    }

    key_split2(&rng);
    for (int i = 0; i < MAP_CELLS; i++) {
        if (scratch->mountain[i] > 0.85f && scratch->water[i] > 0.4f) map[i] = config->inner_mountain_block;
    }

    sub = key_split2(&rng);
    fractal_noise(sub, 12, 12, scratch->tree_noise);
    for (int i = 0; i < MAP_CELLS; i++) {
        float gate = scratch->tree_noise[i] > config->tree_threshold_perlin ? 1.0f : 0.0f;
        int tree = gate * uniform_at(rng, (uint32_t)i) > config->tree_threshold_uniform;
        if (tree && map[i] == config->tree_requirement_block) map[i] = config->tree;
    }

    Key ore_rng = key_split2(&rng);
    for (int ore = 0; ore < 5; ore++) {
        Key ore_key = key_split2(&ore_rng);
        for (int i = 0; i < MAP_CELLS; i++) {
            if (map[i] == config->ore_requirement_blocks[ore] && uniform_at(ore_key, (uint32_t)i) < config->ore_chances[ore]) {
                map[i] = config->ores[ore];
            }
        }
    }

    for (int i = 0; i < MAP_CELLS; i++) {
        mask[i] = scratch->mountain[i] > 0.85f && scratch->tree_noise[i] > 0.7f;
        if (mask[i]) map[i] = config->lava;
    }
    // Lava cells light their surroundings below; keep that mask in the tree-noise buffer.
    for (int i = 0; i < MAP_CELLS; i++) scratch->tree_noise[i] = (float)mask[i];

    // The always_diamond option is off by default: the chosen stone cell is rewritten as stone,
    // which changes nothing unless the floor has no stone at all (then a NaN draw hits a cell).
    for (int i = 0; i < MAP_CELLS; i++) mask[i] = map[i] == BLOCK_STONE;
    sub = key_split2(&rng);
    int16_t diamond[2];
    cell_position(choose_normalised_cell(sub, mask, scratch), diamond);
    map[diamond[0] * MAP_SIZE + diamond[1]] = BLOCK_STONE;

    for (int i = 0; i < MAP_CELLS; i++) light_map[i] = config->default_light;
    map[(MAP_SIZE / 2) * MAP_SIZE + MAP_SIZE / 2] = config->player_spawn;
    memset(item_map, 0, MAP_CELLS);

    for (int i = 0; i < MAP_CELLS; i++) mask[i] = map[i] == config->valid_ladder;
    sub = key_split2(&rng);
    int16_t* down = state->down_ladders[level];
    cell_position(choose_masked_cell(sub, mask, scratch), down);
    if (config->ladder_down) item_map[down[0] * MAP_SIZE + down[1]] = ITEM_LADDER_DOWN;

    sub = key_split2(&rng);
    int16_t* up = state->up_ladders[level];
    cell_position(choose_masked_cell(sub, mask, scratch), up);

    // Light around the up ladder: jax's dynamic_update_slice first wraps a negative start index
    // (Python-style, + 48), then clamps it so the 9 x 9 patch fits inside the map.
    int top = up[0] - 4, left = up[1] - 4;
    top = iclamp(top < 0 ? top + MAP_SIZE : top, 0, MAP_SIZE - 9);
    left = iclamp(left < 0 ? left + MAP_SIZE : left, 0, MAP_SIZE - 9);
    for (int i = 0; i < 9; i++) {
        for (int j = 0; j < 9; j++) {
            float around = torch_light(i, j) * (1.0f - config->default_light) + config->default_light;
            light_map[(top + i) * MAP_SIZE + left + j] = around;
        }
    }

    // Lava glow: 'same' convolution of the lava mask with a 3 x 3 kernel (only on floors whose
    // lava block is real lava), then clipped to [0, 1].
    if (config->lava == BLOCK_LAVA) {
        const float kernel[3][3] = {{0.2f, 0.7f, 0.2f}, {0.7f, 1.0f, 0.7f}, {0.2f, 0.7f, 0.2f}};
        for (int r = 0; r < MAP_SIZE; r++) {
            for (int c = 0; c < MAP_SIZE; c++) {
                float glow = 0.0f;
                for (int dr = -1; dr <= 1; dr++) {
                    for (int dc = -1; dc <= 1; dc++) {
                        int rr = r + dr, cc = c + dc;
                        if (rr < 0 || rr >= MAP_SIZE || cc < 0 || cc >= MAP_SIZE) continue;
                        glow += scratch->tree_noise[rr * MAP_SIZE + cc] * kernel[dr + 1][dc + 1];
                    }
                }
                light_map[r * MAP_SIZE + c] += glow;
            }
        }
    }
    for (int i = 0; i < MAP_CELLS; i++) light_map[i] = fclampf(light_map[i], 0.0f, 1.0f);
    refresh_lit_rows(state, level, 0, MAP_SIZE);

    if (config->ladder_up) item_map[up[0] * MAP_SIZE + up[1]] = ITEM_LADDER_UP;
    memset(mask, 0, MAP_CELLS);
}

#define DUNGEON_ROOMS 8
#define ROOM_MAX 10
#define PADDED (MAP_SIZE + 2 * ROOM_MAX)

CRAFTAX_FN void generate_dungeon(Key rng, const DungeonConfig* config, GameState* state, int level,
                                 WorldgenScratch* scratch) {
    // The reference works on maps padded by 10 on each side (padding value 0); the padded maps
    // live in the scratch buffers, reinterpreted as bytes.
    uint8_t* padded = (uint8_t*)scratch->water;
    uint8_t* padded_items = (uint8_t*)scratch->mountain;
    for (int r = 0; r < PADDED; r++) {
        for (int c = 0; c < PADDED; c++) {
            int inside = r >= ROOM_MAX && r < ROOM_MAX + MAP_SIZE && c >= ROOM_MAX && c < ROOM_MAX + MAP_SIZE;
            padded[r * PADDED + c] = inside ? BLOCK_WALL : 0;
            padded_items[r * PADDED + c] = 0;
        }
    }

    Key room_rng = key_split_at(rng, 1);
    Key size_key = key_split_at(rng, 2);
    rng = key_split_at(rng, 0);
    int room_sizes[DUNGEON_ROOMS][2];
    for (int i = 0; i < DUNGEON_ROOMS * 2; i++) room_sizes[i / 2][i % 2] = randint_at(size_key, (uint32_t)i, 5, 10);

    room_rng = key_split2(&rng);
    float occupancy[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    int rooms[DUNGEON_ROOMS][2];
    for (int room = 0; room < DUNGEON_ROOMS; room++) {
        Key sub = key_split2(&room_rng);
        int chunk = choice_small(sub, occupancy, 9);
        occupancy[chunk] = 0.0f;
        sub = key_split2(&room_rng);
        int r0 = (chunk % 3) * 16 + ROOM_MAX + randint_at(sub, 0, 0, 11);
        int c0 = (chunk / 3) * 16 + ROOM_MAX + randint_at(sub, 1, 0, 11);
        rooms[room][0] = r0;
        rooms[room][1] = c0;
        int h = room_sizes[room][0], w = room_sizes[room][1];
        for (int i = 0; i < h; i++) {
            for (int j = 0; j < w; j++) padded[(r0 + i) * PADDED + c0 + j] = BLOCK_PATH;
        }
        padded_items[r0 * PADDED + c0] = ITEM_TORCH;
        padded_items[(r0 + h - 1) * PADDED + c0] = ITEM_TORCH;
        padded_items[r0 * PADDED + c0 + w - 1] = ITEM_TORCH;
        padded_items[(r0 + h - 1) * PADDED + c0 + w - 1] = ITEM_TORCH;

        sub = key_split2(&room_rng);
        int chest_r = randint_at(sub, 0, 1, h - 1), chest_c = randint_at(sub, 1, 1, w - 1);
        padded[(r0 + chest_r) * PADDED + c0 + chest_c] = BLOCK_CHEST;

        Key fountain_key = key_split_at(room_rng, 1);
        Key has_fountain_key = key_split_at(room_rng, 2);
        room_rng = key_split_at(room_rng, 0);
        int fountain_r = randint_at(fountain_key, 0, 1, h - 1), fountain_c = randint_at(fountain_key, 1, 1, w - 1);
        if (uniform(has_fountain_key) > 0.5f) padded[(r0 + fountain_r) * PADDED + c0 + fountain_c] = config->fountain_block;
    }

    Key path_rng = key_split2(&rng);
    float included[DUNGEON_ROOMS] = {0, 0, 0, 0, 0, 0, 0, 1};
    for (int path = 0; path < DUNGEON_ROOMS; path++) {
        int source_r = rooms[path][0], source_c = rooms[path][1];
        Key sub = key_split2(&path_rng);
        int sink = choice_small(sub, included, DUNGEON_ROOMS);
        int sink_r = rooms[sink][0], sink_c = rooms[sink][1];

        // Horizontal corridor along the source's row, towards the sink's column.
        int dc = sink_c - source_c;
        if (dc != 0) {
            int sign = dc > 0 ? 1 : -1;
            for (int c = 0; c < PADDED; c++) {
                int along = (c - source_c) * sign;
                uint8_t* cell = &padded[source_r * PADDED + c];
                if (along >= 0 && along <= dc * sign && *cell == BLOCK_WALL) *cell = BLOCK_PATH;
            }
        }
        // Vertical corridor along the sink's column, from the source's row.
        int dr = sink_r - source_r;
        if (dr != 0) {
            int sign = dr > 0 ? 1 : -1;
            for (int r = 0; r < PADDED; r++) {
                int along = (r - source_r) * sign;
                uint8_t* cell = &padded[r * PADDED + sink_c];
                if (along >= 0 && along <= dr * sign && *cell == BLOCK_WALL) *cell = BLOCK_PATH;
            }
        }
        path_rng = key_split_at(path_rng, 1);
        included[path] = 1.0f;
    }

    padded[(rooms[0][0] + 2) * PADDED + rooms[0][1] + 2] = config->special_block;

    uint8_t* map = &state->map[level][0][0];
    uint8_t* item_map = &state->item_map[level][0][0];
    for (int r = 0; r < MAP_SIZE; r++) {
        for (int c = 0; c < MAP_SIZE; c++) {
            map[r * MAP_SIZE + c] = padded[(r + ROOM_MAX) * PADDED + c + ROOM_MAX];
            item_map[r * MAP_SIZE + c] = padded_items[(r + ROOM_MAX) * PADDED + c + ROOM_MAX];
        }
    }

    Key rare_key = key_split2(&rng);
    const float rare_cumulative[2] = {0.9f, 0.9f + 0.1f};
    uint8_t* shaped = (uint8_t*)scratch->path_noise;
    for (int r = 0; r < MAP_SIZE; r++) {
        for (int c = 0; c < MAP_SIZE; c++) {
            int i = r * MAP_SIZE + c;
            int open = map[i] != BLOCK_WALL;
            if (r > 0) open |= map[i - MAP_SIZE] != BLOCK_WALL;
            if (r < MAP_SIZE - 1) open |= map[i + MAP_SIZE] != BLOCK_WALL;
            if (c > 0) open |= map[i - 1] != BLOCK_WALL;
            if (c < MAP_SIZE - 1) open |= map[i + 1] != BLOCK_WALL;
            float draw = rare_cumulative[1] * (1.0f - uniform_at(rare_key, (uint32_t)i));
            int rare = searchsorted_left(rare_cumulative, 2, draw) == 1;
            uint8_t block;
            if (!open) {
                block = BLOCK_DARKNESS;
            } else if (map[i] == BLOCK_WALL) {
                block = rare ? BLOCK_WALL_MOSS : BLOCK_WALL;
            } else {
                int replace = rare && map[i] == BLOCK_PATH && item_map[i] == ITEM_NONE;
                block = replace ? config->rare_path_replacement_block : map[i];
            }
            shaped[i] = block;
        }
    }
    memcpy(map, shaped, MAP_CELLS);

    float* light_map = &state->light_map[level][0][0];
    for (int i = 0; i < MAP_CELLS; i++) light_map[i] = 1.0f;
    refresh_lit_rows(state, level, 0, MAP_SIZE);

    uint8_t* mask = &state->mob_map[level][0][0];
    for (int i = 0; i < MAP_CELLS; i++) mask[i] = map[i] == BLOCK_PATH;
    Key sub = key_split2(&rng);
    int16_t* down = state->down_ladders[level];
    cell_position(choose_normalised_cell(sub, mask, scratch), down);
    item_map[down[0] * MAP_SIZE + down[1]] = ITEM_LADDER_DOWN;

    sub = key_split2(&rng);
    int16_t* up = state->up_ladders[level];
    cell_position(choose_masked_cell(sub, mask, scratch), up);
    item_map[up[0] * MAP_SIZE + up[1]] = ITEM_LADDER_UP;
    memset(mask, 0, MAP_CELLS);
}

// calculate_light_level(0) as generate_world evaluates it: with Python numbers, so the phase
// pi * 0.3 is rounded from double, then cos and the cube run in float32.
CRAFTAX_FN float initial_light_level(void) {
#ifdef __CUDA_ARCH__
    return reference_trig.initial_light_level;
#else
    float c = fabsf(reference_cosf((float)(3.141592653589793 * 0.3)));
    return 1.0f - c * (c * c);
#endif
}

// generate_world(key): every floor, empty mobs, the potion mapping and the state's own key.
CRAFTAX_FN void generate_world(Key rng, GameState* state, WorldgenScratch* scratch) {
    memset(state, 0, sizeof(*state));
    Key world_rng = key_split_at(rng, 0);
    for (int level = 0; level < NUM_LEVELS; level++) {
        if (!TABLE(LEVEL_IS_DUNGEON)[level]) {
            int g = TABLE(LEVEL_GENERATOR_INDEX)[level];
            generate_smoothworld(key_split_at(rng, (uint32_t)(1 + g)), &TABLE(SMOOTHGEN_CONFIGS)[g], state, level, scratch);
        }
    }
    rng = world_rng;
    world_rng = key_split_at(rng, 0);
    for (int level = 0; level < NUM_LEVELS; level++) {
        if (TABLE(LEVEL_IS_DUNGEON)[level]) {
            int g = TABLE(LEVEL_GENERATOR_INDEX)[level];
            generate_dungeon(key_split_at(rng, (uint32_t)(1 + g)), &TABLE(DUNGEON_CONFIGS)[g], state, level, scratch);
        }
    }
    rng = world_rng;

    for (int level = 0; level < NUM_LEVELS; level++) {
        for (int m = 0; m < MAX_MELEE_MOBS; m++) state->melee_mobs.health[level][m] = 1.0f;
        for (int m = 0; m < MAX_PASSIVE_MOBS; m++) state->passive_mobs.health[level][m] = 1.0f;
        for (int m = 0; m < MAX_RANGED_MOBS; m++) state->ranged_mobs.health[level][m] = 1.0f;
        for (int m = 0; m < MAX_MOB_PROJECTILES; m++) {
            state->mob_projectiles.health[level][m] = 1.0f;
            state->mob_projectile_directions[level][m][0] = 1;
            state->mob_projectile_directions[level][m][1] = 1;
        }
        for (int m = 0; m < MAX_PLAYER_PROJECTILES; m++) {
            state->player_projectiles.health[level][m] = 1.0f;
            state->player_projectile_directions[level][m][0] = 1;
            state->player_projectile_directions[level][m][1] = 1;
        }
    }

    Key sub = key_split2(&rng);
    permutation(sub, NUM_POTIONS, state->potion_mapping);
    sub = key_split2(&rng);
    state->state_rng = sub;

    state->monsters_killed[0] = 10;  // the first ladder starts open
    state->player_position[0] = MAP_SIZE / 2;
    state->player_position[1] = MAP_SIZE / 2;
    state->player_direction = ACTION_UP;
    state->player_health = 9.0f;
    state->player_food = 9;
    state->player_drink = 9;
    state->player_energy = 9;
    state->player_mana = 9;
    state->player_dexterity = 1;
    state->player_strength = 1;
    state->player_intelligence = 1;
    state->boss_timesteps_to_spawn_this_round = BOSS_FIGHT_SPAWN_TURNS;
    state->light_level = initial_light_level();
}
