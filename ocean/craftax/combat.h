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

// One mob class's part of attack_mob: hits the first living mob standing at (r, c).
// Returns whether a mob was hit; *killed tells whether it died.
#define ATTACK_MOB_CLASS(s, mobs, count, mob_class, r, c, damage, can_get_achievement, killed)           \
    attack_mob_class(s, (mobs).position[(s)->player_level], (mobs).health[(s)->player_level],                \
                     (mobs).mask[(s)->player_level], (mobs).type_id[(s)->player_level], count, mob_class, r, c, \
                     damage, can_get_achievement, killed)

CRAFTAX_FN int attack_mob_class(GameState* s, int32_t (*position)[2], float* health, uint8_t* mask,
                                const uint8_t* type_id, int count, int mob_class, int r, int c,
                                const float* damage, int can_get_achievement, int* killed) {
    *killed = 0;
    for (int m = 0; m < count; m++) {
        if (!(mask[m] && position[m][0] == r && position[m][1] == c)) continue;
        const float* defense = &TABLE(MOB_DEFENSE)[(type_id[m] * 4 + mob_class) * 3];
        health[m] -= damage_after_defense(damage, defense);
        if (!(health[m] > 0.0f)) {
            mask[m] = 0;
            *killed = 1;
            if (can_get_achievement) s->achievements[TABLE(MOB_ACHIEVEMENT)[mob_class * 8 + type_id[m]]] = 1;
        }
        return 1;
    }
    return 0;
}

// attack_mob: melee, then passive (eaten when can_eat), then ranged mobs at (r, c); a kill clears
// the mob map cell and a killed monster counts towards clearing the floor. *did_kill may be null.
CRAFTAX_FN int attack_mob(GameState* s, int r, int c, const float* damage, int can_eat, int* did_kill) {
    int killed_melee, killed_passive, killed_ranged;
    int hit = ATTACK_MOB_CLASS(s, s->melee_mobs, MAX_MELEE_MOBS, MOB_MELEE, r, c, damage, 1, &killed_melee);
    hit |= ATTACK_MOB_CLASS(s, s->passive_mobs, MAX_PASSIVE_MOBS, MOB_PASSIVE, r, c, damage, can_eat, &killed_passive);
    if (killed_passive && can_eat) {
        s->player_food = imin(max_food(s), s->player_food + 6);
        s->player_hunger = 0.0f;
    }
    hit |= ATTACK_MOB_CLASS(s, s->ranged_mobs, MAX_RANGED_MOBS, MOB_RANGED, r, c, damage, 1, &killed_ranged);
    int killed_monster = killed_melee || killed_ranged;
    int killed = killed_monster || killed_passive;
    if (killed) {
        int cell = map_write_index(r, c);
        if (cell >= 0) level_mobs(s)[cell] = 0;
    }
    s->monsters_killed[s->player_level] += killed_monster;
    if (did_kill) *did_kill = killed;
    return hit;
}

// spawn_projectile: the first free slot of the floor gets the projectile.
#define SPAWN_PROJECTILE(s, projectiles, directions, count, r, c, dr, dc, type)                        \
    spawn_projectile((projectiles).position[(s)->player_level], (projectiles).mask[(s)->player_level], \
                     (projectiles).type_id[(s)->player_level], (directions)[(s)->player_level], count, r, c, dr, dc, type)

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
