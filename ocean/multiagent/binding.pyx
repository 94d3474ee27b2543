cdef extern from "multiagent.h":
    ctypedef struct Log:
        float score
    ctypedef struct Env "Multiagent":
        pass

cdef extern from *:
    "#define Env Multiagent"

cdef int configure(Env* env, dict params) except -1:
    return 0

include "vecenv.pxi"
