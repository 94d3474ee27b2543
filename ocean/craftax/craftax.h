// puffer_craftax / puffer_craftax_compact: the Ocean env around the Craftax game logic, stepped
// by the shared vecenv (ocean/vecenv.h).
//
// Keys follow the reference's usage: env seeded with `seed` starts from K = PRNGKey(seed),
// splits (rng, reset_key) = split(K) and resets with reset_key; every step splits
// (rng, step_key) = split(rng) and runs the auto-resetting env's step with step_key, whose second
// half (split(step_key)[1]) is the key of the next episode's reset. scripts/craftax_parity.py runs
// the JAX reference with exactly this flow.
//
// Reset pools (opt-in): reset copies one of `reset_pool_size` worlds generated up front (world j
// from split(PRNGKey(reset_pool_seed), reset_pool_size)[j]), picked by the reset key, instead of
// generating a new world (5.5 ms). Off for parity: pooled episodes do not match the reference's.
#pragma once
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(__SSE2__) && !defined(__CUDACC__)
#include <emmintrin.h>
#endif

#include "observation.h"
#include "step.h"

// Episode statistics (sums over finished episodes; the vecenv divides by their count). The
// achievement fields, in Achievement order, give per-achievement unlock rates.
typedef struct {
    float score;          // percentage of the 226 achievement reward points unlocked
    float deepest_floor;  // deepest floor reached (0 surface .. 8 graveyard)
    float died;           // 1 when the episode ended by death
    float collect_wood;
    float place_table;
    float eat_cow;
    float collect_sapling;
    float collect_drink;
    float make_wood_pickaxe;
    float make_wood_sword;
    float place_plant;
    float defeat_zombie;
    float collect_stone;
    float place_stone;
    float eat_plant;
    float defeat_skeleton;
    float make_stone_pickaxe;
    float make_stone_sword;
    float wake_up;
    float place_furnace;
    float collect_coal;
    float collect_iron;
    float collect_diamond;
    float make_iron_pickaxe;
    float make_iron_sword;
    float make_arrow;
    float make_torch;
    float place_torch;
    float make_diamond_sword;
    float make_iron_armour;
    float make_diamond_armour;
    float enter_gnomish_mines;
    float enter_dungeon;
    float enter_sewers;
    float enter_vault;
    float enter_troll_mines;
    float enter_fire_realm;
    float enter_ice_realm;
    float enter_graveyard;
    float defeat_gnome_warrior;
    float defeat_gnome_archer;
    float defeat_orc_solider;
    float defeat_orc_mage;
    float defeat_lizard;
    float defeat_kobold;
    float defeat_troll;
    float defeat_deep_thing;
    float defeat_pigman;
    float defeat_fire_elemental;
    float defeat_frost_troll;
    float defeat_ice_elemental;
    float damage_necromancer;
    float defeat_necromancer;
    float eat_bat;
    float eat_snail;
    float find_bow;
    float fire_bow;
    float collect_sapphire;
    float learn_fireball;
    float cast_fireball;
    float learn_iceball;
    float cast_iceball;
    float collect_ruby;
    float make_diamond_pickaxe;
    float open_chest;
    float drink_potion;
    float enchant_sword;
    float enchant_armour;
    float defeat_knight;
    float defeat_archer;
} Log;

CRAFTAX_STATIC_ASSERT(offsetof(Log, enchant_armour) - offsetof(Log, collect_wood) == 64 * sizeof(float) &&
                          offsetof(Log, defeat_archer) - offsetof(Log, collect_wood) == 66 * sizeof(float),
                      "Log holds one float per achievement, in Achievement order");

// What c_prepare works out for an env's next step from its key chain alone.
typedef struct {
    StepDraws draws;  // the step's random numbers
    Key next_key;     // the key chain after the step
    Key reset_key;    // the step's reset key, used if it ends the episode
} PreparedStep;

