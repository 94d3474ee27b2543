// Queries on the game state used across subsystems, as craftax/craftax/util/game_logic_utils.py.
//
// Index semantics: the reference indexes its maps with traced integers, which jax normalises
// (a negative index gets + 48 once) and then clamps when reading, while writes to an index still
// outside the map are dropped. Positions one step past the edge (and the unbounded positions of
// dead projectiles) follow those rules through map_read / map_write_index.
#pragma once
#include "game_tables.h"
#include "state.h"

CRAFTAX_FN int normalised_index(int i, int size) { return i < 0 ? i + size : i; }

// The cell a jnp read of map[r, c] touches.
CRAFTAX_FN int map_read_index(int r, int c) {
    r = iclamp(normalised_index(r, MAP_SIZE), 0, MAP_SIZE - 1);
    c = iclamp(normalised_index(c, MAP_SIZE), 0, MAP_SIZE - 1);
    return r * MAP_SIZE + c;
}

// The cell a jnp write of map[r, c] touches, or -1 when the write is dropped.
CRAFTAX_FN int map_write_index(int r, int c) {
    r = normalised_index(r, MAP_SIZE);
    c = normalised_index(c, MAP_SIZE);
    if (r < 0 || r >= MAP_SIZE || c < 0 || c >= MAP_SIZE) return -1;
    return r * MAP_SIZE + c;
}

CRAFTAX_FN uint8_t* level_map(GameState* s) { return &s->map[s->player_level][0][0]; }
CRAFTAX_FN uint8_t* level_items(GameState* s) { return &s->item_map[s->player_level][0][0]; }
CRAFTAX_FN uint8_t* level_mobs(GameState* s) { return &s->mob_map[s->player_level][0][0]; }

CRAFTAX_FN uint8_t block_at(GameState* s, int r, int c) { return level_map(s)[map_read_index(r, c)]; }

CRAFTAX_FN int in_bounds(int r, int c) { return r >= 0 && r < MAP_SIZE && c >= 0 && c < MAP_SIZE; }

CRAFTAX_FN int is_in_solid_block(GameState* s, int r, int c) { return TABLE(SOLID_BLOCK)[block_at(s, r, c)]; }

// The player's floor and place, for code that stores into the state between its queries (the
// mobs' moves and spawns): nvcc assumes any store may change any field, so a field read after a
// store is read from memory again, and these are read once instead.
typedef struct {
    GameState* s;
    uint8_t* map;   // the player's floor of the block map
    uint8_t* mobs;  // and of the mob map
    int level;
    int player_row, player_col;
} PlayerFloor;

CRAFTAX_FN PlayerFloor player_floor(GameState* s) {
    PlayerFloor f = {s, level_map(s), level_mobs(s), s->player_level, s->player_position[0], s->player_position[1]};
    return f;
}

CRAFTAX_FN int is_boss_floor(const PlayerFloor* f) { return f->level == NUM_LEVELS - 1; }

// The queries below make every load whatever the outcome (reads are clamped to the map), rather
// than stopping at the first decisive one, so that on the GPU their round trips overlap.
CRAFTAX_FN int is_in_mob_on(const PlayerFloor* f, int r, int c) {
    return (f->mobs[map_read_index(r, c)] != 0) | ((f->player_row == r) & (f->player_col == c));
}

CRAFTAX_FN int is_in_mob(GameState* s, int r, int c) {
    PlayerFloor f = player_floor(s);
    return is_in_mob_on(&f, r, c);
}

// is_position_in_bounds_not_in_mob_not_colliding; collision = (ground, water, lava) flags.
CRAFTAX_FN int is_free_on(const PlayerFloor* f, int r, int c, const uint8_t* collision) {
    uint8_t block = f->map[map_read_index(r, c)];
    if (!in_bounds(r, c) || is_in_mob_on(f, r, c)) return 0;
    if (TABLE(SOLID_BLOCK)[block]) return 0;
    int in_water = block == BLOCK_WATER, in_lava = block == BLOCK_LAVA;
    int on_ground = !in_water && !in_lava;
    if (collision[0] && on_ground) return 0;
    if (collision[1] && in_water) return 0;
    if (collision[2] && in_lava) return 0;
    return 1;
}

CRAFTAX_FN int is_free_for(GameState* s, int r, int c, const uint8_t* collision) {
    PlayerFloor f = player_floor(s);
    return is_free_on(&f, r, c, collision);
}

