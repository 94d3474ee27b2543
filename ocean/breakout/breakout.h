// Breakout: a paddle at the bottom, rows of bricks at the top, a ball between them.
// Units: a brick is 1 wide and BREAKOUT_BRICK_H high; the arena is brick_cols wide. The ball is a
// point moving BREAKOUT_BALL_SPEED per step; it bounces off the side and top walls and off bricks
// (removing them), and leaves the paddle at an angle set by where it hit: the centre sends it
// straight up, the ends at up to 60 degrees. A ball that passes the paddle costs a life and is
// served again from the middle, downward at a random angle.
// Observation (float32): paddle x, ball x, ball y (scaled to [0, 1]), ball velocity (scaled to
// [-1, 1]), then one float per brick (1 present, 0 broken), row by row from the top.
// Actions: 0 stay, 1 left, 2 right. Reward +1 per brick. The episode ends when every brick is
// broken or the last life is lost (terminal), or after BREAKOUT_MAX_STEPS steps (truncated).
// Score: the fraction of the bricks broken.
#pragma once
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rng.h"

#define BREAKOUT_MAX_ROWS 16
#define BREAKOUT_MAX_COLS 32
#define BREAKOUT_HEADER 5
#define BREAKOUT_BRICK_H 0.5f
#define BREAKOUT_TOP 1.5f
#define BREAKOUT_GAP 8.0f
#define BREAKOUT_BALL_SPEED 0.4f
#define BREAKOUT_PADDLE_SPEED 0.5f
#define BREAKOUT_MAX_ANGLE 1.04719755f
#define BREAKOUT_MAX_STEPS 20000

typedef struct {
    float score;
    float bricks_broken;
    float lives_lost;
} Log;

typedef struct {
    float* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    unsigned char* truncations;
    uint64_t rng;
    Log log;
    int brick_rows, brick_cols, max_lives;
    float paddle_width;
    float width, height, paddle_y, bricks_bottom;
    float paddle_x, ball_x, ball_y, ball_vx, ball_vy;
    int lives, bricks_left, tick;
    uint32_t bricks[BREAKOUT_MAX_ROWS];  // bit c of row r: the brick at column c is standing
} Breakout;

static inline void breakout_geometry(Breakout* env) {
    env->width = (float)env->brick_cols;
    env->bricks_bottom = BREAKOUT_TOP + env->brick_rows * BREAKOUT_BRICK_H;
    env->paddle_y = env->bricks_bottom + BREAKOUT_GAP;
    env->height = env->paddle_y + 1.0f;
}

static inline void breakout_serve(Breakout* env) {
    env->ball_x = env->width * (0.25f + 0.5f * rng_unit(&env->rng));
    env->ball_y = env->bricks_bottom + 1.0f;
    float angle = (rng_unit(&env->rng) - 0.5f) * 1.5707963f;  // within 45 degrees of straight down
    env->ball_vx = BREAKOUT_BALL_SPEED * sinf(angle);
    env->ball_vy = BREAKOUT_BALL_SPEED * cosf(angle);
}

static inline void breakout_write_header(Breakout* env) {
    float* obs = env->observations;
    obs[0] = env->paddle_x / env->width;
    obs[1] = env->ball_x / env->width;
    obs[2] = env->ball_y / env->height;
    obs[3] = env->ball_vx * (1.0f / BREAKOUT_BALL_SPEED);
    obs[4] = env->ball_vy * (1.0f / BREAKOUT_BALL_SPEED);
}

static inline void c_reset(Breakout* env) {
    breakout_geometry(env);
    uint32_t full_row = env->brick_cols == 32 ? 0xFFFFFFFFu : (1u << env->brick_cols) - 1u;
    for (int r = 0; r < env->brick_rows; r++) env->bricks[r] = full_row;
    int total = env->brick_rows * env->brick_cols;
    float* brick_obs = env->observations + BREAKOUT_HEADER;
    for (int k = 0; k < total; k++) brick_obs[k] = 1.0f;
    env->bricks_left = total;
    env->lives = env->max_lives;
    env->tick = 0;
    env->paddle_x = env->width * 0.5f;
    breakout_serve(env);
    breakout_write_header(env);
}

// Removes the brick under (x, y) if one stands there; returns 1 if it did.
static inline int breakout_hit_brick(Breakout* env, float x, float y, int* row_out) {
    if (y < BREAKOUT_TOP || y >= env->bricks_bottom || x < 0.0f || x >= env->width) return 0;
    int row = (int)((y - BREAKOUT_TOP) * (1.0f / BREAKOUT_BRICK_H));
    int col = (int)x;
    uint32_t bit = 1u << col;
    if (!(env->bricks[row] & bit)) return 0;
    env->bricks[row] &= ~bit;
    env->observations[BREAKOUT_HEADER + row * env->brick_cols + col] = 0.0f;
    *row_out = row;
    return 1;
}

static inline int breakout_end(Breakout* env, int terminal) {
    int total = env->brick_rows * env->brick_cols;
    env->terminals[0] = (unsigned char)terminal;
    env->truncations[0] = (unsigned char)!terminal;
    env->log.score += (float)(total - env->bricks_left) / (float)total;
    env->log.bricks_broken += (float)(total - env->bricks_left);
    env->log.lives_lost += (float)(env->max_lives - env->lives);
    return 1;
}