typedef struct {
    void* observations;  // float[OBS_SIZE] or, compact, uint8[COMPACT_OBS_BYTES] per env
    int* actions;
    float* rewards;
    unsigned char* terminals;
    unsigned char* truncations;
    uint64_t rng;  // the seed, set by the vecenv before the first reset
    Log log;
    int compact;
    int reset_pool_size;
    const GameState* reset_pool;  // shared by every env, read-only
    GameState* state;
    Key key;  // the env's key chain
    PreparedStep prepared;  // written by c_prepare alone (device_kernels.cuh's prepare kernel stores it)
    int has_reset_key;   // the step that ended the episode left prepared.reset_key for c_reset
    int deepest_floor;
    int played_action;  // the action the last step played (noop while sleeping or resting), -1 before one
    int observation_in_step;  // CRAFTAX_OBSERVATION_KERNEL: tenth()'s in_step for c_observe
    WorldgenScratch* reset_scratch;  // device resets only: lent by the device vecenv for c_reset
    // Device pool resets: the pool world whose light maps stand for the state's until the env
    // places a torch (NULL: the state holds its own).
    const GameState* light_maps_from;
#ifndef __CUDACC__
    // NULL, or where c_step copies the state an episode ended in before the autoreset replaces it:
    // a viewer's last pixel frame of the episode. Host envs only, so that the device env's layout
    // (and its kernels) stay as they are.
    GameState* final_state;
#endif
} Craftax;

// A device reset that generates a world needs scratch memory (ocean/vecenv_gpu.cuh).
#define VEC_GPU_RESET_SCRATCH WorldgenScratch

// Generates reset pool world j for j in [first, last).
static void generate_reset_pool(GameState* pool, int first, int last, int pool_size, uint64_t pool_seed) {
    WorldgenScratch* scratch = (WorldgenScratch*)malloc(sizeof(WorldgenScratch));
    Key root = key_from_seed(pool_seed);
    for (int j = first; j < last && j < pool_size; j++) generate_world(key_split_at(root, (uint32_t)j), &pool[j], scratch);
    free(scratch);
}

#ifdef __CUDACC__
// Copies reset pool worlds on the device but for their light maps, which the env borrows from
// the pool world until it places a torch (c_step): they are 83 KB of a world's 148 KB, and the
// one thing that writes them is a torch. Called by all 32 lanes of a warp: src is the lane's
// world, or NULL for a lane that has none to copy. The whole warp copies each lane's world in
// turn, so that its loads and stores cover consecutive 16-byte vectors: otherwise the one or two
// lanes of a warp that reset in a step would copy the world alone, holding up the whole reset
// kernel. A copy is a chain of round trips to memory, one per batch of loads in flight; 32 per lane
// (512 bytes) make a world's 68 KB about five of them. So every world the warp will copy is first
// asked of the L2 cache whole, all at once, and the round trips of the copies end at the L2.
__device__ static void copy_game_states_but_light_maps_in_warp(GameState* dst, const GameState* src) {
    enum {
        LIGHT_FIRST = offsetof(GameState, light_map) / sizeof(uint4),
        LIGHT_VECTORS = sizeof(((GameState*)0)->light_map) / sizeof(uint4),
        COPIED = sizeof(GameState) / sizeof(uint4) - LIGHT_VECTORS,
        IN_FLIGHT = 32,
        LANES = 32,
        LINE = 128,
    };
    CRAFTAX_STATIC_ASSERT(sizeof(GameState) % sizeof(uint4) == 0 && offsetof(GameState, light_map) % LINE == 0 &&
                              sizeof(((GameState*)0)->light_map) % LINE == 0,
                          "GameState is whole 16-byte vectors, its light maps whole cache lines");
    const unsigned warp = 0xFFFFFFFFu;
    unsigned lane = threadIdx.x % LANES;
    unsigned copying = __ballot_sync(warp, src != NULL);
    for (unsigned pending = copying; pending != 0; pending &= pending - 1u) {
        const char* from = (const char*)__shfl_sync(warp, (unsigned long long)src, __ffs(pending) - 1);
        for (unsigned line = lane; line < COPIED * sizeof(uint4) / LINE; line += LANES) {
            unsigned vector = line * (LINE / sizeof(uint4));
            vector += vector >= LIGHT_FIRST ? LIGHT_VECTORS : 0;
            asm volatile("prefetch.global.L2 [%0];" ::"l"(from + vector * sizeof(uint4)));
        }
    }
    // The copied vectors numbered 0 .. COPIED - 1, those past the light maps' first moved past them.
#define COPIED_VECTOR(k) ((k) + ((k) >= LIGHT_FIRST ? LIGHT_VECTORS : 0))
    for (unsigned pending = copying; pending != 0; pending &= pending - 1u) {
        int owner = __ffs(pending) - 1;
        uint4* to = (uint4*)__shfl_sync(warp, (unsigned long long)dst, owner);
        const uint4* from = (const uint4*)__shfl_sync(warp, (unsigned long long)src, owner);
        unsigned k = lane;
        for (; k + (IN_FLIGHT - 1) * LANES < COPIED; k += IN_FLIGHT * LANES) {
            uint4 batch[IN_FLIGHT];
#pragma unroll
            for (int u = 0; u < IN_FLIGHT; u++) batch[u] = from[COPIED_VECTOR(k + u * LANES)];
#pragma unroll
            for (int u = 0; u < IN_FLIGHT; u++) to[COPIED_VECTOR(k + u * LANES)] = batch[u];
        }
        for (; k < COPIED; k += LANES) to[COPIED_VECTOR(k)] = from[COPIED_VECTOR(k)];
    }
#undef COPIED_VECTOR
    __syncwarp(warp);
}
#endif

