// Connect Four on a 7 x 6 board. Mode `opponent` (selfplay = 0): the agent moves first against a
// negamax opponent searching `depth` plies with alpha-beta pruning; among its equally good moves
// it picks one with the env's rng. Mode `selfplay` (selfplay = 1): two agents of the same batch
// take turns (who starts is drawn each game); the action of the agent not on move is ignored.
// Observation (uint8, 43 per agent, from that agent's side): the 42 cells row by row from the top
// (0 empty, 1 own stone, 2 the other's), then 1 if it is this agent's move.
// Actions: the column to drop a stone in. A move into a full column loses the game.
// Rewards at the end of a game: +1 win, -1 loss (or illegal move), 0 draw.
// Score: the win rate (mode opponent) or the first mover's win rate (mode selfplay).
//
// Bitboards: bit 7 * col + row (row 0 at the bottom) for each stone, with a spare bit atop each
// column so that shifts never carry a line from one column into the next.
#pragma once
#include <stdio.h>

#include "rng.h"

#define C4_COLS 7
#define C4_ROWS 6
#define C4_CELLS 42
#define C4_OBS 43
#define C4_WIN_SCORE 1000
#define C4_BOTTOM 0x0040810204081ull                    // bit 0 of every column
#define C4_BOARD (C4_BOTTOM * ((1ull << C4_ROWS) - 1))  // every playable bit

typedef struct {
    float score;
    float wins;
    float draws;
    float losses;
    float illegal;
    float game_length;
} Log;

typedef struct {
    unsigned char* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    unsigned char* truncations;
    uint64_t rng;
    Log log;
    int depth;
    int selfplay;
    uint64_t stones[2];  // player 0: the agent (mode opponent) or agent 0 (mode selfplay)
    int to_move;
    int first_mover;
    int moves;
} Connect4;

static const int C4_ORDER[C4_COLS] = {3, 2, 4, 1, 5, 0, 6};  // centre first: more cutoffs

static inline uint64_t c4_column_mask(int col) { return ((1ull << C4_ROWS) - 1) << (7 * col); }
static inline uint64_t c4_top_bit(int col) { return 1ull << (C4_ROWS - 1 + 7 * col); }
static inline int c4_legal(uint64_t mask, int col) { return (mask & c4_top_bit(col)) == 0; }
static inline uint64_t c4_drop(uint64_t mask, int col) {
    return (mask + (1ull << (7 * col))) & c4_column_mask(col);
}

static inline int c4_four(uint64_t stones) {
    uint64_t m = stones & (stones >> 7);  // horizontal
    if (m & (m >> 14)) return 1;
    m = stones & (stones >> 6);  // diagonal, rising to the left
    if (m & (m >> 12)) return 1;
    m = stones & (stones >> 8);  // diagonal, rising to the right
    if (m & (m >> 16)) return 1;
    m = stones & (stones >> 1);  // vertical
    return (m & (m >> 2)) != 0;
}

// Empty cells that would complete a four for `stones` (playable now or later).
static inline uint64_t c4_threats(uint64_t stones, uint64_t mask) {
    uint64_t r = (stones << 1) & (stones << 2) & (stones << 3);
    static const int DIRECTIONS[3] = {7, 6, 8};
    for (int d = 0; d < 3; d++) {
        int s = DIRECTIONS[d];
        uint64_t p = (stones << s) & (stones << 2 * s);
        r |= p & (stones << 3 * s);
        r |= p & (stones >> s);
        p = (stones >> s) & (stones >> 2 * s);
        r |= p & (stones << s);
        r |= p & (stones >> 3 * s);
    }
    return r & (C4_BOARD ^ mask);
}

// Static value for the player owning `own`: open threats count most, centre stones a little.
static inline int c4_evaluate(uint64_t own, uint64_t mask) {
    uint64_t other = own ^ mask;
    const uint64_t centre = c4_column_mask(3);
    int threats = __builtin_popcountll(c4_threats(own, mask)) - __builtin_popcountll(c4_threats(other, mask));
    return 4 * threats + __builtin_popcountll(own & centre) - __builtin_popcountll(other & centre);
}

// Value of the position for the player to move (stones `own`) after `depth` more plies: its own
// moves, the replies, and so on, then the static value. Wins found sooner score higher.
static int c4_negamax(uint64_t own, uint64_t mask, int depth, int alpha, int beta) {
    if (depth == 0) return c4_evaluate(own, mask);
    if (mask == C4_BOARD) return 0;
    for (int col = 0; col < C4_COLS; col++) {
        if (c4_legal(mask, col) && c4_four(own | c4_drop(mask, col))) return C4_WIN_SCORE + depth;
    }
    int best = -C4_WIN_SCORE * 2;
    for (int k = 0; k < C4_COLS; k++) {
        int col = C4_ORDER[k];
        if (!c4_legal(mask, col)) continue;
        int value = -c4_negamax(own ^ mask, mask | c4_drop(mask, col), depth - 1, -beta, -alpha);
        if (value > best) best = value;
        if (best > alpha) alpha = best;
        if (alpha >= beta) break;
    }
    return best;
}