CRAFTAX_FN int is_near_block(GameState* s, uint8_t block) {
    int near = 0;
    for (int k = 0; k < 8; k++) {
        int r = s->player_position[0] + TABLE(CLOSE_BLOCK_DELTAS)[2 * k];
        int c = s->player_position[1] + TABLE(CLOSE_BLOCK_DELTAS)[2 * k + 1];
        near |= in_bounds(r, c) & (block_at(s, r, c) == block);
    }
    return near;
}

CRAFTAX_FN int is_fighting_boss(const GameState* s) { return s->player_level == NUM_LEVELS - 1; }
CRAFTAX_FN int is_boss_spawn_wave(const GameState* s) { return is_fighting_boss(s) && s->boss_timesteps_to_spawn_this_round >= 1; }
CRAFTAX_FN int has_beaten_boss(const GameState* s) { return s->boss_progress >= NUM_LEVELS - 1; }
// The necromancer takes damage once the floor has no melee or ranged mob and no wave is due.
CRAFTAX_FN int is_boss_vulnerable(const GameState* s) {
    int l = s->player_level;
    int melee = 0, ranged = 0;
    for (int m = 0; m < MAX_MELEE_MOBS; m++) melee += s->melee_mobs.mask[l][m];
    for (int m = 0; m < MAX_RANGED_MOBS; m++) ranged += s->ranged_mobs.mask[l][m];
    return melee == 0 && ranged == 0 && s->boss_timesteps_to_spawn_this_round <= 0;
}

CRAFTAX_FN int32_t max_health(const GameState* s) { return 8 + s->player_strength; }
CRAFTAX_FN int32_t max_food(const GameState* s) { return 7 + 2 * s->player_dexterity; }
CRAFTAX_FN int32_t max_drink(const GameState* s) { return 7 + 2 * s->player_dexterity; }
CRAFTAX_FN int32_t max_energy(const GameState* s) { return 7 + 2 * s->player_dexterity; }
CRAFTAX_FN int32_t max_mana(const GameState* s) { return 6 + 3 * s->player_intelligence; }

CRAFTAX_FN int32_t imin(int32_t a, int32_t b) { return a < b ? a : b; }
CRAFTAX_FN int32_t imax(int32_t a, int32_t b) { return a > b ? a : b; }

// Direction (row, col) of a facing direction or action; anything but 1..4 does not move.
CRAFTAX_FN int direction_row(int d) { return d >= 0 && d < 5 ? TABLE(DIRECTION_DELTAS)[2 * d] : 0; }
CRAFTAX_FN int direction_col(int d) { return d >= 0 && d < 5 ? TABLE(DIRECTION_DELTAS)[2 * d + 1] : 0; }

CRAFTAX_FN void unlock(GameState* s, int achievement, int condition) {
    if (condition) s->achievements[achievement] = 1;
}

// jnp.argmax(logical_not(mask)): the first free slot, 0 when every slot is taken.
// Every slot is read, with no early exit, so that the reads do not wait on one another.
CRAFTAX_FN int first_free_slot(const uint8_t* mask, int n) {
    int slot = 0;
    for (int i = n - 1; i >= 0; i--) slot = mask[i] ? slot : i;
    return slot;
}

CRAFTAX_FN int count_alive(const uint8_t* mask, int n) {
    int alive = 0;
    for (int i = 0; i < n; i++) alive += mask[i];
    return alive;
}

// Prefetches the map and item rows under the view, and its lit bits (see CRAFTAX_PREFETCH).
CRAFTAX_FN void prefetch_view(const GameState* s) {
    int l = s->player_level;
    int first_col = iclamp(s->player_position[1] - OBS_COLS / 2, 0, MAP_SIZE - 1);
    int last_col = iclamp(s->player_position[1] + OBS_COLS / 2, 0, MAP_SIZE - 1);
    CRAFTAX_PREFETCH(&s->lit_rows[l][iclamp(s->player_position[0] - OBS_ROWS / 2, 0, MAP_SIZE - 1)]);
    CRAFTAX_PREFETCH(&s->lit_rows[l][iclamp(s->player_position[0] + OBS_ROWS / 2, 0, MAP_SIZE - 1)]);
    for (int r = 0; r < OBS_ROWS; r++) {
        int wr = iclamp(s->player_position[0] - OBS_ROWS / 2 + r, 0, MAP_SIZE - 1);
        CRAFTAX_PREFETCH(&s->map[l][wr][first_col]);
        CRAFTAX_PREFETCH(&s->map[l][wr][last_col]);
        CRAFTAX_PREFETCH(&s->item_map[l][wr][first_col]);
        CRAFTAX_PREFETCH(&s->item_map[l][wr][last_col]);
    }
}
