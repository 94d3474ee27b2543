// Craftax-Classic's step, as craftax/craftax_classic/game_logic.py's craftax_step and the
// functions it calls, in the reference's order and with its keys.
//
// Index semantics: the reference indexes the map with traced integers, which jax normalises (a
// negative index gets + 64 once) and clamps when reading, while a write to an index still outside
// the map is dropped; classic_read_index / classic_write_index follow those rules.
#pragma once
#include <stdlib.h>

#include "worldgen.h"

CRAFTAX_FN int classic_normalised(int i) { return i < 0 ? i + CLASSIC_MAP_SIZE : i; }

CRAFTAX_FN int classic_read_index(int r, int c) {
    r = iclamp(classic_normalised(r), 0, CLASSIC_MAP_SIZE - 1);
    c = iclamp(classic_normalised(c), 0, CLASSIC_MAP_SIZE - 1);
    return r * CLASSIC_MAP_SIZE + c;
}

// The cell a write touches, or -1 when the reference drops it.
CRAFTAX_FN int classic_write_index(int r, int c) {
    r = classic_normalised(r);
    c = classic_normalised(c);
    if (r < 0 || r >= CLASSIC_MAP_SIZE || c < 0 || c >= CLASSIC_MAP_SIZE) return -1;
    return r * CLASSIC_MAP_SIZE + c;
}

CRAFTAX_FN int classic_in_bounds(int r, int c) { return r >= 0 && r < CLASSIC_MAP_SIZE && c >= 0 && c < CLASSIC_MAP_SIZE; }

CRAFTAX_FN uint8_t classic_block(const ClassicState* s, int r, int c) { return (&s->map[0][0])[classic_read_index(r, c)]; }

CRAFTAX_FN int classic_in_wall(const ClassicState* s, int r, int c) { return TABLE(CLASSIC_SOLID)[classic_block(s, r, c)]; }

CRAFTAX_FN int classic_in_mob(const ClassicState* s, int r, int c) {
    return (&s->mob_map[0][0])[classic_read_index(r, c)] || (s->player_position[0] == r && s->player_position[1] == c);
}

// is_position_in_bounds_not_in_wall_not_in_mob_not_in_lava
CRAFTAX_FN int classic_free_cell(const ClassicState* s, int r, int c) {
    return classic_in_bounds(r, c) && !classic_in_wall(s, r, c) && !classic_in_mob(s, r, c) && classic_block(s, r, c) != CB_LAVA;
}

// mob_map[r, c] = value, unless the reference drops the write.
CRAFTAX_FN void classic_set_mob_cell(ClassicState* s, int r, int c, int value) {
    int w = classic_write_index(r, c);
    if (w >= 0) (&s->mob_map[0][0])[w] = (uint8_t)value;
}

CRAFTAX_FN int classic_mob_cell(const ClassicState* s, int r, int c) { return (&s->mob_map[0][0])[classic_read_index(r, c)]; }

CRAFTAX_FN int classic_is_near_block(const ClassicState* s, int block) {
    int near = 0;
    for (int k = 0; k < 8; k++) {
        int r = s->player_position[0] + TABLE(CLASSIC_CLOSE_ROW)[k];
        int c = s->player_position[1] + TABLE(CLASSIC_CLOSE_COL)[k];
        near |= classic_in_bounds(r, c) && classic_block(s, r, c) == block;
    }
    return near;
}

