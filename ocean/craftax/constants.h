// Craftax constants, mirroring craftax/craftax/constants.py and world_gen_configs.py.
#pragma once
#include "common.h"

#define MAP_SIZE 48
#define MAP_CELLS (MAP_SIZE * MAP_SIZE)
#define NUM_LEVELS 9
#define OBS_ROWS 9
#define OBS_COLS 11
// A view cell shows its block and item only where its light is above this.
#define VISIBLE_LIGHT 0.05f
#define MAX_OBS_DIM 11

#define MAX_MELEE_MOBS 3
#define MAX_PASSIVE_MOBS 3
#define MAX_RANGED_MOBS 2
#define MAX_MOB_PROJECTILES 3
#define MAX_PLAYER_PROJECTILES 3
#define MAX_GROWING_PLANTS 10

#define NUM_BLOCK_TYPES 37
#define NUM_ITEM_TYPES 5
#define NUM_MOB_CLASSES 5
#define MOB_TYPES_PER_CLASS 8
#define NUM_ACTIONS 43
#define NUM_ACHIEVEMENTS 67
#define NUM_POTIONS 6

#define MONSTERS_KILLED_TO_CLEAR_LEVEL 8
#define BOSS_FIGHT_SPAWN_TURNS 7
#define DAY_LENGTH 300
#define MAX_TIMESTEPS 100000

enum BlockType {
    BLOCK_INVALID = 0,
    BLOCK_OUT_OF_BOUNDS = 1,
    BLOCK_GRASS = 2,
    BLOCK_WATER = 3,
    BLOCK_STONE = 4,
    BLOCK_TREE = 5,
    BLOCK_WOOD = 6,
    BLOCK_PATH = 7,
    BLOCK_COAL = 8,
    BLOCK_IRON = 9,
    BLOCK_DIAMOND = 10,
    BLOCK_CRAFTING_TABLE = 11,
    BLOCK_FURNACE = 12,
    BLOCK_SAND = 13,
    BLOCK_LAVA = 14,
    BLOCK_PLANT = 15,
    BLOCK_RIPE_PLANT = 16,
    BLOCK_WALL = 17,
    BLOCK_DARKNESS = 18,
    BLOCK_WALL_MOSS = 19,
    BLOCK_STALAGMITE = 20,
    BLOCK_SAPPHIRE = 21,
    BLOCK_RUBY = 22,
    BLOCK_CHEST = 23,
    BLOCK_FOUNTAIN = 24,
    BLOCK_FIRE_GRASS = 25,
    BLOCK_ICE_GRASS = 26,
    BLOCK_GRAVEL = 27,
    BLOCK_FIRE_TREE = 28,
    BLOCK_ICE_SHRUB = 29,
    BLOCK_ENCHANTMENT_TABLE_FIRE = 30,
    BLOCK_ENCHANTMENT_TABLE_ICE = 31,
    BLOCK_NECROMANCER = 32,
    BLOCK_GRAVE = 33,
    BLOCK_GRAVE2 = 34,
    BLOCK_GRAVE3 = 35,
    BLOCK_NECROMANCER_VULNERABLE = 36,
};

enum ItemType {
    ITEM_NONE = 0,
    ITEM_TORCH = 1,
    ITEM_LADDER_DOWN = 2,
    ITEM_LADDER_UP = 3,
    ITEM_LADDER_DOWN_BLOCKED = 4,
};

