// The shared C vecenv: steps many copies of one Ocean game per call, writing straight into the
// buffers Python owns.
//
// Include it after the game header. The game defines its struct (named Env through a #define in
// the binding) with these fields, pointed by vec_bind at the env's slice of the shared buffers:
//     observations, actions, rewards, terminals, truncations, rng (uint64_t), log (Log)
// and these functions:
//     void c_reset(Env*)   start an episode: write observations only
//     int  c_step(Env*)    apply actions; write rewards, terminals, truncations for every agent;
//                          return 1 when the episode ended
//     int  c_render(Env*, char* buf, int capacity)   ANSI text of the env, returns its length
// Log is a struct of floats that the game adds to when an episode ends (score, custom fields).
// Optionally, for work that is faster done for several envs at once, a game defines
//     #define VEC_PREPARE_BATCH n   and   void c_prepare(Env* envs, int count)
// and each run of up to n consecutive envs is prepared just before those envs step (Craftax
// draws their steps' random numbers side by side in SIMD lanes).
//
// Checkpoints save each env's struct byte for byte (vec_save_state), so a game keeps its whole
// state in its struct; one that keeps state behind other pointers (Craftax's 148 KB worlds)
// defines VEC_NO_SAVE and is resumed with fresh episodes instead.
//
// Autoreset: when c_step reports the end of an episode, the env is reset within the same call.
// The rewards, terminals and truncations of that step are kept, and the observations are already
// the first ones of the next episode.
#pragma once
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

#ifndef VEC_PREPARE_BATCH
#define VEC_PREPARE_BATCH 1
static inline void c_prepare(Env* envs, int count) {
    (void)envs;
    (void)count;
}
#endif

_Static_assert(sizeof(Log) % sizeof(float) == 0, "Log must hold floats only");
#define LOG_FIELDS ((int)(sizeof(Log) / sizeof(float)))

// An env's episode statistics. The running length is not counted per env: an episode's length is
// the vecenv's step count now less the count when the episode began (the same figure as a float
// counter, exact up to 2^24 steps), so a step writes here only when a reward is not zero.
typedef struct {
    float running_return;
    float return_sum;
    float length_sum;
    float episodes;
    int64_t start_step;
} Episode;

typedef struct {
    Env* envs;
    Episode* episodes;
    int64_t steps;  // vec_step calls since vec_reset
    int num_envs;
    int agents_per_env;
    int action_dims;
    int num_threads;
    // NULL, or num_envs renders of final_frame_capacity bytes: each env's last frame before an
    // autoreset replaced it (what a viewer shows as the end of an episode)
    char* final_frames;
    int final_frame_capacity;
} VecEnv;

static VecEnv* vec_create(int num_envs, int agents_per_env, int num_threads) {
    VecEnv* vec = (VecEnv*)calloc(1, sizeof(VecEnv));
    vec->envs = (Env*)calloc(num_envs, sizeof(Env));
    vec->episodes = (Episode*)calloc(num_envs, sizeof(Episode));
    vec->num_envs = num_envs;
    vec->agents_per_env = agents_per_env;
    vec->num_threads = num_threads;
    return vec;
}

static void vec_destroy(VecEnv* vec) {
    free(vec->final_frames);
    free(vec->envs);
    free(vec->episodes);
    free(vec);
}

// obs_bytes: bytes of one agent's observation; action_dims: ints of one agent's action.
static void vec_bind(VecEnv* vec, char* observations, long obs_bytes, int* actions, int action_dims,
                     float* rewards, unsigned char* terminals, unsigned char* truncations) {
    int agents = vec->agents_per_env;
    vec->action_dims = action_dims;
    for (int i = 0; i < vec->num_envs; i++) {
        Env* env = &vec->envs[i];
        long first = (long)i * agents;
        env->observations = (void*)(observations + first * obs_bytes);
        env->actions = actions + first * action_dims;
        env->rewards = rewards + first;
        env->terminals = terminals + first;
        env->truncations = truncations + first;
    }
}