CRAFTAX_FN void classic_do_crafting(ClassicState* s, int action) {
    int table = classic_is_near_block(s, CB_CRAFTING_TABLE);
    int furnace = classic_is_near_block(s, CB_FURNACE);
    ClassicInventory* inv = &s->inventory;
    uint8_t* ach = s->achievements;
    if (action == CA_MAKE_WOOD_PICKAXE && inv->wood >= 1 && table) {
        inv->wood -= 1;
        inv->wood_pickaxe += 1;
        ach[CH_MAKE_WOOD_PICKAXE] = 1;
    }
    if (action == CA_MAKE_STONE_PICKAXE && inv->wood >= 1 && inv->stone >= 1 && table) {
        inv->stone -= 1;
        inv->wood -= 1;
        inv->stone_pickaxe += 1;
        ach[CH_MAKE_STONE_PICKAXE] = 1;
    }
    if (action == CA_MAKE_IRON_PICKAXE && inv->wood >= 1 && inv->stone >= 1 && inv->iron >= 1 && inv->coal >= 1 && furnace && table) {
        inv->iron -= 1;
        inv->wood -= 1;
        inv->stone -= 1;
        inv->coal -= 1;
        inv->iron_pickaxe += 1;
        ach[CH_MAKE_IRON_PICKAXE] = 1;
    }
    if (action == CA_MAKE_WOOD_SWORD && inv->wood >= 1 && table) {
        inv->wood -= 1;
        inv->wood_sword += 1;
        ach[CH_MAKE_WOOD_SWORD] = 1;
    }
    if (action == CA_MAKE_STONE_SWORD && inv->stone >= 1 && inv->wood >= 1 && table) {
        inv->wood -= 1;
        inv->stone -= 1;
        inv->stone_sword += 1;
        ach[CH_MAKE_STONE_SWORD] = 1;
    }
    if (action == CA_MAKE_IRON_SWORD && inv->iron >= 1 && inv->wood >= 1 && inv->stone >= 1 && inv->coal >= 1 && furnace && table) {
        inv->wood -= 1;
        inv->iron -= 1;
        inv->stone -= 1;
        inv->coal -= 1;
        inv->iron_sword += 1;
        ach[CH_MAKE_IRON_SWORD] = 1;
    }
}

CRAFTAX_FN int32_t classic_attack_damage(const ClassicState* s) {
    int32_t damage = 1;
    if (2 * s->inventory.wood_sword > damage) damage = 2 * s->inventory.wood_sword;
    if (3 * s->inventory.stone_sword > damage) damage = 3 * s->inventory.stone_sword;
    if (5 * s->inventory.iron_sword > damage) damage = 5 * s->inventory.iron_sword;
    return damage;
}

// One kind of mob attacked at (r, c): the first live one there loses `damage` health, and every
// mob of the kind is then live exactly when its health is positive (the reference recomputes the
// whole mask). Returns whether one was attacked; *killed says whether it died.
CRAFTAX_FN int classic_attack_mobs(ClassicMobs mobs, int r, int c, int32_t damage, int* killed) {
    int target = 0, attacked = 0;
    for (int k = mobs.count - 1; k >= 0; k--) {
        if (mobs.mask[k] && mobs.position[k][0] == r && mobs.position[k][1] == c) {
            target = k;
            attacked = 1;
        }
    }
    mobs.health[target] -= damage * attacked;
    int was_live = mobs.mask[target];
    for (int k = 0; k < mobs.count; k++) mobs.mask[k] = mobs.health[k] > 0;
    *killed = was_live && !mobs.mask[target];
    return attacked;
}

