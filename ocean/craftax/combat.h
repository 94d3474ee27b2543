// Damage, melee and projectile hits on mobs, and projectile spawning, as the combat helpers of
// craftax/craftax/util/game_logic_utils.py. Damage vectors are (physical, fire, ice).
#pragma once
#include "game_utils.h"

// get_damage: the damage left after each defense fraction, summed in order.
CRAFTAX_FN float damage_after_defense(const float* damage, const float* defense) {
    float total = 0.0f;
    for (int k = 0; k < 3; k++) total += (1.0f - defense[k]) * damage[k];
    return total;
}

// get_player_damage_vector: sword damage scaled by strength, enchantment damage by intelligence.
CRAFTAX_FN void player_damage_vector(const GameState* s, float* damage) {
    int32_t physical = TABLE(SWORD_DAMAGE)[s->inventory.sword];
    float enchant = 1.0f + 0.05f * (float)(s->player_intelligence - 1);
    damage[0] = (float)physical * (1.0f + 0.25f * (float)(s->player_strength - 1));
    damage[1] = (float)(physical * (s->sword_enchantment == 1)) * 0.5f * enchant;
    damage[2] = (float)(physical * (s->sword_enchantment == 2)) * 0.5f * enchant;
}

// get_damage_done_to_player: armour and armour enchantments defend; the boss floor hurts more.
CRAFTAX_FN float damage_to_player(const GameState* s, const float* base_damage, float scale) {
    float defense[3] = {0.0f, 0.0f, 0.0f};
    for (int a = 0; a < 4; a++) {
        defense[0] += (float)s->inventory.armour[a] * 0.1f;
        defense[1] += (float)(s->armour_enchantments[a] == 1) * 0.2f;
        defense[2] += (float)(s->armour_enchantments[a] == 2) * 0.2f;
    }
    float boss = 1.0f + (float)is_fighting_boss(s) * BOSS_FIGHT_EXTRA_DAMAGE;
    float damage[3];
    for (int k = 0; k < 3; k++) damage[k] = base_damage[k] * scale * boss;
    return damage_after_defense(damage, defense);
}

// The first living mob of a class standing at (r, c), or -1. Every slot is tested, with no early
// exit, so that the slots' loads do not wait on one another.
CRAFTAX_FN int mob_slot_at(const int32_t (*position)[2], const uint8_t* mask, int count, int r, int c) {
    int found = -1;
    for (int m = count - 1; m >= 0; m--) {
        int here = (mask[m] != 0) & (position[m][0] == r) & (position[m][1] == c);
        found = here ? m : found;
    }
    return found;
}

// One mob class's part of attack_mob: damages slot m (none when m < 0). Returns whether it died.
CRAFTAX_FN int hurt_mob(GameState* s, float* health, uint8_t* mask, const uint8_t* type_id, int m, int mob_class,
                        const float* damage, int can_get_achievement) {
    if (m < 0) return 0;
    const float* defense = &TABLE(MOB_DEFENSE)[(type_id[m] * 4 + mob_class) * 3];
    health[m] -= damage_after_defense(damage, defense);
    if (health[m] > 0.0f) return 0;
    mask[m] = 0;
    if (can_get_achievement) s->achievements[TABLE(MOB_ACHIEVEMENT)[mob_class * 8 + type_id[m]]] = 1;
    return 1;
}

#define HURT_MOB(s, mobs, l, m, mob_class, damage, can_get_achievement) \
    hurt_mob(s, (mobs).health[l], (mobs).mask[l], (mobs).type_id[l], m, mob_class, damage, can_get_achievement)

// attack_mob: melee, then passive (eaten when can_eat), then ranged mobs at (r, c); a kill clears
// the mob map cell and a killed monster counts towards clearing the floor. *did_kill may be null.
// A hit on one class changes nothing the other classes' lookups read, so all three look first.
CRAFTAX_FN int attack_mob(GameState* s, int r, int c, const float* damage, int can_eat, int* did_kill) {
    int l = s->player_level;
    int melee = mob_slot_at(s->melee_mobs.position[l], s->melee_mobs.mask[l], MAX_MELEE_MOBS, r, c);
    int passive = mob_slot_at(s->passive_mobs.position[l], s->passive_mobs.mask[l], MAX_PASSIVE_MOBS, r, c);
    int ranged = mob_slot_at(s->ranged_mobs.position[l], s->ranged_mobs.mask[l], MAX_RANGED_MOBS, r, c);
    int killed_melee = HURT_MOB(s, s->melee_mobs, l, melee, MOB_MELEE, damage, 1);
    int killed_passive = HURT_MOB(s, s->passive_mobs, l, passive, MOB_PASSIVE, damage, can_eat);
    if (killed_passive && can_eat) {
        s->player_food = imin(max_food(s), s->player_food + 6);
        s->player_hunger = 0.0f;
    }
    int killed_ranged = HURT_MOB(s, s->ranged_mobs, l, ranged, MOB_RANGED, damage, 1);
    int killed_monster = killed_melee || killed_ranged;
    int killed = killed_monster || killed_passive;
    if (killed) {
        int cell = map_write_index(r, c);
        if (cell >= 0) level_mobs(s)[cell] = 0;
    }
    s->monsters_killed[l] += killed_monster;
    if (did_kill) *did_kill = killed;
    return (melee >= 0) | (passive >= 0) | (ranged >= 0);
}

// spawn_projectile: the first free slot of floor `level` gets the projectile.
#define SPAWN_PROJECTILE(projectiles, directions, level, count, r, c, dr, dc, type)                  \
    spawn_projectile((projectiles).position[level], (projectiles).mask[level], (projectiles).type_id[level], \
                     (directions)[level], count, r, c, dr, dc, type)

CRAFTAX_FN void spawn_projectile(int32_t (*position)[2], uint8_t* mask, uint8_t* type_id, int16_t (*direction)[2],
                                 int count, int r, int c, int dr, int dc, int type) {
    int slot = first_free_slot(mask, count);
    position[slot][0] = r;
    position[slot][1] = c;
    mask[slot] = 1;
    direction[slot][0] = (int16_t)dr;
    direction[slot][1] = (int16_t)dc;
    type_id[slot] = (uint8_t)type;
}
