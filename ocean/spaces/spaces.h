// Spaces: a structured observation and a structured action, to test flattening.
// Observation: a 5x5 "image" then a 5-vector "flat", every entry +1 or -1 (30 floats).
// Actions: two binary components: [image sum > 0, flat sum > 0]. Each correct component is
// worth 0.5 (odd counts of +-1 never sum to 0). One-step episodes.
// Optimal: score 1.0; a policy that reads only one part of the observation scores 0.75.
#pragma once
#include <stdio.h>

#include "rng.h"

#define SPACES_IMAGE 25
#define SPACES_FLAT 5

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
    int image_positive;
    int flat_positive;
} Spaces;

// One 64-bit draw supplies all 30 signs.
static inline void c_reset(Spaces* env) {
    uint64_t bits = rng_next(&env->rng);
    int image_sum = 0, flat_sum = 0;
    for (int i = 0; i < SPACES_IMAGE + SPACES_FLAT; i++) {
        int v = (int)((bits >> i) & 1) * 2 - 1;
        env->observations[i] = (float)v;
        if (i < SPACES_IMAGE) image_sum += v;
        else flat_sum += v;
    }
    env->image_positive = image_sum > 0;
    env->flat_positive = flat_sum > 0;
}

static inline int c_step(Spaces* env) {
    float reward = 0.5f * (float)(env->actions[0] == env->image_positive)
                 + 0.5f * (float)(env->actions[1] == env->flat_positive);
    env->rewards[0] = reward;
    env->terminals[0] = 1;
    env->truncations[0] = 0;
    env->log.score += reward;
    return 1;
}

static int c_render(Spaces* env, char* buf, int capacity) {
    int n = 0;
    for (int r = 0; r < 5; r++) {
        for (int c = 0; c < 5; c++) n += snprintf(buf + n, capacity - n, "%s", env->observations[r * 5 + c] > 0 ? "+" : "-");
        n += snprintf(buf + n, capacity - n, "\n");
    }
    n += snprintf(buf + n, capacity - n, "flat: ");
    for (int i = 0; i < SPACES_FLAT; i++) n += snprintf(buf + n, capacity - n, "%s", env->observations[SPACES_IMAGE + i] > 0 ? "+" : "-");
    n += snprintf(buf + n, capacity - n, "  answer: [%d, %d]\n", env->image_positive, env->flat_positive);
    return n;
}
