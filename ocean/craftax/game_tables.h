// Tables and enums of the step logic, mirroring craftax/craftax/constants.py (game mechanics,
// mob tables, achievements) and EnvParams' defaults.
#pragma once
#include "constants.h"

// EnvParams defaults.
#define MOB_DESPAWN_DISTANCE 14
#define MAX_ATTRIBUTE 5
#define BOSS_FIGHT_EXTRA_DAMAGE 0.5f
#define MAX_INVENTORY 99

enum MobClass { MOB_PASSIVE = 0, MOB_MELEE = 1, MOB_RANGED = 2, MOB_PROJECTILE = 3 };

enum ProjectileType {
    PROJECTILE_ARROW = 0,
    PROJECTILE_DAGGER = 1,
    PROJECTILE_FIREBALL = 2,
    PROJECTILE_ICEBALL = 3,
    PROJECTILE_ARROW2 = 4,
    PROJECTILE_SLIMEBALL = 5,
    PROJECTILE_FIREBALL2 = 6,
    PROJECTILE_ICEBALL2 = 7,
};

enum Achievement {
    ACH_COLLECT_WOOD = 0,
    ACH_PLACE_TABLE = 1,
    ACH_EAT_COW = 2,
    ACH_COLLECT_SAPLING = 3,
    ACH_COLLECT_DRINK = 4,
    ACH_MAKE_WOOD_PICKAXE = 5,
    ACH_MAKE_WOOD_SWORD = 6,
    ACH_PLACE_PLANT = 7,
    ACH_DEFEAT_ZOMBIE = 8,
    ACH_COLLECT_STONE = 9,
    ACH_PLACE_STONE = 10,
    ACH_EAT_PLANT = 11,
    ACH_DEFEAT_SKELETON = 12,
    ACH_MAKE_STONE_PICKAXE = 13,
    ACH_MAKE_STONE_SWORD = 14,
    ACH_WAKE_UP = 15,
    ACH_PLACE_FURNACE = 16,
    ACH_COLLECT_COAL = 17,
    ACH_COLLECT_IRON = 18,
    ACH_COLLECT_DIAMOND = 19,
    ACH_MAKE_IRON_PICKAXE = 20,
    ACH_MAKE_IRON_SWORD = 21,
    ACH_MAKE_ARROW = 22,
    ACH_MAKE_TORCH = 23,
    ACH_PLACE_TORCH = 24,
    ACH_MAKE_DIAMOND_SWORD = 25,
    ACH_MAKE_IRON_ARMOUR = 26,
    ACH_MAKE_DIAMOND_ARMOUR = 27,
    ACH_ENTER_GNOMISH_MINES = 28,
    ACH_ENTER_DUNGEON = 29,
    ACH_ENTER_SEWERS = 30,
    ACH_ENTER_VAULT = 31,
    ACH_ENTER_TROLL_MINES = 32,
    ACH_ENTER_FIRE_REALM = 33,
    ACH_ENTER_ICE_REALM = 34,
    ACH_ENTER_GRAVEYARD = 35,
    ACH_DEFEAT_GNOME_WARRIOR = 36,
    ACH_DEFEAT_GNOME_ARCHER = 37,
    ACH_DEFEAT_ORC_SOLIDER = 38,
    ACH_DEFEAT_ORC_MAGE = 39,
    ACH_DEFEAT_LIZARD = 40,
    ACH_DEFEAT_KOBOLD = 41,
    ACH_DEFEAT_TROLL = 42,
    ACH_DEFEAT_DEEP_THING = 43,
    ACH_DEFEAT_PIGMAN = 44,
    ACH_DEFEAT_FIRE_ELEMENTAL = 45,
    ACH_DEFEAT_FROST_TROLL = 46,
    ACH_DEFEAT_ICE_ELEMENTAL = 47,
    ACH_DAMAGE_NECROMANCER = 48,
    ACH_DEFEAT_NECROMANCER = 49,
    ACH_EAT_BAT = 50,
    ACH_EAT_SNAIL = 51,
    ACH_FIND_BOW = 52,
    ACH_FIRE_BOW = 53,
    ACH_COLLECT_SAPPHIRE = 54,
    ACH_LEARN_FIREBALL = 55,
    ACH_CAST_FIREBALL = 56,
    ACH_LEARN_ICEBALL = 57,
    ACH_CAST_ICEBALL = 58,
    ACH_COLLECT_RUBY = 59,
    ACH_MAKE_DIAMOND_PICKAXE = 60,
    ACH_OPEN_CHEST = 61,
    ACH_DRINK_POTION = 62,
    ACH_ENCHANT_SWORD = 63,
    ACH_ENCHANT_ARMOUR = 64,
    ACH_DEFEAT_KNIGHT = 65,
    ACH_DEFEAT_ARCHER = 66,
};

// Sum of every achievement's reward: the denominator of the episode score.
#define MAX_ACHIEVEMENT_REWARD 226

// DIRECTIONS[0..4]: no move, left, right, up, down (row, col); every other index is no move.
CRAFTAX_TABLE(int8_t, DIRECTION_DELTAS, 10, {0, 0, 0, -1, 0, 1, -1, 0, 1, 0})
// CLOSE_BLOCKS: the 8 neighbours checked for nearby crafting tables and furnaces.
CRAFTAX_TABLE(int8_t, CLOSE_BLOCK_DELTAS, 16, {0, -1, 0, 1, -1, 0, 1, 0, -1, -1, -1, 1, 1, -1, 1, 1})