// do_action for the DO action: attacking, mining, collecting, drinking, eating.
CRAFTAX_FN void classic_do_action(Key key, ClassicState* s) {
    int r = s->player_position[0] + TABLE(CLASSIC_DIRECTION_ROW)[s->player_direction];
    int c = s->player_position[1] + TABLE(CLASSIC_DIRECTION_COL)[s->player_direction];
    int32_t damage = classic_attack_damage(s);
    int killed_zombie, killed_cow, killed_skeleton;
    int attacked = classic_attack_mobs(CLASSIC_MOBS_OF(s->zombies, CLASSIC_MAX_ZOMBIES), r, c, damage, &killed_zombie);
    if (killed_zombie) s->achievements[CH_DEFEAT_ZOMBIE] = 1;
    attacked |= classic_attack_mobs(CLASSIC_MOBS_OF(s->cows, CLASSIC_MAX_COWS), r, c, damage, &killed_cow);
    if (killed_cow) {
        s->achievements[CH_EAT_COW] = 1;
        s->player_food = s->player_food + 6 < 9 ? s->player_food + 6 : 9;
        s->player_hunger = 0.0f;
    }
    attacked |= classic_attack_mobs(CLASSIC_MOBS_OF(s->skeletons, CLASSIC_MAX_SKELETONS), r, c, damage, &killed_skeleton);
    if (killed_skeleton) s->achievements[CH_DEFEAT_SKELETON] = 1;
    if (killed_zombie || killed_cow || killed_skeleton) classic_set_mob_cell(s, r, c, 0);

    float sapling_roll = uniform(key_split_at(key, 1));
    if (!classic_in_bounds(r, c) || attacked) return;
    uint8_t* cell = &s->map[r][c];
    ClassicInventory* inv = &s->inventory;
    uint8_t block = *cell;
    if (block == CB_TREE) {
        *cell = CB_GRASS;
        inv->wood += 1;
        s->achievements[CH_COLLECT_WOOD] = 1;
    } else if (block == CB_STONE && inv->wood_pickaxe) {
        *cell = CB_PATH;
        inv->stone += 1;
        s->achievements[CH_COLLECT_STONE] = 1;
    } else if (block == CB_COAL && inv->wood_pickaxe) {
        *cell = CB_PATH;
        inv->coal += 1;
        s->achievements[CH_COLLECT_COAL] = 1;
    } else if (block == CB_IRON && inv->stone_pickaxe) {
        *cell = CB_PATH;
        inv->iron += 1;
        s->achievements[CH_COLLECT_IRON] = 1;
    } else if (block == CB_DIAMOND && inv->iron_pickaxe) {
        *cell = CB_PATH;
        inv->diamond += 1;
        s->achievements[CH_COLLECT_DIAMOND] = 1;
    } else if (block == CB_GRASS && sapling_roll < 0.1f) {
        inv->sapling += 1;
        s->achievements[CH_COLLECT_SAPLING] = 1;
    } else if (block == CB_WATER) {
        s->player_drink = s->player_drink + 1 < 9 ? s->player_drink + 1 : 9;
        s->player_thirst = 0.0f;
        s->achievements[CH_COLLECT_DRINK] = 1;
    } else if (block == CB_RIPE_PLANT) {
        *cell = CB_PLANT;
        s->player_food = s->player_food + 4 < 9 ? s->player_food + 4 : 9;
        s->player_hunger = 0.0f;
        s->achievements[CH_EAT_PLANT] = 1;
        int plant = 0;
        for (int k = CLASSIC_MAX_PLANTS - 1; k >= 0; k--) {
            if (s->growing_plants_positions[k][0] == r && s->growing_plants_positions[k][1] == c) plant = k;
        }
        s->growing_plants_age[plant] = 0;
    }
}

// place_block: a table, a furnace, stone or a sapling in front of the player.
CRAFTAX_FN void classic_place_block(ClassicState* s, int action) {
    int r = s->player_position[0] + TABLE(CLASSIC_DIRECTION_ROW)[s->player_direction];
    int c = s->player_position[1] + TABLE(CLASSIC_DIRECTION_COL)[s->player_direction];
    if (!classic_in_bounds(r, c) || classic_in_mob(s, r, c)) return;
    ClassicInventory* inv = &s->inventory;
    uint8_t* cell = &s->map[r][c];
    int wall = classic_in_wall(s, r, c);
    if (action == CA_PLACE_TABLE && !wall && inv->wood >= 2) {
        *cell = CB_CRAFTING_TABLE;
        inv->wood -= 2;
        s->achievements[CH_PLACE_TABLE] = 1;
    } else if (action == CA_PLACE_FURNACE && !wall && inv->stone > 0) {
        *cell = CB_FURNACE;
        inv->stone -= 1;
        s->achievements[CH_PLACE_FURNACE] = 1;
    } else if (action == CA_PLACE_STONE && (*cell == CB_WATER || !wall) && inv->stone > 0) {
        *cell = CB_STONE;
        inv->stone -= 1;
        s->achievements[CH_PLACE_STONE] = 1;
    } else if (action == CA_PLACE_PLANT && *cell == CB_GRASS && inv->sapling > 0) {
        *cell = CB_PLANT;
        inv->sapling -= 1;
        s->achievements[CH_PLACE_PLANT] = 1;
        for (int k = 0; k < CLASSIC_MAX_PLANTS; k++) {
            if (!s->growing_plants_mask[k]) {
                s->growing_plants_positions[k][0] = r;
                s->growing_plants_positions[k][1] = c;
                s->growing_plants_age[k] = 0;
                s->growing_plants_mask[k] = 1;
                break;
            }
        }
    }
}

