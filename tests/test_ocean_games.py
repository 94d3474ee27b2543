"""Ocean games: breakout, pong, snake and connect4. Rules checked with scripted moves and known
outcomes, determinism, bad input; slow-marked tests train each game with its own .ini."""

import math

import numpy as np
import pytest
from conftest import result_of

import ocean
from pufferlib import assemble, pufferl
from pufferlib.config import apply_flags, load_config

GAMES = ["puffer_breakout", "puffer_pong", "puffer_snake", "puffer_connect4"]
STAY = np.zeros(1, np.int32)


def act(*actions):
    return np.array(actions, np.int32)


def random_rollout(env, seed, steps):
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed)
    trace = [obs.copy()]
    for _ in range(steps):
        obs, rewards, terminals, truncations, _ = env.step(rng.integers(0, env.single_action_space.n, env.num_agents))
        trace += [obs.copy(), rewards.copy(), terminals.copy(), truncations.copy()]
    return trace


# -- breakout --------------------------------------------------------------------------------


def breakout(**params):
    env = ocean.make("breakout", num_envs=1, log_interval=1, **params)
    env.reset(0)
    return env


def test_breakout_ball_breaks_a_brick_and_bounces_back():
    env = breakout()  # 5 rows of 10 bricks; the lowest row's bottom edge is at y = 4
    env.set_scene(ball_x=2.5, ball_y=4.1, ball_vx=0.0, ball_vy=-0.4)
    _, rewards, terminals, _, _ = env.step(STAY)
    assert rewards[0] == 1.0 and not terminals[0]
    lowest_row = 5 + 4 * 10
    assert env.observations[0, lowest_row + 2] == 0.0
    assert env.observations[0, lowest_row + 1] == env.observations[0, lowest_row + 3] == 1.0
    state = env.state()
    assert state["bricks_left"] == 49 and state["ball_vy"] > 0 and state["ball_y"] == pytest.approx(4.1)


def test_breakout_side_hit_reverses_the_ball_horizontally():
    env = breakout()
    # Inside the broken lowest-row cell at column 2, moving right into the brick at column 3.
    env.set_scene(ball_x=2.5, ball_y=4.1, ball_vx=0.0, ball_vy=-0.4)
    env.step(STAY)
    env.set_scene(ball_x=2.9, ball_y=3.8, ball_vx=0.3, ball_vy=0.0)
    _, rewards, *_ = env.step(STAY)
    assert rewards[0] == 1.0 and env.state()["ball_vx"] < 0 and env.state()["ball_vy"] == 0


def test_breakout_paddle_angle_depends_on_where_the_ball_hits():
    for offset, expected_angle in [(0.0, 0.0), (0.5, math.pi / 6), (-1.0, -math.pi / 3)]:
        env = breakout()  # paddle 2 wide at y = 12
        env.set_scene(paddle_x=5.0, ball_x=5.0 + offset, ball_y=11.8, ball_vx=0.0, ball_vy=0.4)
        env.step(STAY)
        state = env.state()
        assert state["ball_vx"] == pytest.approx(0.4 * math.sin(expected_angle), abs=1e-6)
        assert state["ball_vy"] == pytest.approx(-0.4 * math.cos(expected_angle), abs=1e-6)
        assert state["ball_y"] == pytest.approx(12.0)


def test_breakout_missed_ball_costs_a_life_and_is_served_again():
    env = breakout()
    env.set_scene(paddle_x=1.0, ball_x=9.0, ball_y=12.8, ball_vx=0.0, ball_vy=0.4)
    _, rewards, terminals, truncations, _ = env.step(STAY)
    state = env.state()
    assert state["lives"] == 4 and rewards[0] == 0 and not terminals[0] and not truncations[0]
    assert state["ball_y"] == pytest.approx(5.0) and state["ball_vy"] > 0


def test_breakout_last_life_ends_the_episode_and_scores_bricks_broken_over_total():
    env = breakout(lives=1)
    env.set_scene(ball_x=7.5, ball_y=4.1, ball_vx=0.0, ball_vy=-0.4)
    env.step(STAY)
    env.set_scene(paddle_x=1.0, ball_x=9.0, ball_y=12.8, ball_vx=0.0, ball_vy=0.4)
    _, _, terminals, _, infos = env.step(STAY)
    assert terminals[0]
    assert infos[0]["score"] == pytest.approx(1 / 50) and infos[0]["bricks_broken"] == 1
    assert env.state()["lives"] == 1 and env.state()["bricks_left"] == 50, "reset in the same step"


