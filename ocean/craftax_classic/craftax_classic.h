// puffer_craftax_classic: the Ocean env around the Craftax-Classic game logic, stepped by the
// shared vecenv (ocean/vecenv.h).
//
// Keys follow the reference's usage: env seeded with `seed` starts from K = PRNGKey(seed),
// splits (rng, reset_key) = split(K) and generates its first world from reset_key; every step
// splits (rng, step_key) = split(rng) and runs the auto-resetting env's step with step_key, whose
// second half (split(step_key)[1]) generates the next episode's world. The step that ends an
// episode leaves that key to c_reset, which generates the world: the step needs none of world
// generation's scratch memory. The state lives in the env's struct, so checkpoints save it whole.
//
// Reset pools (opt-in), as the full game's (ocean/craftax/craftax.h): a reset copies one of
// `reset_pool_size` worlds generated up front (world j from split(PRNGKey(reset_pool_seed),
// reset_pool_size)[j]), picked by the world key, instead of generating one. The key chain is the
// same either way. Off for parity: pooled episodes do not match the reference's.
#pragma once
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "game_logic.h"
#include "observation.h"

// Episode statistics (sums over finished episodes; the vecenv divides by their count). The
// achievement fields, in Achievement order, give per-achievement unlock rates.
typedef struct {
    float score;  // percentage of the 22 achievements unlocked
    float died;   // 1 when the episode ended by death (health or lava), 0 when out of time
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
} Log;

CRAFTAX_STATIC_ASSERT(offsetof(Log, make_iron_sword) - offsetof(Log, collect_wood) == (CLASSIC_NUM_ACHIEVEMENTS - 1) * sizeof(float),
                      "Log holds one float per achievement, in Achievement order");

typedef struct {
    float* observations;  // CLASSIC_OBS_SIZE floats per env
    int* actions;
    float* rewards;
    unsigned char* terminals;
    unsigned char* truncations;
    uint64_t rng;  // the seed, set by the vecenv before the first reset
    Log log;
    Key key;            // the key chain the steps split from
    Key world_key;      // the next episode's world key, left by the step that ended the episode
    int has_world_key;  // c_reset generates from world_key, not from the seed
    int reset_pool_size;              // 0: every reset generates its world
    const ClassicState* reset_pool;   // shared by every env, read-only; rebound after a checkpoint's bytes
    ClassicState state;
#ifdef __CUDACC__
    // Lent by the device vecenv for the duration of each c_reset (ocean/vecenv_gpu.cuh); the host
    // env has no such field.
    ClassicScratch* reset_scratch;
#else
    // Where the state an episode ended in is copied before the autoreset replaces it (for
    // videos): NULL unless the binding's keep_final_states set it, and set again after a
    // checkpoint's bytes replace the struct.
    ClassicState* final_state;
#endif
} CraftaxClassic;

#ifdef __CUDACC__
// A device reset generates its world in scratch memory the device vecenv lends it.
#define VEC_GPU_RESET_SCRATCH ClassicScratch
#endif

// The key the next world is generated from: the one the ending step left, or, at the start of a
// run, the second half of the seed's key, whose first half starts the key chain.
CRAFTAX_FN Key classic_take_world_key(CraftaxClassic* env) {
    if (env->has_world_key) {
        env->has_world_key = 0;
        return env->world_key;
    }
    Key root = key_from_seed(env->rng);
    env->key = key_split_at(root, 0);
    return key_split_at(root, 1);
}

static ClassicScratch* classic_host_scratch(void) {
    ClassicScratch* scratch = (ClassicScratch*)malloc(sizeof(ClassicScratch));
    if (scratch == NULL) {
        fprintf(stderr, "craftax_classic: no memory for world generation's %zu bytes of scratch\n", sizeof(ClassicScratch));
        abort();
    }
    return scratch;
}

// Generates reset pool world j for j in [first, last).
static void generate_reset_pool(ClassicState* pool, int first, int last, int pool_size, uint64_t pool_seed) {
    ClassicScratch* scratch = classic_host_scratch();
    Key root = key_from_seed(pool_seed);
    for (int j = first; j < last && j < pool_size; j++) classic_generate_world(key_split_at(root, (uint32_t)j), &pool[j], scratch);
    free(scratch);
}