CRAFTAX_FN void classic_move_player(ClassicState* s, int action) {
    int dr = TABLE(CLASSIC_DIRECTION_ROW)[action], dc = TABLE(CLASSIC_DIRECTION_COL)[action];
    int r = s->player_position[0] + dr, c = s->player_position[1] + dc;
    int valid = classic_free_cell(s, r, c) || classic_block(s, r, c) == CB_LAVA;
    s->player_position[0] += valid * dr;
    s->player_position[1] += valid * dc;
    if (dr != 0 || dc != 0) s->player_direction = action;
}

CRAFTAX_FN int classic_sign(int x) { return (x > 0) - (x < 0); }

// The move towards the player that the zombies' and skeletons' choice(2, p) picks: along the
// axis (or one of the axes) on which the player is farthest.
CRAFTAX_FN void classic_towards_player(Key key, const ClassicState* s, const int32_t* position, int* dr, int* dc) {
    int ar = abs(s->player_position[0] - position[0]), ac = abs(s->player_position[1] - position[1]);
    int most = ar > ac ? ar : ac;
    float total = (float)(ar + ac);
    float weights[2] = {(float)(ar == most) / total, (float)(ac == most) / total};
    int axis = choice_small(key, weights, 2);
    *dr = axis == 0 ? classic_sign(s->player_position[0] - position[0]) : 0;
    *dc = axis == 1 ? classic_sign(s->player_position[1] - position[1]) : 0;
}

CRAFTAX_FN int classic_player_distance(const ClassicState* s, const int32_t* position) {
    return abs(position[0] - s->player_position[0]) + abs(position[1] - s->player_position[1]);
}

// Mob k's move to (r, c) on the mob map and its despawn check, as each of the reference's mob
// scans ends: its old cell is cleared if it was live, its new one marked if it stays live.
CRAFTAX_FN void classic_settle_mob(ClassicState* s, ClassicMobs mobs, int k, int r, int c) {
    int32_t* from = mobs.position[k];
    int keep = classic_player_distance(s, from) < CLASSIC_DESPAWN_DISTANCE;
    classic_set_mob_cell(s, from[0], from[1], classic_mob_cell(s, from[0], from[1]) && !mobs.mask[k]);
    int live = mobs.mask[k] && keep;
    classic_set_mob_cell(s, r, c, classic_mob_cell(s, r, c) || live);
    from[0] = r;
    from[1] = c;
    mobs.mask[k] = (uint8_t)live;
}