def test_breakout_breaking_every_brick_wins():
    env = breakout(brick_rows=1, brick_cols=2, paddle_width=1.0)  # bricks at y 1.5..2
    for col in (0, 1):
        env.set_scene(ball_x=col + 0.5, ball_y=2.1, ball_vx=0.0, ball_vy=-0.4)
        _, rewards, terminals, _, infos = env.step(STAY)
        assert rewards[0] == 1.0
    assert terminals[0] and infos[0]["score"] == 1.0


def test_breakout_paddle_moves_and_stops_at_the_walls():
    env = breakout()
    start = env.state()["paddle_x"]
    env.step(act(2))
    assert env.state()["paddle_x"] == pytest.approx(start + 0.5)
    for _ in range(30):
        env.step(act(1))
    assert env.state()["paddle_x"] == pytest.approx(1.0)  # half the paddle's width
    assert env.observations[0, 0] == pytest.approx(0.1)


# -- pong ------------------------------------------------------------------------------------


def pong(**params):
    env = ocean.make("pong", num_envs=1, log_interval=1, **params)
    env.reset(0)
    return env


def test_pong_agent_returns_the_ball_at_an_angle_from_the_hit():
    env = pong()
    env.set_scene(agent_y=6.0, ball_x=15.8, ball_y=6.5, ball_vx=0.35, ball_vy=0.0)
    _, rewards, *_ = env.step(STAY)
    state = env.state()
    assert rewards[0] == 0 and state["ball_vx"] < 0
    assert state["ball_vy"] == pytest.approx(0.35 * math.sin(0.5 * math.pi / 3), abs=1e-6)


def test_pong_missed_ball_is_a_point_for_the_other_side():
    env = pong()
    env.set_scene(agent_y=2.0, ball_x=15.8, ball_y=10.0, ball_vx=0.35, ball_vy=0.0)
    _, rewards, terminals, *_ = env.step(STAY)
    assert rewards[0] == -1 and not terminals[0] and env.state()["opponent_points"] == 1
    env.set_scene(opponent_y=1.0, ball_x=0.2, ball_y=11.0, ball_vx=-0.35, ball_vy=0.0)
    _, rewards, *_ = env.step(STAY)
    assert rewards[0] == 1 and env.state()["agent_points"] == 1


def test_pong_match_ends_at_points_to_win_and_scores_the_win():
    env = pong(points_to_win=3)
    env.set_scene(agent_points=2, opponent_points=1, opponent_y=1.0, ball_x=0.2, ball_y=11.0, ball_vx=-0.35, ball_vy=0.0)
    _, rewards, terminals, _, infos = env.step(STAY)
    assert rewards[0] == 1 and terminals[0]
    assert infos[0]["score"] == 1.0 and infos[0]["points_share"] == pytest.approx(3 / 4)


def test_pong_opponent_tracks_the_ball_at_its_speed_once_it_reacts():
    env = pong(opponent_speed=0.2, opponent_reaction=0.5)
    env.set_scene(opponent_y=6.0, ball_x=10.0, ball_y=11.0, ball_vx=-0.35, ball_vy=0.0)
    env.step(STAY)
    assert env.state()["opponent_y"] == pytest.approx(6.0), "the ball is still beyond its reaction distance"
    env.set_scene(ball_x=7.0)
    env.step(STAY)
    assert env.state()["opponent_y"] == pytest.approx(6.2)


def tracking_policy(obs):
    """Follows the ball: up when it is above the paddle's centre, down when below."""
    gap = obs[:, 3] - obs[:, 0]
    return np.where(gap < -0.02, 1, np.where(gap > 0.02, 2, 0)).astype(np.int32)


def play_tracking(opponent_speed, steps=2000):
    """Points won by a ball-tracking agent, and its match win rate (None if no match ended)."""
    env = ocean.make("pong", num_envs=256, opponent_speed=opponent_speed, log_interval=10**9)
    obs, _ = env.reset(0)
    points = 0
    for _ in range(steps):
        obs, rewards, *_ = env.step(tracking_policy(obs))
        points += int((rewards > 0).sum())
    log = env.log()
    return points, log and log["score"]


