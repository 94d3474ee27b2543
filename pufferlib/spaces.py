"""Flat layouts for structured Gymnasium spaces.

Emulation stores every observation in one flat row and every action in one flat integer vector, so
vectorization, shared memory and models only ever see fixed-size arrays. This module computes those
layouts once per space and builds the fast per-step functions that move data in and out of them:

- ``ObservationLayout``: a Dict/Tuple/leaf observation space becomes one flat ``Box``. The bytes of
  the row are described by an aligned numpy structured dtype (``layout.dtype``), so nothing is lost:
  when every leaf shares one dtype the row has that dtype, otherwise the row is raw ``uint8`` bytes.
- ``ActionLayout``: a structured action space of Discrete/MultiDiscrete/MultiBinary leaves becomes
  one ``MultiDiscrete``; flat spaces pass through (a Discrete or MultiDiscrete with a nonzero
  ``start`` is shifted to start at 0, which is what the int32 action buffers and C envs assume).
"""

from dataclasses import dataclass

import gymnasium
import numpy as np
from gymnasium import spaces

from pufferlib.exceptions import APIUsageError

LEAF_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
STRUCTURED_SPACES = (spaces.Dict, spaces.Tuple)


def describe_path(path):
    """Human-readable location of a leaf, e.g. ``obs['inventory'][2]``."""
    return "obs" + "".join(f"[{key!r}]" for key in path)


def iterate_leaves(space, path=()):
    """Yields (path, leaf space) for every leaf, depth first, in the space's own key order."""
    if isinstance(space, spaces.Dict):
        if len(space.spaces) == 0:
            raise APIUsageError(f"{describe_path(path)}: empty Dict spaces carry no data; remove them")
        for key, child in space.spaces.items():
            if not isinstance(key, str):
                raise APIUsageError(
                    f"{describe_path(path)}: Dict keys must be strings to name structured fields, got {key!r}"
                )
            yield from iterate_leaves(child, (*path, key))
    elif isinstance(space, spaces.Tuple):
        if len(space.spaces) == 0:
            raise APIUsageError(f"{describe_path(path)}: empty Tuple spaces carry no data; remove them")
        for index, child in enumerate(space.spaces):
            yield from iterate_leaves(child, (*path, index))
    elif isinstance(space, LEAF_SPACES):
        yield path, space
    else:
        raise APIUsageError(
            f"{describe_path(path)}: {type(space).__name__} spaces are not supported; use nested "
            "Dict/Tuple of Box, Discrete, MultiDiscrete and MultiBinary"
        )


def leaf_dtype_and_shape(space):
    """How one leaf is stored: its own dtype (no precision lost) and the shape of one sample."""
    if isinstance(space, spaces.Discrete):
        return np.dtype(space.dtype), ()
    if isinstance(space, spaces.MultiDiscrete):
        return np.dtype(space.dtype), tuple(space.nvec.shape)
    return np.dtype(space.dtype), tuple(space.shape)


def leaf_bounds(space):
    """Flattened (low, high) of one leaf, for the bounds of the flat Box."""
    if isinstance(space, spaces.Box):
        return space.low.ravel(), space.high.ravel()
    if isinstance(space, spaces.Discrete):
        return np.array([space.start]), np.array([space.start + space.n - 1])
    if isinstance(space, spaces.MultiDiscrete):
        return space.start.ravel(), (space.start + space.nvec - 1).ravel()
    size = int(np.prod(space.shape))
    return np.zeros(size), np.ones(size)


def structured_dtype(space):
    """The aligned numpy structured dtype of a Dict/Tuple space (Tuple fields are named '0', '1', ...).

    Aligned so that every field starts at a multiple of its own size: torch can then reinterpret
    the bytes of a field in place (``Tensor.view(dtype)``) without copying.
    """
    fields = []
    items = space.spaces.items() if isinstance(space, spaces.Dict) else enumerate(space.spaces)
    for key, child in items:
        name = str(key)
        if isinstance(child, STRUCTURED_SPACES):
            fields.append((name, structured_dtype(child)))
        else:
            dtype, shape = leaf_dtype_and_shape(child)
            fields.append((name, dtype, shape) if shape else (name, dtype))
    return np.dtype(fields, align=True)


