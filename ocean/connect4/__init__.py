import gymnasium
import numpy as np

from ocean.connect4 import binding
from ocean.env import OceanEnv, check_int
from pufferlib.exceptions import ParameterError

MODES = ("opponent", "selfplay")


class Connect4(OceanEnv):
    """Connect Four (7 columns, 6 rows) against a negamax opponent or in self-play.

    ``mode="opponent"``: the agent moves first against alpha-beta negamax searching ``depth``
    plies (0: random legal moves); ties between its best moves are broken with the env's rng.
    ``mode="selfplay"``: two agents per env (rows 2i and 2i + 1) take turns; who starts is drawn
    each game and the waiting agent's action is ignored. Observation (uint8, 43): the cells row by
    row from the top (0 empty, 1 own, 2 other's), then 1 when on move. Actions: a column 0..6; a
    full column loses. Rewards +1 win, -1 loss, 0 draw. Score: the win rate (self-play: the first
    mover's).
    """

    name = "puffer_connect4"
    binding = binding
    optimal_score = 1.0

    def __init__(self, num_envs=1, mode="opponent", depth=3, **kwargs):
        if mode not in MODES:
            raise ParameterError(f"{self.name}: mode must be one of {', '.join(MODES)}, got {mode!r}")
        depth = check_int(self.name, "depth", depth, 0, 8)
        self.mode = mode
        self.agents_per_env = 2 if mode == "selfplay" else 1
        if mode == "selfplay":
            self.optimal_score = None  # the first mover's win rate has no fixed optimum to reach
        self.single_observation_space = gymnasium.spaces.Box(0, 2, (43,), np.uint8)
        self.single_action_space = gymnasium.spaces.Discrete(7)
        super().__init__(num_envs, depth=depth, selfplay=int(mode == "selfplay"), **kwargs)

    def board(self, index=0):
        """Env ``index``'s board (rows from the top: 0 empty, 1 player 0, 2 player 1) and the player to move."""
        cells, to_move = binding.get_board(self.c_envs, check_int(self.name, "index", index, 0, self.num_envs - 1))
        return np.array(cells, np.int32), to_move

    def set_board(self, board, to_move=0, index=0):
        """Puts a position on env ``index`` (same layout as board()); for tests and puzzles."""
        board = np.asarray(board)
        if board.shape != (6, 7) or not np.isin(board, (0, 1, 2)).all():
            raise ValueError(f"{self.name}: board must be 6 x 7 of 0, 1, 2, got shape {board.shape}")
        to_move = check_int(self.name, "to_move", to_move, 0, 1)
        binding.set_board(self.c_envs, check_int(self.name, "index", index, 0, self.num_envs - 1), board.tolist(), to_move)

    def search_move(self, index=0):
        """The column the negamax opponent would play for the player to move in env ``index``."""
        return binding.search_move(self.c_envs, check_int(self.name, "index", index, 0, self.num_envs - 1))