// A full observation is 33 KB, mostly zeros, and a thousand envs' observations do not fit in
// the caches: written in place, each line is read from memory before it is written (a write
// miss). It is assembled in a per-thread buffer that stays in the cache instead, then streamed
// out with non-temporal stores, which skip that read.
CRAFTAX_FN void write_full_observation(const GameState* s, float* out, int in_step) {
#if defined(__SSE2__) && !defined(__CUDACC__)
    static _Thread_local float staging[OBS_SIZE] __attribute__((aligned(64)));
    if (((uintptr_t)out & 15) == 0) {
        write_observation(s, staging, in_step);
        for (int i = 0; i < OBS_SIZE; i += 4) _mm_stream_ps(out + i, _mm_load_ps(staging + i));
        _mm_sfence();
        return;
    }
#endif
    write_observation(s, out, in_step);
}

// With CRAFTAX_OBSERVATION_KERNEL (the device env) steps and resets leave the observation to
// c_observe: a kernel of its own (device_kernels.cuh) writes it after them, a thread per view row,
// which has the parallelism that one thread per env lacks.
CRAFTAX_FN void write_env_observation(Craftax* env, int in_step) {
#ifdef CRAFTAX_OBSERVATION_KERNEL
    env->observation_in_step = in_step;
#else
    if (env->compact) {
        write_compact_observation(env->state, (uint8_t*)env->observations, in_step);
    } else {
        write_full_observation(env->state, (float*)env->observations, in_step);
    }
#endif
}

#ifdef CRAFTAX_OBSERVATION_KERNEL
// Part 0 .. COMPACT_OBSERVATION_PARTS - 1 of the env's compact observation, into out.
CRAFTAX_FN void c_observe(Craftax* env, int part, uint8_t* out) {
    write_compact_observation_part(env->state, out, part, env->observation_in_step);
}
#endif

// c_reset's key: the one the ending step left, or the start of the key chain from the seed.
CRAFTAX_FN Key start_reset(Craftax* env) {
    env->played_action = -1;
    if (env->has_reset_key) {
        env->has_reset_key = 0;
        return env->prepared.reset_key;
    }
    Key root = key_from_seed(env->rng);
    env->key = key_split_at(root, 0);
    return key_split_at(root, 1);
}

CRAFTAX_FN const GameState* reset_pool_world(const Craftax* env, Key reset_key) {
    uint32_t j = random_bits_at(reset_key, 0) % (uint32_t)env->reset_pool_size;
    return &env->reset_pool[j];
}