CRAFTAX_FN void classic_update_mobs(Key rng, ClassicState* s) {
    key_split2(&rng);
    for (int k = 0; k < CLASSIC_MAX_ZOMBIES; k++) {
        int32_t* position = s->zombies.position[k];
        int random = randint_at(key_split2(&rng), 0, 0, 4) + 1;
        int tr, tc;
        classic_towards_player(key_split2(&rng), s, position, &tr, &tc);
        int distance = classic_player_distance(s, position);
        float chase_roll = uniform(key_split2(&rng));
        int close = distance < 10 && chase_roll < 0.75f;
        int pr = close ? position[0] + tr : position[0] + TABLE(CLASSIC_DIRECTION_ROW)[random];
        int pc = close ? position[1] + tc : position[1] + TABLE(CLASSIC_DIRECTION_COL)[random];
        int attacking = distance == 1 && s->zombies.attack_cooldown[k] <= 0 && s->zombies.mask[k];
        if (attacking) {
            pr = position[0];
            pc = position[1];
            s->player_health -= s->is_sleeping ? 7 : 2;
            if (s->is_sleeping) s->achievements[CH_WAKE_UP] = 1;
            s->is_sleeping = 0;
        }
        s->zombies.attack_cooldown[k] = attacking ? 5 : s->zombies.attack_cooldown[k] - 1;
        if (!classic_free_cell(s, pr, pc)) {
            pr = position[0];
            pc = position[1];
        }
        rng = key_split_at(rng, 1);
        classic_settle_mob(s, CLASSIC_MOBS_OF(s->zombies, CLASSIC_MAX_ZOMBIES), k, pr, pc);
    }

    key_split2(&rng);
    for (int k = 0; k < CLASSIC_MAX_COWS; k++) {
        int32_t* position = s->cows.position[k];
        int direction = randint_at(key_split2(&rng), 0, 0, 8) + 1;
        int pr = position[0] + (direction <= 4 ? TABLE(CLASSIC_DIRECTION_ROW)[direction] : 0);
        int pc = position[1] + (direction <= 4 ? TABLE(CLASSIC_DIRECTION_COL)[direction] : 0);
        if (!classic_free_cell(s, pr, pc)) {
            pr = position[0];
            pc = position[1];
        }
        classic_settle_mob(s, CLASSIC_MOBS_OF(s->cows, CLASSIC_MAX_COWS), k, pr, pc);
    }

    key_split2(&rng);
    for (int k = 0; k < CLASSIC_MAX_SKELETONS; k++) {
        int32_t* position = s->skeletons.position[k];
        int random = randint_at(key_split2(&rng), 0, 0, 4) + 1;
        int rr = position[0] + TABLE(CLASSIC_DIRECTION_ROW)[random], rc = position[1] + TABLE(CLASSIC_DIRECTION_COL)[random];
        int tr, tc;
        classic_towards_player(key_split2(&rng), s, position, &tr, &tc);
        int distance = classic_player_distance(s, position);
        int too_close = distance <= 3;
        int pr = distance >= 10 ? position[0] + tr : rr;
        int pc = distance >= 10 ? position[1] + tc : rc;
        if (too_close) {
            pr = position[0] - tr;
            pc = position[1] - tc;
        }
        if (!(uniform(key_split2(&rng)) > 0.85f)) {
            pr = rr;
            pc = rc;
        }
        int attacking = (distance >= 4 && distance <= 5) || (too_close && !classic_free_cell(s, pr, pc));
        attacking = attacking && s->skeletons.attack_cooldown[k] <= 0 && s->skeletons.mask[k];
        int live_arrows = 0, free_arrow = -1;
        for (int a = 0; a < CLASSIC_MAX_ARROWS; a++) {
            live_arrows += s->arrows.mask[a];
            if (!s->arrows.mask[a] && free_arrow < 0) free_arrow = a;
        }
        if (attacking && live_arrows < CLASSIC_MAX_ARROWS) {
            s->arrows.position[free_arrow][0] = position[0];
            s->arrows.position[free_arrow][1] = position[1];
            s->arrows.mask[free_arrow] = 1;
            s->arrow_directions[free_arrow][0] = tr;
            s->arrow_directions[free_arrow][1] = tc;
        }
        if (attacking) {
            pr = position[0];
            pc = position[1];
        }
        s->skeletons.attack_cooldown[k] = attacking ? 4 : s->skeletons.attack_cooldown[k] - 1;
        if (!classic_free_cell(s, pr, pc)) {
            pr = position[0];
            pc = position[1];
        }
        classic_settle_mob(s, CLASSIC_MOBS_OF(s->skeletons, CLASSIC_MAX_SKELETONS), k, pr, pc);
    }

    for (int k = 0; k < CLASSIC_MAX_ARROWS; k++) {
        int32_t* position = s->arrows.position[k];
        int pr = position[0] + s->arrow_directions[k][0], pc = position[1] + s->arrow_directions[k][1];
        int hits_player = pr == s->player_position[0] && pc == s->player_position[1];
        uint8_t block = classic_block(s, pr, pc);
        int wall = classic_in_wall(s, pr, pc) && block != CB_WATER;
        int moving = classic_in_bounds(pr, pc) && !wall && !classic_in_mob(s, pr, pc);
        int live = s->arrows.mask[k];
        position[0] = pr;
        position[1] = pc;
        s->arrows.mask[k] = moving && live;
        if (hits_player && live) {
            s->player_health -= 2;
            s->is_sleeping = 0;
        }
        int w = classic_write_index(pr, pc);
        if (w >= 0 && live && (block == CB_FURNACE || block == CB_CRAFTING_TABLE)) (&s->map[0][0])[w] = CB_PATH;
    }
}