def test_pong_opponent_skill_is_a_parameter():
    slow_points, slow_win_rate = play_tracking(0.05)
    fast_points, _ = play_tracking(1.0)
    assert slow_win_rate > 0.9
    assert fast_points < slow_points / 10, "a fast opponent returns the balls a slow one misses"


# -- snake -----------------------------------------------------------------------------------

UP, DOWN, LEFT, RIGHT = 0, 1, 2, 3


def snake(**params):
    params = dict(width=10, height=8, num_snakes=1, food=0, vision=2, max_length=8, log_interval=1) | params
    env = ocean.make("snake", num_envs=1, **params)
    env.reset(0)
    return env


def test_snake_dies_on_a_wall_and_respawns_at_length_one():
    env = snake()
    env.set_scene([[(1, 5), (0, 5)]])
    _, rewards, terminals, truncations, _ = env.step(act(UP))
    assert rewards[0] == -1 and terminals[0] and not truncations[0]
    assert len(env.snakes()[0]) == 1
    assert (env.grid() == 2).sum() == 0 and (env.grid() == 3).sum() == 1, "the dead body is cleared"


def test_snake_dies_on_another_snakes_body():
    env = snake(num_snakes=2)
    env.set_scene([[(5, 4)], [(4, 5), (5, 5), (6, 5)]])
    _, rewards, terminals, *_ = env.step(act(RIGHT, LEFT))
    assert rewards[0] == -1 and terminals[0]
    assert not terminals[1] and env.snakes()[1][-1] == (6, 4)


def test_snake_may_follow_its_own_tail_but_not_bite_its_body():
    env = snake()
    env.set_scene([[(3, 3), (3, 4), (4, 4), (4, 3)]])
    _, rewards, terminals, *_ = env.step(act(UP))  # into the tail's cell, which moves on
    assert not terminals[0] and env.snakes()[0] == [(3, 4), (4, 4), (4, 3), (3, 3)]
    env.set_scene([[(3, 2), (3, 3), (3, 4), (4, 4), (4, 3)]])
    _, rewards, terminals, *_ = env.step(act(UP))
    assert terminals[0] and rewards[0] == -1


def test_snake_eating_grows_and_food_reappears():
    env = snake(food=3)
    env.set_scene([[(5, 5)]], food=[(5, 6), (1, 1), (2, 2)])
    _, rewards, terminals, *_ = env.step(act(RIGHT))
    assert rewards[0] == 1 and not terminals[0]
    assert env.snakes()[0] == [(5, 5), (5, 6)]
    assert (env.grid() == 1).sum() == 3
    env.step(act(DOWN))
    assert env.snakes()[0] == [(5, 6), (6, 6)], "without food the length stays"


def test_snake_growth_stops_at_max_length():
    env = snake(max_length=2, food=1)
    env.set_scene([[(5, 4), (5, 5)]], food=[(5, 6)])
    _, rewards, *_ = env.step(act(RIGHT))
    assert rewards[0] == 1 and env.snakes()[0] == [(5, 5), (5, 6)]


def test_snake_reversing_into_its_neck_keeps_going():
    env = snake()
    env.set_scene([[(5, 5), (5, 6)]])
    _, _, terminals, *_ = env.step(act(LEFT))
    assert not terminals[0] and env.snakes()[0] == [(5, 6), (5, 7)]


def test_snake_sees_the_cells_around_its_head():
    env = snake(vision=2)
    env.set_scene([[(1, 1), (0, 1)]], food=[(2, 2)])
    view = env.observations[0].reshape(5, 5)
    assert view[2, 2] == 3 and view[3, 2] == 2 and view[4, 3] == 1
    assert (view[:2] == 4).all() and (view[:, 0] == 4).all(), "outside the board is wall"


def test_snake_episode_truncates_every_snake_and_scores_mean_length():
    env = snake(num_snakes=2, episode_length=2)
    env.set_scene([[(2, 2), (2, 3), (2, 4)], [(6, 6)]])
    env.step(act(RIGHT, LEFT))
    _, _, terminals, truncations, infos = env.step(act(RIGHT, LEFT))
    assert truncations.all() and not terminals.any()
    assert infos[0]["score"] == pytest.approx(2.0) and infos[0]["longest"] == 3


