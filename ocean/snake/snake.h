// Snake: `num_snakes` snakes share one width x height board with `food` pieces of food, one agent
// per snake. Snakes move one cell per step, in index order; a snake that moves onto food grows by
// one cell (up to `max_length`) and the food reappears on a random empty cell; a snake that moves
// into a wall or into any snake's body or head dies and respawns at length 1 on a random empty
// cell. Moving back into its own neck is ignored (the snake keeps going).
// Observation (uint8, per snake): the (2 vision + 1)^2 cells around its head, row by row
// (0 empty, 1 food, 2 body, 3 head, 4 wall). Actions: 0 up, 1 down, 2 left, 3 right.
// Rewards: SNAKE_REWARD_FOOD for eating, SNAKE_REWARD_DEATH for dying (that snake's step is
// terminal). The board is an episode of `episode_length` steps, truncated for every snake.
// Score: the mean length of a snake's life (at death, or when the episode ends).
//
// The grid is padded with `vision` cells of wall on every side, so views and moves never need a
// bounds check. Each snake's body is a ring buffer of grid indices (head at heads[s]).
#pragma once
#include <stdio.h>
#include <string.h>

#include "rng.h"

enum { SNAKE_EMPTY = 0, SNAKE_FOOD = 1, SNAKE_BODY = 2, SNAKE_HEAD = 3, SNAKE_WALL = 4 };
#define SNAKE_REWARD_FOOD 1.0f
#define SNAKE_REWARD_DEATH (-1.0f)
#define SNAKE_SPAWN_TRIES 32

typedef struct {
    float score;
    float deaths;
    float food_eaten;
    float longest;
} Log;

typedef struct {
    unsigned char* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    unsigned char* truncations;
    uint64_t rng;
    Log log;
    int width, height, num_snakes, food, vision, max_length, episode_length;
    int stride, view, ring;  // padded row length; view side; ring buffer size (a power of two)
    int deltas[4];
    unsigned char* grid;
    int* bodies;  // num_snakes x ring
    int* heads;
    int* lengths;
    int* directions;
    int tick;
    float life_lengths, lives, deaths, eaten, longest;  // this episode's statistics
} Snake;

static inline int snake_ring_size(int max_length) {
    int ring = 1;
    while (ring < max_length) ring <<= 1;
    return ring;
}

// Bytes of board and bodies one env needs beside its struct (ints first, for alignment).
static inline long snake_memory_bytes(const Snake* env) {
    long ints = (long)env->num_snakes * (snake_ring_size(env->max_length) + 3);
    long cells = (long)(env->height + 2 * env->vision) * (env->width + 2 * env->vision);
    return (ints * 4 + cells + 63) / 64 * 64;
}

// Points the env at its share of memory and derives the layout; called once, after configure.
static inline void snake_bind_memory(Snake* env, char* memory) {
    env->ring = snake_ring_size(env->max_length);
    env->stride = env->width + 2 * env->vision;
    env->view = 2 * env->vision + 1;
    int n = env->num_snakes;
    env->bodies = (int*)memory;
    env->heads = env->bodies + (long)n * env->ring;
    env->lengths = env->heads + n;
    env->directions = env->lengths + n;
    env->grid = (unsigned char*)(env->directions + n);
    env->deltas[0] = -env->stride;
    env->deltas[1] = env->stride;
    env->deltas[2] = -1;
    env->deltas[3] = 1;
}

// A random empty cell of the board (a grid index), or -1 when there is none: a few random draws,
// then a scan from a random start, which also finds the last empty cells of a crowded board.
static int snake_empty_cell(Snake* env) {
    int cells = env->width * env->height;
    int k = 0;
    for (int attempt = 0; attempt <= SNAKE_SPAWN_TRIES; attempt++) {
        k = rng_below(&env->rng, cells);
        int index = (k / env->width + env->vision) * env->stride + k % env->width + env->vision;
        if (env->grid[index] == SNAKE_EMPTY) return index;
    }
    for (int step = 1; step < cells; step++) {
        int j = (k + step) % cells;
        int index = (j / env->width + env->vision) * env->stride + j % env->width + env->vision;
        if (env->grid[index] == SNAKE_EMPTY) return index;
    }
    return -1;
}

static inline void snake_spawn_food(Snake* env) {
    int cell = snake_empty_cell(env);
    if (cell >= 0) env->grid[cell] = SNAKE_FOOD;
}

// Validation guarantees an empty cell for every respawn (snakes at full length and all the food
// leave one free).
static inline void snake_spawn(Snake* env, int s) {
    int cell = snake_empty_cell(env);
    env->grid[cell] = SNAKE_HEAD;
    env->heads[s] = 0;
    env->bodies[(long)s * env->ring] = cell;
    env->lengths[s] = 1;
    env->directions[s] = rng_below(&env->rng, 4);
}

static inline void snake_end_life(Snake* env, int s) {
    float length = (float)env->lengths[s];
    env->life_lengths += length;
    env->lives += 1.0f;
    if (length > env->longest) env->longest = length;
}

