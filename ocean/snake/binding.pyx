cimport numpy as cnp
from libc.string cimport memcpy
import numpy as np

cdef extern from "snake.h":
    ctypedef struct Log:
        float score
        float deaths
        float food_eaten
        float longest
    ctypedef struct Env "Snake":
        int width, height, num_snakes, food, vision, max_length, episode_length
        int stride, ring
        unsigned char* grid
        int* bodies
        int* heads
        int* lengths
        int* directions
        int tick
    long snake_memory_bytes(const Env* env)
    void snake_bind_memory(Env* env, char* memory)
    void snake_write_observations(Env* env)

cdef extern from *:
    "#define Env Snake"


cdef class Boards:
    """The boards and bodies of a batch of envs, in one numpy buffer, handed out one per env."""
    cdef public object memory
    cdef long per_env
    cdef int count
    cdef int cursor

    def __cinit__(self, int count, dict params):
        cdef Env probe
        probe.width, probe.height, probe.vision = params["width"], params["height"], params["vision"]
        probe.num_snakes, probe.max_length = params["num_snakes"], params["max_length"]
        self.per_env = snake_memory_bytes(&probe)
        self.memory = np.zeros(count * self.per_env + 64, dtype=np.uint8)
        self.count = count
        self.cursor = 0

    cdef char* base(self):
        cdef char* data = <char*>cnp.PyArray_DATA(self.memory)
        return data + (64 - (<size_t>data) % 64) % 64  # cache-line aligned

    cdef char* take(self) except NULL:
        if self.cursor >= self.count:
            raise RuntimeError("more envs configured than boards allocated")
        self.cursor += 1
        return self.base() + (self.cursor - 1) * self.per_env

    def save(self):
        """Every env's board and bodies, as bytes (without the alignment padding, which differs
        between processes)."""
        return (<char*>self.base())[:self.count * self.per_env]

    def load(self, bytes data):
        if len(data) != self.count * self.per_env:
            raise ValueError(f"saved boards have {len(data)} bytes, these envs need {self.count * self.per_env}")
        memcpy(self.base(), <const char*>data, len(data))


cdef int configure(Env* env, dict params) except -1:
    env.width, env.height, env.vision = params["width"], params["height"], params["vision"]
    env.num_snakes, env.food = params["num_snakes"], params["food"]
    env.max_length, env.episode_length = params["max_length"], params["episode_length"]
    snake_bind_memory(env, (<Boards>params["boards"]).take())
    return 0

include "vecenv.pxi"


def rebind(CVecEnv vecenv, Boards boards):
    """Points each env at its own board again after its struct was restored from a checkpoint,
    whose pointers were the saving process's."""
    cdef long i
    for i in range(vecenv.vec.num_envs):
        snake_bind_memory(&vecenv.vec.envs[i], boards.base() + i * boards.per_env)


def get_snakes(CVecEnv vecenv, int index):
    """Env ``index``'s snakes as lists of (row, col) from tail to head, for tests."""
    cdef Env* env = &vecenv.vec.envs[index]
    snakes = []
    for s in range(env.num_snakes):
        cells = []
        for k in range(env.lengths[s] - 1, -1, -1):
            cell = env.bodies[s * env.ring + ((env.heads[s] - k) & (env.ring - 1))]
            cells.append((cell // env.stride - env.vision, cell % env.stride - env.vision))
        snakes.append(cells)
    return snakes


def get_grid(CVecEnv vecenv, int index):
    """Env ``index``'s board (without the wall padding), for tests."""
    cdef Env* env = &vecenv.vec.envs[index]
    rows = env.height + 2 * env.vision
    grid = np.asarray(<unsigned char[:rows * env.stride]>env.grid).reshape(rows, env.stride)
    return grid[env.vision:env.vision + env.height, env.vision:env.vision + env.width].copy()


def set_scene(CVecEnv vecenv, int index, snakes, food):
    """Replaces env ``index``'s board with the given snakes (lists of (row, col), tail to head,
    one per snake of the env) and food cells, for tests. Directions become the last move's."""
    cdef Env* env = &vecenv.vec.envs[index]
    if len(snakes) != env.num_snakes:
        raise ValueError(f"need {env.num_snakes} snakes, got {len(snakes)}")
    grid = get_grid(vecenv, index)
    grid[:] = 0
    for r, c in food:
        grid[r, c] = 1
    for s, cells in enumerate(snakes):
        if not 1 <= len(cells) <= env.max_length:
            raise ValueError(f"snake {s}: length must be 1..{env.max_length}")
        for k, (r, c) in enumerate(cells):
            if not (0 <= r < env.height and 0 <= c < env.width) or grid[r, c]:
                raise ValueError(f"snake {s}: cell {(r, c)} is off the board or taken")
            grid[r, c] = 3 if k == len(cells) - 1 else 2
            env.bodies[s * env.ring + k] = (r + env.vision) * env.stride + c + env.vision
        env.heads[s] = len(cells) - 1
        env.lengths[s] = len(cells)
        env.directions[s] = 0
        if len(cells) > 1:
            (r0, c0), (r1, c1) = cells[len(cells) - 2], cells[len(cells) - 1]
            env.directions[s] = {(-1, 0): 0, (1, 0): 1, (0, -1): 2, (0, 1): 3}[(r1 - r0, c1 - c0)]
    for r in range(env.height):
        for c in range(env.width):
            env.grid[(r + env.vision) * env.stride + c + env.vision] = grid[r, c]
    snake_write_observations(env)
