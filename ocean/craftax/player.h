// The player's own actions and body, as craftax/craftax/game_logic.py: changing floors, bows and
// spells, potions, books, enchanting, attributes, movement, the boss counters, plant growth,
// intrinsics (food, drink, energy, health, mana, sleeping, resting), caps and inventory
// achievements.
#pragma once
#include "combat.h"

// change_floor: descend on a down ladder of a cleared floor, ascend on an up ladder.
CRAFTAX_FN void change_floor(GameState* s, int action) {
    int level = s->player_level;
    uint8_t item = s->item_map[level][s->player_position[0]][s->player_position[1]];
    int moving_down = action == ACTION_DESCEND && item == ITEM_LADDER_DOWN &&
                      s->monsters_killed[level] >= MONSTERS_KILLED_TO_CLEAR_LEVEL && level < NUM_LEVELS - 1;
    int moving_up = action == ACTION_ASCEND && item == ITEM_LADDER_UP && level > 0;
    int delta = moving_down - moving_up;
    if (moving_down) {
        s->player_position[0] = s->up_ladders[level + 1][0];
        s->player_position[1] = s->up_ladders[level + 1][1];
    } else if (moving_up) {
        s->player_position[0] = s->down_ladders[level - 1][0];
        s->player_position[1] = s->down_ladders[level - 1][1];
    }
    int new_level = level + delta;
    int achievement = TABLE(LEVEL_ACHIEVEMENT)[new_level];
    // Experience for every first arrival on a floor below the surface.
    int first_arrival = new_level != 0 && !s->achievements[achievement];
    if (new_level != 0) s->achievements[achievement] = 1;
    s->player_level = new_level;
    s->player_xp += first_arrival;
}

CRAFTAX_FN void shoot_arrow(GameState* s, int action) {
    int level = s->player_level;
    int shooting = action == ACTION_SHOOT_ARROW && s->inventory.bow >= 1 && s->inventory.arrows >= 1 &&
                   count_alive(s->player_projectiles.mask[level], MAX_PLAYER_PROJECTILES) < MAX_PLAYER_PROJECTILES;
    if (!shooting) return;
    int d = s->player_direction;
    SPAWN_PROJECTILE(s->player_projectiles, s->player_projectile_directions, level, MAX_PLAYER_PROJECTILES,
                     s->player_position[0], s->player_position[1], direction_row(d), direction_col(d), PROJECTILE_ARROW2);
    s->inventory.arrows -= 1;
    s->achievements[ACH_FIRE_BOW] = 1;
}

CRAFTAX_FN void cast_spell(GameState* s, int action) {
    if (action != ACTION_CAST_FIREBALL && action != ACTION_CAST_ICEBALL) return;
    int level = s->player_level;
    int can_cast = s->player_mana >= 2 &&
                   count_alive(s->player_projectiles.mask[level], MAX_PLAYER_PROJECTILES) < MAX_PLAYER_PROJECTILES;
    int fireball = can_cast && action == ACTION_CAST_FIREBALL && s->learned_spells[0];
    int iceball = can_cast && action == ACTION_CAST_ICEBALL && s->learned_spells[1];
    if (!fireball && !iceball) return;
    int d = s->player_direction;
    SPAWN_PROJECTILE(s->player_projectiles, s->player_projectile_directions, level, MAX_PLAYER_PROJECTILES,
                     s->player_position[0], s->player_position[1], direction_row(d), direction_col(d),
                     fireball ? PROJECTILE_FIREBALL : PROJECTILE_ICEBALL);
    s->player_mana -= 2;
    s->achievements[fireball ? ACH_CAST_FIREBALL : ACH_CAST_ICEBALL] = 1;
}

// drink_potion: potion colour -> effect through the world's secret potion_mapping.
CRAFTAX_FN void drink_potion(GameState* s, int action) {
    int colour = action - ACTION_DRINK_POTION_RED;
    if (colour < 0 || colour >= NUM_POTIONS || s->inventory.potions[colour] <= 0) return;
    s->inventory.potions[colour] -= 1;
    switch (s->potion_mapping[colour]) {
        case 0: s->player_health += 8.0f; break;
        case 1: s->player_health += -3.0f; break;
        case 2: s->player_mana += 8; break;
        case 3: s->player_mana += -3; break;
        case 4: s->player_energy += 8; break;
        case 5: s->player_energy += -3; break;
        default: break;
    }
    s->achievements[ACH_DRINK_POTION] = 1;
}

// read_book: learn one of the spells not known yet, at random (with both known: the fireball).
CRAFTAX_FN void read_book(Key rng, GameState* s, int action) {
    if (!(action == ACTION_READ_BOOK && s->inventory.books > 0)) return;
    Key k = key_split2(&rng);
    float unknown[2] = {(float)!s->learned_spells[0], (float)!s->learned_spells[1]};
    float total = unknown[0] + unknown[1];
    float weights[2] = {unknown[0] / total, unknown[1] / total};
    int spell = choice_small(k, weights, 2);
    s->inventory.books -= 1;
    s->learned_spells[spell] = 1;
    s->achievements[spell ? ACH_LEARN_ICEBALL : ACH_LEARN_FIREBALL] = 1;
}

