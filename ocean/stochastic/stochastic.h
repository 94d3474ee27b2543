// Stochastic: learn to play action 0 with probability p, without any information to condition on.
// Observation: always 0. Actions: 0 or 1. After `horizon` steps the episode ends with reward
// 1 - |f - p|, where f is the fraction of steps that played action 0. A deterministic memoryless
// policy can only reach f = 0 or f = 1; sampling with probability p gets close to 1.
// Do not give the agent memory: a recurrent policy can count and solve it deterministically.
#pragma once
#include <math.h>
#include <stdio.h>

#include "rng.h"

typedef struct {
    float score;
    float action0_fraction;
} Log;

typedef struct {
    float* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    unsigned char* truncations;
    uint64_t rng;
    Log log;
    float p;
    int horizon;
    int tick;
    int zeros;
} Stochastic;

static inline void c_reset(Stochastic* env) {
    env->observations[0] = 0.0f;
    env->tick = 0;
    env->zeros = 0;
}

static inline int c_step(Stochastic* env) {
    env->zeros += env->actions[0] == 0;
    env->tick++;
    env->truncations[0] = 0;
    if (env->tick < env->horizon) {
        env->rewards[0] = 0.0f;
        env->terminals[0] = 0;
        return 0;
    }
    float fraction = (float)env->zeros / (float)env->horizon;
    float reward = 1.0f - fabsf(fraction - env->p);
    env->rewards[0] = reward;
    env->terminals[0] = 1;
    env->log.score += reward;
    env->log.action0_fraction += fraction;
    return 1;
}

static int c_render(Stochastic* env, char* buf, int capacity) {
    float fraction = env->tick ? (float)env->zeros / (float)env->tick : 0.0f;
    return snprintf(buf, capacity, "step %d/%d: action 0 played \033[96m%.3f\033[0m of the time (target %.3f)\n",
                    env->tick, env->horizon, fraction, env->p);
}
