cdef extern from "password.h":
    ctypedef struct Log:
        float score
    ctypedef struct Env "Password":
        int length
        unsigned char password[64]

cdef extern from *:
    "#define Env Password"

cdef int configure(Env* env, dict params) except -1:
    env.length = params["length"]
    for i, bit in enumerate(params["password"]):
        env.password[i] = bit
    return 0

include "vecenv.pxi"
