# Shared body of every Ocean binding. A binding declares its game's `Env` and `Log` structs,
# defines `configure(Env* env, dict params)` to copy parameters into one env, then includes this.
cimport numpy as cnp
from libc.stdint cimport uint64_t
from libc.string cimport memmove

cnp.import_array()

cdef extern from "vecenv.h":
    ctypedef struct VecEnv:
        Env* envs
        int num_envs
    VecEnv* vec_create(int num_envs, int agents_per_env, int num_threads)
    void vec_destroy(VecEnv* vec)
    void vec_bind(VecEnv* vec, char* observations, long obs_bytes, int* actions, int action_dims,
                  float* rewards, unsigned char* terminals, unsigned char* truncations)
    void vec_reset(VecEnv* vec, uint64_t seed) nogil
    long vec_find_bad_action(VecEnv* vec, const int* nvec) nogil
    int vec_step(VecEnv* vec) nogil
    float vec_log(VecEnv* vec, Log* out, float* return_sum, float* length_sum)
    long vec_state_bytes(VecEnv* vec)
    void vec_save_state(VecEnv* vec, char* out)
    void vec_load_state(VecEnv* vec, const char* data)
    int c_render(Env* env, char* buf, int capacity)
    void vec_keep_final_frames(VecEnv* vec, int capacity)
    char* vec_final_frame(VecEnv* vec, int index)

DEF RENDER_CAPACITY = 1 << 16
# What step() returns when the actions given are not a C-contiguous native int32 array of the
# action buffer's shape: Python converts them (with its checks) into the buffer and steps again.
NEEDS_CONVERSION = -(1 << 62)


cdef class CVecEnv:
    """Owns the C envs; the numpy buffers stay owned (and kept alive) by Python."""
    cdef VecEnv* vec
    cdef object buffers
    cdef cnp.ndarray nvec
    cdef cnp.ndarray actions

    def __cinit__(self, cnp.ndarray observations, cnp.ndarray actions, cnp.ndarray rewards,
                  cnp.ndarray terminals, cnp.ndarray truncations, int num_envs, int agents_per_env,
                  int num_threads, cnp.ndarray nvec, dict params):
        self.buffers = (observations, actions, rewards, terminals, truncations)
        self.nvec = nvec
        self.actions = actions
        self.vec = vec_create(num_envs, agents_per_env, num_threads)
        for i in range(num_envs):
            configure(&self.vec.envs[i], params)
        cdef long obs_bytes = observations.nbytes // (num_envs * agents_per_env)
        cdef int action_dims = actions.size // (num_envs * agents_per_env)
        vec_bind(self.vec, <char*>cnp.PyArray_DATA(observations), obs_bytes,
                 <int*>cnp.PyArray_DATA(actions), action_dims,
                 <float*>cnp.PyArray_DATA(rewards),
                 <unsigned char*>cnp.PyArray_DATA(terminals),
                 <unsigned char*>cnp.PyArray_DATA(truncations))

    def reset(self, uint64_t seed):
        with nogil:
            vec_reset(self.vec, seed)

    def step(self, object actions):
        """Copies `actions` into the action buffer (unless they are it) and steps every env.
        Returns the episodes finished, -(k + 1) when action k is invalid (nothing stepped), or
        NEEDS_CONVERSION when `actions` is not an int32 array laid out as the buffer is."""
        cdef cnp.ndarray given
        if actions is not self.actions:
            if type(actions) is not cnp.ndarray:
                return NEEDS_CONVERSION
            given = <cnp.ndarray>actions
            if (cnp.PyArray_TYPE(given) != cnp.NPY_INT32 or not cnp.PyArray_ISNOTSWAPPED(given)
                    or not cnp.PyArray_IS_C_CONTIGUOUS(given) or not cnp.PyArray_SAMESHAPE(given, self.actions)):
                return NEEDS_CONVERSION
            memmove(cnp.PyArray_DATA(self.actions), cnp.PyArray_DATA(given), cnp.PyArray_NBYTES(given))
        cdef long bad
        cdef int finished = 0
        cdef const int* nvec = <const int*>cnp.PyArray_DATA(self.nvec)
        with nogil:
            bad = vec_find_bad_action(self.vec, nvec)
            if bad < 0:
                finished = vec_step(self.vec)
        if bad >= 0:
            return -(bad + 1)
        return finished

    def find_bad_action(self):
        """Index of the first invalid action in the action buffer, or -1 when all are valid."""
        cdef long bad
        cdef const int* nvec = <const int*>cnp.PyArray_DATA(self.nvec)
        with nogil:
            bad = vec_find_bad_action(self.vec, nvec)
        return bad

    def log(self):
        """Means of the episode statistics since the last call, or None if no episode ended."""
        cdef Log totals
        cdef float return_sum, length_sum
        cdef float episodes = vec_log(self.vec, &totals, &return_sum, &length_sum)
        if episodes == 0:
            return None
        means = {key: value / episodes for key, value in (<dict>totals).items()}
        means["episode_return"] = return_sum / episodes
        means["episode_length"] = length_sum / episodes
        means["episodes"] = int(episodes)
        return means

    def save_state(self):
        """The envs' state as bytes, or None for a game that cannot be saved (VEC_NO_SAVE)."""
        cdef long size = vec_state_bytes(self.vec)
        if size < 0:
            return None
        cdef bytearray data = bytearray(size)
        vec_save_state(self.vec, <char*>data)
        return bytes(data)

    def load_state(self, bytes data):
        if vec_state_bytes(self.vec) != len(data):
            raise ValueError(f"saved env state has {len(data)} bytes, these envs need {vec_state_bytes(self.vec)}")
        vec_load_state(self.vec, <const char*>data)

    def render(self, int index):
        cdef bytearray text = bytearray(RENDER_CAPACITY)
        cdef int length = c_render(&self.vec.envs[index], <char*>text, RENDER_CAPACITY)
        return text[:length].decode()

    def keep_final_frames(self):
        vec_keep_final_frames(self.vec, RENDER_CAPACITY)

    def final_frame(self, int index):
        """The render of env `index` just before its latest autoreset ('' before one)."""
        return (<bytes>vec_final_frame(self.vec, index)).decode()

    def __dealloc__(self):
        if self.vec is not NULL:
            vec_destroy(self.vec)
            self.vec = NULL
