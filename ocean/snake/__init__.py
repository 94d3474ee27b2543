import gymnasium
import numpy as np

from ocean.env import OceanEnv, check_int
from ocean.snake import binding
from pufferlib.exceptions import ParameterError


class Snake(OceanEnv):
    """Many snakes on one board: ``num_snakes`` agents per env on a ``width`` x ``height`` grid.

    Each snake sees the (2 ``vision`` + 1)^2 cells around its head (uint8: 0 empty, 1 food,
    2 body, 3 head, 4 wall) and moves up, down, left or right. Eating one of the ``food`` pieces
    grows it by one (up to ``max_length``) and pays +1; running into a wall or a body kills it
    (-1, terminal for that snake) and it respawns at length 1. Boards run episodes of
    ``episode_length`` steps. Score: the mean length of a snake's life. Agents of env i are rows
    i * num_snakes ... (i + 1) * num_snakes - 1.
    """

    name = "puffer_snake"
    binding = binding
    optimal_score = None  # longer is better; there is no fixed optimum

    def __init__(self, num_envs=1, width=32, height=32, num_snakes=8, food=32, vision=5, max_length=64,
                 episode_length=1024, **kwargs):
        width = check_int(self.name, "width", width, 4, 4096)
        height = check_int(self.name, "height", height, 4, 4096)
        num_snakes = check_int(self.name, "num_snakes", num_snakes, 1, 65536)
        food = check_int(self.name, "food", food, 0)
        vision = check_int(self.name, "vision", vision, 1, 15)
        max_length = check_int(self.name, "max_length", max_length, 1, 65536)
        episode_length = check_int(self.name, "episode_length", episode_length, 1)
        cells = width * height
        if num_snakes * max_length + food >= cells:
            raise ParameterError(
                f"{self.name}: num_snakes * max_length + food must be less than width * height = {cells} "
                f"(every snake at full length and all the food need room, with a cell to spare for "
                f"respawns), got {num_snakes} * {max_length} + {food} = {num_snakes * max_length + food}"
            )
        self.agents_per_env = num_snakes
        view = 2 * vision + 1
        self.single_observation_space = gymnasium.spaces.Box(0, 4, (view * view,), np.uint8)
        self.single_action_space = gymnasium.spaces.Discrete(4)
        params = dict(width=width, height=height, num_snakes=num_snakes, food=food, vision=vision,
                      max_length=max_length, episode_length=episode_length)
        self.boards = binding.Boards(check_int(self.name, "num_envs", num_envs, 1), params)
        super().__init__(num_envs, boards=self.boards, **params, **kwargs)
        self.params = params  # the game's parameters, without the memory lent to the C envs

    def get_state(self):
        state = super().get_state()
        if state is not None:
            state["boards"] = self.boards.save()
        return state

    def set_state(self, state):
        super().set_state(state)
        self.boards.load(state["boards"])
        binding.rebind(self.c_envs, self.boards)

    def _index(self, index):
        return check_int(self.name, "index", index, 0, self.num_envs - 1)

    def snakes(self, index=0):
        """Env ``index``'s snakes: lists of (row, col) cells from tail to head."""
        return binding.get_snakes(self.c_envs, self._index(index))

    def grid(self, index=0):
        """Env ``index``'s board: height x width of cell codes."""
        return binding.get_grid(self.c_envs, self._index(index))

    def set_scene(self, snakes, food=(), index=0):
        """Replaces env ``index``'s board with these snakes (tail to head) and food; for tests."""
        binding.set_scene(self.c_envs, self._index(index), snakes, food)
