# Craftax's C game: the Ocean env (craftax.h, through the shared vecenv: CVecEnv), and the game
# logic exposed for parity checks against the JAX reference: the PRNG and samplers (jax_random.h),
# world generation (worldgen.h), the step (step.h) and observation encoding (observation.h).
# Keys are (2,) uint32 arrays, as jax.random.key_data(jax.random.PRNGKey(seed)).
cimport numpy as cnp
import numpy as np
from libc.stdint cimport uint8_t, uint32_t, int32_t, int16_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from cython.parallel cimport prange

cnp.import_array()

cdef extern from "worldgen.h":
    ctypedef struct Key:
        uint32_t w[2]
    ctypedef struct Inventory:
        pass
    ctypedef struct GameState:
        pass
    ctypedef struct WorldgenScratch:
        pass
    void c_threefry2x32 "threefry2x32"(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1, uint32_t* out0, uint32_t* out1)
    Key key_split_at(Key key, uint32_t i)
    Key key_fold_in(Key key, uint32_t data)
    uint32_t random_bits_at(Key key, uint32_t i)
    float uniform_at(Key key, uint32_t i)
    int32_t randint_at(Key key, uint32_t i, int32_t minval, int32_t maxval)
    void xla_cumsum(const float* x, float* out, int n, float* scratch)
    int choice_cumulative(Key key, const float* cumulative, int n)
    void c_permutation "permutation"(Key key, int n, int32_t* out)
    void c_generate_world "generate_world"(Key rng, GameState* state, WorldgenScratch* scratch)
    int NUM_LEVELS
    int MAP_SIZE
    void refresh_lit_rows(GameState* s, int level, int first_row, int last_row)

cdef extern from "step.h":
    int c_craftax_env_step "craftax_env_step"(Key key, GameState* s, int action, float* reward, WorldgenScratch* scratch)

cdef extern from "observation.h":
    int OBS_SIZE
    int COMPACT_OBS_BYTES
    int OBS_CELLS
    int OBS_SCALARS
    int COMPACT_CELL_BYTES
    int NUM_BLOCK_TYPES
    int NUM_ITEM_TYPES
    int NUM_MOB_CLASSES
    int MOB_TYPES_PER_CLASS
    int NUM_ACTIONS
    void write_observation(const GameState* s, float* out, int in_step)
    void write_compact_observation(const GameState* s, uint8_t* out, int in_step)
    int COMPACT_OBSERVATION_PARTS
    void write_compact_observation_part(const GameState* s, uint8_t* out, int part, int in_step)
    float full_observation_from_compact(const uint8_t* compact, int k)

cdef extern from "state_view.h":
    int state_field_count()
    const char* state_field_name(int field)
    int state_field_size(int field)
    char state_field_kind(int field)
    size_t state_field_offset(int field)

cdef Key as_key(key) except *:
    cdef cnp.ndarray[cnp.uint32_t, ndim=1] data = np.ascontiguousarray(key, dtype=np.uint32).reshape(2)
    cdef Key k
    k.w[0] = data[0]
    k.w[1] = data[1]
    return k

cdef object key_array(Key k):
    return np.array([k.w[0], k.w[1]], dtype=np.uint32)


def threefry2x32(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1):
    cdef uint32_t a, b
    c_threefry2x32(k0, k1, x0, x1, &a, &b)
    return a, b

def split(key, int num=2):
    cdef Key k = as_key(key)
    return np.stack([key_array(key_split_at(k, i)) for i in range(num)])

def fold_in(key, uint32_t data):
    return key_array(key_fold_in(as_key(key), data))

def bits(key, int size):
    cdef Key k = as_key(key)
    return np.array([random_bits_at(k, i) for i in range(size)], dtype=np.uint32)

def uniform(key, int size):
    cdef Key k = as_key(key)
    return np.array([uniform_at(k, i) for i in range(size)], dtype=np.float32)

def randint(key, int size, int32_t minval, int32_t maxval):
    cdef Key k = as_key(key)
    return np.array([randint_at(k, i, minval, maxval) for i in range(size)], dtype=np.int32)

