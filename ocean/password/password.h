// Password: guess a fixed binary sequence one bit per step.
// Observation: one float per position: +1 guessed 1, -1 guessed 0, 0 not guessed yet.
// Actions: 0 or 1, the guess for the next position. After `length` guesses the episode ends with
// reward 1 if every bit matched, else 0. The password is the same for every env (the task), so
// one lucky episode is all an agent has to learn from: a test of exploration.
// Optimal: score 1.0; a uniform random policy scores 2^-length.
#pragma once
#include <stdio.h>
#include <string.h>

#include "rng.h"

#define PASSWORD_MAX_LENGTH 64

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
    int position;
    int correct;
    unsigned char password[PASSWORD_MAX_LENGTH];
} Password;

static inline void c_reset(Password* env) {
    memset(env->observations, 0, sizeof(float) * env->length);
    env->position = 0;
    env->correct = 0;
}

static inline int c_step(Password* env) {
    int guess = env->actions[0];
    env->observations[env->position] = guess ? 1.0f : -1.0f;
    env->correct += guess == env->password[env->position];
    env->position++;
    env->truncations[0] = 0;
    if (env->position < env->length) {
        env->rewards[0] = 0.0f;
        env->terminals[0] = 0;
        return 0;
    }
    float solved = env->correct == env->length ? 1.0f : 0.0f;
    env->rewards[0] = solved;
    env->terminals[0] = 1;
    env->log.score += solved;
    return 1;
}

static int c_render(Password* env, char* buf, int capacity) {
    int n = snprintf(buf, capacity, "guess: ");
    for (int i = 0; i < env->length; i++) {
        float v = env->observations[i];
        n += snprintf(buf + n, capacity - n, "%s", v > 0 ? "\033[92m1\033[0m" : v < 0 ? "\033[91m0\033[0m" : "\033[90m_\033[0m");
    }
    n += snprintf(buf + n, capacity - n, "\n");
    return n;
}