CRAFTAX_FN void generate_reset_world(Craftax* env, Key reset_key) {
    // reset(reset_key) generates its world from split(reset_key)[1].
#ifdef __CUDA_ARCH__
    generate_world(key_split_at(reset_key, 1), env->state, env->reset_scratch);
#else
    WorldgenScratch* scratch = (WorldgenScratch*)malloc(sizeof(WorldgenScratch));
    generate_world(key_split_at(reset_key, 1), env->state, scratch);
    free(scratch);
#endif
}

CRAFTAX_FN void finish_reset(Craftax* env) {
    env->deepest_floor = 0;
    write_env_observation(env, 0);
}

CRAFTAX_FN void c_reset(Craftax* env) {
    Key reset_key = start_reset(env);
    env->light_maps_from = NULL;
    if (env->reset_pool_size > 0) {
        memcpy(env->state, reset_pool_world(env, reset_key), sizeof(GameState));
    } else {
        generate_reset_world(env, reset_key);
    }
    finish_reset(env);
}

#ifdef __CUDACC__
// c_reset made by all 32 lanes of a warp together (device_kernels.cuh's reset kernel), so that
// every lane helps copy the pool worlds of the few that reset; resetting: whether this lane's env does.
__device__ static void c_reset_warp(Craftax* env, int resetting) {
    Key reset_key = {{0, 0}};
    const GameState* pool_world = NULL;
    if (resetting) {
        reset_key = start_reset(env);
        if (env->reset_pool_size > 0) pool_world = reset_pool_world(env, reset_key);
    }
    copy_game_states_but_light_maps_in_warp(env->state, pool_world);
    if (!resetting) return;
    env->light_maps_from = pool_world;
    if (pool_world == NULL) generate_reset_world(env, reset_key);
    finish_reset(env);
}
#endif

CRAFTAX_FN void log_episode(Craftax* env) {
    const GameState* s = env->state;
    int points = 0;
    float* unlocked = &env->log.collect_wood;
    for (int a = 0; a < NUM_ACHIEVEMENTS; a++) {
        points += s->achievements[a] * TABLE(ACHIEVEMENT_REWARD)[a];
        unlocked[a] += (float)s->achievements[a];
    }
    env->log.score += 100.0f * (float)points / (float)MAX_ACHIEVEMENT_REWARD;
    env->log.deepest_floor += (float)env->deepest_floor;
    env->log.died += s->player_health <= 0.0f ? 1.0f : 0.0f;
}

// An env's world lives in a separate 148 KB state: checkpoints do not save it (resumed runs start
// fresh episodes).
#define VEC_NO_SAVE

// The vecenv prepares envs in batches of KEY_LANES before stepping them: their step keys
// split side by side, one SIMD lane per env, and every draw of their steps made (draws.h).
// c_prepare writes `prepared` only, which the device's prepare kernel stores for a warp's envs together.
#define VEC_PREPARE_BATCH KEY_LANES

// Each step splits (rng, step_key) = split(rng); the auto-resetting env steps with
// split(step_key)[0] and would reset with split(step_key)[1].
CRAFTAX_FN void c_prepare(Craftax* envs, int count) {
    KeyLanes chain, step_key, next, reset, step_rng;
    for (int l = 0; l < KEY_LANES; l++) set_lane_key(&chain, l, envs[l < count ? l : 0].key);
    lanes_split_at(&chain, 1, &step_key);
    lanes_split_at(&chain, 0, &next);
    lanes_split_at(&step_key, 1, &reset);
    lanes_split_at(&step_key, 0, &step_rng);
    StepDraws draws[KEY_LANES];
    draw_step_lanes(&step_rng, draws);
    for (int l = 0; l < count; l++) {
        envs[l].prepared.draws = draws[l];
        envs[l].prepared.next_key = lane_key(&next, l);
        envs[l].prepared.reset_key = lane_key(&reset, l);
    }
}