// The pool world a reset with this world key copies. The world key is the reference's reset key
// (Classic's reset generates its world from the key it is given), so the pick is the full game's.
CRAFTAX_FN const ClassicState* reset_pool_world(const CraftaxClassic* env, Key world_key) {
    uint32_t j = random_bits_at(world_key, 0) % (uint32_t)env->reset_pool_size;
    return &env->reset_pool[j];
}

// With CLASSIC_OBSERVATION_KERNEL (the device env) steps and resets leave the observation to a
// kernel of its own (craftax_classic_gpu.cu), which writes it after them with many threads an env.
CRAFTAX_FN void write_env_observation(CraftaxClassic* env) {
#ifndef CLASSIC_OBSERVATION_KERNEL
    classic_observe(&env->state, env->observations);
#else
    (void)env;
#endif
}

CRAFTAX_FN void generate_reset_world(CraftaxClassic* env, Key world_key) {
#ifdef __CUDA_ARCH__
    classic_generate_world(world_key, &env->state, env->reset_scratch);
#else
    ClassicScratch* scratch = classic_host_scratch();
    classic_generate_world(world_key, &env->state, scratch);
    free(scratch);
#endif
}

CRAFTAX_FN void finish_reset(CraftaxClassic* env) { write_env_observation(env); }

CRAFTAX_FN void c_reset(CraftaxClassic* env) {
    Key world_key = classic_take_world_key(env);
    if (env->reset_pool_size > 0) {
        memcpy(&env->state, reset_pool_world(env, world_key), sizeof(ClassicState));
    } else {
        generate_reset_world(env, world_key);
    }
    finish_reset(env);
}

#ifdef __CUDACC__
// Copies pool worlds on the device. Called by all 32 lanes of a warp: src is the lane's pool
// world, or NULL for a lane that has none to copy. The whole warp copies each lane's world in
// turn, its loads and stores on consecutive words, so that the one or two lanes of a warp that
// reset in a step do not copy 8.7 KB alone while the others wait. A state is not whole 16-byte
// vectors (nor are the envs' structs), so the copy moves 4-byte words, IN_FLIGHT of them per lane
// loaded before any is stored: a world is three round trips to memory, not one per word.
__device__ static void copy_states_in_warp(ClassicState* dst, const ClassicState* src) {
    enum {
        WORDS = sizeof(ClassicState) / sizeof(uint32_t),
        LANES = 32,
        IN_FLIGHT = 24,
        ROUND = IN_FLIGHT * LANES,
    };
    CRAFTAX_STATIC_ASSERT(sizeof(ClassicState) % sizeof(uint32_t) == 0, "ClassicState is whole 4-byte words");
    const unsigned warp = 0xFFFFFFFFu;
    unsigned lane = threadIdx.x % LANES;
    for (unsigned pending = __ballot_sync(warp, src != NULL); pending != 0; pending &= pending - 1u) {
        int owner = __ffs(pending) - 1;
        uint32_t* to = (uint32_t*)__shfl_sync(warp, (unsigned long long)dst, owner);
        const uint32_t* from = (const uint32_t*)__shfl_sync(warp, (unsigned long long)src, owner);
        for (unsigned first = 0; first < WORDS; first += ROUND) {
            uint32_t batch[IN_FLIGHT];
#pragma unroll
            for (int u = 0; u < IN_FLIGHT; u++) {
                unsigned k = first + u * LANES + lane;
                if (k < WORDS) batch[u] = from[k];
            }
#pragma unroll
            for (int u = 0; u < IN_FLIGHT; u++) {
                unsigned k = first + u * LANES + lane;
                if (k < WORDS) to[k] = batch[u];
            }
        }
    }
    __syncwarp(warp);
}

// c_reset made by all 32 lanes of a warp together (craftax_classic_gpu.cu's reset kernel), so that
// every lane helps copy the pool worlds of the few that reset; resetting: whether this lane's env
// does. Without a pool each resetting lane generates its own world, as c_reset does.
__device__ static void c_reset_warp(CraftaxClassic* env, int resetting) {
    Key world_key = {{0, 0}};
    const ClassicState* pool_world = NULL;
    if (resetting) {
        world_key = classic_take_world_key(env);
        if (env->reset_pool_size > 0) pool_world = reset_pool_world(env, world_key);
    }
    copy_states_in_warp(&env->state, pool_world);
    if (!resetting) return;
    if (pool_world == NULL) generate_reset_world(env, world_key);
    finish_reset(env);
}
#endif