def cumsum(x):
    cdef cnp.ndarray[cnp.float32_t, ndim=1] values = np.ascontiguousarray(x, dtype=np.float32)
    cdef int n = values.shape[0]
    if n == 0:
        raise ValueError("cumsum needs at least one value")
    cdef cnp.ndarray[cnp.float32_t, ndim=1] out = np.empty(n, dtype=np.float32)
    cdef cnp.ndarray[cnp.float32_t, ndim=1] scratch = np.empty(n // 7 + 32, dtype=np.float32)
    xla_cumsum(&values[0], &out[0], n, &scratch[0])
    return out

def choice(key, p):
    """One draw of jax.random.choice(key, len(p), p=p)."""
    cumulative = cumsum(p)
    cdef cnp.ndarray[cnp.float32_t, ndim=1] c = cumulative
    return choice_cumulative(as_key(key), &c[0], c.shape[0])

def permutation(key, int n):
    if not 0 < n <= 16:
        raise ValueError("permutation supports 1..16 elements")
    cdef cnp.ndarray[cnp.int32_t, ndim=1] out = np.empty(n, dtype=np.int32)
    c_permutation(as_key(key), n, &out[0])
    return out

def full_from_compact(compact):
    """The full observation read off a compact one, as the GPU env expands it."""
    cdef cnp.ndarray[cnp.uint8_t, ndim=1] data = np.ascontiguousarray(compact, dtype=np.uint8).reshape(-1)
    if data.shape[0] != COMPACT_OBS_BYTES:
        raise ValueError(f"a compact observation is {COMPACT_OBS_BYTES} bytes, got {data.shape[0]}")
    cdef cnp.ndarray[cnp.float32_t, ndim=1] out = np.empty(OBS_SIZE, dtype=np.float32)
    cdef int k
    for k in range(OBS_SIZE):
        out[k] = full_observation_from_compact(&data[0], k)
    return out

FIELD_DTYPES = {ord("u"): np.uint8, ord("h"): np.int16, ord("i"): np.int32, ord("f"): np.float32, ord("I"): np.uint32}


cdef class World:
    """A game state generated by generate_world(key); fields read back (and written, for test
    scenarios) by reference name; stepped as the reference's auto-resetting env."""
    cdef GameState* state
    cdef WorldgenScratch* scratch
    cdef int stepped  # the observation is a step's (1) or an episode's first (0)

    def __cinit__(self, key):
        self.state = <GameState*>malloc(sizeof(GameState))
        self.scratch = <WorldgenScratch*>malloc(sizeof(WorldgenScratch))
        c_generate_world(as_key(key), self.state, self.scratch)
        self.stepped = 0

    def __dealloc__(self):
        free(self.state)
        free(self.scratch)

    def step(self, key, int action):
        """EnvironmentAutoReset.step(key, state, action): returns (reward, done); a finished
        episode has already been replaced by the reset world."""
        if not 0 <= action < 43:
            raise ValueError(f"action must be in 0..42, got {action}")
        cdef float reward
        cdef int done = c_craftax_env_step(as_key(key), self.state, action, &reward, self.scratch)
        self.stepped = not done
        return reward, bool(done)

    def _bytes(self):
        """The state's bytes, live (valid while this World is)."""
        return np.asarray(<unsigned char[:sizeof(GameState)]><unsigned char*>self.state)

    def field(self, name):
        """One state field (reference name) as a flat numpy array."""
        return state_fields(self._bytes())[name].copy()

    def set_field(self, name, values):
        """Overwrites one state field (reference name) with `values`, for test scenarios."""
        target = state_fields(self._bytes())[name]
        data = np.ascontiguousarray(values, dtype=target.dtype).ravel()
        if data.nbytes != target.nbytes:
            raise ValueError(f"{name} holds {target.size} values, got {data.size}")
        target[:] = data
        if name == "light_map":
            for level in range(NUM_LEVELS):
                refresh_lit_rows(self.state, level, 0, MAP_SIZE)

    def fields(self):
        """Every state field as {reference name: numpy array}."""
        return {name: field.copy() for name, field in state_fields(self._bytes()).items()}

    def observation(self):
        cdef cnp.ndarray[cnp.float32_t, ndim=1] out = np.empty(OBS_SIZE, dtype=np.float32)
        write_observation(self.state, &out[0], self.stepped)
        return out

    def compact_observation(self):
        cdef cnp.ndarray[cnp.uint8_t, ndim=1] out = np.empty(COMPACT_OBS_BYTES, dtype=np.uint8)
        write_compact_observation(self.state, &out[0], self.stepped)
        return out

    def compact_observation_in_parts(self, parts):
        """The compact observation written part by part, in the order given (the GPU env's
        observation kernel writes them side by side), over bytes that start as 0xAB."""
        cdef cnp.ndarray[cnp.uint8_t, ndim=1] out = np.full(COMPACT_OBS_BYTES, 0xAB, dtype=np.uint8)
        for part in parts:
            if not 0 <= part < COMPACT_OBSERVATION_PARTS:
                raise ValueError(f"part {part} is not in [0, {COMPACT_OBSERVATION_PARTS})")
            write_compact_observation_part(self.state, &out[0], part, self.stepped)
        return out


# The Ocean env: puffer_craftax (full observations) and puffer_craftax_compact.

cdef extern from "craftax.h":
    ctypedef struct Log:
        float score
        float deepest_floor
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
        float make_arrow
        float make_torch
        float place_torch
        float make_diamond_sword
        float make_iron_armour
        float make_diamond_armour
        float enter_gnomish_mines
        float enter_dungeon
        float enter_sewers
        float enter_vault
        float enter_troll_mines
        float enter_fire_realm
        float enter_ice_realm
        float enter_graveyard
        float defeat_gnome_warrior
        float defeat_gnome_archer
        float defeat_orc_solider
        float defeat_orc_mage
        float defeat_lizard
        float defeat_kobold
        float defeat_troll
        float defeat_deep_thing
        float defeat_pigman
        float defeat_fire_elemental
        float defeat_frost_troll
        float defeat_ice_elemental
        float damage_necromancer
        float defeat_necromancer
        float eat_bat
        float eat_snail
        float find_bow
        float fire_bow
        float collect_sapphire
        float learn_fireball
        float cast_fireball
        float learn_iceball
        float cast_iceball
        float collect_ruby
        float make_diamond_pickaxe
        float open_chest
        float drink_potion
        float enchant_sword
        float enchant_armour
        float defeat_knight
        float defeat_archer
    ctypedef struct Env "Craftax":
        int* actions
        int compact
        int reset_pool_size
        const GameState* reset_pool
        GameState* state
        int played_action
        GameState* final_state
    void c_generate_reset_pool "generate_reset_pool"(GameState* pool, int first, int last, int pool_size, uint64_t pool_seed) nogil

cdef extern from *:
    "#define Env Craftax"


STATE_BYTES = sizeof(GameState)
# The observation layouts and action count, as the C headers define them.
LAYOUT = dict(
    obs_size=OBS_SIZE, compact_obs_bytes=COMPACT_OBS_BYTES, view_cells=OBS_CELLS, scalars=OBS_SCALARS,
    cell_bytes=COMPACT_CELL_BYTES, block_types=NUM_BLOCK_TYPES, item_types=NUM_ITEM_TYPES,
    mob_classes=NUM_MOB_CLASSES, mob_types=MOB_TYPES_PER_CLASS, actions=NUM_ACTIONS,
    observation_parts=COMPACT_OBSERVATION_PARTS,
)


cdef tuple log_field_names():
    cdef Log empty
    memset(&empty, 0, sizeof(Log))
    return tuple((<dict>empty).keys())


LOG_FIELDS = log_field_names()  # Log's fields in order, as log() names them


def make_reset_pool(int size, uint64_t seed, int num_threads=1):
    """`size` worlds for reset pools, generated from split(PRNGKey(seed), size), as bytes."""
    if size < 1:
        raise ValueError(f"reset pool size must be >= 1, got {size}")
    cdef cnp.ndarray[cnp.uint8_t, ndim=1] pool = np.empty(size * sizeof(GameState), dtype=np.uint8)
    cdef GameState* worlds = <GameState*>cnp.PyArray_DATA(pool)
    cdef int chunk = 8
    cdef int first
    for first in prange(0, size, chunk, nogil=True, num_threads=max(num_threads, 1), schedule="dynamic"):
        c_generate_reset_pool(worlds, first, first + chunk, size, seed)
    return pool


cdef class StateBuffer:
    """The game states of a batch of envs, handed out one per configured env."""
    cdef public object states
    cdef int cursor
    cdef int count

    def __cinit__(self, int count):
        self.states = np.zeros(count * sizeof(GameState), dtype=np.uint8)
        self.count = count
        self.cursor = 0

    cdef GameState* take(self) except NULL:
        if self.cursor >= self.count:
            raise RuntimeError("more envs configured than states allocated")
        cdef GameState* state = <GameState*>cnp.PyArray_DATA(self.states) + self.cursor
        self.cursor += 1
        return state


cdef int configure(Env* env, dict params) except -1:
    env.compact = params["compact"]
    env.state = (<StateBuffer>params["states"]).take()
    pool = params["reset_pool"]
    if pool is None:
        env.reset_pool_size = 0
        env.reset_pool = NULL
    else:
        env.reset_pool_size = pool.nbytes // sizeof(GameState)
        env.reset_pool = <const GameState*>cnp.PyArray_DATA(pool)
    return 0


include "vecenv.pxi"


def keep_final_states(CVecEnv envs, cnp.ndarray[cnp.uint8_t, ndim=1] states):
    """From now on, each env copies the state its episode ended in into its slot of `states`
    (num_envs x STATE_BYTES bytes, kept alive by the caller) before the autoreset replaces it."""
    cdef int count = envs.vec.num_envs
    if states.shape[0] != count * <long>sizeof(GameState):
        raise ValueError(f"{count} envs keep {count * sizeof(GameState)} bytes of final states, got {states.shape[0]}")
    cdef GameState* first = <GameState*>cnp.PyArray_DATA(states)
    cdef int i
    for i in range(count):
        envs.vec.envs[i].final_state = first + i


def state_fields(state):
    """Every field of a game state held as STATE_BYTES bytes (a reset pool world, a state copied
    from an env) as {reference name: numpy view of those bytes}: writing a view edits the bytes."""
    data = np.asarray(state)
    if data.dtype != np.uint8 or data.ndim != 1 or data.shape[0] != sizeof(GameState):
        raise ValueError(f"a game state is {sizeof(GameState)} uint8 bytes in one dimension, got {data.dtype} {data.shape}")
    out = {}
    cdef int f
    cdef size_t offset
    for f in range(state_field_count()):
        offset = state_field_offset(f)
        field = data[offset:offset + state_field_size(f)]
        out[state_field_name(f).decode()] = field.view(FIELD_DTYPES[state_field_kind(f)])
    return out


def render_state(cnp.ndarray[cnp.uint8_t, ndim=1] state, int action):
    """c_render of a game state (STATE_BYTES bytes, e.g. copied from the GPU env) whose last step
    played `action`."""
    if state.shape[0] != sizeof(GameState):
        raise ValueError(f"a game state is {sizeof(GameState)} bytes, got {state.shape[0]}")
    cdef Env env
    memset(&env, 0, sizeof(Env))
    env.state = <GameState*>cnp.PyArray_DATA(state)
    env.actions = &action
    env.played_action = action
    cdef bytearray text = bytearray(RENDER_CAPACITY)
    cdef int length = c_render(&env, <char*>text, RENDER_CAPACITY)
    return text[:length].decode()


# Pixel frames (render_pixels.h): the reference's render_craftax_pixels, drawn from a texture
# atlas that ocean/craftax/textures.py reads from the reference's PNGs.

cdef extern from "render_pixels.h":
    ctypedef struct RenderTextures:
        int block
        const uint8_t* atlas
    int RENDER_TEXTURE_COUNT
    const char* RENDER_TEXTURE_FILES[]
    int render_texture_size(int slot, int block)
    long render_texture_offset(int slot, int block)
    int render_height(int block)
    int render_width(int block)
    void c_render_pixels "render_pixels"(const GameState* s, const RenderTextures* t, float* frame) nogil
    void c_render_frame "render_frame"(const GameState* s, const RenderTextures* t, float* scratch, uint8_t* frame) nogil
    void c_render_observation "render_observation"(const GameState* s, const RenderTextures* t, float* observation) nogil

# The smallest cell that still has room for the inventory's digits (int(0.4 x block) pixels).
MIN_BLOCK_PIXELS = 3


def texture_layout(int block):
    """(file name or None for a plain colour, byte offset, side in pixels) of each atlas slot."""
    return [(None if RENDER_TEXTURE_FILES[k] == NULL else RENDER_TEXTURE_FILES[k].decode(),
             render_texture_offset(k, block), render_texture_size(k, block)) for k in range(RENDER_TEXTURE_COUNT)]


def atlas_bytes(int block):
    return render_texture_offset(RENDER_TEXTURE_COUNT, block)


def frame_shape(int block):
    """(height, width, 3) of a frame drawn with cells of `block` pixels."""
    return (render_height(block), render_width(block), 3)


cdef RenderTextures render_textures(cnp.ndarray[cnp.uint8_t, ndim=1] atlas, int block) except *:
    if block < MIN_BLOCK_PIXELS:
        raise ValueError(f"block must be at least {MIN_BLOCK_PIXELS} pixels, got {block}")
    if atlas.shape[0] != atlas_bytes(block):
        raise ValueError(f"a texture atlas for {block}-pixel cells is {atlas_bytes(block)} bytes, got {atlas.shape[0]}: "
                         "build it with ocean.craftax.textures.load_atlas(block)")
    cdef RenderTextures t
    t.block = block
    t.atlas = &atlas[0]
    return t


cdef const GameState* state_pointer(cnp.ndarray[cnp.uint8_t, ndim=1] state) except NULL:
    if state.shape[0] != sizeof(GameState):
        raise ValueError(f"a game state is {sizeof(GameState)} bytes, got {state.shape[0]}")
    return <const GameState*>&state[0]


def render_pixels(state, atlas, int block):
    """The frame of a game state (STATE_BYTES uint8 bytes) as the reference's float32 values."""
    cdef RenderTextures t = render_textures(np.ascontiguousarray(atlas, dtype=np.uint8), block)
    cdef const GameState* s = state_pointer(np.ascontiguousarray(state, dtype=np.uint8))
    cdef cnp.ndarray[cnp.float32_t, ndim=3] frame = np.empty(frame_shape(block), dtype=np.float32)
    with nogil:
        c_render_pixels(s, &t, &frame[0, 0, 0])
    return frame


def render_frame(state, atlas, int block):
    """The frame of a game state as (height, width, 3) uint8 RGB: the reference's values truncated."""
    cdef RenderTextures t = render_textures(np.ascontiguousarray(atlas, dtype=np.uint8), block)
    cdef const GameState* s = state_pointer(np.ascontiguousarray(state, dtype=np.uint8))
    cdef cnp.ndarray[cnp.float32_t, ndim=3] scratch = np.empty(frame_shape(block), dtype=np.float32)
    cdef cnp.ndarray[cnp.uint8_t, ndim=3] frame = np.empty(frame_shape(block), dtype=np.uint8)
    with nogil:
        c_render_frame(s, &t, &scratch[0, 0, 0], &frame[0, 0, 0])
    return frame


def render_observations(states, atlas, int block, cnp.ndarray[cnp.float32_t, ndim=4] out, int num_threads=1):
    """The pixel observations of a batch of game states (num_envs x STATE_BYTES bytes) into `out`
    (num_envs x height x width x 3 float32), on `num_threads` threads."""
    cdef RenderTextures t = render_textures(np.ascontiguousarray(atlas, dtype=np.uint8), block)
    cdef cnp.ndarray[cnp.uint8_t, ndim=1] data = np.ascontiguousarray(states, dtype=np.uint8).reshape(-1)
    cdef int count = out.shape[0]
    if data.shape[0] != count * <long>sizeof(GameState) or (out.shape[1], out.shape[2], out.shape[3]) != frame_shape(block):
        raise ValueError(f"{count} observations of shape {frame_shape(block)} need {count} game states, "
                         f"got {data.shape[0]} bytes and observations of shape {(out.shape[1], out.shape[2], out.shape[3])}")
    if not out.flags.c_contiguous:
        raise ValueError("the observation buffer must be C-contiguous")
    cdef const GameState* first = <const GameState*>&data[0]
    cdef float* target = &out[0, 0, 0, 0]
    cdef long values = render_height(block) * render_width(block) * 3
    cdef int i
    for i in prange(count, nogil=True, num_threads=max(num_threads, 1), schedule="static"):
        c_render_observation(first + i, &t, target + i * values)