// A torch is the one thing that writes a light map; it needs the action and a torch in hand.
CRAFTAX_FN void own_light_maps_before_a_torch(Craftax* env) {
    const GameState* s = env->state;
    if (env->light_maps_from == NULL || env->actions[0] != ACTION_PLACE_TORCH || s->inventory.torches <= 0) return;
    const uint64_t* from = (const uint64_t*)env->light_maps_from->light_map;
    uint64_t* to = (uint64_t*)env->state->light_map;
    for (size_t k = 0; k < sizeof(s->light_map) / sizeof(uint64_t); k++) to[k] = from[k];
    env->light_maps_from = NULL;
}

CRAFTAX_FN void keep_final_state(Craftax* env) {
#ifndef __CUDACC__
    if (env->final_state != NULL) memcpy(env->final_state, env->state, sizeof(GameState));
#else
    (void)env;
#endif
}

CRAFTAX_FN int c_step(Craftax* env) {
    GameState* s = env->state;
    own_light_maps_before_a_torch(env);
    env->key = env->prepared.next_key;
    // craftax_step ignores the action of a sleeping or resting player; the renderer shows what it played.
    env->played_action = s->is_sleeping || s->is_resting ? ACTION_NOOP : env->actions[0];
    env->rewards[0] = craftax_step(&env->prepared.draws, s, env->actions[0]);
    if (s->player_level > env->deepest_floor) env->deepest_floor = s->player_level;
    int died_or_won = s->player_health <= 0.0f || has_beaten_boss(s);
    int out_of_time = s->timestep >= MAX_TIMESTEPS;
    env->terminals[0] = (unsigned char)died_or_won;
    env->truncations[0] = (unsigned char)(out_of_time && !died_or_won);
    if (died_or_won || out_of_time) {
        log_episode(env);
        keep_final_state(env);
        env->has_reset_key = 1;
        return 1;
    }
    write_env_observation(env, 1);
    return 0;
}

// Text glyph and ANSI colour of each block type.
static const char* const BLOCK_GLYPHS[NUM_BLOCK_TYPES] = {
    "??", "  ", "..", "~~", "##", "TT", "WW", "__", "co", "ir", "DI", "CT", "FU", "::", "LL", "sp", "PL",
    "[]", "  ", "[]", "^^", "SA", "RU", "CH", "FO", ",,", ",,", "gr", "TT", "**", "EF", "EI", "NE", "++",
    "++", "++", "NV"};
static const int BLOCK_COLOURS[NUM_BLOCK_TYPES] = {
    37, 30, 32, 34, 37, 32, 33, 33, 90, 31, 96, 33, 31, 93, 91, 32, 92, 90, 30, 32, 37, 94, 91, 93, 36,
    31, 96, 37, 91, 96, 91, 96, 95, 37, 37, 37, 95};
static const char* const MOB_CLASS_GLYPHS[NUM_MOB_CLASSES] = {"Zm", "Cw", "Sk", "**", "->"};
static const char* const MOB_CLASS_NAMES[NUM_MOB_CLASSES] = {
    "melee mob", "passive mob", "ranged mob", "mob shot", "your shot"};

static const char* const ACTION_NAMES[NUM_ACTIONS] = {
    "noop", "left", "right", "up", "down", "do", "sleep", "place_stone", "place_table", "place_furnace",
    "place_plant", "make_wood_pickaxe", "make_stone_pickaxe", "make_iron_pickaxe", "make_wood_sword",
    "make_stone_sword", "make_iron_sword", "rest", "descend", "ascend", "make_diamond_pickaxe",
    "make_diamond_sword", "make_iron_armour", "make_diamond_armour", "shoot_arrow", "make_arrow",
    "cast_fireball", "cast_iceball", "place_torch", "drink_red", "drink_green", "drink_blue", "drink_pink",
    "drink_cyan", "drink_yellow", "read_book", "enchant_sword", "enchant_armour", "make_torch",
    "level_up_dexterity", "level_up_strength", "level_up_intelligence", "enchant_bow"};

