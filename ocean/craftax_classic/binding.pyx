cimport numpy as cnp
import numpy as np
from libc.stdint cimport uint8_t, uint32_t, int32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from cython.parallel cimport prange

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
        int reset_pool_size
        const ClassicState* reset_pool
        ClassicState state
        ClassicState* final_state
    void c_generate_reset_pool "generate_reset_pool"(ClassicState* pool, int first, int last, int pool_size, uint64_t pool_seed) nogil

cdef extern from *:
    "#define Env CraftaxClassic"

OBS_SIZE = CLASSIC_OBS_SIZE


def make_reset_pool(int size, uint64_t seed, int num_threads=1):
    """`size` worlds for reset pools, generated from split(PRNGKey(seed), size), as bytes."""
    if size < 1:
        raise ValueError(f"reset pool size must be >= 1, got {size}")
    cdef cnp.ndarray[cnp.uint8_t, ndim=1] pool = np.empty(size * sizeof(ClassicState), dtype=np.uint8)
    cdef ClassicState* worlds = <ClassicState*>cnp.PyArray_DATA(pool)
    cdef int chunk = 8
    cdef int first
    for first in prange(0, size, chunk, nogil=True, num_threads=max(num_threads, 1), schedule="dynamic"):
        c_generate_reset_pool(worlds, first, first + chunk, size, seed)
    return pool


cdef int point_at_pool(Env* env, pool) except -1:
    """The env resets from `pool` (make_reset_pool's bytes, kept alive by the caller), or generates
    its worlds when it is None."""
    if pool is None:
        env.reset_pool_size = 0
        env.reset_pool = NULL
        return 0
    cdef cnp.ndarray data = pool
    if (data.dtype != np.uint8 or data.ndim != 1 or not data.flags.c_contiguous or data.shape[0] == 0
            or data.shape[0] % sizeof(ClassicState) != 0):
        raise ValueError(f"a reset pool is make_reset_pool's bytes: whole Craftax-Classic states of {sizeof(ClassicState)} "
                         f"bytes in one contiguous uint8 array, got {data.dtype} {(<object>data).shape}")
    env.reset_pool_size = data.shape[0] // sizeof(ClassicState)
    env.reset_pool = <const ClassicState*>cnp.PyArray_DATA(data)
    return 0


cdef int configure(Env* env, dict params) except -1:
    return point_at_pool(env, params["reset_pool"])

include "vecenv.pxi"


def bind_reset_pool(CVecEnv envs, pool):
    """Points every env at `pool` again (None: no pool), after a checkpoint's bytes replaced their
    structs and the saving process's pointer with them."""
    cdef int i
    for i in range(envs.vec.num_envs):
        point_at_pool(&envs.vec.envs[i], pool)


def env_state_bytes(CVecEnv vecenv, int index):
    """Env ``index``'s game state as bytes (state_view.STATE_DTYPE), copied."""
    cdef Env* env = &vecenv.vec.envs[index]
    return np.frombuffer((<char*>&env.state)[:sizeof(ClassicState)], dtype=np.uint8).copy()


def load_env_state_bytes(CVecEnv vecenv, int index, data):
    """Replaces env ``index``'s game state by `data`, bytes laid out as env_state_bytes returns them."""
    if not 0 <= index < vecenv.vec.num_envs:
        raise IndexError(f"env index {index} is outside 0..{vecenv.vec.num_envs - 1}")
    cdef const uint8_t[:] view = np.ascontiguousarray(np.frombuffer(bytes(data), dtype=np.uint8))
    if view.shape[0] != sizeof(ClassicState):
        raise ValueError(f"a Craftax-Classic state is {sizeof(ClassicState)} bytes, got {view.shape[0]}")
    memcpy(&vecenv.vec.envs[index].state, &view[0], sizeof(ClassicState))


def keep_final_states(CVecEnv envs, states):
    """From now on, each env copies the state its episode ended in into its slot of `states`
    (num_envs x STATE_BYTES uint8 bytes, kept alive by the caller) before the autoreset replaces
    it; None stops the copies."""
    cdef int count = envs.vec.num_envs
    cdef int i
    if states is None:
        for i in range(count):
            envs.vec.envs[i].final_state = NULL
        return
    cdef cnp.ndarray[cnp.uint8_t, ndim=1] data = states
    if data.shape[0] != count * <long>sizeof(ClassicState):
        raise ValueError(f"{count} envs keep {count * sizeof(ClassicState)} bytes of final states, got {data.shape[0]}")
    cdef ClassicState* first = <ClassicState*>cnp.PyArray_DATA(data)
    for i in range(count):
        envs.vec.envs[i].final_state = first + i


# Pixel frames (render_pixels.h): the reference's Classic render_craftax_pixels, drawn from a
# texture atlas that ocean/craftax/textures.py reads from the reference's Classic PNGs.