def test_snake_boards_with_many_snakes_are_deterministic_across_threads():
    params = dict(num_envs=4, width=64, height=48, num_snakes=64, food=256, max_length=16)
    single = random_rollout(ocean.make("snake", num_threads=1, **params), seed=3, steps=200)
    threaded = random_rollout(ocean.make("snake", num_threads=3, **params), seed=3, steps=200)
    for a, b in zip(single, threaded):
        np.testing.assert_array_equal(a, b)


def test_snake_random_play_keeps_the_board_consistent():
    env = ocean.make("snake", num_envs=2, width=20, height=20, num_snakes=16, food=20, max_length=12)
    env.reset(0)
    rng = np.random.default_rng(1)
    for _ in range(500):
        env.step(rng.integers(0, 4, env.num_agents))
        for index in range(2):
            grid, snakes = env.grid(index), env.snakes(index)
            cells = [cell for body in snakes for cell in body]
            assert len(cells) == len(set(cells)), "two snakes in one cell"
            assert (grid == 2).sum() + (grid == 3).sum() == len(cells)
            assert all(grid[body[-1]] == 3 for body in snakes)
            assert (grid == 1).sum() == 20


# -- connect4 --------------------------------------------------------------------------------


def board(*rows_from_bottom):
    """A 6 x 7 board from strings written bottom row first: x the agent, o the opponent."""
    cells = np.zeros((6, 7), np.int32)
    for height, row in enumerate(rows_from_bottom):
        for col, mark in enumerate(row):
            cells[5 - height, col] = {".": 0, "x": 1, "o": 2}[mark]
    return cells


def connect4(**params):
    env = ocean.make("connect4", num_envs=1, log_interval=1, **params)
    env.reset(0)
    return env


@pytest.mark.parametrize(
    "rows, column",
    [
        (["xxx.oo.", "oo....."], 3),  # horizontal
        (["xoo....", "x......", "x......"], 0),  # vertical
        (["xoox...", ".xoo...", "..xo...", "......."], 3),  # diagonal rising to the right
        (["ooxxo..", "oxxo...", "xxo...."], 0),  # diagonal rising to the left
    ],
)
def test_connect4_four_in_a_row_wins(rows, column):
    env = connect4()
    env.set_board(board(*rows))
    _, rewards, terminals, _, infos = env.step(act(column))
    assert rewards[0] == 1 and terminals[0]
    assert infos[0]["score"] == 1 and infos[0]["wins"] == 1


DRAWN_BOARD = board("xxoxxoo", "ooxooxx", "xxoxxoo", "ooxooxx", "xxoxxoo", "ooxoox.")


def test_connect4_full_board_is_a_draw():
    env = connect4()
    env.set_board(DRAWN_BOARD)
    _, rewards, terminals, _, infos = env.step(act(6))
    assert rewards[0] == 0 and terminals[0]
    assert infos[0]["draws"] == 1 and infos[0]["score"] == 0


def test_connect4_full_column_is_an_illegal_losing_move():
    env = connect4()
    env.set_board(board("xo.....", "ox.....", "xo.....", "ox.....", "xo.....", "ox....."))
    _, rewards, terminals, _, infos = env.step(act(0))
    assert rewards[0] == -1 and terminals[0] and infos[0]["illegal"] == 1


@pytest.mark.parametrize("depth", [1, 2, 3, 5])
def test_connect4_opponent_takes_an_immediate_win(depth):
    env = connect4(depth=depth)
    env.set_board(board("ooo.x.x", "x......"))
    _, rewards, terminals, _, infos = env.step(act(6))
    assert rewards[0] == -1 and terminals[0] and infos[0]["losses"] == 1


@pytest.mark.parametrize("depth", [2, 3, 5])
def test_connect4_opponent_blocks_an_immediate_win(depth):
    env = connect4(depth=depth)
    env.set_board(board("xx...oo"))
    env.step(act(2))  # threatens column 3
    cells, to_move = env.board()
    assert cells[5, 3] == 2 and to_move == 0


