cdef extern from "pong.h":
    ctypedef struct Log:
        float score
        float points_won
        float points_lost
        float points_share
    ctypedef struct Env "Pong":
        int points_to_win
        float opponent_speed
        float opponent_reaction
        float agent_y, opponent_y, ball_x, ball_y, ball_vx, ball_vy
        int agent_points, opponent_points, tick
    void pong_write_observation(Env* env)

cdef extern from *:
    "#define Env Pong"

cdef int configure(Env* env, dict params) except -1:
    env.points_to_win = params["points_to_win"]
    env.opponent_speed = params["opponent_speed"]
    env.opponent_reaction = params["opponent_reaction"]
    return 0

include "vecenv.pxi"

STATE_FIELDS = ("agent_y", "opponent_y", "ball_x", "ball_y", "ball_vx", "ball_vy", "agent_points",
                "opponent_points", "tick")


def get_state(CVecEnv vecenv, int index):
    """Env ``index``'s paddles, ball and points, for tests."""
    cdef Env* env = &vecenv.vec.envs[index]
    return {key: value for key, value in (<dict>env[0]).items() if key in STATE_FIELDS}


def set_scene(CVecEnv vecenv, int index, **fields):
    """Overwrites some of env ``index``'s paddles, ball and points, for tests."""
    cdef Env* env = &vecenv.vec.envs[index]
    unknown = set(fields) - set(STATE_FIELDS)
    if unknown:
        raise KeyError(f"unknown fields {sorted(unknown)}; valid: {STATE_FIELDS}")
    state = dict(<dict>env[0])
    state.update(fields)
    env.agent_y, env.opponent_y = state["agent_y"], state["opponent_y"]
    env.ball_x, env.ball_y, env.ball_vx, env.ball_vy = state["ball_x"], state["ball_y"], state["ball_vx"], state["ball_vy"]
    env.agent_points, env.opponent_points, env.tick = state["agent_points"], state["opponent_points"], state["tick"]
    pong_write_observation(env)
