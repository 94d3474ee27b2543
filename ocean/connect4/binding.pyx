from libc.stdint cimport uint64_t

cdef extern from "connect4.h":
    ctypedef struct Log:
        float score
        float wins
        float draws
        float losses
        float illegal
        float game_length
    ctypedef struct Env "Connect4":
        int depth
        int selfplay
        uint64_t stones[2]
        int to_move
        int first_mover
        int moves
    void c4_write_observations(Env* env, int agents)
    int c4_agents(Env* env)
    int c4_search_move(Env* env, uint64_t own, uint64_t mask)

cdef extern from *:
    "#define Env Connect4"

cdef int configure(Env* env, dict params) except -1:
    env.depth = params["depth"]
    env.selfplay = params["selfplay"]
    return 0

include "vecenv.pxi"

ROWS, COLS = 6, 7


def get_board(CVecEnv vecenv, int index):
    """Env ``index``'s board as rows from the top: 0 empty, 1 player 0 (the agent), 2 player 1."""
    cdef Env* env = &vecenv.vec.envs[index]
    board = [[0] * COLS for _ in range(ROWS)]
    for row in range(ROWS):
        for col in range(COLS):
            bit = 1 << (7 * col + ROWS - 1 - row)
            board[row][col] = 1 if env.stones[0] & bit else 2 if env.stones[1] & bit else 0
    return board, env.to_move


def set_board(CVecEnv vecenv, int index, board, int to_move):
    """Puts a position (rows from the top, as get_board) on env ``index``, for tests; stones must
    rest on the bottom or on other stones."""
    cdef Env* env = &vecenv.vec.envs[index]
    cdef uint64_t stones[2]
    stones[0] = stones[1] = 0
    moves = 0
    for col in range(COLS):
        height = 0
        for row in range(ROWS - 1, -1, -1):
            cell = board[row][col]
            if cell == 0:
                continue
            if ROWS - 1 - row != height:
                raise ValueError(f"column {col}: a stone floats above an empty cell")
            stones[cell - 1] |= (<uint64_t>1) << (7 * col + height)
            height += 1
            moves += 1
    env.stones[0], env.stones[1] = stones[0], stones[1]
    env.moves = moves
    env.to_move = to_move
    c4_write_observations(env, c4_agents(env))


def search_move(CVecEnv vecenv, int index):
    """The column env ``index``'s negamax opponent plays in the current position, as player to move
    (draws from that env's rng, as in play)."""
    cdef Env* env = &vecenv.vec.envs[index]
    own = env.stones[env.to_move]
    return c4_search_move(env, own, env.stones[0] | env.stones[1])
