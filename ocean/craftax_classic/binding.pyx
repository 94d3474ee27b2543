cimport numpy as cnp
import numpy as np
from libc.stdint cimport uint8_t, uint32_t, int32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

cdef extern from "worldgen.h":
    ctypedef struct Key:
        uint32_t w[2]
    Key key_split_at(Key key, uint32_t i)
    ctypedef struct ClassicState:
        pass
    ctypedef struct ClassicScratch:
        pass
    void classic_generate_world(Key rng, ClassicState* s, ClassicScratch* scratch) nogil

cdef extern from "game_logic.h":
    int classic_env_step(Key key, ClassicState* s, int action, float* reward, ClassicScratch* scratch) nogil

cdef extern from "observation.h":
    int CLASSIC_OBS_SIZE
    void classic_observe(const ClassicState* s, float* obs) nogil

cnp.import_array()

cdef Key as_key(key) except *:
    cdef cnp.ndarray[cnp.uint32_t, ndim=1] data = np.ascontiguousarray(key, dtype=np.uint32).reshape(2)
    cdef Key k
    k.w[0] = data[0]
    k.w[1] = data[1]
    return k


def split(key, int i):
    """jax.random.split(key)[i]."""
    cdef Key k = key_split_at(as_key(key), i)
    return np.array([k.w[0], k.w[1]], dtype=np.uint32)


cdef class World:
    """One Classic game state outside any vecenv, generated from a key, for parity checks."""
    cdef ClassicState* state
    cdef ClassicScratch* scratch

    def __cinit__(self, key):
        self.state = <ClassicState*>malloc(sizeof(ClassicState))
        self.scratch = <ClassicScratch*>malloc(sizeof(ClassicScratch))
        if self.state is NULL or self.scratch is NULL:
            raise MemoryError("no memory for a Craftax-Classic world")
        classic_generate_world(as_key(key), self.state, self.scratch)

    def __dealloc__(self):
        free(self.state)
        free(self.scratch)

    def step(self, key, int action):
        """The auto-resetting env's step with `key`: (reward, done)."""
        if not 0 <= action < 17:
            raise ValueError(f"action must be in 0..16, got {action}")
        cdef float reward
        cdef int done = classic_env_step(as_key(key), self.state, action, &reward, self.scratch)
        return reward, bool(done)

    def observation(self):
        cdef cnp.ndarray[cnp.float32_t, ndim=1] out = np.empty(CLASSIC_OBS_SIZE, dtype=np.float32)
        classic_observe(self.state, <float*>out.data)
        return out

    def state_bytes(self):
        """The state's bytes (state_view.STATE_DTYPE), copied."""
        return np.frombuffer((<char*>self.state)[:sizeof(ClassicState)], dtype=np.uint8).copy()

    def load_state_bytes(self, data):
        """Replaces the state by `data`, bytes laid out as state_bytes() returns them (a scenario)."""
        cdef const uint8_t[:] view = np.ascontiguousarray(np.frombuffer(bytes(data), dtype=np.uint8))
        if view.shape[0] != sizeof(ClassicState):
            raise ValueError(f"a Craftax-Classic state is {sizeof(ClassicState)} bytes, got {view.shape[0]}")
        memcpy(self.state, &view[0], sizeof(ClassicState))


def state_size():
    """sizeof(ClassicState), to check the Python view of its layout."""
    return sizeof(ClassicState)


cdef extern from "craftax_classic.h":
    ctypedef struct Log:
        float score
        float died
        float collect_wood
        float place_table
        float eat_cow
        float collect_sapling
        float collect_drink
        float make_wood_pickaxe
        float make_wood_sword
        float place_plant
        float defeat_zombie
        float collect_stone
        float place_stone
        float eat_plant
        float defeat_skeleton
        float make_stone_pickaxe
        float make_stone_sword
        float wake_up
        float place_furnace
        float collect_coal
        float collect_iron
        float collect_diamond
        float make_iron_pickaxe
        float make_iron_sword
    ctypedef struct Env "CraftaxClassic":
        ClassicState state

cdef extern from *:
    "#define Env CraftaxClassic"

OBS_SIZE = CLASSIC_OBS_SIZE


cdef int configure(Env* env, dict params) except -1:
    return 0

include "vecenv.pxi"


def env_state_bytes(CVecEnv vecenv, int index):
    """Env ``index``'s game state as bytes (state_view.STATE_DTYPE), copied."""
    cdef Env* env = &vecenv.vec.envs[index]
    return np.frombuffer((<char*>&env.state)[:sizeof(ClassicState)], dtype=np.uint8).copy()