@dataclass(frozen=True)
class Leaf:
    """One leaf of a structured observation and where it lives in the flat row."""

    path: tuple
    space: gymnasium.Space
    dtype: np.dtype
    shape: tuple
    byte_offset: int

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize


class ObservationLayout:
    """Flat layout of one agent's observation space.

    Attributes:
        space: the native space.
        flat_space: the Box emulated envs expose.
        passthrough: True for Box spaces, which are kept as they are (shape included).
        dtype: structured numpy dtype of the row for Dict/Tuple spaces, else None.
        leaves: the leaves with their byte offsets (a single leaf at offset 0 for leaf spaces).
        typed: True when all leaves share one dtype, so the row has that dtype; False when the row
            is raw bytes (``uint8``).
    """

    def __init__(self, space):
        self.space = space
        self.passthrough = isinstance(space, spaces.Box)
        leaf_list = list(iterate_leaves(space))
        if isinstance(space, STRUCTURED_SPACES):
            self.dtype = structured_dtype(space)
            self.leaves = [
                Leaf(path, leaf, *leaf_dtype_and_shape(leaf), self._offset(path)) for path, leaf in leaf_list
            ]
            row_bytes = self.dtype.itemsize
        else:
            self.dtype = None
            dtype, shape = leaf_dtype_and_shape(space)
            self.leaves = [Leaf((), space, dtype, shape, 0)]
            row_bytes = self.leaves[0].nbytes
        leaf_dtypes = {leaf.dtype for leaf in self.leaves}
        self.typed = len(leaf_dtypes) == 1
        if self.passthrough:
            self.flat_space = space
        elif self.typed:
            row_dtype = leaf_dtypes.pop()
            bounds = [leaf_bounds(leaf.space) for leaf in self.leaves]
            low = np.concatenate([lo for lo, _ in bounds]).astype(row_dtype)
            high = np.concatenate([hi for _, hi in bounds]).astype(row_dtype)
            self.flat_space = spaces.Box(low=low, high=high, dtype=row_dtype)
        else:
            self.flat_space = spaces.Box(low=0, high=255, shape=(row_bytes,), dtype=np.uint8)

    def _offset(self, path):
        dtype, offset = self.dtype, 0
        for key in path:
            dtype, field_offset = dtype.fields[str(key)][:2]
            offset += field_offset
        return offset

    def row_views(self, row):
        """Writable views of each leaf inside ``row`` (one agent's flat observation buffer)."""
        if self.dtype is None:
            return [row.reshape(self.leaves[0].shape)]
        record = row.view(self.dtype)
        views = []
        for leaf in self.leaves:
            field = record
            for key in leaf.path:
                field = field[str(key)]
            # field has shape (1, *leaf shape); reshape keeps a view even for scalar leaves.
            views.append(field.reshape(leaf.shape))
        return views

    def writer(self, row):
        """A function that copies one native observation into ``row`` in place.

        Every write checks each leaf's shape first: numpy would broadcast a wrong-shaped leaf
        (shape (1,) into a row of 4) silently, and the row may be shared memory other envs read.
        """
        if self.passthrough:
            shape = self.space.shape

            def write_box(observation):
                if _shape(observation) != shape:
                    raise ValueError(
                        f"obs: expected shape {shape} for {self.space}, got shape {np.shape(observation)}"
                    )
                row[...] = observation

            return write_box
        checks = [(leaf.path, view, view.shape) for leaf, view in zip(self.leaves, self.row_views(row))]

        def write_structured(observation):
            for path, view, shape in checks:
                value = observation
                for key in path:
                    value = value[key]
                try:  # inlined _shape: this loop runs once per leaf per step
                    got = value.shape
                except AttributeError:
                    got = np.shape(value)
                if got != shape:
                    raise ValueError(f"{describe_path(path)}: expected shape {shape}, got shape {got}")
                view[...] = value

        return write_structured

    def nativize(self, flat):
        """Rebuilds the native observation(s) from flat row(s) of shape (..., row size).

        Leaves come back as views of ``flat`` (copy them to keep them past the next step). Discrete
        leaves of a single observation come back as numpy integer scalars, as Gymnasium samples do.
        """
        flat = np.asarray(flat)
        if self.passthrough:
            return flat
        batch = flat.shape[:-1]
        if self.dtype is None:
            leaf = self.leaves[0]
            value = flat.reshape((*batch, *leaf.shape))
            return value[()] if value.ndim == 0 else value
        record = np.ascontiguousarray(flat).view(self.dtype).reshape(batch)
        return _nativize_record(self.space, record)