def test_connect4_depth_zero_opponent_ignores_threats():
    blocked = 0
    for seed in range(40):
        env = ocean.make("connect4", num_envs=1, depth=0)
        env.reset(seed)
        env.set_board(board("xx...oo"))
        env.step(act(2))
        blocked += env.board()[0][5, 3] == 2
    assert blocked < 20


FULL_CENTRE = board("...x...", "...o...", "...x...", "...o...", "...x...", "...o...")


def test_connect4_opponent_breaks_ties_with_the_env_rng():
    moves = set()
    for seed in range(30):
        env = ocean.make("connect4", num_envs=1, depth=1)
        env.reset(seed)
        env.set_board(FULL_CENTRE, to_move=1)
        moves.add(env.search_move())
    assert len(moves) > 1, "equally good replies must not always be the same column"
    again = ocean.make("connect4", num_envs=1, depth=1)
    again.reset(0)
    first = ocean.make("connect4", num_envs=1, depth=1)
    first.reset(0)
    for env in (again, first):
        env.set_board(FULL_CENTRE, to_move=1)
    assert again.search_move() == first.search_move()


def test_connect4_observation_is_from_the_agents_side():
    env = connect4(depth=0)
    env.set_board(board("x.....o"))
    obs = env.observations[0]
    assert obs[35] == 1 and obs[41] == 2 and obs[42] == 1 and obs[:35].sum() == 0


def test_connect4_selfplay_alternates_two_agents_of_the_batch():
    env = ocean.make("connect4", num_envs=1, mode="selfplay", log_interval=1)
    assert env.num_agents == 2 and env.observations.shape == (2, 43)
    obs, _ = env.reset(0)
    first = int(np.argmax(obs[:, 42]))
    assert obs[first, 42] == 1 and obs[1 - first, 42] == 0
    moves = [0, 1, 0, 1, 0, 1]  # the first mover stacks column 0, the other column 1
    for k, column in enumerate(moves):
        mover = first if k % 2 == 0 else 1 - first
        actions = np.full(2, 5, np.int32)  # the waiting agent's action is ignored
        actions[mover] = column
        _, rewards, terminals, _, _ = env.step(actions)
        assert not terminals.any()
    actions = np.full(2, 6, np.int32)
    actions[first] = 0
    _, rewards, terminals, _, infos = env.step(actions)
    assert terminals.all() and rewards[first] == 1 and rewards[1 - first] == -1
    assert infos[0]["score"] == 1


# -- all four --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", GAMES)
def test_games_are_deterministic_across_thread_counts_and_seeded_per_env(name):
    single = random_rollout(ocean.make(name, num_envs=32, num_threads=1), seed=5, steps=300)
    threaded = random_rollout(ocean.make(name, num_envs=32, num_threads=2), seed=5, steps=300)
    for a, b in zip(single, threaded):
        np.testing.assert_array_equal(a, b)
    wide = ocean.make(name, num_envs=4)
    narrow = ocean.make(name, num_envs=1)
    agents = wide.agents_per_env
    np.testing.assert_array_equal(wide.reset(10)[0][2 * agents : 3 * agents], narrow.reset(12)[0])


@pytest.mark.parametrize("name", GAMES)
def test_random_play_finishes_episodes_with_scores_in_range(name):
    env = ocean.make(name, num_envs=64, log_interval=10**9)
    rng = np.random.default_rng(0)
    env.reset(0)
    for _ in range(1100):
        env.step(rng.integers(0, env.single_action_space.n, env.num_agents))
    log = env.log()
    assert log is not None and log["episodes"] > 0
    if name == "puffer_snake":
        assert 1 <= log["score"] < 4, "random snakes die young"
    else:
        assert 0 <= log["score"] < 0.3, "random play scores low"