static inline void snake_write_observations(Snake* env) {
    int view = env->view, vision = env->vision, stride = env->stride;
    for (int s = 0; s < env->num_snakes; s++) {
        const unsigned char* corner = env->grid + env->bodies[(long)s * env->ring + env->heads[s]] - vision * stride - vision;
        unsigned char* obs = env->observations + (long)s * view * view;
        for (int r = 0; r < view; r++) memcpy(obs + r * view, corner + r * stride, view);
    }
}

static inline void c_reset(Snake* env) {
    int stride = env->stride;
    int rows = env->height + 2 * env->vision;
    memset(env->grid, SNAKE_WALL, (size_t)rows * stride);
    for (int r = 0; r < env->height; r++) {
        memset(env->grid + (r + env->vision) * stride + env->vision, SNAKE_EMPTY, env->width);
    }
    for (int s = 0; s < env->num_snakes; s++) snake_spawn(env, s);
    for (int f = 0; f < env->food; f++) snake_spawn_food(env);
    env->tick = 0;
    env->life_lengths = env->lives = env->deaths = env->eaten = env->longest = 0.0f;
    snake_write_observations(env);
}

static inline void snake_move(Snake* env, int s) {
    int* body = env->bodies + (long)s * env->ring;
    int mask = env->ring - 1;
    int length = env->lengths[s];
    int direction = env->actions[s];
    if (length > 1 && direction == (env->directions[s] ^ 1)) direction = env->directions[s];
    env->directions[s] = direction;
    int head = body[env->heads[s]];
    int next = head + env->deltas[direction];
    int eats = env->grid[next] == SNAKE_FOOD;
    int grows = eats && length < env->max_length;
    if (!grows) env->grid[body[(env->heads[s] - length + 1) & mask]] = SNAKE_EMPTY;  // the tail moves on
    unsigned char target = env->grid[next];
    if (target != SNAKE_EMPTY && target != SNAKE_FOOD) {
        for (int k = 0; k < length - 1; k++) env->grid[body[(env->heads[s] - k) & mask]] = SNAKE_EMPTY;
        env->rewards[s] = SNAKE_REWARD_DEATH;
        env->terminals[s] = 1;
        env->deaths += 1.0f;
        snake_end_life(env, s);
        snake_spawn(env, s);
        return;
    }
    if (length > 1 || grows) env->grid[head] = SNAKE_BODY;
    env->grid[next] = SNAKE_HEAD;
    env->heads[s] = (env->heads[s] + 1) & mask;
    body[env->heads[s]] = next;
    env->lengths[s] = length + grows;
    if (eats) {
        env->rewards[s] = SNAKE_REWARD_FOOD;
        env->eaten += 1.0f;
        snake_spawn_food(env);
    }
}

static inline int c_step(Snake* env) {
    int n = env->num_snakes;
    memset(env->rewards, 0, n * sizeof(float));
    memset(env->terminals, 0, n);
    memset(env->truncations, 0, n);
    for (int s = 0; s < n; s++) snake_move(env, s);
    env->tick++;
    if (env->tick < env->episode_length) {
        snake_write_observations(env);
        return 0;
    }
    for (int s = 0; s < n; s++) {
        if (env->terminals[s]) continue;  // it died this step: its new life has not begun
        snake_end_life(env, s);
        env->truncations[s] = 1;
    }
    env->log.score += env->life_lengths / env->lives;
    env->log.deaths += env->deaths / n;
    env->log.food_eaten += env->eaten / n;
    env->log.longest += env->longest;
    return 1;
}

static int c_render(Snake* env, char* buf, int capacity) {
    // A window of at most 64 x 32 cells around snake 0's head; its head is drawn as '@'.
    static const char* GLYPHS[5] = {"\033[90m.", "\033[91m*", "\033[92mo", "\033[93mO", "\033[37m#"};
    int head = env->bodies[env->heads[0]];
    int head_row = head / env->stride - env->vision, head_col = head % env->stride - env->vision;
    int cols = env->width < 64 ? env->width : 64, rows = env->height < 32 ? env->height : 32;
    int top = head_row - rows / 2, left = head_col - cols / 2;
    top = top < 0 ? 0 : top > env->height - rows ? env->height - rows : top;
    left = left < 0 ? 0 : left > env->width - cols ? env->width - cols : left;
    int n = snprintf(buf, capacity, "step %d  snake 0 length %d  (rows %d-%d, cols %d-%d of %d x %d)\n",
                     env->tick, env->lengths[0], top, top + rows - 1, left, left + cols - 1, env->width, env->height);
    for (int r = top; r < top + rows; r++) {
        for (int c = left; c < left + cols; c++) {
            int index = (r + env->vision) * env->stride + c + env->vision;
            const char* glyph = index == head ? "\033[96m@" : GLYPHS[env->grid[index]];
            n += snprintf(buf + n, capacity - n, "%s", glyph);
        }
        n += snprintf(buf + n, capacity - n, "\033[0m\n");
    }
    return n;
}
