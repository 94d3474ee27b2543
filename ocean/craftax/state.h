// The game state, as craftax/craftax/craftax_state.py's EnvState, stored compactly: block and
// item ids as uint8, player and plant positions as int16, floats where the reference computes in
// float32.
#pragma once
#include "constants.h"
#include "jax_random.h"

// One class of mobs (or projectiles) on every floor.
// Positions are int32: projectiles keep moving after they die (as in the reference), so their
// positions drift without bound.
#define MOB_ARRAYS(N)                    \
    struct {                             \
        int32_t position[NUM_LEVELS][N][2]; \
        float health[NUM_LEVELS][N];     \
        uint8_t mask[NUM_LEVELS][N];     \
        int32_t attack_cooldown[NUM_LEVELS][N]; \
        uint8_t type_id[NUM_LEVELS][N];  \
    }

typedef struct {
    int32_t wood, stone, coal, iron, diamond, sapling, pickaxe, sword, bow, arrows;
    int32_t armour[4];
    int32_t torches, ruby, sapphire;
    int32_t potions[NUM_POTIONS];
    int32_t books;
} Inventory;

typedef struct {
    uint8_t map[NUM_LEVELS][MAP_SIZE][MAP_SIZE];
    uint8_t item_map[NUM_LEVELS][MAP_SIZE][MAP_SIZE];
    uint8_t mob_map[NUM_LEVELS][MAP_SIZE][MAP_SIZE];
    float light_map[NUM_LEVELS][MAP_SIZE][MAP_SIZE];
    // Not the reference's: bit c of lit_rows[l][r] is light_map[l][r][c] > VISIBLE_LIGHT, kept by
    // refresh_lit_rows wherever the light changes, so that the view's light is two or three cache
    // lines rather than one or two per view row.
    uint64_t lit_rows[NUM_LEVELS][MAP_SIZE];
    int16_t down_ladders[NUM_LEVELS][2];
    int16_t up_ladders[NUM_LEVELS][2];
    uint8_t chests_opened[NUM_LEVELS];
    int32_t monsters_killed[NUM_LEVELS];

    int16_t player_position[2];
    int32_t player_level;
    int32_t player_direction;

    float player_health;
    int32_t player_food, player_drink, player_energy, player_mana;
    uint8_t is_sleeping, is_resting;

    float player_recover, player_hunger, player_thirst, player_fatigue, player_recover_mana;

    int32_t player_xp, player_dexterity, player_strength, player_intelligence;

    Inventory inventory;

    MOB_ARRAYS(MAX_MELEE_MOBS) melee_mobs;
    MOB_ARRAYS(MAX_PASSIVE_MOBS) passive_mobs;
    MOB_ARRAYS(MAX_RANGED_MOBS) ranged_mobs;
    MOB_ARRAYS(MAX_MOB_PROJECTILES) mob_projectiles;
    int16_t mob_projectile_directions[NUM_LEVELS][MAX_MOB_PROJECTILES][2];
    MOB_ARRAYS(MAX_PLAYER_PROJECTILES) player_projectiles;
    int16_t player_projectile_directions[NUM_LEVELS][MAX_PLAYER_PROJECTILES][2];

    int16_t growing_plants_positions[MAX_GROWING_PLANTS][2];
    int32_t growing_plants_age[MAX_GROWING_PLANTS];
    uint8_t growing_plants_mask[MAX_GROWING_PLANTS];

    int32_t potion_mapping[NUM_POTIONS];
    uint8_t learned_spells[2];

    int32_t sword_enchantment, bow_enchantment;
    int32_t armour_enchantments[4];

    int32_t boss_progress;
    int32_t boss_timesteps_to_spawn_this_round;

    float light_level;
    uint8_t achievements[NUM_ACHIEVEMENTS];
    Key state_rng;
    int32_t timestep;
} __attribute__((aligned(16))) GameState;

// Recomputes lit_rows for map rows [first_row, last_row) of `level` from its light_map.
CRAFTAX_FN void refresh_lit_rows(GameState* s, int level, int first_row, int last_row) {
    for (int r = first_row; r < last_row; r++) {
        uint64_t bits = 0;
        for (int c = 0; c < MAP_SIZE; c++) bits |= (uint64_t)(s->light_map[level][r][c] > VISIBLE_LIGHT) << c;
        s->lit_rows[level][r] = bits;
    }
}