// The searching player's column: one of the best root moves, drawn with the env's rng. Depth 0
// plays uniformly at random. A root move needs an exact value only if it may tie the best so far,
// so each is searched with the window (best - 1, infinity): a move worse than the best fails low
// (its bound is below best, enough to drop it), and one that ties or beats it gets its exact
// value. The same moves tie as under a full window, at a fraction of the nodes.
static int c4_search_move(Connect4* env, uint64_t own, uint64_t mask) {
    int best_cols[C4_COLS];
    int count = 0;
    int best = -C4_WIN_SCORE * 2;
    for (int col = 0; col < C4_COLS; col++) {
        if (!c4_legal(mask, col)) continue;
        int value = 0;
        if (env->depth > 0) {
            uint64_t move = c4_drop(mask, col);
            value = c4_four(own | move) ? C4_WIN_SCORE + env->depth
                                        : -c4_negamax(own ^ mask, mask | move, env->depth - 1, -C4_WIN_SCORE * 2,
                                                      count ? 1 - best : C4_WIN_SCORE * 2);
        }
        if (value > best) {
            best = value;
            count = 0;
        }
        if (value == best) best_cols[count++] = col;
    }
    return best_cols[rng_below(&env->rng, count)];
}

static inline void c4_write_observations(Connect4* env, int agents) {
    for (int a = 0; a < agents; a++) {
        int me = agents == 1 ? 0 : a;
        unsigned char* obs = env->observations + a * C4_OBS;
        uint64_t own = env->stones[me], other = env->stones[1 - me];
        for (int row = 0; row < C4_ROWS; row++) {
            for (int col = 0; col < C4_COLS; col++) {
                uint64_t bit = 1ull << (7 * col + C4_ROWS - 1 - row);
                obs[row * C4_COLS + col] = (own & bit) ? 1 : (other & bit) ? 2 : 0;
            }
        }
        obs[C4_CELLS] = env->to_move == me;
    }
}

static inline int c4_agents(Connect4* env) { return env->selfplay ? 2 : 1; }

static inline void c_reset(Connect4* env) {
    env->stones[0] = env->stones[1] = 0;
    env->moves = 0;
    env->first_mover = env->selfplay ? rng_below(&env->rng, 2) : 0;
    env->to_move = env->first_mover;
    c4_write_observations(env, c4_agents(env));
}

// Ends the game: `winner` is 0 or 1, or -1 for a draw.
static int c4_finish(Connect4* env, int winner, int illegal) {
    int agents = c4_agents(env);
    for (int a = 0; a < agents; a++) {
        env->rewards[a] = winner < 0 ? 0.0f : winner == a ? 1.0f : -1.0f;
        env->terminals[a] = 1;
    }
    if (illegal && agents == 2) env->rewards[winner] = 0.0f;  // the opponent's mistake is no win
    int scorer = env->selfplay ? env->first_mover : 0;
    env->log.score += winner == scorer ? 1.0f : 0.0f;
    env->log.wins += winner == 0 ? 1.0f : 0.0f;
    env->log.draws += winner < 0 ? 1.0f : 0.0f;
    env->log.losses += winner == 1 ? 1.0f : 0.0f;
    env->log.illegal += (float)illegal;
    env->log.game_length += (float)env->moves;
    return 1;
}

// Plays `col` for the player to move; returns 1 if that ended the game.
static int c4_play(Connect4* env, int col) {
    int player = env->to_move;
    uint64_t mask = env->stones[0] | env->stones[1];
    if (!c4_legal(mask, col)) return c4_finish(env, 1 - player, 1);
    env->stones[player] |= c4_drop(mask, col);
    env->moves++;
    env->to_move = 1 - player;
    if (c4_four(env->stones[player])) return c4_finish(env, player, 0);
    if (env->moves == C4_CELLS) return c4_finish(env, -1, 0);
    return 0;
}

static inline int c_step(Connect4* env) {
    int agents = c4_agents(env);
    for (int a = 0; a < agents; a++) {
        env->rewards[a] = 0.0f;
        env->terminals[a] = 0;
        env->truncations[a] = 0;
    }
    if (c4_play(env, env->actions[env->selfplay ? env->to_move : 0])) return 1;
    if (!env->selfplay) {
        uint64_t own = env->stones[1];
        if (c4_play(env, c4_search_move(env, own, own | env->stones[0]))) return 1;
    }
    c4_write_observations(env, agents);
    return 0;
}

static int c_render(Connect4* env, char* buf, int capacity) {
    int n = 0;
    for (int row = C4_ROWS - 1; row >= 0; row--) {
        n += snprintf(buf + n, capacity - n, "|");
        for (int col = 0; col < C4_COLS; col++) {
            uint64_t bit = 1ull << (7 * col + row);
            const char* glyph = (env->stones[0] & bit) ? "\033[93mX\033[0m" : (env->stones[1] & bit) ? "\033[91mO\033[0m" : " ";
            n += snprintf(buf + n, capacity - n, "%s|", glyph);
        }
        n += snprintf(buf + n, capacity - n, "\n");
    }
    n += snprintf(buf + n, capacity - n, " 0 1 2 3 4 5 6   %s to move\n", env->to_move == 0 ? "X" : "O");
    return n;
}
