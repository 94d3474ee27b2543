// Pong against a scripted opponent. The field is PONG_WIDTH x PONG_HEIGHT; the agent's paddle is
// on the right edge, the opponent's on the left, both PONG_PADDLE_H high. The ball moves
// PONG_BALL_SPEED per step, bounces off the top and bottom walls, and leaves a paddle at an angle
// set by where it hit (centre: straight, ends: up to 60 degrees). A ball past a paddle is a point
// to the other side; the next ball is served from the middle at a random angle and side.
// The opponent follows the ball's height at up to `opponent_speed` per step (the agent moves
// PONG_PADDLE_SPEED) once the ball comes toward it and is within `opponent_reaction` of the
// field's width; otherwise it drifts back to the middle. Slower or later, it misses steep balls.
// Observation (float32): agent paddle y, opponent paddle y, ball x, ball y (scaled to [0, 1]),
// ball velocity (scaled to [-1, 1]). Actions: 0 stay, 1 up, 2 down.
// Reward +1 per point won, -1 per point lost. The episode ends when a side reaches
// `points_to_win` (terminal) or after PONG_MAX_STEPS steps (truncated).
// Score: 1 for a won match, 0 otherwise (the win rate); points_share logs the points won / played.
#pragma once
#include <math.h>
#include <stdio.h>

#include "rng.h"

#define PONG_WIDTH 16.0f
#define PONG_HEIGHT 12.0f
#define PONG_PADDLE_H 2.0f
#define PONG_PADDLE_SPEED 0.5f
#define PONG_BALL_SPEED 0.35f
#define PONG_MAX_ANGLE 1.04719755f
#define PONG_MAX_STEPS 10000

typedef struct {
    float score;
    float points_won;
    float points_lost;
    float points_share;
} Log;

typedef struct {
    float* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    unsigned char* truncations;
    uint64_t rng;
    Log log;
    int points_to_win;
    float opponent_speed;
    float opponent_reaction;
    float agent_y, opponent_y, ball_x, ball_y, ball_vx, ball_vy;
    int agent_points, opponent_points, tick;
} Pong;

static inline void pong_write_observation(Pong* env) {
    float* obs = env->observations;
    obs[0] = env->agent_y * (1.0f / PONG_HEIGHT);
    obs[1] = env->opponent_y * (1.0f / PONG_HEIGHT);
    obs[2] = env->ball_x * (1.0f / PONG_WIDTH);
    obs[3] = env->ball_y * (1.0f / PONG_HEIGHT);
    obs[4] = env->ball_vx * (1.0f / PONG_BALL_SPEED);
    obs[5] = env->ball_vy * (1.0f / PONG_BALL_SPEED);
}

static inline void pong_serve(Pong* env) {
    env->ball_x = PONG_WIDTH * 0.5f;
    env->ball_y = PONG_HEIGHT * (0.25f + 0.5f * rng_unit(&env->rng));
    float angle = (rng_unit(&env->rng) - 0.5f) * 1.0471976f;  // within 30 degrees of horizontal
    float side = rng_below(&env->rng, 2) ? 1.0f : -1.0f;
    env->ball_vx = side * PONG_BALL_SPEED * cosf(angle);
    env->ball_vy = PONG_BALL_SPEED * sinf(angle);
}

static inline void c_reset(Pong* env) {
    env->agent_y = env->opponent_y = PONG_HEIGHT * 0.5f;
    env->agent_points = env->opponent_points = 0;
    env->tick = 0;
    pong_serve(env);
    pong_write_observation(env);
}

// Comparisons rather than fminf/fmaxf: without -ffast-math those are library calls (for their NaN
// rules), several per step; these compile to minss/maxss.
static inline float pong_clamp(float value, float low, float high) {
    value = value < low ? low : value;
    return value > high ? high : value;
}

static inline float pong_clamp_paddle(float y) {
    const float half = PONG_PADDLE_H * 0.5f;
    return pong_clamp(y, half, PONG_HEIGHT - half);
}

// The ball reached a paddle's line at height y: returns 1 and sends it back toward `direction`
// if the paddle at paddle_y covers it.
static inline int pong_return(Pong* env, float paddle_y, float direction) {
    float offset = (env->ball_y - paddle_y) * (2.0f / PONG_PADDLE_H);
    if (offset < -1.0f || offset > 1.0f) return 0;
    float angle = offset * PONG_MAX_ANGLE;
    env->ball_vx = direction * PONG_BALL_SPEED * cosf(angle);
    env->ball_vy = PONG_BALL_SPEED * sinf(angle);
    return 1;
}