CRAFTAX_TABLE(uint8_t, SOLID_BLOCK, NUM_BLOCK_TYPES,
              {0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0})
CRAFTAX_TABLE(uint8_t, CAN_PLACE_ITEM, NUM_BLOCK_TYPES,
              {0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})

CRAFTAX_TABLE(int32_t, ACHIEVEMENT_REWARD, NUM_ACHIEVEMENTS,
              {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 5, 5, 5, 8,
               8, 8, 3, 3, 3, 3, 5, 5, 5, 5, 8, 8, 8, 8, 8, 8, 3, 3, 3, 3, 3, 5, 5, 5, 5, 3, 3, 3, 3, 5, 5, 5, 5})
// Achievement for being on each floor (floor 0's entry, collect wood, is never set by it).
CRAFTAX_TABLE(uint8_t, LEVEL_ACHIEVEMENT, NUM_LEVELS, {0, 29, 28, 30, 31, 32, 33, 34, 35})
// Achievement for killing a mob, by [class (passive, melee, ranged)][type].
CRAFTAX_TABLE(uint8_t, MOB_ACHIEVEMENT, 3 * 8,
              {2, 50, 51, 0, 0, 0, 0, 0, 8, 36, 38, 40, 65, 42, 44, 46, 12, 37, 39, 41, 66, 43, 45, 47})

// Per floor: (passive, melee, ranged) mob type.
CRAFTAX_TABLE(uint8_t, FLOOR_MOB_TYPE, NUM_LEVELS * 3, {0, 0, 0, 2, 2, 2, 1, 1, 1, 2, 3, 3, 2, 4, 4, 1, 5, 5, 1, 6, 6, 1, 7, 7, 0, 0, 0})
// Per floor: spawn chance of (passive, melee, ranged, extra melee at night).
CRAFTAX_TABLE(float, FLOOR_MOB_SPAWN_CHANCE, NUM_LEVELS * 4,
              {0.1f, 0.02f, 0.05f, 0.1f, 0.1f, 0.06f, 0.05f, 0.0f, 0.1f, 0.06f, 0.05f, 0.0f,
               0.1f, 0.06f, 0.05f, 0.0f, 0.1f, 0.06f, 0.05f, 0.0f, 0.1f, 0.06f, 0.05f, 0.0f,
               0.1f, 0.06f, 0.05f, 0.0f, 0.0f, 0.06f, 0.05f, 0.0f, 0.1f, 0.06f, 0.05f, 0.0f})

// Collision flags (blocked by: ground, water, lava) by [type][class (passive, melee, ranged, projectile)].
CRAFTAX_TABLE(uint8_t, MOB_COLLISION, 8 * 4 * 3,
              {0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0, 0,  0, 0, 0, 0, 1, 1, 0, 1, 1, 0, 0, 0,
               0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0, 0,  0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0, 0,
               0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0, 0,  0, 1, 1, 0, 1, 1, 1, 0, 1, 0, 0, 0,
               0, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0,  0, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0})
#define COLLISION_INDEX(type, mob_class) (((type) * 4 + (mob_class)) * 3)
// The player is blocked like a land creature: by water and lava.
CRAFTAX_TABLE(uint8_t, PLAYER_COLLISION, 3, {0, 1, 1})

// Damage (physical, fire, ice) by [type][class]; only melee and projectile entries are non-zero.
CRAFTAX_TABLE(float, MOB_DAMAGE, 8 * 4 * 3,
              {0, 0, 0, 2, 0, 0, 0, 0, 0, 2, 0, 0,  0, 0, 0, 4, 0, 0, 0, 0, 0, 4, 0, 0,
               0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 3, 0,  0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 3,
               0, 0, 0, 6, 0, 0, 0, 0, 0, 5, 0, 0,  0, 0, 0, 6, 1, 1, 0, 0, 0, 4, 3, 3,
               0, 0, 0, 3, 5, 0, 0, 0, 0, 3, 5, 0,  0, 0, 0, 4, 0, 5, 0, 0, 0, 4, 0, 5})
// Health by [type][class (passive, melee, ranged, projectile)].
CRAFTAX_TABLE(float, MOB_HEALTH, 9 * 4,
              {3, 5, 3, 0, 4, 7, 5, 0, 6, 9, 6, 0, 8, 11, 8, 0, 0, 12, 12, 0, 0, 20, 4, 0, 0, 20, 14, 0, 0, 24, 16, 0, 0, 0, 0, 0})
// Defense (physical, fire, ice) by [type][class].
CRAFTAX_TABLE(float, MOB_DEFENSE, 9 * 4 * 3,
              {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
               0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
               0, 0, 0, 0.5f, 0, 0, 0.5f, 0, 0, 0, 0, 0,  0, 0, 0, 0.2f, 0, 0, 0, 0, 0, 0, 0, 0,
               0, 0, 0, 0.9f, 1.0f, 0, 0.9f, 1.0f, 0, 0, 0, 0,  0, 0, 0, 0.9f, 0, 1.0f, 0.9f, 0, 1.0f, 0, 0, 0,
               0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
CRAFTAX_TABLE(uint8_t, RANGED_MOB_PROJECTILE, 8, {0, 0, 2, 1, 4, 5, 6, 7})
// Physical damage of the player by sword level.
CRAFTAX_TABLE(int32_t, SWORD_DAMAGE, 5, {1, 2, 3, 5, 8})