cdef extern from "render_pixels.h":
    ctypedef struct ClassicTextures:
        int block
        const uint8_t* atlas
    int CLASSIC_RENDER_TEXTURE_COUNT
    const char* CLASSIC_RENDER_TEXTURE_FILES[]
    int classic_texture_keeps_alpha(int slot)
    int classic_texture_size(int slot, int block)
    long classic_texture_offset(int slot, int block)
    int classic_render_height(int block)
    int classic_render_width(int block)
    float classic_night_noise_weight(int y, int x, int height, int width)
    void classic_render_pixels(const ClassicState* s, const ClassicTextures* t, float* frame) nogil
    void classic_render_frame(const ClassicState* s, const ClassicTextures* t, float* scratch, uint8_t* frame) nogil

STATE_BYTES = sizeof(ClassicState)
# The smallest cell whose inventory icons keep a margin: the reference places them
# (block - int(0.8 block)) // 2 - 1 pixels into their cell.
MIN_BLOCK_PIXELS = 6


def texture_layout(int block):
    """(file name or None for a plain colour, byte offset, side in pixels, whether its alpha stays
    0 .. 255) of each atlas slot."""
    return [(None if CLASSIC_RENDER_TEXTURE_FILES[k] == NULL else CLASSIC_RENDER_TEXTURE_FILES[k].decode(),
             classic_texture_offset(k, block), classic_texture_size(k, block), bool(classic_texture_keeps_alpha(k)))
            for k in range(CLASSIC_RENDER_TEXTURE_COUNT)]


def atlas_bytes(int block):
    return classic_texture_offset(CLASSIC_RENDER_TEXTURE_COUNT, block)


def frame_shape(int block):
    """(height, width, 3) of a frame drawn with cells of `block` pixels."""
    return (classic_render_height(block), classic_render_width(block), 3)


def night_noise_weights(int block):
    """The weight of the night's noise at each pixel of the view, as the renderer computes it
    (the reference's night_noise_intensity_texture, one channel)."""
    cdef int height = classic_render_height(block) - 2 * block, width = classic_render_width(block)
    cdef cnp.ndarray[cnp.float32_t, ndim=2] out = np.empty((height, width), dtype=np.float32)
    cdef int y, x
    for y in range(height):
        for x in range(width):
            out[y, x] = classic_night_noise_weight(y, x, height, width)
    return out


cdef ClassicTextures classic_textures(cnp.ndarray[cnp.uint8_t, ndim=1] atlas, int block) except *:
    if block < MIN_BLOCK_PIXELS:
        raise ValueError(f"block must be at least {MIN_BLOCK_PIXELS} pixels, got {block}")
    if atlas.shape[0] != atlas_bytes(block):
        raise ValueError(f"a Classic texture atlas for {block}-pixel cells is {atlas_bytes(block)} bytes, got "
                         f"{atlas.shape[0]}: build it with ocean.craftax.textures.load_atlas(block, game='craftax_classic')")
    cdef ClassicTextures t
    t.block = block
    t.atlas = &atlas[0]
    return t


cdef const ClassicState* classic_state_pointer(cnp.ndarray[cnp.uint8_t, ndim=1] state) except NULL:
    if state.shape[0] != sizeof(ClassicState):
        raise ValueError(f"a Craftax-Classic state is {sizeof(ClassicState)} bytes, got {state.shape[0]}")
    return <const ClassicState*>&state[0]


def render_pixels(state, atlas, int block):
    """The frame of a game state (STATE_BYTES uint8 bytes) as the reference's float32 values."""
    cdef ClassicTextures t = classic_textures(np.ascontiguousarray(atlas, dtype=np.uint8), block)
    cdef cnp.ndarray[cnp.uint8_t, ndim=1] data = np.ascontiguousarray(state, dtype=np.uint8).reshape(-1)
    cdef const ClassicState* s = classic_state_pointer(data)
    cdef cnp.ndarray[cnp.float32_t, ndim=3] frame = np.empty(frame_shape(block), dtype=np.float32)
    with nogil:
        classic_render_pixels(s, &t, &frame[0, 0, 0])
    return frame


def render_frame(state, atlas, int block):
    """The frame of a game state as (height, width, 3) uint8 RGB: the reference's values truncated."""
    cdef ClassicTextures t = classic_textures(np.ascontiguousarray(atlas, dtype=np.uint8), block)
    cdef cnp.ndarray[cnp.uint8_t, ndim=1] data = np.ascontiguousarray(state, dtype=np.uint8).reshape(-1)
    cdef const ClassicState* s = classic_state_pointer(data)
    cdef cnp.ndarray[cnp.float32_t, ndim=3] scratch = np.empty(frame_shape(block), dtype=np.float32)
    cdef cnp.ndarray[cnp.uint8_t, ndim=3] frame = np.empty(frame_shape(block), dtype=np.uint8)
    with nogil:
        classic_render_frame(s, &t, &scratch[0, 0, 0], &frame[0, 0, 0])
    return frame
