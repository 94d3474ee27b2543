cdef extern from "squared.h":
    ctypedef struct Log:
        float score
    ctypedef struct Env "Squared":
        int size

cdef extern from *:
    "#define Env Squared"

cdef int configure(Env* env, dict params) except -1:
    env.size = params["size"]
    return 0

include "vecenv.pxi"
