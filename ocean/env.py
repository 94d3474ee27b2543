"""OceanEnv: the Python face of a compiled Ocean game."""

import inspect
import numbers

import gymnasium
import numpy as np

from pufferlib.environment import PufferEnv
from pufferlib.exceptions import APIUsageError, ParameterError, check_keywords

# Seeds are C uint64_t: env i of a batch seeded with s is seeded with s + i (mod 2**64).
SEED_LIMIT = 2**64


def check_int(env_name, name, value, minimum, maximum=None):
    """Validates an integer parameter, raising ParameterError that names it, its value and range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"{env_name}: {name} must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise ParameterError(f"{env_name}: {name} must be {bounds}, got {value}")
    return int(value)


def check_float(env_name, name, value, minimum, maximum, inclusive=True):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{env_name}: {name} must be a number, got {value!r}")
    inside = minimum <= value <= maximum if inclusive else minimum < value < maximum
    if not inside:
        interval = f"[{minimum}, {maximum}]" if inclusive else f"({minimum}, {maximum})"
        raise ParameterError(f"{env_name}: {name} must lie in {interval}, got {value}")
    return float(value)


def check_seed(env_name, seed):
    """A reset seed: None (0) or an integer in [0, 2**64); floats are refused, not truncated."""
    if seed is None:
        return 0
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ParameterError(f"{env_name}: seed must be an integer in [0, 2**64), got {seed!r}")
    if not 0 <= seed < SEED_LIMIT:
        raise ParameterError(f"{env_name}: seed must be an integer in [0, 2**64), got {seed}")
    return int(seed)


_last_pools = {}


def shared_reset_pool(binding, size, seed, num_threads):
    """A game's reset pool (``binding.make_reset_pool``'s worlds), read-only: envs built with the
    same size and seed share the last pool built for that game, since generating one takes
    milliseconds per world."""
    if _last_pools.get(binding.__name__, (None,))[0] != (size, seed):
        pool = binding.make_reset_pool(size, seed, num_threads)
        pool.flags.writeable = False
        _last_pools[binding.__name__] = ((size, seed), pool)
    return _last_pools[binding.__name__][1]


def keyword_names(function):
    return [name for name, parameter in inspect.signature(function).parameters.items()
            if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY) and name != "self"]


class OceanEnv(PufferEnv):
    """A batch of ``num_envs`` copies of one C game, stepped by the shared C vecenv.

    Subclasses set ``name``, ``binding`` (the compiled module), ``agents_per_env``, the single
    spaces, and call ``super().__init__`` with the game's parameters. Infos: every ``log_interval``
    steps, if episodes ended since the last report, one dict of their mean statistics.
    """

    name = "ocean"
    binding = None
    agents_per_env = 1
    closed = False

    def __new__(cls, *args, **kwargs):
        # Keyword arguments are checked here, before a subclass's __init__ does any work (a reset
        # pool can take seconds): a misspelled game parameter fails at once, with a suggestion.
        valid = keyword_names(cls.__init__) + [name for name in keyword_names(OceanEnv.__init__) if name != "num_envs"]
        check_keywords(f"{cls.__name__}()", kwargs, list(dict.fromkeys(valid)))
        return super().__new__(cls)

    def __init__(self, num_envs=1, num_threads=1, log_interval=16, buf=None, **params):
        self.num_envs = check_int(self.name, "num_envs", num_envs, 1)
        self.num_threads = check_int(self.name, "num_threads", num_threads, 1)
        self.log_interval = check_int(self.name, "log_interval", log_interval, 1)
        self.num_agents = self.num_envs * self.agents_per_env
        self.params = params
        super().__init__(buf)
        # Every agent of a C game is live at every step; the buffer given may start zeroed.
        self.masks[:] = True
        for buffer_name in ("observations", "actions", "rewards", "terminals", "truncations"):
            if not getattr(self, buffer_name).flags.c_contiguous:
                raise APIUsageError(f"{self.name}: buffer '{buffer_name}' must be C-contiguous")
        action_space = self.single_action_space
        if isinstance(action_space, gymnasium.spaces.Discrete):
            self.action_nvec = np.array([action_space.n], dtype=np.int32)
        else:
            self.action_nvec = np.asarray(action_space.nvec, dtype=np.int32).ravel()
        self.c_envs = self.binding.CVecEnv(
            self.observations, self.actions, self.rewards, self.terminals, self.truncations,
            self.num_envs, self.agents_per_env, self.num_threads, self.action_nvec, params,
        )
        self.started = False
        self.ticks = 0

    def reset(self, seed=0):
        if self.closed:
            raise APIUsageError(f"{self.name}: reset() after close(); build a new env")
        self.c_envs.reset(check_seed(self.name, seed))
        self.started = True
        self.ticks = 0
        self.c_envs.log()
        return self.observations, []

    def step(self, actions):
        if not self.started:
            raise APIUsageError(f"{self.name}: step() after close(); build a new env" if self.closed
                                else f"{self.name}: call reset() before step()")
        finished = self.c_envs.step(actions)
        if finished < 0:
            if finished == self.binding.NEEDS_CONVERSION:
                self._copy_actions(actions)
                finished = self.c_envs.step(self.actions)
            if finished < 0:
                self._raise_bad_action(-finished - 1)
        self.ticks += 1
        infos = []
        if self.ticks % self.log_interval == 0:
            log = self.c_envs.log()
            if log is not None:
                infos.append(log)
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def check_actions(self, actions):
        """Raises the error step() would raise for these actions, without stepping: every check
        step() makes (they are left in the action buffer, which the next step overwrites)."""
        if actions is not self.actions:
            self._copy_actions(actions)
        bad = self.c_envs.find_bad_action()
        if bad >= 0:
            self._raise_bad_action(bad)

    def _copy_actions(self, actions):
        given = np.asarray(actions)
        if given.shape != self.actions.shape:
            raise ValueError(
                f"{self.name}: actions must have shape {self.actions.shape} "
                f"(num_agents={self.num_agents}), got shape {given.shape}"
            )
        if given.dtype.kind not in "iu":
            raise ValueError(f"{self.name}: actions must be integers, got dtype {given.dtype}")
        np.copyto(self.actions, given, casting="unsafe")
        if given.dtype.itemsize > 4 and not np.array_equal(self.actions, given):
            raise ValueError(f"{self.name}: actions do not fit in int32: {given.min()}..{given.max()}")

    def _raise_bad_action(self, flat_index):
        dims = self.action_nvec.size
        agent, dim = divmod(flat_index, dims)
        value = int(self.actions.reshape(-1)[flat_index])
        where = f"agent {agent}" if dims == 1 else f"agent {agent}, component {dim}"
        raise ValueError(
            f"{self.name}: action {value} for {where} is outside the action space "
            f"{self.single_action_space} (valid: 0..{int(self.action_nvec[dim]) - 1})"
        )

    def log(self):
        """Mean episode statistics since the last report, or None when no episode ended."""
        return self.c_envs.log()

    def get_state(self):
        """Everything the next steps depend on (the C envs and the buffers they last wrote), for a
        checkpoint; None for a game that cannot be saved."""
        envs = self.c_envs.save_state()
        if envs is None or not self.started:
            return None
        buffers = {name: getattr(self, name).tobytes() for name in ("observations", "rewards", "terminals", "truncations", "masks")}
        return dict(name=self.name, params=self.params, num_envs=self.num_envs, envs=envs, ticks=self.ticks, buffers=buffers)

    def set_state(self, state):
        """Restores ``get_state``'s result into envs built with the same name, count and parameters."""
        if self.closed:
            raise APIUsageError(f"{self.name}: set_state() after close(); build a new env")
        mine = dict(name=self.name, params=self.params, num_envs=self.num_envs)
        theirs = {key: state.get(key) for key in mine}
        if theirs != mine:
            raise ValueError(f"{self.name}: saved state is of {theirs}, these envs are {mine}")
        self.c_envs.load_state(state["envs"])
        for name, data in state["buffers"].items():
            buffer = getattr(self, name)
            buffer[...] = np.frombuffer(data, dtype=buffer.dtype).reshape(buffer.shape)
        self.ticks = state["ticks"]
        self.started = True

    def render(self, index=0):
        """ANSI text of env ``index`` (a string; print it)."""
        if not self.started:
            raise APIUsageError(f"{self.name}: render() after close(); build a new env" if self.closed
                                else f"{self.name}: call reset() before render(): there is no game to show yet")
        check_int(self.name, "render index", index, 0, self.num_envs - 1)
        return self.c_envs.render(index)

    def keep_final_frames(self):
        """From now on, remembers each env's frame just before an autoreset replaces its finished
        episode (for viewers: the step that ends an episode returns the next one's first frame)."""
        self.c_envs.keep_final_frames()

    def final_frame(self, index=0):
        """ANSI text of env ``index``'s last frame of its latest finished episode (after
        ``keep_final_frames``; '' before an episode ended)."""
        check_int(self.name, "final_frame index", index, 0, self.num_envs - 1)
        return self.c_envs.final_frame(index)

    def close(self):
        """Ends the envs: reset, step and render raise afterwards. Closing twice is harmless."""
        self.started = False
        self.closed = True