@pytest.mark.parametrize(
    "name, params, message",
    [
        ("breakout", dict(brick_rows=0), "brick_rows must be between 1 and 16, got 0"),
        ("breakout", dict(brick_cols=33), "brick_cols must be between 2 and 32, got 33"),
        ("breakout", dict(lives=0), "lives must be between 1 and 99"),
        ("breakout", dict(brick_cols=4, paddle_width=5.0), r"paddle_width must lie in \[0.5, 4\]"),
        ("pong", dict(points_to_win=0), "points_to_win must be between 1 and 99, got 0"),
        ("pong", dict(opponent_speed=-0.1), r"opponent_speed must lie in \[0.0, 1.0\]"),
        ("pong", dict(opponent_reaction=1.5), r"opponent_reaction must lie in \[0.0, 1.0\]"),
        ("snake", dict(width=0), "width must be between 4 and 4096, got 0"),
        ("snake", dict(height=2), "height must be between 4 and 4096, got 2"),
        ("snake", dict(num_snakes=0), "num_snakes must be between 1 and 65536, got 0"),
        ("snake", dict(width=4, height=4, num_snakes=17, max_length=1, food=0),
         r"num_snakes \* max_length \+ food must be less than width \* height = 16.*got 17 \* 1 \+ 0 = 17"),
        ("snake", dict(width=8, height=8, num_snakes=4, max_length=16, food=1), "less than width \\* height = 64"),
        ("snake", dict(vision=0), "vision must be between 1 and 15"),
        ("snake", dict(episode_length=0), "episode_length must be >= 1"),
        ("connect4", dict(depth=9), "depth must be between 0 and 8, got 9"),
        ("connect4", dict(mode="self-play"), "mode must be one of opponent, selfplay, got 'self-play'"),
    ],
)
def test_bad_parameters_name_the_valid_range(name, params, message):
    with pytest.raises(ValueError, match=message):
        ocean.make(name, **params)


def test_bad_test_scenes_are_refused():
    env = snake(num_snakes=2)
    with pytest.raises(ValueError, match="need 2 snakes"):
        env.set_scene([[(1, 1)]])
    with pytest.raises(ValueError, match="off the board or taken"):
        env.set_scene([[(1, 1)], [(1, 1)]])
    c4 = connect4()
    with pytest.raises(ValueError, match="floats above an empty cell"):
        c4.set_board(board(".......", "x......"))


# -- learning (slow) -------------------------------------------------------------------------


def train(env_name, steps, *flags):
    """Trains with the game's own .ini for ``steps`` steps on the CPU; returns the policy."""
    config = apply_flags(load_config(env_name), [
        "--train.device", "cpu", "--train.dashboard", "plain", "--train.total-timesteps", str(steps), *flags,
    ])
    vecenv = assemble.make_vecenv(env_name, config)
    trainer = pufferl.PuffeRL(config, vecenv, assemble.make_policy(vecenv, config))
    try:
        while trainer.epoch < trainer.total_epochs:
            trainer.collect()
            trainer.train()
    finally:
        trainer.close()
    return trainer.policy.eval(), dict(config["env"])


# Each game's run: its steps, and the envs its final policy is scored on.
LEARNING_RUNS = {"puffer_breakout": (30_000_000, 256), "puffer_pong": (30_000_000, 256), "puffer_snake": (8_000_000, 16),
                 "puffer_connect4": (3_000_000, 512)}
TRAIN_AND_SCORE = """
import json, sys
sys.path.insert(0, "scripts")
from score_games import score
from test_ocean_games import train
env_name, steps, num_envs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
policy, params = train(env_name, steps)
print("RESULT", json.dumps(dict(score=float(score(policy, env_name, num_envs=num_envs, **params)), params=params)))
"""


@pytest.fixture(scope="module")
def learning_runs(side_runs):
    """The four games' runs, side by side: each holds one core for minutes."""
    return {name: side_runs(TRAIN_AND_SCORE, name, steps, num_envs) for name, (steps, num_envs) in LEARNING_RUNS.items()}


@pytest.mark.slow
def test_breakout_learns_to_break_bricks(learning_runs):
    assert result_of(learning_runs["puffer_breakout"])["score"] > 0.35  # random play: 0.02


@pytest.mark.slow
def test_pong_learns_to_beat_the_default_opponent(learning_runs):
    assert result_of(learning_runs["puffer_pong"])["score"] > 0.5  # random play: 0.0


@pytest.mark.slow
def test_snake_learns_to_grow(learning_runs):
    assert result_of(learning_runs["puffer_snake"])["score"] > 8  # random play: 1.9


@pytest.mark.slow
def test_connect4_learns_to_beat_the_depth_3_opponent(learning_runs):
    result = result_of(learning_runs["puffer_connect4"])
    assert result["params"]["depth"] == 3
    assert result["score"] > 0.7  # random play: 0.003
