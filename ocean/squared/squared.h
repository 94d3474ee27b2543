// Squared: walk from the centre of a square grid to a target on its border.
// Observation: the grid as bytes (0 empty, 1 agent, 2 target). Actions: 0 stay, 1 down, 2 up,
// 3 left, 4 right (moves into the border are clamped). Reward 1 on reaching the target, which ends
// the episode; after 2 * size steps it ends (terminal) with reward 0.
// Optimal: every episode reaches the target (score 1.0), since the target is at most size - 1
// moves from the centre.
#pragma once
#include <stdio.h>
#include <string.h>

#include "rng.h"

typedef struct {
    float score;
} Log;

typedef struct {
    unsigned char* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    unsigned char* truncations;
    uint64_t rng;
    Log log;
    int size;
    int tick;
    int row, col;
    int target_row, target_col;
} Squared;

static inline void c_reset(Squared* env) {
    int size = env->size;
    memset(env->observations, 0, (size_t)size * size);
    env->tick = 0;
    env->row = env->col = size / 2;
    int edge = size - 1;
    int k = rng_below(&env->rng, 4 * edge);
    int offset = k % edge;
    switch (k / edge) {
        case 0: env->target_row = 0; env->target_col = offset; break;
        case 1: env->target_row = offset; env->target_col = edge; break;
        case 2: env->target_row = edge; env->target_col = edge - offset; break;
        default: env->target_row = edge - offset; env->target_col = 0; break;
    }
    env->observations[env->row * size + env->col] = 1;
    env->observations[env->target_row * size + env->target_col] = 2;
}

// Moves by table lookup and clamping rather than a switch: random actions would make every
// branch of a switch unpredictable.
static const int SQUARED_DROW[5] = {0, 1, -1, 0, 0};
static const int SQUARED_DCOL[5] = {0, 0, 0, -1, 1};

static inline int clamp_index(int value, int last) {
    value = value < 0 ? 0 : value;
    return value > last ? last : value;
}

static inline int c_step(Squared* env) {
    int size = env->size;
    int action = env->actions[0];
    env->observations[env->row * size + env->col] = 0;
    env->row = clamp_index(env->row + SQUARED_DROW[action], size - 1);
    env->col = clamp_index(env->col + SQUARED_DCOL[action], size - 1);
    env->observations[env->row * size + env->col] = 1;
    env->tick++;
    env->truncations[0] = 0;
    if (env->row == env->target_row && env->col == env->target_col) {
        env->rewards[0] = 1.0f;
        env->terminals[0] = 1;
        env->log.score += 1.0f;
        return 1;
    }
    env->rewards[0] = 0.0f;
    // The step limit is part of the task (reach the target in time), so running out of steps is
    // the episode's failing end, not a truncation to bootstrap past.
    env->terminals[0] = env->tick >= 2 * size;
    return env->terminals[0];
}

static int c_render(Squared* env, char* buf, int capacity) {
    int n = 0;
    for (int r = 0; r < env->size; r++) {
        for (int c = 0; c < env->size && n < capacity - 32; c++) {
            unsigned char cell = env->observations[r * env->size + c];
            const char* glyph = cell == 1 ? "\033[96m@\033[0m" : cell == 2 ? "\033[93m*\033[0m" : "\033[90m.\033[0m";
            n += snprintf(buf + n, capacity - n, "%s", glyph);
        }
        n += snprintf(buf + n, capacity - n, "\n");
    }
    return n;
}
