// Bandit: a one-step multi-armed bandit. Arm `solution` pays 1, every other arm pays 0, plus
// Gaussian noise with standard deviation `reward_noise`. The observation is always 0.
// Optimal: score 1.0 (always pull the paying arm); a uniform random policy scores 1/arms.
#pragma once
#include <stdio.h>

#include "rng.h"

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
    int arms;
    int solution;
    float reward_noise;
    int last_arm;
} Bandit;

static inline void c_reset(Bandit* env) {
    env->observations[0] = 0.0f;
}

static inline int c_step(Bandit* env) {
    int arm = env->actions[0];
    float best = arm == env->solution ? 1.0f : 0.0f;
    float noise = env->reward_noise > 0.0f ? env->reward_noise * rng_normal(&env->rng) : 0.0f;
    env->last_arm = arm;
    env->rewards[0] = best + noise;
    env->terminals[0] = 1;
    env->truncations[0] = 0;
    env->log.score += best;
    return 1;
}

static int c_render(Bandit* env, char* buf, int capacity) {
    int n = 0;
    for (int a = 0; a < env->arms; a++) {
        const char* color = a == env->last_arm ? (a == env->solution ? "\033[92m" : "\033[91m") : "\033[90m";
        n += snprintf(buf + n, capacity - n, "%s[%d]\033[0m ", color, a);
    }
    n += snprintf(buf + n, capacity - n, "\n");
    return n;
}