// Env i is seeded with seed + i.
static void vec_reset(VecEnv* vec, uint64_t seed) {
    vec->steps = 0;
    for (int i = 0; i < vec->num_envs; i++) {
        Env* env = &vec->envs[i];
        env->rng = seed + (uint64_t)i;
        memset(&env->log, 0, sizeof(Log));
        memset(&vec->episodes[i], 0, sizeof(Episode));
        for (int a = 0; a < vec->agents_per_env; a++) {
            env->rewards[a] = 0.0f;
            env->terminals[a] = 0;
            env->truncations[a] = 0;
        }
        c_reset(env);
    }
}

// Index of the first action outside [0, nvec[dim]), or -1 when all are valid. The common case
// (all valid) is one branch-free pass that the compiler vectorizes; the index is looked for only
// when that pass finds a bad action.
static long vec_find_bad_action(VecEnv* vec, const int* nvec) {
    const int* actions = vec->envs[0].actions;
    int dims = vec->action_dims;
    long count = (long)vec->num_envs * vec->agents_per_env * dims;
    if (dims == 1) {
        unsigned int bound = (unsigned int)nvec[0];
        unsigned int bad = 0;
        for (long k = 0; k < count; k++) bad |= (unsigned int)actions[k] >= bound;
        if (!bad) return -1;
        for (long k = 0; k < count; k++) {
            if ((unsigned int)actions[k] >= bound) return k;
        }
        return -1;
    }
    for (long k = 0; k < count; k++) {
        if ((unsigned int)actions[k] >= (unsigned int)nvec[k % dims]) return k;
    }
    return -1;
}

// The mean of one env's agents' rewards; a single agent's reward as it is (the same float as
// dividing it by 1, without the loop and the division).
static inline float vec_mean_reward(const float* rewards, int agents) {
    if (agents == 1) return rewards[0];
    float sum = 0.0f;
    for (int a = 0; a < agents; a++) sum += rewards[a];
    return sum / (float)agents;
}

// Steps env i and adds to its episode's sums; an ended episode is reset at once. `step` is the
// number of this vec_step call (vec->steps + 1). Adding a zero reward would leave the return as it
// is (it is never -0), so that store is skipped.
static inline int vec_step_env(VecEnv* vec, Env* env, Episode* episode, int i, int agents, int64_t step) {
    int done = c_step(env);
    float reward = vec_mean_reward(env->rewards, agents);
    if (reward != 0.0f) episode->running_return += reward;
    if (done) {
        episode->return_sum += episode->running_return;
        episode->length_sum += (float)(step - episode->start_step);
        episode->episodes += 1.0f;
        episode->running_return = 0.0f;
        episode->start_step = step;
        if (vec->final_frames) {
            c_render(env, vec->final_frames + (long)i * vec->final_frame_capacity, vec->final_frame_capacity);
        }
        c_reset(env);
    }
    return done;
}

// Steps envs [first, last). The pointers and `agents` are read once here: the games' byte stores
// could alias vec's fields, which the compiler would otherwise read again for every env.
static inline int vec_step_envs(VecEnv* vec, int first, int last, int agents) {
    Env* env = vec->envs + first;
    Episode* episode = vec->episodes + first;
    int64_t step = vec->steps + 1;
    int finished = 0;
    for (int i = first; i < last; i++, env++, episode++) finished += vec_step_env(vec, env, episode, i, agents, step);
    return finished;
}

// Keeps each env's final frame from now on (capacity bytes each, text NUL-terminated).
static void vec_keep_final_frames(VecEnv* vec, int capacity) {
    if (vec->final_frames) return;
    vec->final_frames = (char*)calloc((size_t)vec->num_envs, (size_t)capacity);
    vec->final_frame_capacity = capacity;
}

static char* vec_final_frame(VecEnv* vec, int index) {
    return vec->final_frames + (long)index * vec->final_frame_capacity;
}

// Prepares and steps envs [first, last), a batch of VEC_PREPARE_BATCH at a time; returns how many
// episodes ended.
static inline int vec_step_range(VecEnv* vec, int first, int last) {
    int agents = vec->agents_per_env;
#if VEC_PREPARE_BATCH == 1
    // A copy of the loop for single-agent games, with the reward's mean folded away.
    return agents == 1 ? vec_step_envs(vec, first, last, 1) : vec_step_envs(vec, first, last, agents);
#else
    int finished = 0;
    for (int start = first; start < last; start += VEC_PREPARE_BATCH) {
        int end = last - start < VEC_PREPARE_BATCH ? last : start + VEC_PREPARE_BATCH;
        c_prepare(&vec->envs[start], end - start);
        finished += vec_step_envs(vec, start, end, agents);
    }
    return finished;
#endif
}

