cdef extern from "spaces.h":
    ctypedef struct Log:
        float score
    ctypedef struct Env "Spaces":
        pass

cdef extern from *:
    "#define Env Spaces"

cdef int configure(Env* env, dict params) except -1:
    return 0

include "vecenv.pxi"