// Actions 1..4 double as facing directions (player_direction).
enum Action {
    ACTION_NOOP = 0,
    ACTION_LEFT = 1,
    ACTION_RIGHT = 2,
    ACTION_UP = 3,
    ACTION_DOWN = 4,
    ACTION_DO = 5,
    ACTION_SLEEP = 6,
    ACTION_PLACE_STONE = 7,
    ACTION_PLACE_TABLE = 8,
    ACTION_PLACE_FURNACE = 9,
    ACTION_PLACE_PLANT = 10,
    ACTION_MAKE_WOOD_PICKAXE = 11,
    ACTION_MAKE_STONE_PICKAXE = 12,
    ACTION_MAKE_IRON_PICKAXE = 13,
    ACTION_MAKE_WOOD_SWORD = 14,
    ACTION_MAKE_STONE_SWORD = 15,
    ACTION_MAKE_IRON_SWORD = 16,
    ACTION_REST = 17,
    ACTION_DESCEND = 18,
    ACTION_ASCEND = 19,
    ACTION_MAKE_DIAMOND_PICKAXE = 20,
    ACTION_MAKE_DIAMOND_SWORD = 21,
    ACTION_MAKE_IRON_ARMOUR = 22,
    ACTION_MAKE_DIAMOND_ARMOUR = 23,
    ACTION_SHOOT_ARROW = 24,
    ACTION_MAKE_ARROW = 25,
    ACTION_CAST_FIREBALL = 26,
    ACTION_CAST_ICEBALL = 27,
    ACTION_PLACE_TORCH = 28,
    ACTION_DRINK_POTION_RED = 29,
    ACTION_DRINK_POTION_GREEN = 30,
    ACTION_DRINK_POTION_BLUE = 31,
    ACTION_DRINK_POTION_PINK = 32,
    ACTION_DRINK_POTION_CYAN = 33,
    ACTION_DRINK_POTION_YELLOW = 34,
    ACTION_READ_BOOK = 35,
    ACTION_ENCHANT_SWORD = 36,
    ACTION_ENCHANT_ARMOUR = 37,
    ACTION_MAKE_TORCH = 38,
    ACTION_LEVEL_UP_DEXTERITY = 39,
    ACTION_LEVEL_UP_STRENGTH = 40,
    ACTION_LEVEL_UP_INTELLIGENCE = 41,
    ACTION_ENCHANT_BOW = 42,
};

// The player's view is a 9 x 11 window; the reference pads maps by MAX_OBS_DIM + 2 before slicing.
#define OBS_PAD (MAX_OBS_DIM + 2)

// Parameters of one smooth (noise-based) floor: overworld, mines, fire, ice, graveyard.
typedef struct {
    uint8_t default_block, sea_block, coast_block, mountain_block, path_block, inner_mountain_block;
    uint8_t ore_requirement_blocks[5];
    uint8_t ores[5];
    float ore_chances[5];
    uint8_t tree_requirement_block, tree, lava, player_spawn, valid_ladder;
    uint8_t ladder_up, ladder_down;
    int32_t water_strength;
    float water_max;
    int32_t mountain_strength;
    float mountain_max;
    float default_light, water_threshold, sand_threshold, tree_threshold_uniform, tree_threshold_perlin;
} SmoothGenConfig;