def _shape(value):
    """``np.shape`` without its function-call overhead for arrays and numpy scalars (the hot case)."""
    try:
        return value.shape
    except AttributeError:
        return np.shape(value)


def _nativize_record(space, record):
    if isinstance(space, spaces.Dict):
        return {key: _nativize_record(child, record[key]) for key, child in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_nativize_record(child, record[str(index)]) for index, child in enumerate(space.spaces))
    return record[()] if record.ndim == 0 else record


def check_observation(space, observation, path=()):
    """Checks once, at start-up, that an observation has the structure and shapes of its space.

    Values are not range-checked: only what flattening needs (keys, lengths, shapes) is verified.
    """
    where = describe_path(path)
    if isinstance(space, spaces.Dict):
        if not isinstance(observation, dict):
            raise APIUsageError(f"{where}: expected a dict for {space}, got {type(observation).__name__}")
        missing = [key for key in space.spaces if key not in observation]
        if missing:
            raise APIUsageError(f"{where}: observation lacks keys {missing} of its Dict space")
        for key, child in space.spaces.items():
            check_observation(child, observation[key], (*path, key))
    elif isinstance(space, spaces.Tuple):
        if not isinstance(observation, (tuple, list)) or len(observation) != len(space.spaces):
            raise APIUsageError(
                f"{where}: expected a tuple of {len(space.spaces)} items for {space}, got {observation!r:.200}"
            )
        for index, child in enumerate(space.spaces):
            check_observation(child, observation[index], (*path, index))
    else:
        _, shape = leaf_dtype_and_shape(space)
        got = np.shape(observation)
        if got != shape:
            raise APIUsageError(f"{where}: expected shape {shape} for {space}, got shape {got}")


UNSIGNED_OF_WIDTH = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


class ActionBounds:
    """Vectorized validity check of flat actions (one or a batch) for a flat action space.

    Discrete and MultiDiscrete actions must be integers (not bool, not float: casting would
    truncate 1.9 to 1 and wrap 2**32 + 1 to 1 in the int32 buffers) within [0, n). Box actions
    must be numeric; their range is not checked, as policies commonly emit unclipped values that
    envs clip.
    """

    def __init__(self, space):
        self.space = space
        self.discrete = isinstance(space, (spaces.Discrete, spaces.MultiDiscrete))
        if isinstance(space, spaces.Discrete):
            self.high = int(space.n)
        elif isinstance(space, spaces.MultiDiscrete):
            self.high = space.nvec.ravel()
        else:
            self.high = None

    def dtype_problem(self, actions):
        """Why ``actions``' dtype is unfit, or None."""
        kind = actions.dtype.kind
        if self.discrete and kind not in "iu":
            return f"actions for {self.space} must be integers, got dtype {actions.dtype}"
        if kind not in "iuf":
            return f"actions for {self.space} must be numbers, got dtype {actions.dtype}"
        return None

    def out_of_range(self, actions):
        """True if any integer action lies outside the space.

        Seen as unsigned integers of the same width, negative actions become huge, so one
        comparison with the upper bound catches both ends (one reduction for Discrete).
        """
        if self.high is None or actions.size == 0:
            return False
        unsigned = actions.view(UNSIGNED_OF_WIDTH[actions.dtype.itemsize])
        if isinstance(self.high, int):
            return np.maximum.reduce(unsigned, axis=None) >= self.high
        return bool((unsigned >= self.high).any())

    def bad_rows(self, actions):
        """Indices of the rows (one action each) that are outside the space; for error messages."""
        flat = actions.reshape(len(actions), -1)
        return np.flatnonzero(((flat < 0) | (flat >= self.high)).any(axis=1))