static inline int pong_point(Pong* env, int agent_scored) {
    env->rewards[0] = agent_scored ? 1.0f : -1.0f;
    env->agent_points += agent_scored;
    env->opponent_points += !agent_scored;
    if (env->agent_points < env->points_to_win && env->opponent_points < env->points_to_win) {
        pong_serve(env);
        return 0;
    }
    env->terminals[0] = 1;
    return 1;
}

static inline int pong_end(Pong* env) {
    float played = (float)(env->agent_points + env->opponent_points);
    env->log.score += env->agent_points >= env->points_to_win ? 1.0f : 0.0f;
    env->log.points_won += (float)env->agent_points;
    env->log.points_lost += (float)env->opponent_points;
    env->log.points_share += played > 0.0f ? (float)env->agent_points / played : 0.5f;
    return 1;
}

static inline int c_step(Pong* env) {
    // Table lookup and min/max instead of branches: random actions would mispredict them.
    static const float PADDLE_MOVE[3] = {0.0f, -PONG_PADDLE_SPEED, PONG_PADDLE_SPEED};
    env->agent_y = pong_clamp_paddle(env->agent_y + PADDLE_MOVE[env->actions[0]]);
    int tracking = env->ball_vx < 0.0f && env->ball_x < env->opponent_reaction * PONG_WIDTH;
    float target = tracking ? env->ball_y : PONG_HEIGHT * 0.5f;
    float speed = env->opponent_speed;
    env->opponent_y = pong_clamp_paddle(env->opponent_y + pong_clamp(target - env->opponent_y, -speed, speed));

    env->rewards[0] = 0.0f;
    env->terminals[0] = 0;
    env->truncations[0] = 0;
    env->tick++;
    env->ball_x += env->ball_vx;
    env->ball_y += env->ball_vy;
    if (env->ball_y < 0.0f) {
        env->ball_y = -env->ball_y;
        env->ball_vy = -env->ball_vy;
    } else if (env->ball_y > PONG_HEIGHT) {
        env->ball_y = 2.0f * PONG_HEIGHT - env->ball_y;
        env->ball_vy = -env->ball_vy;
    }
    int done = 0;
    if (env->ball_x >= PONG_WIDTH) {
        env->ball_x = PONG_WIDTH;
        if (!pong_return(env, env->agent_y, -1.0f)) done = pong_point(env, 0);
    } else if (env->ball_x <= 0.0f) {
        env->ball_x = 0.0f;
        if (!pong_return(env, env->opponent_y, 1.0f)) done = pong_point(env, 1);
    }
    if (!done && env->tick >= PONG_MAX_STEPS) {
        env->truncations[0] = 1;
        done = 1;
    }
    if (done) return pong_end(env);
    pong_write_observation(env);
    return 0;
}

static int c_render(Pong* env, char* buf, int capacity) {
    // Two text columns per unit of width, one row per unit of height.
    const int cols = (int)PONG_WIDTH * 2 + 1, rows = (int)PONG_HEIGHT;
    int n = snprintf(buf, capacity, "agent %d : %d opponent\n", env->agent_points, env->opponent_points);
    int ball_col = (int)(env->ball_x * 2.0f), ball_row = (int)env->ball_y;
    for (int r = 0; r < rows; r++) {
        float y = r + 0.5f;
        for (int c = 0; c < cols; c++) {
            const char* glyph = c == cols / 2 ? "\033[90m:\033[0m" : " ";
            if (r == (ball_row < rows ? ball_row : rows - 1) && c == ball_col) glyph = "\033[97mo\033[0m";
            if (c == 0 && fabsf(y - env->opponent_y) <= PONG_PADDLE_H * 0.5f) glyph = "\033[91m|\033[0m";
            if (c == cols - 1 && fabsf(y - env->agent_y) <= PONG_PADDLE_H * 0.5f) glyph = "\033[96m|\033[0m";
            n += snprintf(buf + n, capacity - n, "%s", glyph);
        }
        n += snprintf(buf + n, capacity - n, "\n");
    }
    return n;
}