// enchant: a fire table takes a ruby, an ice table a sapphire, and 9 mana.
CRAFTAX_FN void enchant(Key rng, GameState* s, int action) {
    int r = s->player_position[0] + direction_row(s->player_direction);
    int c = s->player_position[1] + direction_col(s->player_direction);
    uint8_t target = block_at(s, r, c);
    int is_table = target == BLOCK_ENCHANTMENT_TABLE_FIRE || target == BLOCK_ENCHANTMENT_TABLE_ICE;
    int type = target == BLOCK_ENCHANTMENT_TABLE_FIRE ? 1 : 2;
    int gems = type == 1 ? s->inventory.ruby : s->inventory.sapphire;
    int could = s->player_mana >= 9 && is_table && gems >= 1;
    int armour_total = 0;
    for (int a = 0; a < 4; a++) armour_total += s->inventory.armour[a];
    int bow = could && action == ACTION_ENCHANT_BOW && s->inventory.bow > 0;
    int sword = could && action == ACTION_ENCHANT_SWORD && s->inventory.sword > 0;
    int armour = could && action == ACTION_ENCHANT_ARMOUR && armour_total > 0;
    if (!(bow || sword || armour)) return;
    if (sword) s->sword_enchantment = type;
    if (bow) s->bow_enchantment = type;
    if (armour) {
        // Unenchanted pieces first; when none is left, pieces of the other enchantment.
        float targets[4];
        int unenchanted = 0;
        for (int a = 0; a < 4; a++) unenchanted += s->armour_enchantments[a] == 0;
        for (int a = 0; a < 4; a++) {
            int e = s->armour_enchantments[a];
            targets[a] = (float)((e == 0) + (unenchanted == 0) * (e != 0 && e != type));
        }
        Key k = key_split2(&rng);
        s->armour_enchantments[choice_small(k, targets, 4)] = type;
        s->achievements[ACH_ENCHANT_ARMOUR] = 1;
    }
    if (type == 2) s->inventory.sapphire -= 1;
    if (type == 1) s->inventory.ruby -= 1;
    s->player_mana -= 9;
    unlock(s, ACH_ENCHANT_SWORD, sword);
}

CRAFTAX_FN void boss_logic(GameState* s) {
    unlock(s, ACH_DEFEAT_NECROMANCER, has_beaten_boss(s));
    if (is_fighting_boss(s)) s->boss_timesteps_to_spawn_this_round -= 1;
}

CRAFTAX_FN void level_up_attributes(GameState* s, int action) {
    int32_t* attribute = action == ACTION_LEVEL_UP_DEXTERITY      ? &s->player_dexterity
                         : action == ACTION_LEVEL_UP_STRENGTH     ? &s->player_strength
                         : action == ACTION_LEVEL_UP_INTELLIGENCE ? &s->player_intelligence
                                                                  : 0;
    if (!attribute || s->player_xp < 1 || *attribute >= MAX_ATTRIBUTE) return;
    *attribute += 1;
    s->player_xp -= 1;
}

// Standing still changes nothing: the player's own cell is never free (is_in_mob).
CRAFTAX_FN void move_player(GameState* s, int action) {
    int dr = direction_row(action), dc = direction_col(action);
    if (dr == 0 && dc == 0) return;
    int r = s->player_position[0] + dr, c = s->player_position[1] + dc;
    if (is_free_for(s, r, c, TABLE(PLAYER_COLLISION))) {
        s->player_position[0] = (int16_t)r;
        s->player_position[1] = (int16_t)c;
    }
    s->player_direction = action;
}

// update_plants: saplings on the surface ripen after 600 steps.
CRAFTAX_FN void update_plants(GameState* s) {
    for (int p = 0; p < MAX_GROWING_PLANTS; p++) {
        s->growing_plants_age[p] = (s->growing_plants_age[p] + 1) * s->growing_plants_mask[p];
        if (s->growing_plants_age[p] >= 600) {
            s->map[0][s->growing_plants_positions[p][0]][s->growing_plants_positions[p][1]] = BLOCK_RIPE_PLANT;
        }
    }
}