class ActionLayout:
    """Flat layout of one agent's action space: Discrete, MultiDiscrete or Box.

    ``flat_space`` is what emulated envs accept; ``nativizer()`` builds the function that turns one
    flat action back into the native action the wrapped env expects.
    """

    def __init__(self, space):
        self.space = space
        if isinstance(space, spaces.Discrete):
            self.flat_space = spaces.Discrete(int(space.n))
        elif isinstance(space, spaces.MultiDiscrete):
            self.flat_space = spaces.MultiDiscrete(space.nvec.ravel())
        elif isinstance(space, spaces.Box):
            self.flat_space = space
        elif isinstance(space, (spaces.MultiBinary, *STRUCTURED_SPACES)):
            nvecs = []
            for path, leaf in iterate_leaves(space):
                if isinstance(leaf, spaces.Box):
                    raise APIUsageError(
                        f"action{''.join(f'[{key!r}]' for key in path)}: continuous Box components inside a "
                        "structured action space cannot be flattened to MultiDiscrete; give the env a flat "
                        "Box action space, or discretize this component"
                    )
                nvecs.append(_leaf_nvec(leaf))
            self.flat_space = spaces.MultiDiscrete(np.concatenate(nvecs))
        else:
            raise APIUsageError(f"{type(space).__name__} action spaces are not supported")

    def nativizer(self):
        space = self.space
        if isinstance(space, spaces.Discrete):
            start = int(space.start)
            if start == 0:
                return int
            return lambda action: int(action) + start
        if isinstance(space, spaces.MultiDiscrete):
            shape, start, dtype = space.nvec.shape, space.start, space.dtype
            return lambda action: (np.asarray(action).reshape(shape) + start).astype(dtype)
        if isinstance(space, spaces.Box):
            shape, dtype = space.shape, space.dtype
            return lambda action: np.array(action, dtype=dtype).reshape(shape)
        build = _compile_structured_action(space, 0)[0]
        return lambda action: build(np.asarray(action))


def _leaf_nvec(leaf):
    if isinstance(leaf, spaces.Discrete):
        return np.array([leaf.n], dtype=np.int64)
    if isinstance(leaf, spaces.MultiDiscrete):
        return leaf.nvec.ravel().astype(np.int64)
    return np.full(int(np.prod(leaf.shape)), 2, dtype=np.int64)


def _compile_structured_action(space, offset):
    """Returns (function flat -> native, number of flat entries used) for the sub-space at offset."""
    if isinstance(space, spaces.Dict):
        parts = []
        start = offset
        for key, child in space.spaces.items():
            build, used = _compile_structured_action(child, offset)
            parts.append((key, build))
            offset += used
        return (lambda action: {key: build(action) for key, build in parts}), offset - start
    if isinstance(space, spaces.Tuple):
        builds = []
        start = offset
        for child in space.spaces:
            build, used = _compile_structured_action(child, offset)
            builds.append(build)
            offset += used
        return (lambda action: tuple(build(action) for build in builds)), offset - start
    if isinstance(space, spaces.Discrete):
        index, first = offset, int(space.start)
        return (lambda action: np.int64(action[index] + first)), 1
    if isinstance(space, spaces.MultiDiscrete):
        size = space.nvec.size
        end, shape, start, dtype = offset + size, space.nvec.shape, space.start, space.dtype
        return (lambda action: (action[offset:end].reshape(shape) + start).astype(dtype)), size
    size = int(np.prod(space.shape))
    end, shape, dtype = offset + size, space.shape, space.dtype
    return (lambda action: action[offset:end].reshape(shape).astype(dtype)), size


def flatten_action(space, action):
    """The flat action for a native one: the inverse of ``ActionLayout(space).nativizer()``."""
    if isinstance(space, spaces.Discrete):
        return int(action) - int(space.start)
    if isinstance(space, spaces.Box):
        return np.asarray(action, dtype=space.dtype)
    if isinstance(space, spaces.MultiDiscrete):
        return (np.asarray(action) - space.start).ravel()
    return np.concatenate([_flatten_action_leaf(leaf, value) for leaf, value in _action_leaves(space, action)])


def _action_leaves(space, action):
    if isinstance(space, spaces.Dict):
        for key, child in space.spaces.items():
            yield from _action_leaves(child, action[key])
    elif isinstance(space, spaces.Tuple):
        for child, value in zip(space.spaces, action):
            yield from _action_leaves(child, value)
    else:
        yield space, action


def _flatten_action_leaf(leaf, value):
    if isinstance(leaf, spaces.Discrete):
        return np.array([int(value) - int(leaf.start)])
    if isinstance(leaf, spaces.MultiDiscrete):
        return (np.asarray(value) - leaf.start).ravel()
    return np.asarray(value).ravel()