// The 9 x 11 local view (as the observation sees it: dark cells blank) and the inventory.
static int c_render(Craftax* env, char* buf, int capacity) {
    const GameState* s = env->state;
    uint8_t view[COMPACT_OBS_BYTES];
    write_compact_observation(s, view, 1);
    int l = s->player_level;
    int n = 0;
#define EMIT(...) n += snprintf(buf + n, n < capacity ? capacity - n : 0, __VA_ARGS__)
    EMIT("floor %d  step %d  health %.1f  food %d  drink %d  energy %d  mana %d  xp %d\n", l, s->timestep,
         s->player_health, s->player_food, s->player_drink, s->player_energy, s->player_mana, s->player_xp);
    for (int r = 0; r < OBS_ROWS; r++) {
        for (int c = 0; c < OBS_COLS; c++) {
            const uint8_t* cell = view + (r * OBS_COLS + c) * COMPACT_CELL_BYTES;
            if (r == OBS_ROWS / 2 && c == OBS_COLS / 2) {
                const char* arrows[5] = {"@@", "<@", "@>", "^@", "@v"};
                EMIT("\033[1;97m%s\033[0m", arrows[s->player_direction % 5]);
                continue;
            }
            if (!cell[COMPACT_LIGHT]) {
                EMIT("  ");
                continue;
            }
            const char* mob = 0;
            for (int k = 0; k < NUM_MOB_CLASSES && !mob; k++) {
                if (cell[COMPACT_MOBS + k]) mob = MOB_CLASS_GLYPHS[k];
            }
            uint8_t item = cell[COMPACT_ITEM];
            uint8_t block = cell[COMPACT_BLOCK];
            if (mob) {
                EMIT("\033[1;91m%s\033[0m", mob);
            } else if (item == ITEM_TORCH) {
                EMIT("\033[93mi \033[0m");
            } else if (item == ITEM_LADDER_DOWN || item == ITEM_LADDER_UP || item == ITEM_LADDER_DOWN_BLOCKED) {
                EMIT("\033[1;97m%s\033[0m", item == ITEM_LADDER_UP ? "<<" : ">>");
            } else {
                EMIT("\033[%dm%s\033[0m", BLOCK_COLOURS[block], BLOCK_GLYPHS[block]);
            }
        }
        EMIT("\n");
    }
    const Inventory* inv = &s->inventory;
    EMIT("wood %d stone %d coal %d iron %d diamond %d sapphire %d ruby %d sapling %d torches %d arrows %d\n",
         inv->wood, inv->stone, inv->coal, inv->iron, inv->diamond, inv->sapphire, inv->ruby, inv->sapling,
         inv->torches, inv->arrows);
    EMIT("pickaxe %d sword %d bow %d books %d armour %d%d%d%d potions %d %d %d %d %d %d\n", inv->pickaxe,
         inv->sword, inv->bow, inv->books, inv->armour[0], inv->armour[1], inv->armour[2], inv->armour[3],
         inv->potions[0], inv->potions[1], inv->potions[2], inv->potions[3], inv->potions[4], inv->potions[5]);
    int unlocked = 0;
    for (int a = 0; a < NUM_ACHIEVEMENTS; a++) unlocked += s->achievements[a];
    int played = env->played_action;
    int chosen = env->actions[0];
    EMIT("last action %s", played < 0 ? "none yet" : ACTION_NAMES[played % NUM_ACTIONS]);
    if (played >= 0 && chosen != played && chosen >= 0 && chosen < NUM_ACTIONS) EMIT(" (chose %s)", ACTION_NAMES[chosen]);
    EMIT("  achievements %d/%d%s%s\n", unlocked, NUM_ACHIEVEMENTS, s->is_sleeping ? "  (sleeping)" : "",
         s->is_resting ? "  (resting)" : "");
    for (int k = 0; k < NUM_MOB_CLASSES; k++) EMIT("%s %s%s", MOB_CLASS_GLYPHS[k], MOB_CLASS_NAMES[k], k + 1 < NUM_MOB_CLASSES ? "  " : "\n");
#undef EMIT
    return n < capacity ? n : capacity - 1;
}
