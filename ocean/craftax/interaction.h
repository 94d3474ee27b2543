// The player acting on the block it faces, as do_action, add_items_from_chest, do_crafting and
// place_block in craftax/craftax/game_logic.py: mining, melee attacks, drinking, eating plants,
// opening chests, hitting the necromancer, crafting, and placing blocks, torches and saplings.
#pragma once
#include "combat.h"
#include "worldgen.h"

// add_items_from_chest: every draw below is made from its own split of rng, as in the reference.
CRAFTAX_FN void loot_chest(Key rng, GameState* s) {
    Inventory* inv = &s->inventory;
    Key k;
    k = key_split2(&rng);
    int looting_torch = uniform(k) < 0.6f;
    k = key_split2(&rng);
    inv->torches += randint_at(k, 0, 4, 8) * looting_torch;

    k = key_split2(&rng);
    int looting_ore = uniform(k) < 0.6f;
    k = key_split2(&rng);
    const float ore_weights[5] = {0.3f, 0.3f, 0.15f, 0.125f, 0.125f};
    int ore = choice_small(k, ore_weights, 5);
    // One key for every ore amount: the draws are mutually exclusive.
    k = key_split2(&rng);
    if (looting_ore) {
        if (ore == 0) inv->coal += randint_at(k, 0, 1, 4);
        if (ore == 1) inv->iron += randint_at(k, 0, 1, 3);
        if (ore == 2) inv->diamond += randint_at(k, 0, 1, 2);
        if (ore == 3) inv->sapphire += randint_at(k, 0, 1, 2);
        if (ore == 4) inv->ruby += randint_at(k, 0, 1, 2);
    }

    k = key_split2(&rng);
    int looting_potion = uniform(k) < 0.5f;
    k = key_split2(&rng);
    int potion = randint_at(k, 0, 0, 6);
    k = key_split2(&rng);
    inv->potions[potion] += randint_at(k, 0, 1, 3) * looting_potion;

    k = key_split2(&rng);
    int looting_arrows = uniform(k) < 0.25f;
    k = key_split2(&rng);
    inv->arrows += randint_at(k, 0, 1, 5) * looting_arrows;

    k = key_split2(&rng);
    int looting_tool = uniform(k) < 0.2f;
    k = key_split2(&rng);
    int tool = randint_at(k, 0, 0, 2);
    const float tool_weights[4] = {0.4f, 0.3f, 0.2f, 0.1f};
    k = key_split2(&rng);
    if (looting_tool && tool == 0) inv->pickaxe = imax(choice_small(k, tool_weights, 4) + 1, inv->pickaxe);
    k = key_split2(&rng);
    if (looting_tool && tool == 1) inv->sword = imax(choice_small(k, tool_weights, 4) + 1, inv->sword);

    // The first chest of the dungeon holds the bow; the first chests of the sewers and vaults a book.
    int first_chest = !s->chests_opened[s->player_level];
    if (first_chest && s->player_level == 1) inv->bow = 1;
    if (first_chest && (s->player_level == 3 || s->player_level == 4)) inv->books += 1;
}

// The growing plant at (r, c) (the first slot there) restarts growing when eaten.
CRAFTAX_FN void restart_eaten_plant(GameState* s, int r, int c) {
    for (int p = 0; p < MAX_GROWING_PLANTS; p++) {
        if (s->growing_plants_positions[p][0] == r && s->growing_plants_positions[p][1] == c) {
            s->growing_plants_age[p] = 0;
            return;
        }
    }
    s->growing_plants_age[0] = 0;
}