CRAFTAX_FN void log_episode(CraftaxClassic* env, int died) {
    float unlocked = 0.0f;
    float* rates = &env->log.collect_wood;
    for (int i = 0; i < CLASSIC_NUM_ACHIEVEMENTS; i++) {
        rates[i] += (float)env->state.achievements[i];
        unlocked += (float)env->state.achievements[i];
    }
    env->log.score += 100.0f * unlocked / (float)CLASSIC_NUM_ACHIEVEMENTS;
    env->log.died += (float)died;
}

CRAFTAX_FN int c_step(CraftaxClassic* env) {
    ClassicState* s = &env->state;
    Key step_key = key_split2(&env->key);
    env->rewards[0] = classic_step(key_split_at(step_key, 0), s, env->actions[0]);
    int died = s->player_health <= 0 || s->map[s->player_position[0]][s->player_position[1]] == CB_LAVA;
    int out_of_time = s->timestep >= CLASSIC_MAX_TIMESTEPS;
    env->terminals[0] = (unsigned char)died;
    env->truncations[0] = (unsigned char)(out_of_time && !died);
    if (died || out_of_time) {
        log_episode(env, died);
#ifndef __CUDACC__
        if (env->final_state != NULL) memcpy(env->final_state, s, sizeof(ClassicState));
#endif
        env->world_key = key_split_at(step_key, 1);
        env->has_world_key = 1;
        return 1;
    }
    write_env_observation(env);
    return 0;
}

// Two characters per cell of the player's 7 x 9 view, then the inventory and intrinsics.
static int c_render(CraftaxClassic* env, char* buf, int capacity) {
    static const char* glyphs[CLASSIC_NUM_BLOCKS] = {"??", "  ", "..", "~~", "##", "TT", "==", "__", "cc", "ii",
                                                     "DD", "tb", "fu", "::", "LL", "pp", "PP"};
    static const int colours[CLASSIC_NUM_BLOCKS] = {0, 0, 32, 34, 37, 32, 33, 90, 90, 33, 96, 33, 31, 93, 91, 32, 92};
    static const char* mob_glyphs[CLASSIC_NUM_MOB_KINDS] = {"Zz", "Co", "Sk", "->"};
    static const char* player_glyphs[5] = {"@@", "<@", "@>", "^@", "@v"};
    const ClassicState* s = &env->state;
    float obs[CLASSIC_OBS_SIZE];
    classic_observe(s, obs);
    int n = 0;
#define EMIT(...) n += snprintf(buf + n, n < capacity ? capacity - n : 0, __VA_ARGS__)
    EMIT("step %d  health %d  food %d  drink %d  energy %d  light %.2f%s\n", s->timestep, s->player_health,
         s->player_food, s->player_drink, s->player_energy, s->light_level, s->is_sleeping ? "  asleep" : "");
    for (int r = 0; r < CLASSIC_VIEW_ROWS; r++) {
        for (int c = 0; c < CLASSIC_VIEW_COLS; c++) {
            const float* cell = obs + (r * CLASSIC_VIEW_COLS + c) * CLASSIC_VIEW_CHANNELS;
            if (r == CLASSIC_VIEW_ROWS / 2 && c == CLASSIC_VIEW_COLS / 2) {
                EMIT("\033[1;97m%s\033[0m", player_glyphs[s->player_direction % 5]);
                continue;
            }
            const char* mob = 0;
            for (int k = 0; k < CLASSIC_NUM_MOB_KINDS && !mob; k++) {
                if (cell[CLASSIC_NUM_BLOCKS + k] != 0.0f) mob = mob_glyphs[k];
            }
            int block = 0;
            for (int b = 0; b < CLASSIC_NUM_BLOCKS; b++) {
                if (cell[b] != 0.0f) block = b;
            }
            if (mob) {
                EMIT("\033[1;91m%s\033[0m", mob);
            } else {
                EMIT("\033[%dm%s\033[0m", colours[block], glyphs[block]);
            }
        }
        EMIT("\n");
    }
    const ClassicInventory* inv = &s->inventory;
    EMIT("wood %d stone %d coal %d iron %d diamond %d sapling %d\n", inv->wood, inv->stone, inv->coal, inv->iron,
         inv->diamond, inv->sapling);
    EMIT("pickaxes %d %d %d  swords %d %d %d\n", inv->wood_pickaxe, inv->stone_pickaxe, inv->iron_pickaxe,
         inv->wood_sword, inv->stone_sword, inv->iron_sword);
#undef EMIT
    return n < capacity ? n : capacity - 1;
}