// update_player_intrinsics: sleeping and resting, then food, drink, energy, health and mana. The
// intrinsics are read into locals and written back at the end, as a store would make the compiler
// read every field after it again.
CRAFTAX_FN void update_player_intrinsics(GameState* s, int action) {
    int sleeping = s->is_sleeping, resting = s->is_resting;
    int32_t food = s->player_food, drink = s->player_drink, energy = s->player_energy, mana = s->player_mana;
    float health = s->player_health, hunger = s->player_hunger, thirst = s->player_thirst;
    float fatigue = s->player_fatigue, recover = s->player_recover, recover_mana = s->player_recover_mana;
    int32_t most_energy = max_energy(s);
    float most_health = (float)max_health(s);
    int not_boss = !is_fighting_boss(s);
    float decay = 1.0f - 0.125f * (float)(s->player_dexterity - 1);
    float mana_rate = 1.0f + 0.25f * (float)(s->player_intelligence - 1);

    if (action == ACTION_SLEEP && energy < most_energy) sleeping = 1;
    int wakes_up = sleeping && energy >= most_energy;
    if (wakes_up) sleeping = 0;
    if (action == ACTION_REST && health < most_health) resting = 1;
    if (resting && (health >= most_health || food <= 0 || drink <= 0)) resting = 0;

    float sleep_rate = sleeping ? 0.5f : 1.0f;
    hunger += sleep_rate * decay;
    if (hunger > 25.0f) {
        food = imax(food - not_boss, 0);
        hunger = 0.0f;
    }

    thirst += sleep_rate * decay;
    if (thirst > 20.0f) {
        drink = imax(drink - not_boss, 0);
        thirst = 0.0f;
    }

    fatigue = sleeping ? fminf(fatigue - 1.0f, 0.0f) : fatigue + decay;
    if (fatigue > 30.0f) {
        energy = imax(energy - not_boss, 0);
        fatigue = 0.0f;
    }
    if (fatigue < -10.0f) {
        energy = imin(energy + 1, most_energy);
        fatigue = 0.0f;
    }

    int all_necessities = food > 0 && drink > 0 && (energy > 0 || sleeping);
    float recover_add = all_necessities ? (sleeping ? 2.0f : 1.0f) : (sleeping ? -0.5f : -1.0f) * (float)not_boss;
    recover += recover_add;
    if (recover > 25.0f) {
        health = fminf(health + 1.0f, most_health);
        recover = 0.0f;
    }
    if (recover < -15.0f) {
        health -= 1.0f;
        recover = 0.0f;
    }

    recover_mana = (recover_mana + (sleeping ? 2.0f : 1.0f)) * mana_rate;
    if (recover_mana > 30.0f) {
        mana += 1;
        recover_mana = 0.0f;
    }

    if (wakes_up) s->achievements[ACH_WAKE_UP] = 1;
    s->is_sleeping = (uint8_t)sleeping;
    s->is_resting = (uint8_t)resting;
    s->player_food = food;
    s->player_drink = drink;
    s->player_energy = energy;
    s->player_mana = mana;
    s->player_health = health;
    s->player_hunger = hunger;
    s->player_thirst = thirst;
    s->player_fatigue = fatigue;
    s->player_recover = recover;
    s->player_recover_mana = recover_mana;
}

// clip_inventory_and_intrinsics: inventory counts cap at 99, intrinsics at their maxima.
CRAFTAX_FN void clip_inventory_and_intrinsics(GameState* s) {
    int32_t* counts = (int32_t*)&s->inventory;
    for (int i = 0; i < (int)(sizeof(Inventory) / sizeof(int32_t)); i++) counts[i] = imin(counts[i], MAX_INVENTORY);
    s->player_health = fminf(fmaxf(s->player_health, 0.0f), (float)max_health(s));
    s->player_food = imin(imax(s->player_food, 0), max_food(s));
    s->player_drink = imin(imax(s->player_drink, 0), max_drink(s));
    s->player_energy = imin(imax(s->player_energy, 0), max_energy(s));
    s->player_mana = imin(imax(s->player_mana, 0), max_mana(s));
}

// calculate_inventory_achievements: achievements read off the inventory (items from chests count).
CRAFTAX_FN void inventory_achievements(GameState* s) {
    const Inventory* inv = &s->inventory;
    unlock(s, ACH_COLLECT_WOOD, inv->wood > 0);
    unlock(s, ACH_COLLECT_STONE, inv->stone > 0);
    unlock(s, ACH_COLLECT_COAL, inv->coal > 0);
    unlock(s, ACH_COLLECT_IRON, inv->iron > 0);
    unlock(s, ACH_COLLECT_DIAMOND, inv->diamond > 0);
    unlock(s, ACH_COLLECT_RUBY, inv->ruby > 0);
    unlock(s, ACH_COLLECT_SAPPHIRE, inv->sapphire > 0);
    unlock(s, ACH_COLLECT_SAPLING, inv->sapling > 0);
    unlock(s, ACH_FIND_BOW, inv->bow > 0);
    unlock(s, ACH_MAKE_ARROW, inv->arrows > 0);
    unlock(s, ACH_MAKE_TORCH, inv->torches > 0);
    unlock(s, ACH_MAKE_WOOD_PICKAXE, inv->pickaxe >= 1);
    unlock(s, ACH_MAKE_STONE_PICKAXE, inv->pickaxe >= 2);
    unlock(s, ACH_MAKE_IRON_PICKAXE, inv->pickaxe >= 3);
    unlock(s, ACH_MAKE_DIAMOND_PICKAXE, inv->pickaxe >= 4);
    unlock(s, ACH_MAKE_WOOD_SWORD, inv->sword >= 1);
    unlock(s, ACH_MAKE_STONE_SWORD, inv->sword >= 2);
    unlock(s, ACH_MAKE_IRON_SWORD, inv->sword >= 3);
    unlock(s, ACH_MAKE_DIAMOND_SWORD, inv->sword >= 4);
}