// A spawn's jax.random.choice over the allowed cells, p = allowed / count, made without the map's
// 4096 weights and their prefix sums, so that the step's frame stays small (on the GPU every
// resident thread reserves it). Every non-zero weight is w = 1 / count, so xla_cumsum's output
// (blocks of 16 cells added one by one, plus the exclusive prefix of the block totals, computed
// the same way over superblocks of 16 blocks) at cell i is running[k], k the allowed cells of i's
// block up to i, plus the block totals' prefix before that block; the search computes it at the
// cells it probes alone.
#define CLASSIC_SPAWN_BLOCKS (CLASSIC_MAP_CELLS / 16)
#define CLASSIC_SPAWN_SUPERBLOCKS (CLASSIC_SPAWN_BLOCKS / 16)
// searchsorted_left's halvings over CLASSIC_MAP_CELLS sums: the least l with 2^l > the cells.
#define CLASSIC_SPAWN_SEARCH_LEVELS 13
CRAFTAX_STATIC_ASSERT(CLASSIC_MAP_SIZE % 16 == 0 && CLASSIC_SPAWN_BLOCKS % 16 == 0 && CLASSIC_SPAWN_SUPERBLOCKS <= 16,
                      "map rows are whole blocks, and the superblock totals' prefix is one sequential sum");
CRAFTAX_STATIC_ASSERT((1 << CLASSIC_SPAWN_SEARCH_LEVELS) > CLASSIC_MAP_CELLS && (1 << (CLASSIC_SPAWN_SEARCH_LEVELS - 1)) <= CLASSIC_MAP_CELLS,
                      "the search halves as often as searchsorted_left does over the map's cells");

typedef struct {
    uint16_t allowed[CLASSIC_SPAWN_BLOCKS];              // bit j of allowed[b]: cell 16 * b + j is allowed
    float running[17];                                   // running[k]: w added k times, one by one
    float superblock_prefix[CLASSIC_SPAWN_SUPERBLOCKS];  // the block totals' prefix through each superblock
} ClassicSpawnSums;

CRAFTAX_FN float classic_block_total(const ClassicSpawnSums* sums, int b) {
    return sums->running[popcount32(sums->allowed[b])];
}

// The block totals' prefix through block b.
CRAFTAX_FN float classic_block_prefix(const ClassicSpawnSums* sums, int b) {
    int superblock = b / 16;
    float sum = 0.0f;
    for (int t = superblock * 16; t <= b; t++) sum += classic_block_total(sums, t);
    return superblock > 0 ? sum + sums->superblock_prefix[superblock - 1] : sum;
}

// The prefix sum at cell i.
CRAFTAX_FN float classic_spawn_prefix(const ClassicSpawnSums* sums, int i) {
    int b = i / 16;
    float within = sums->running[popcount32(sums->allowed[b] & (uint16_t)((2u << (i % 16)) - 1u))];
    return b > 0 ? within + classic_block_prefix(sums, b - 1) : within;
}

// choice_cumulative(key, prefix sums, CLASSIC_MAP_CELLS) over sums->allowed, allowed_count > 0 of
// them (searchsorted_left's comparison without its NaN cases: no sum is NaN).
CRAFTAX_FN int classic_spawn_choice(Key key, ClassicSpawnSums* sums, int allowed_count) {
    float w = 1.0f / (float)allowed_count;
    sums->running[0] = 0.0f;
    for (int k = 1; k <= 16; k++) sums->running[k] = sums->running[k - 1] + w;
    float through = 0.0f;
    for (int superblock = 0; superblock < CLASSIC_SPAWN_SUPERBLOCKS; superblock++) {
        float superblock_total = 0.0f;
        for (int j = 0; j < 16; j++) superblock_total += classic_block_total(sums, superblock * 16 + j);
        through += superblock_total;
        sums->superblock_prefix[superblock] = through;
    }
    float draw = classic_spawn_prefix(sums, CLASSIC_MAP_CELLS - 1) * (1.0f - uniform(key));
    int low = 0, high = CLASSIC_MAP_CELLS;
    for (int level = 0; level < CLASSIC_SPAWN_SEARCH_LEVELS; level++) {
        int mid = (low + high) / 2;
        if (draw <= classic_spawn_prefix(sums, mid)) {
            high = mid;
        } else {
            low = mid;
        }
    }
    return high;
}

