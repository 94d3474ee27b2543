cdef extern from "bandit.h":
    ctypedef struct Log:
        float score
    ctypedef struct Env "Bandit":
        int arms
        int solution
        float reward_noise

cdef extern from *:
    "#define Env Bandit"

cdef int configure(Env* env, dict params) except -1:
    env.arms = params["arms"]
    env.solution = params["solution"]
    env.reward_noise = params["reward_noise"]
    return 0

include "vecenv.pxi"