// Order: overworld, gnomish mines, troll mines, fire realm, ice realm, graveyard (boss floor).
CRAFTAX_TABLE(SmoothGenConfig, SMOOTHGEN_CONFIGS, 6, {
    {BLOCK_GRASS, BLOCK_WATER, BLOCK_SAND, BLOCK_STONE, BLOCK_PATH, BLOCK_PATH,
     {BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE},
     {BLOCK_COAL, BLOCK_IRON, BLOCK_DIAMOND, BLOCK_OUT_OF_BOUNDS, BLOCK_OUT_OF_BOUNDS},
     {0.03f, 0.02f, 0.001f, 0.0f, 0.0f},
     BLOCK_GRASS, BLOCK_TREE, BLOCK_LAVA, BLOCK_GRASS, BLOCK_PATH, 0, 1,
     5, 1.0f, 5, 1.0f, 1.0f, 0.7f, 0.6f, 0.8f, 0.5f},
    {BLOCK_PATH, BLOCK_WATER, BLOCK_PATH, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE,
     {BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE},
     {BLOCK_COAL, BLOCK_IRON, BLOCK_DIAMOND, BLOCK_SAPPHIRE, BLOCK_RUBY},
     {0.04f, 0.02f, 0.005f, 0.0025f, 0.0025f},
     BLOCK_PATH, BLOCK_STALAGMITE, BLOCK_LAVA, BLOCK_PATH, BLOCK_PATH, 1, 1,
     5, 1.0f, 17, 1.5f, 0.0f, 0.7f, 0.6f, 0.8f, 0.5f},
    {BLOCK_PATH, BLOCK_WATER, BLOCK_PATH, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE,
     {BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE},
     {BLOCK_COAL, BLOCK_IRON, BLOCK_DIAMOND, BLOCK_SAPPHIRE, BLOCK_RUBY},
     {0.04f, 0.03f, 0.01f, 0.01f, 0.01f},
     BLOCK_PATH, BLOCK_STALAGMITE, BLOCK_LAVA, BLOCK_PATH, BLOCK_PATH, 1, 1,
     5, 1.0f, 17, 1.5f, 0.0f, 0.7f, 0.6f, 0.8f, 0.5f},
    {BLOCK_FIRE_GRASS, BLOCK_LAVA, BLOCK_SAND, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE,
     {BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE},
     {BLOCK_COAL, BLOCK_IRON, BLOCK_DIAMOND, BLOCK_SAPPHIRE, BLOCK_RUBY},
     {0.05f, 0.0f, 0.0f, 0.0f, 0.025f},
     BLOCK_FIRE_GRASS, BLOCK_FIRE_TREE, BLOCK_LAVA, BLOCK_FIRE_GRASS, BLOCK_FIRE_GRASS, 1, 1,
     5, 1.0f, 5, 1.0f, 1.0f, 0.5f, 0.6f, 0.8f, 0.5f},
    {BLOCK_ICE_GRASS, BLOCK_WATER, BLOCK_ICE_GRASS, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE,
     {BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE, BLOCK_STONE},
     {BLOCK_COAL, BLOCK_IRON, BLOCK_DIAMOND, BLOCK_SAPPHIRE, BLOCK_RUBY},
     {0.0f, 0.0f, 0.005f, 0.02f, 0.0f},
     BLOCK_ICE_GRASS, BLOCK_ICE_SHRUB, BLOCK_WATER, BLOCK_ICE_GRASS, BLOCK_ICE_GRASS, 1, 1,
     5, 1.0f, 17, 1.5f, 0.0f, 0.5f, 0.6f, 0.4f, 0.5f},
    {BLOCK_PATH, BLOCK_PATH, BLOCK_PATH, BLOCK_WALL, BLOCK_WALL, BLOCK_WALL,
     {BLOCK_WALL, BLOCK_GRAVE, BLOCK_GRAVE, BLOCK_WALL, BLOCK_WALL},
     {BLOCK_WALL_MOSS, BLOCK_GRAVE2, BLOCK_GRAVE3, BLOCK_SAPPHIRE, BLOCK_RUBY},
     {0.1f, 0.333f, 0.5f, 0.0f, 0.0f},
     BLOCK_PATH, BLOCK_GRAVE, BLOCK_WALL, BLOCK_NECROMANCER, BLOCK_PATH, 0, 0,
     5, 1.0f, 10, 10.0f, 0.0f, 0.7f, 0.6f, 0.95f, -1.0f},
})

// Parameters of one dungeon (rooms and corridors) floor.
typedef struct {
    uint8_t special_block, fountain_block, rare_path_replacement_block;
} DungeonConfig;

// Order: dungeon, sewers, vaults.
CRAFTAX_TABLE(DungeonConfig, DUNGEON_CONFIGS, 3, {
    {BLOCK_PATH, BLOCK_FOUNTAIN, BLOCK_PATH},
    {BLOCK_ENCHANTMENT_TABLE_ICE, BLOCK_WATER, BLOCK_WATER},
    {BLOCK_ENCHANTMENT_TABLE_FIRE, BLOCK_FOUNTAIN, BLOCK_PATH},
})

// Floor index -> (is_dungeon, config index): floors interleave the two generators.
CRAFTAX_TABLE(uint8_t, LEVEL_IS_DUNGEON, NUM_LEVELS, {0, 1, 0, 1, 1, 0, 0, 0, 0})
CRAFTAX_TABLE(uint8_t, LEVEL_GENERATOR_INDEX, NUM_LEVELS, {0, 0, 1, 1, 2, 2, 3, 4, 5})
