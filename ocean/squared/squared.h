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

// Without branches on the outcome (whether a random walk reaches the target is unpredictable), and
// with the env's fields read before the byte stores, which the compiler must assume alias them.
static inline int c_step(Squared* env) {
    int size = env->size;
    int last = size - 1;
    int action = env->actions[0];
    int row = env->row, col = env->col;
    int tick = env->tick + 1;
    int target_row = env->target_row, target_col = env->target_col;
    unsigned char* grid = env->observations;
    grid[row * size + col] = 0;
    row = clamp_index(row + SQUARED_DROW[action], last);
    col = clamp_index(col + SQUARED_DCOL[action], last);
    grid[row * size + col] = 1;
    int reached = (row == target_row) & (col == target_col);
    // The step limit is part of the task (reach the target in time), so running out of steps is
    // the episode's failing end, not a truncation to bootstrap past.
    int done = reached | (tick >= 2 * size);
    env->row = row;
    env->col = col;
    env->tick = tick;
    env->log.score += (float)reached;
    env->rewards[0] = (float)reached;
    env->terminals[0] = (unsigned char)done;
    env->truncations[0] = 0;
    return done;
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