// One kind of mob's spawn: a roll under `chance`, then a cell drawn among those of an allowed
// block (bit b of `blocks` allows block b) farther than `min_distance` from the player and
// nearer than the despawn distance, without a mob. The first free slot (or slot 0) takes it, and
// that slot's mask is written to the mob map either way, as the reference does.
CRAFTAX_FN void classic_spawn_mob(ClassicState* s, ClassicMobs mobs, Key* rng, float chance, uint32_t blocks,
                                  int min_distance, int32_t health) {
    int live = 0, slot = -1;
    for (int k = 0; k < mobs.count; k++) {
        live += mobs.mask[k];
        if (!mobs.mask[k] && slot < 0) slot = k;
    }
    if (slot < 0) slot = 0;
    float roll = uniform(key_split2(rng));
    Key cell_key = key_split2(rng);
    if (live < mobs.count && roll < chance) {
        ClassicSpawnSums sums;
        memset(sums.allowed, 0, sizeof(sums.allowed));
        int allowed_count = 0;
        // Only cells within the despawn distance of the player are allowed: rows and columns
        // nearer than it (clipped to the map, wherever the player stands).
        int pr = s->player_position[0], pc = s->player_position[1], reach = CLASSIC_DESPAWN_DISTANCE - 1;
        for (int r = iclamp(pr - reach, 0, CLASSIC_MAP_SIZE - 1); r <= iclamp(pr + reach, 0, CLASSIC_MAP_SIZE - 1); r++) {
            for (int c = iclamp(pc - reach, 0, CLASSIC_MAP_SIZE - 1); c <= iclamp(pc + reach, 0, CLASSIC_MAP_SIZE - 1); c++) {
                int d = abs(r - pr) + abs(c - pc);
                int allowed = ((blocks >> s->map[r][c]) & 1u) && d > min_distance && d < CLASSIC_DESPAWN_DISTANCE && !s->mob_map[r][c];
                int i = r * CLASSIC_MAP_SIZE + c;
                sums.allowed[i / 16] |= (uint16_t)(allowed << (i % 16));
                allowed_count += allowed;
            }
        }
        if (allowed_count > 0) {
            int cell = classic_spawn_choice(cell_key, &sums, allowed_count);
            mobs.position[slot][0] = cell / CLASSIC_MAP_SIZE;
            mobs.position[slot][1] = cell % CLASSIC_MAP_SIZE;
            mobs.health[slot] = health;
            mobs.mask[slot] = 1;
        }
    }
    int32_t* at = mobs.position[slot];
    classic_set_mob_cell(s, at[0], at[1], classic_mob_cell(s, at[0], at[1]) || mobs.mask[slot]);
}

CRAFTAX_FN void classic_spawn_mobs(Key rng, ClassicState* s) {
    classic_spawn_mob(s, CLASSIC_MOBS_OF(s->cows, CLASSIC_MAX_COWS), &rng, CLASSIC_SPAWN_COW_CHANCE, 1u << CB_GRASS, 3,
                      CLASSIC_COW_HEALTH);
    float dark = 1.0f - s->light_level;
    float zombie_chance = fmaf(CLASSIC_SPAWN_ZOMBIE_NIGHT_CHANCE, dark * dark, CLASSIC_SPAWN_ZOMBIE_BASE_CHANCE);
    classic_spawn_mob(s, CLASSIC_MOBS_OF(s->zombies, CLASSIC_MAX_ZOMBIES), &rng, zombie_chance,
                      (1u << CB_GRASS) | (1u << CB_PATH), 9, CLASSIC_ZOMBIE_HEALTH);
    classic_spawn_mob(s, CLASSIC_MOBS_OF(s->skeletons, CLASSIC_MAX_SKELETONS), &rng, CLASSIC_SPAWN_SKELETON_CHANCE,
                      1u << CB_PATH, 9, CLASSIC_SKELETON_HEALTH);
}

CRAFTAX_FN void classic_update_plants(ClassicState* s) {
    for (int k = 0; k < CLASSIC_MAX_PLANTS; k++) {
        s->growing_plants_age[k] = (s->growing_plants_age[k] + 1) * s->growing_plants_mask[k];
        if (s->growing_plants_age[k] >= 600) {
            int w = classic_write_index(s->growing_plants_positions[k][0], s->growing_plants_positions[k][1]);
            if (w >= 0) (&s->map[0][0])[w] = CB_RIPE_PLANT;
        }
    }
}

