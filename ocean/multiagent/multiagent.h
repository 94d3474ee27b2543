// Multiagent: two agents per env, each seeing a one-hot of its own id. Agent 0 is rewarded for
// action 0 and agent 1 for action 1, so a policy that mixes up agent order or ignores the id
// scores 0.5. One-step episodes.
// Optimal: score 1.0 (every agent picks its own id).
#pragma once
#include <stdio.h>

#include "rng.h"

#define MULTIAGENT_AGENTS 2

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
    int last_actions[MULTIAGENT_AGENTS];
} Multiagent;

static inline void c_reset(Multiagent* env) {
    for (int a = 0; a < MULTIAGENT_AGENTS; a++) {
        for (int k = 0; k < MULTIAGENT_AGENTS; k++) env->observations[a * MULTIAGENT_AGENTS + k] = a == k ? 1.0f : 0.0f;
    }
}

static inline int c_step(Multiagent* env) {
    float correct = 0.0f;
    for (int a = 0; a < MULTIAGENT_AGENTS; a++) {
        int hit = env->actions[a] == a;
        env->last_actions[a] = env->actions[a];
        env->rewards[a] = hit ? 1.0f : 0.0f;
        env->terminals[a] = 1;
        env->truncations[a] = 0;
        correct += (float)hit;
    }
    env->log.score += correct / MULTIAGENT_AGENTS;
    return 1;
}

static int c_render(Multiagent* env, char* buf, int capacity) {
    int n = 0;
    for (int a = 0; a < MULTIAGENT_AGENTS; a++) {
        const char* color = env->last_actions[a] == a ? "\033[92m" : "\033[91m";
        n += snprintf(buf + n, capacity - n, "agent %d -> %s%d\033[0m  ", a, color, env->last_actions[a]);
    }
    n += snprintf(buf + n, capacity - n, "\n");
    return n;
}