// do_action for the DO action: attack the mob in front, or else act on the block in front.
CRAFTAX_FN void do_action(Key rng, GameState* s) {
    int r = s->player_position[0] + direction_row(s->player_direction);
    int c = s->player_position[1] + direction_col(s->player_direction);
    float damage[3];
    player_damage_vector(s, damage);
    int attacked = attack_mob(s, r, c, damage, 1, 0);

    Key sapling_key = key_split2(&rng);
    Key chest_key = key_split2(&rng);
    uint8_t block = block_at(s, r, c);

    // Chests and the necromancer react even when the block is off the map (the read wraps).
    int opening_chest = block == BLOCK_CHEST;
    int damaging_boss = block == BLOCK_NECROMANCER && is_boss_vulnerable(s) && is_fighting_boss(s);
    if (damaging_boss) {
        s->boss_progress += 1;
        s->boss_timesteps_to_spawn_this_round = BOSS_FIGHT_SPAWN_TURNS;
    }
    int acts_on_block = in_bounds(r, c) && !attacked;
    if (acts_on_block) {
        uint8_t* cell = &level_map(s)[r * MAP_SIZE + c];
        Inventory* inv = &s->inventory;
        switch (block) {
            case BLOCK_TREE: *cell = BLOCK_GRASS; inv->wood += 1; break;
            case BLOCK_FIRE_TREE: *cell = BLOCK_FIRE_GRASS; inv->wood += 1; break;
            case BLOCK_ICE_SHRUB: *cell = BLOCK_ICE_GRASS; inv->wood += 1; break;
            case BLOCK_STONE: if (inv->pickaxe >= 1) { *cell = BLOCK_PATH; inv->stone += 1; } break;
            case BLOCK_FURNACE: *cell = BLOCK_PATH; break;
            case BLOCK_CRAFTING_TABLE: *cell = BLOCK_PATH; break;
            case BLOCK_COAL: if (inv->pickaxe >= 1) { *cell = BLOCK_PATH; inv->coal += 1; } break;
            case BLOCK_IRON: if (inv->pickaxe >= 2) { *cell = BLOCK_PATH; inv->iron += 1; } break;
            case BLOCK_DIAMOND: if (inv->pickaxe >= 3) { *cell = BLOCK_PATH; inv->diamond += 1; } break;
            case BLOCK_SAPPHIRE: if (inv->pickaxe >= 4) { *cell = BLOCK_PATH; inv->sapphire += 1; } break;
            case BLOCK_RUBY: if (inv->pickaxe >= 4) { *cell = BLOCK_PATH; inv->ruby += 1; } break;
            case BLOCK_STALAGMITE: if (inv->pickaxe >= 1) { *cell = BLOCK_PATH; inv->stone += 1; } break;
            case BLOCK_GRASS: inv->sapling += uniform(sapling_key) < 0.1f; break;
            case BLOCK_WATER:
            case BLOCK_FOUNTAIN:
                s->player_drink = imin(max_drink(s), s->player_drink + 1);
                s->player_thirst = 0.0f;
                s->achievements[ACH_COLLECT_DRINK] = 1;
                break;
            case BLOCK_RIPE_PLANT:
                *cell = BLOCK_PLANT;
                s->player_food = imin(max_food(s), s->player_food + 4);
                s->player_hunger = 0.0f;
                s->achievements[ACH_EAT_PLANT] = 1;
                restart_eaten_plant(s, r, c);
                break;
            case BLOCK_CHEST:
                *cell = BLOCK_PATH;
                loot_chest(chest_key, s);
                s->achievements[ACH_OPEN_CHEST] = 1;
                break;
            default: break;
        }
        unlock(s, ACH_DAMAGE_NECROMANCER, damaging_boss);
    }
    if (opening_chest) s->chests_opened[s->player_level] = 1;
}

// The actions do_crafting acts on.
CRAFTAX_FN int is_crafting_action(int action) {
    return (action >= ACTION_MAKE_WOOD_PICKAXE && action <= ACTION_MAKE_IRON_SWORD) ||
           (action >= ACTION_MAKE_DIAMOND_PICKAXE && action <= ACTION_MAKE_DIAMOND_ARMOUR) ||
           action == ACTION_MAKE_ARROW || action == ACTION_MAKE_TORCH;
}

// do_crafting: each recipe needs a crafting table (some a furnace too) and its ingredients.
CRAFTAX_FN void do_crafting(GameState* s, int action) {
    if (!is_crafting_action(action)) return;
    Inventory* inv = &s->inventory;
    int table = is_near_block(s, BLOCK_CRAFTING_TABLE);
    int furnace = is_near_block(s, BLOCK_FURNACE);
    if (!table) return;  // every recipe needs a crafting table
    switch (action) {
        case ACTION_MAKE_WOOD_PICKAXE:
            if (inv->wood >= 1 && inv->pickaxe < 1) { inv->wood -= 1; inv->pickaxe = 1; }
            break;
        case ACTION_MAKE_STONE_PICKAXE:
            if (inv->wood >= 1 && inv->stone >= 1 && inv->pickaxe < 2) { inv->stone -= 1; inv->wood -= 1; inv->pickaxe = 2; }
            break;
        case ACTION_MAKE_IRON_PICKAXE:
            if (furnace && inv->wood >= 1 && inv->stone >= 1 && inv->iron >= 1 && inv->coal >= 1 && inv->pickaxe < 3) {
                inv->iron -= 1; inv->wood -= 1; inv->stone -= 1; inv->coal -= 1; inv->pickaxe = 3;
            }
            break;
        case ACTION_MAKE_DIAMOND_PICKAXE:
            if (inv->wood >= 1 && inv->diamond >= 3 && inv->pickaxe < 4) { inv->diamond -= 3; inv->wood -= 1; inv->pickaxe = 4; }
            break;
        case ACTION_MAKE_WOOD_SWORD:
            if (inv->wood >= 1 && inv->sword < 1) { inv->wood -= 1; inv->sword = 1; }
            break;
        case ACTION_MAKE_STONE_SWORD:
            if (inv->stone >= 1 && inv->wood >= 1 && inv->sword < 2) { inv->wood -= 1; inv->stone -= 1; inv->sword = 2; }
            break;
        case ACTION_MAKE_IRON_SWORD:
            if (furnace && inv->iron >= 1 && inv->wood >= 1 && inv->stone >= 1 && inv->coal >= 1 && inv->sword < 3) {
                inv->wood -= 1; inv->iron -= 1; inv->stone -= 1; inv->coal -= 1; inv->sword = 3;
            }
            break;
        case ACTION_MAKE_DIAMOND_SWORD:
            if (inv->diamond >= 2 && inv->wood >= 1 && inv->sword < 4) { inv->wood -= 1; inv->diamond -= 2; inv->sword = 4; }
            break;
        case ACTION_MAKE_IRON_ARMOUR:
            if (furnace && inv->iron >= 3 && inv->coal >= 3) {
                for (int a = 0; a < 4; a++) {
                    if (inv->armour[a] < 1) {
                        inv->iron -= 3; inv->coal -= 3; inv->armour[a] = 1;
                        s->achievements[ACH_MAKE_IRON_ARMOUR] = 1;
                        break;
                    }
                }
            }
            break;
        case ACTION_MAKE_DIAMOND_ARMOUR:
            if (inv->diamond >= 3) {
                for (int a = 0; a < 4; a++) {
                    if (inv->armour[a] < 2) {
                        inv->diamond -= 3; inv->armour[a] = 2;
                        s->achievements[ACH_MAKE_DIAMOND_ARMOUR] = 1;
                        break;
                    }
                }
            }
            break;
        case ACTION_MAKE_ARROW:
            if (inv->stone >= 1 && inv->wood >= 1 && inv->arrows < 99) { inv->wood -= 1; inv->stone -= 1; inv->arrows += 2; }
            break;
        case ACTION_MAKE_TORCH:
            if (inv->coal >= 1 && inv->wood >= 1 && inv->torches < 99) { inv->wood -= 1; inv->coal -= 1; inv->torches += 4; }
            break;
        default: break;
    }
}