// Chunks per thread when several share the envs: enough that a thread whose envs step slower
// (resets, crowded boards) leaves its share's tail to the others, few enough that handing chunks
// out costs nothing next to stepping them.
#define VEC_CHUNKS_PER_THREAD 8

// Steps every env once; returns how many episodes ended.
static int vec_step(VecEnv* vec) {
    int n = vec->num_envs;
    int finished = 0;
    if (vec->num_threads <= 1) {
        finished = vec_step_range(vec, 0, n);
        vec->steps++;
        return finished;
    }
    int batches = (n + VEC_PREPARE_BATCH - 1) / VEC_PREPARE_BATCH;
    int chunks = vec->num_threads * VEC_CHUNKS_PER_THREAD;
    int per_chunk = ((batches + chunks - 1) / chunks) * VEC_PREPARE_BATCH;
    chunks = (n + per_chunk - 1) / per_chunk;
    #pragma omp parallel for schedule(dynamic) num_threads(vec->num_threads) reduction(+ : finished)
    for (int c = 0; c < chunks; c++) {
        int last = (c + 1) * per_chunk < n ? (c + 1) * per_chunk : n;
        finished += vec_step_range(vec, c * per_chunk, last);
    }
    vec->steps++;
    return finished;
}

// Sums the episode statistics of every env since the last call into the outputs and clears them.
// Returns the number of episodes summed; the game's Log fields come back as sums too.
static float vec_log(VecEnv* vec, Log* out, float* return_sum, float* length_sum) {
    float episodes = 0.0f;
    float* totals = (float*)out;
    memset(out, 0, sizeof(Log));
    *return_sum = 0.0f;
    *length_sum = 0.0f;
    for (int i = 0; i < vec->num_envs; i++) {
        Episode* episode = &vec->episodes[i];
        float* fields = (float*)&vec->envs[i].log;
        for (int f = 0; f < LOG_FIELDS; f++) totals[f] += fields[f];
        memset(&vec->envs[i].log, 0, sizeof(Log));
        *return_sum += episode->return_sum;
        *length_sum += episode->length_sum;
        episodes += episode->episodes;
        episode->return_sum = 0.0f;
        episode->length_sum = 0.0f;
        episode->episodes = 0.0f;
    }
    return episodes;
}

// Bytes of the envs' saved state (their structs, episode sums and the step count), or -1 for a
// VEC_NO_SAVE game.
static long vec_state_bytes(VecEnv* vec) {
#ifdef VEC_NO_SAVE
    (void)vec;
    return -1;
#else
    return (long)vec->num_envs * (long)(sizeof(Env) + sizeof(Episode)) + (long)sizeof(vec->steps);
#endif
}

static void vec_save_state(VecEnv* vec, char* out) {
    size_t envs = (size_t)vec->num_envs * sizeof(Env), episodes = (size_t)vec->num_envs * sizeof(Episode);
    memcpy(out, vec->envs, envs);
    memcpy(out + envs, vec->episodes, episodes);
    memcpy(out + envs + episodes, &vec->steps, sizeof(vec->steps));
}

// Restores vec_save_state's bytes; every env keeps the buffers this process bound it to.
static void vec_load_state(VecEnv* vec, const char* in) {
    for (int i = 0; i < vec->num_envs; i++) {
        Env* env = &vec->envs[i];
        void* observations = env->observations;
        int* actions = env->actions;
        float* rewards = env->rewards;
        unsigned char* terminals = env->terminals;
        unsigned char* truncations = env->truncations;
        memcpy(env, in + (size_t)i * sizeof(Env), sizeof(Env));
        env->observations = observations;
        env->actions = actions;
        env->rewards = rewards;
        env->terminals = terminals;
        env->truncations = truncations;
    }
    size_t envs = (size_t)vec->num_envs * sizeof(Env), episodes = (size_t)vec->num_envs * sizeof(Episode);
    memcpy(vec->episodes, in + envs, episodes);
    memcpy(&vec->steps, in + envs + episodes, sizeof(vec->steps));
}
