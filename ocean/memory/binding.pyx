cdef extern from "memory.h":
    ctypedef struct Log:
        float score
    ctypedef struct Env "Memory":
        int length
        int delay

cdef extern from *:
    "#define Env Memory"

cdef int configure(Env* env, dict params) except -1:
    env.length = params["length"]
    env.delay = params["delay"]
    return 0

include "vecenv.pxi"
