cdef extern from "breakout.h":
    ctypedef struct Log:
        float score
        float bricks_broken
        float lives_lost
    ctypedef struct Env "Breakout":
        int brick_rows, brick_cols, max_lives
        float paddle_width
        float paddle_x, ball_x, ball_y, ball_vx, ball_vy
        int lives, bricks_left, tick
    void breakout_write_header(Env* env)

cdef extern from *:
    "#define Env Breakout"

cdef int configure(Env* env, dict params) except -1:
    env.brick_rows = params["brick_rows"]
    env.brick_cols = params["brick_cols"]
    env.max_lives = params["lives"]
    env.paddle_width = params["paddle_width"]
    return 0

include "vecenv.pxi"

STATE_FIELDS = ("paddle_x", "ball_x", "ball_y", "ball_vx", "ball_vy", "lives", "bricks_left", "tick")


def get_state(CVecEnv vecenv, int index):
    """Env ``index``'s paddle, ball, lives and bricks left, for tests."""
    cdef Env* env = &vecenv.vec.envs[index]
    return {key: value for key, value in (<dict>env[0]).items() if key in STATE_FIELDS}


def set_scene(CVecEnv vecenv, int index, **fields):
    """Overwrites some of env ``index``'s paddle, ball, lives and tick, for tests."""
    cdef Env* env = &vecenv.vec.envs[index]
    unknown = set(fields) - set(STATE_FIELDS[:6] + ("tick",))
    if unknown:
        raise KeyError(f"unknown or read-only fields {sorted(unknown)}")
    state = dict(<dict>env[0])
    state.update(fields)
    env.paddle_x, env.ball_x, env.ball_y = state["paddle_x"], state["ball_x"], state["ball_y"]
    env.ball_vx, env.ball_vy, env.lives, env.tick = state["ball_vx"], state["ball_vy"], state["lives"], state["tick"]
    breakout_write_header(env)
