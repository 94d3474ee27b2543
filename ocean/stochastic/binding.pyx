cdef extern from "stochastic.h":
    ctypedef struct Log:
        float score
        float action0_fraction
    ctypedef struct Env "Stochastic":
        float p
        int horizon

cdef extern from *:
    "#define Env Stochastic"

cdef int configure(Env* env, dict params) except -1:
    env.p = params["p"]
    env.horizon = params["horizon"]
    return 0

include "vecenv.pxi"
