// Craftax-Classic's game state, field for field craftax/craftax_classic/envs/craftax_state.py's
// EnvState (booleans as uint8).
#pragma once
#include "../craftax/jax_random.h"
#include "constants.h"

#define CLASSIC_MOBS(N)           \
    struct {                      \
        int32_t position[N][2];   \
        int32_t health[N];        \
        uint8_t mask[N];          \
        int32_t attack_cooldown[N]; \
    }

typedef struct {
    int32_t wood, stone, coal, iron, diamond, sapling;
    int32_t wood_pickaxe, stone_pickaxe, iron_pickaxe, wood_sword, stone_sword, iron_sword;
} ClassicInventory;

typedef struct {
    uint8_t map[CLASSIC_MAP_SIZE][CLASSIC_MAP_SIZE];
    uint8_t mob_map[CLASSIC_MAP_SIZE][CLASSIC_MAP_SIZE];
    int32_t player_position[2];
    int32_t player_direction;
    int32_t player_health, player_food, player_drink, player_energy;
    uint8_t is_sleeping;
    float player_recover, player_hunger, player_thirst, player_fatigue;
    ClassicInventory inventory;
    CLASSIC_MOBS(CLASSIC_MAX_ZOMBIES) zombies;
    CLASSIC_MOBS(CLASSIC_MAX_COWS) cows;
    CLASSIC_MOBS(CLASSIC_MAX_SKELETONS) skeletons;
    CLASSIC_MOBS(CLASSIC_MAX_ARROWS) arrows;
    int32_t arrow_directions[CLASSIC_MAX_ARROWS][2];
    int32_t growing_plants_positions[CLASSIC_MAX_PLANTS][2];
    int32_t growing_plants_age[CLASSIC_MAX_PLANTS];
    uint8_t growing_plants_mask[CLASSIC_MAX_PLANTS];
    float light_level;
    uint8_t achievements[CLASSIC_NUM_ACHIEVEMENTS];
    Key state_rng;
    int32_t timestep;
} ClassicState;

// One kind of mob's slots, whatever its array sizes.
typedef struct {
    int32_t (*position)[2];
    int32_t* health;
    uint8_t* mask;
    int32_t* attack_cooldown;
    int count;
} ClassicMobs;

CRAFTAX_FN ClassicMobs classic_mobs(int32_t (*position)[2], int32_t* health, uint8_t* mask, int32_t* attack_cooldown, int count) {
    ClassicMobs mobs = {position, health, mask, attack_cooldown, count};
    return mobs;
}

#define CLASSIC_MOBS_OF(mobs, n) classic_mobs((mobs).position, (mobs).health, (mobs).mask, (mobs).attack_cooldown, (n))