// A torch adds TORCH_LIGHT_MAP around (r, c), clipped to 1, inside the map.
CRAFTAX_FN void light_torch(GameState* s, int r, int c) {
    float* light = &s->light_map[s->player_level][0][0];
    for (int i = 0; i < 9; i++) {
        for (int j = 0; j < 9; j++) {
            int rr = r - 4 + i, cc = c - 4 + j;
            if (!in_bounds(rr, cc)) continue;
            float* cell = &light[rr * MAP_SIZE + cc];
            *cell = fclampf(torch_light(i, j) + *cell, 0.0f, 1.0f);
        }
    }
    refresh_lit_rows(s, s->player_level, imax(r - 4, 0), imin(r + 5, MAP_SIZE));
}

// place_block: table, furnace, stone, torch or sapling on the cell in front, if it is on the map
// and free of mobs and of the player.
CRAFTAX_FN void place_block(GameState* s, int action) {
    int placing = (action >= ACTION_PLACE_STONE && action <= ACTION_PLACE_PLANT) || action == ACTION_PLACE_TORCH;
    if (!placing) return;
    int r = s->player_position[0] + direction_row(s->player_direction);
    int c = s->player_position[1] + direction_col(s->player_direction);
    if (!in_bounds(r, c) || is_in_mob(s, r, c)) return;
    int cell = r * MAP_SIZE + c;
    uint8_t* map = level_map(s);
    uint8_t* items = level_items(s);
    Inventory* inv = &s->inventory;
    int blocked = TABLE(SOLID_BLOCK)[map[cell]] || items[cell] != ITEM_NONE;
    switch (action) {
        case ACTION_PLACE_TABLE:
            if (!blocked && inv->wood >= 2) {
                map[cell] = BLOCK_CRAFTING_TABLE;
                inv->wood -= 2;
                s->achievements[ACH_PLACE_TABLE] = 1;
            }
            break;
        case ACTION_PLACE_FURNACE:
            if (!blocked && inv->stone > 0) {
                map[cell] = BLOCK_FURNACE;
                inv->stone -= 1;
                s->achievements[ACH_PLACE_FURNACE] = 1;
            }
            break;
        case ACTION_PLACE_STONE:
            if ((map[cell] == BLOCK_WATER || !blocked) && inv->stone > 0) {
                map[cell] = BLOCK_STONE;
                inv->stone -= 1;
                s->achievements[ACH_PLACE_STONE] = 1;
            }
            break;
        case ACTION_PLACE_TORCH:
            if (TABLE(CAN_PLACE_ITEM)[map[cell]] && items[cell] == ITEM_NONE && inv->torches > 0) {
                items[cell] = ITEM_TORCH;
                inv->torches -= 1;
                light_torch(s, r, c);
                s->achievements[ACH_PLACE_TORCH] = 1;
            }
            break;
        case ACTION_PLACE_PLANT:
            if (map[cell] == BLOCK_GRASS && items[cell] == ITEM_NONE && inv->sapling > 0) {
                map[cell] = BLOCK_PLANT;
                inv->sapling -= 1;
                s->achievements[ACH_PLACE_PLANT] = 1;
                for (int p = 0; p < MAX_GROWING_PLANTS; p++) {
                    if (!s->growing_plants_mask[p]) {
                        s->growing_plants_positions[p][0] = (int16_t)r;
                        s->growing_plants_positions[p][1] = (int16_t)c;
                        s->growing_plants_age[p] = 0;
                        s->growing_plants_mask[p] = 1;
                        break;
                    }
                }
            }
            break;
        default: break;
    }
}
