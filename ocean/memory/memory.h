// Memory: the RNN copy task with a delay.
// An episode shows `length` random bits one per step, waits `delay` steps, then asks for the bits
// back in order, one per step. Observation: [bit shown (+1 / -1, or 0), 1 while recalling].
// Actions: 0 or 1, read only while recalling. Reward 1/length per correct recall.
// Optimal: score 1.0 (needs memory); a memoryless policy scores 0.5.
#pragma once
#include <stdio.h>

#include "rng.h"

#define MEMORY_MAX_LENGTH 64

typedef struct {
    float score;
} Log;

typedef struct {
    float* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    unsigned char* truncations;
    uint64_t rng;
    Log log;
    int length;
    int delay;
    int tick;
    int correct;
    unsigned char bits[MEMORY_MAX_LENGTH];
} Memory;

// Writes the observation for the current tick: show, wait, then recall.
static inline void memory_observe(Memory* env) {
    int t = env->tick;
    int recall_start = env->length + env->delay;
    env->observations[0] = t < env->length ? (env->bits[t] ? 1.0f : -1.0f) : 0.0f;
    env->observations[1] = t >= recall_start ? 1.0f : 0.0f;
}

static inline void c_reset(Memory* env) {
    for (int i = 0; i < env->length; i++) env->bits[i] = (unsigned char)(rng_next(&env->rng) >> 63);
    env->tick = 0;
    env->correct = 0;
    memory_observe(env);
}

static inline int c_step(Memory* env) {
    int recall_start = env->length + env->delay;
    float reward = 0.0f;
    if (env->tick >= recall_start) {
        int hit = env->actions[0] == env->bits[env->tick - recall_start];
        env->correct += hit;
        reward = hit ? 1.0f / (float)env->length : 0.0f;
    }
    env->tick++;
    env->rewards[0] = reward;
    env->truncations[0] = 0;
    if (env->tick < recall_start + env->length) {
        env->terminals[0] = 0;
        memory_observe(env);
        return 0;
    }
    env->terminals[0] = 1;
    env->log.score += (float)env->correct / (float)env->length;
    return 1;
}

static int c_render(Memory* env, char* buf, int capacity) {
    int n = snprintf(buf, capacity, "bits: ");
    for (int i = 0; i < env->length; i++) n += snprintf(buf + n, capacity - n, "%d", env->bits[i]);
    int recall_start = env->length + env->delay;
    const char* phase = env->tick < env->length ? "showing" : env->tick < recall_start ? "waiting" : "recalling";
    n += snprintf(buf + n, capacity - n, "  tick %d \033[96m%s\033[0m, %d correct\n", env->tick, phase, env->correct);
    return n;
}
