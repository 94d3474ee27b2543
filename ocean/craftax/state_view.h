// Host-side table of GameState fields under the reference's EnvState names, for parity tools:
// each field is a flat array of one element kind (u uint8, h int16, i int32, f float32, I uint32).
#pragma once
#include <stddef.h>

#include "state.h"

typedef struct {
    const char* name;
    size_t offset;
    int size;
    char kind;
} StateField;

#define FIELD(name, member, kind) {name, offsetof(GameState, member), (int)sizeof(((GameState*)0)->member), kind}
#define MOB_FIELDS(prefix, member)                                        \
    FIELD(prefix ".position", member.position, 'i'),                      \
    FIELD(prefix ".health", member.health, 'f'),                          \
    FIELD(prefix ".mask", member.mask, 'u'),                              \
    FIELD(prefix ".attack_cooldown", member.attack_cooldown, 'i'),        \
    FIELD(prefix ".type_id", member.type_id, 'u')

static const StateField STATE_FIELDS[] = {
    FIELD("map", map, 'u'),
    FIELD("item_map", item_map, 'u'),
    FIELD("mob_map", mob_map, 'u'),
    FIELD("light_map", light_map, 'f'),
    FIELD("down_ladders", down_ladders, 'h'),
    FIELD("up_ladders", up_ladders, 'h'),
    FIELD("chests_opened", chests_opened, 'u'),
    FIELD("monsters_killed", monsters_killed, 'i'),
    FIELD("player_position", player_position, 'h'),
    FIELD("player_level", player_level, 'i'),
    FIELD("player_direction", player_direction, 'i'),
    FIELD("player_health", player_health, 'f'),
    FIELD("player_food", player_food, 'i'),
    FIELD("player_drink", player_drink, 'i'),
    FIELD("player_energy", player_energy, 'i'),
    FIELD("player_mana", player_mana, 'i'),
    FIELD("is_sleeping", is_sleeping, 'u'),
    FIELD("is_resting", is_resting, 'u'),
    FIELD("player_recover", player_recover, 'f'),
    FIELD("player_hunger", player_hunger, 'f'),
    FIELD("player_thirst", player_thirst, 'f'),
    FIELD("player_fatigue", player_fatigue, 'f'),
    FIELD("player_recover_mana", player_recover_mana, 'f'),
    FIELD("player_xp", player_xp, 'i'),
    FIELD("player_dexterity", player_dexterity, 'i'),
    FIELD("player_strength", player_strength, 'i'),
    FIELD("player_intelligence", player_intelligence, 'i'),
    FIELD("inventory.wood", inventory.wood, 'i'),
    FIELD("inventory.stone", inventory.stone, 'i'),
    FIELD("inventory.coal", inventory.coal, 'i'),
    FIELD("inventory.iron", inventory.iron, 'i'),
    FIELD("inventory.diamond", inventory.diamond, 'i'),
    FIELD("inventory.sapling", inventory.sapling, 'i'),
    FIELD("inventory.pickaxe", inventory.pickaxe, 'i'),
    FIELD("inventory.sword", inventory.sword, 'i'),
    FIELD("inventory.bow", inventory.bow, 'i'),
    FIELD("inventory.arrows", inventory.arrows, 'i'),
    FIELD("inventory.armour", inventory.armour, 'i'),
    FIELD("inventory.torches", inventory.torches, 'i'),
    FIELD("inventory.ruby", inventory.ruby, 'i'),
    FIELD("inventory.sapphire", inventory.sapphire, 'i'),
    FIELD("inventory.potions", inventory.potions, 'i'),
    FIELD("inventory.books", inventory.books, 'i'),
    MOB_FIELDS("melee_mobs", melee_mobs),
    MOB_FIELDS("passive_mobs", passive_mobs),
    MOB_FIELDS("ranged_mobs", ranged_mobs),
    MOB_FIELDS("mob_projectiles", mob_projectiles),
    FIELD("mob_projectile_directions", mob_projectile_directions, 'h'),
    MOB_FIELDS("player_projectiles", player_projectiles),
    FIELD("player_projectile_directions", player_projectile_directions, 'h'),
    FIELD("growing_plants_positions", growing_plants_positions, 'h'),
    FIELD("growing_plants_age", growing_plants_age, 'i'),
    FIELD("growing_plants_mask", growing_plants_mask, 'u'),
    FIELD("potion_mapping", potion_mapping, 'i'),
    FIELD("learned_spells", learned_spells, 'u'),
    FIELD("sword_enchantment", sword_enchantment, 'i'),
    FIELD("bow_enchantment", bow_enchantment, 'i'),
    FIELD("armour_enchantments", armour_enchantments, 'i'),
    FIELD("boss_progress", boss_progress, 'i'),
    FIELD("boss_timesteps_to_spawn_this_round", boss_timesteps_to_spawn_this_round, 'i'),
    FIELD("light_level", light_level, 'f'),
    FIELD("achievements", achievements, 'u'),
    FIELD("state_rng", state_rng, 'I'),
    FIELD("timestep", timestep, 'i'),
};

static inline int state_field_count(void) { return (int)(sizeof(STATE_FIELDS) / sizeof(STATE_FIELDS[0])); }
static inline const char* state_field_name(int f) { return STATE_FIELDS[f].name; }
static inline int state_field_size(int f) { return STATE_FIELDS[f].size; }
static inline char state_field_kind(int f) { return STATE_FIELDS[f].kind; }
static inline size_t state_field_offset(int f) { return STATE_FIELDS[f].offset; }