CRAFTAX_FN void classic_update_intrinsics(ClassicState* s, int action) {
    if (action == CA_SLEEP && s->player_energy < 9) s->is_sleeping = 1;
    if (s->player_energy >= 9 && s->is_sleeping) {
        s->is_sleeping = 0;
        s->achievements[CH_WAKE_UP] = 1;
    }
    int sleeping = s->is_sleeping;

    s->player_hunger += sleeping ? 0.5f : 1.0f;
    if (s->player_hunger > 25.0f) {
        s->player_food = s->player_food - 1 > 0 ? s->player_food - 1 : 0;
        s->player_hunger = 0.0f;
    }
    s->player_thirst += sleeping ? 0.5f : 1.0f;
    if (s->player_thirst > 20.0f) {
        s->player_drink = s->player_drink - 1 > 0 ? s->player_drink - 1 : 0;
        s->player_thirst = 0.0f;
    }
    float fatigue = sleeping ? fminf(s->player_fatigue - 1.0f, 0.0f) : s->player_fatigue + 1.0f;
    int32_t energy = s->player_energy;
    if (fatigue > 30.0f) {
        s->player_energy = energy - 1 > 0 ? energy - 1 : 0;
        fatigue = 0.0f;
    }
    if (fatigue < -10.0f) {
        s->player_energy = energy + 1 < 9 ? energy + 1 : 9;
        fatigue = 0.0f;
    }
    s->player_fatigue = fatigue;

    int all_needs = s->player_food > 0 && s->player_drink > 0 && (s->player_energy > 0 || sleeping);
    float recover = s->player_recover + (all_needs ? (sleeping ? 2.0f : 1.0f) : (sleeping ? -0.5f : -1.0f));
    int32_t health = s->player_health;
    if (recover > 25.0f) {
        s->player_health = health + 1 < 9 ? health + 1 : 9;
        recover = 0.0f;
    }
    if (recover < -15.0f) {
        s->player_health = health - 1;
        recover = 0.0f;
    }
    s->player_recover = recover;
}

CRAFTAX_FN void classic_cap_inventory(ClassicState* s) {
    int32_t* items = &s->inventory.wood;
    for (int i = 0; i < CLASSIC_INVENTORY_ITEMS; i++) items[i] = items[i] < 9 ? items[i] : 9;
}

CRAFTAX_FN int classic_is_game_over(const ClassicState* s) {
    return s->timestep >= CLASSIC_MAX_TIMESTEPS || s->map[s->player_position[0]][s->player_position[1]] == CB_LAVA ||
           s->player_health <= 0;
}

// craftax_step: returns the reward.
CRAFTAX_FN float classic_step(Key rng, ClassicState* s, int action) {
    int achievements_before = 0;
    for (int i = 0; i < CLASSIC_NUM_ACHIEVEMENTS; i++) achievements_before += s->achievements[i];
    int32_t health_before = s->player_health;
    if (s->is_sleeping) action = CA_NOOP;

    classic_do_crafting(s, action);
    Key do_key = key_split2(&rng);
    if (action == CA_DO) classic_do_action(do_key, s);
    classic_place_block(s, action);
    classic_move_player(s, action);
    classic_update_mobs(key_split2(&rng), s);
    classic_spawn_mobs(key_split2(&rng), s);
    classic_update_plants(s);
    classic_update_intrinsics(s, action);
    classic_cap_inventory(s);
    if (s->map[s->player_position[0]][s->player_position[1]] == CB_LAVA) s->player_health = 0;
    if (s->player_health < 0) s->player_health = 0;

    int achievements_after = 0;
    for (int i = 0; i < CLASSIC_NUM_ACHIEVEMENTS; i++) achievements_after += s->achievements[i];
    float reward = fmaf((float)(s->player_health - health_before), 0.1f, (float)achievements_after - (float)achievements_before);

    s->timestep += 1;
    s->light_level = classic_light_level(s->timestep);
    s->state_rng = key_split2(&rng);
    return reward;
}

// The auto-resetting env's step: the game's step from split(key)[0] and, when the episode ends,
// a new world from split(key)[1], generated in `scratch`. Returns whether the episode ended.
CRAFTAX_FN int classic_env_step(Key key, ClassicState* s, int action, float* reward, ClassicScratch* scratch) {
    *reward = classic_step(key_split_at(key, 0), s, action);
    int done = classic_is_game_over(s);
    if (done) classic_generate_world(key_split_at(key, 1), s, scratch);
    return done;
}