static inline int c_step(Breakout* env) {
    // Moves by table lookup and clamping: random actions make a switch's branches unpredictable.
    static const float PADDLE_MOVE[3] = {0.0f, -BREAKOUT_PADDLE_SPEED, BREAKOUT_PADDLE_SPEED};
    float half = env->paddle_width * 0.5f;
    // Comparisons rather than fminf/fmaxf, which are library calls without -ffast-math.
    float paddle_x = env->paddle_x + PADDLE_MOVE[env->actions[0]];
    paddle_x = paddle_x < half ? half : paddle_x;
    env->paddle_x = paddle_x > env->width - half ? env->width - half : paddle_x;
    env->rewards[0] = 0.0f;
    env->terminals[0] = 0;
    env->truncations[0] = 0;
    env->tick++;

    float x = env->ball_x + env->ball_vx;
    float y = env->ball_y + env->ball_vy;
    if (x < 0.0f) {
        x = -x;
        env->ball_vx = -env->ball_vx;
    } else if (x > env->width) {
        x = 2.0f * env->width - x;
        env->ball_vx = -env->ball_vx;
    }
    if (y < 0.0f) {
        y = -y;
        env->ball_vy = -env->ball_vy;
    }
    int row;
    if (y < env->bricks_bottom && breakout_hit_brick(env, x, y, &row)) {
        // Bounce off the face the ball came through: top or bottom if it changed rows (or came from
        // outside the brick area), else a side. The ball stays where it was this step.
        int old_row = (int)((env->ball_y - BREAKOUT_TOP) * (1.0f / BREAKOUT_BRICK_H));
        if (env->ball_y < BREAKOUT_TOP || env->ball_y >= env->bricks_bottom || old_row != row) {
            env->ball_vy = -env->ball_vy;
        } else {
            env->ball_vx = -env->ball_vx;
        }
        env->rewards[0] = 1.0f;
        env->bricks_left--;
        if (env->bricks_left == 0) return breakout_end(env, 1);
    } else if (env->ball_vy > 0.0f && env->ball_y < env->paddle_y && y >= env->paddle_y) {
        float cross_x = env->ball_x + (x - env->ball_x) * (env->paddle_y - env->ball_y) / (y - env->ball_y);
        float offset = (cross_x - env->paddle_x) / half;
        if (offset >= -1.0f && offset <= 1.0f) {
            float angle = offset * BREAKOUT_MAX_ANGLE;
            env->ball_vx = BREAKOUT_BALL_SPEED * sinf(angle);
            env->ball_vy = -BREAKOUT_BALL_SPEED * cosf(angle);
            env->ball_x = cross_x;
            env->ball_y = env->paddle_y;
        } else {
            env->ball_x = x;
            env->ball_y = y;
        }
    } else if (y > env->height) {
        env->lives--;
        if (env->lives == 0) return breakout_end(env, 1);
        breakout_serve(env);
    } else {
        env->ball_x = x;
        env->ball_y = y;
    }
    if (env->tick >= BREAKOUT_MAX_STEPS) return breakout_end(env, 0);
    breakout_write_header(env);
    return 0;
}

static int c_render(Breakout* env, char* buf, int capacity) {
    // Two text rows per unit of height, one column per half brick.
    int cols = env->brick_cols * 2;
    int rows = (int)(env->height * 2.0f) + 1;
    int ball_col = (int)(env->ball_x * 2.0f);
    int ball_row = (int)(env->ball_y * 2.0f);
    int paddle_row = (int)(env->paddle_y * 2.0f);
    int n = snprintf(buf, capacity, "lives %d  bricks %d/%d\n", env->lives,
                     env->brick_rows * env->brick_cols - env->bricks_left, env->brick_rows * env->brick_cols);
    for (int r = 0; r < rows && n < capacity - 64 * (cols + 2); r++) {
        n += snprintf(buf + n, capacity - n, "|");
        for (int c = 0; c < cols; c++) {
            float x = (c + 0.5f) * 0.5f, y = (r + 0.5f) * 0.5f;
            const char* glyph = " ";
            if (r == ball_row && c == (ball_col < cols ? ball_col : cols - 1)) {
                glyph = "\033[97mo\033[0m";
            } else if (r == paddle_row && fabsf(x - env->paddle_x) <= env->paddle_width * 0.5f) {
                glyph = "\033[96m=\033[0m";
            } else if (y >= BREAKOUT_TOP && y < env->bricks_bottom) {
                int row = (int)((y - BREAKOUT_TOP) / BREAKOUT_BRICK_H);
                if (env->bricks[row] & (1u << (int)x)) {
                    static const char* ROW_COLORS[6] = {"\033[91m", "\033[93m", "\033[33m", "\033[92m", "\033[94m", "\033[95m"};
                    n += snprintf(buf + n, capacity - n, "%s#\033[0m", ROW_COLORS[row % 6]);
                    continue;
                }
            }
            n += snprintf(buf + n, capacity - n, "%s", glyph);
        }
        n += snprintf(buf + n, capacity - n, "|\n");
    }
    return n;
}
