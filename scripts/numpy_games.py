"""The four Ocean games written as vectorised numpy over all envs: the peers that
scripts/bench_ocean.py measures beside the C envs in the same run.

Each follows its C header's rules and constants (ocean/<game>/<game>.h) and writes the same
observations; only the random streams differ. ``step(actions)`` returns observations, rewards and
episode ends, and resets finished envs, as the C vecenv does.
"""

import numpy as np


class Breakout:
    ROWS_TOP, BRICK_H, GAP, SPEED, PADDLE_SPEED, MAX_ANGLE, MAX_STEPS = 1.5, 0.5, 8.0, 0.4, 0.5, np.pi / 3, 20000

    def __init__(self, num_envs, brick_rows=5, brick_cols=10, lives=5, paddle_width=2.0, seed=0):
        self.n, self.rows, self.cols, self.max_lives, self.half = num_envs, brick_rows, brick_cols, lives, paddle_width / 2
        self.width = float(brick_cols)
        self.bottom = self.ROWS_TOP + brick_rows * self.BRICK_H
        self.paddle_y = self.bottom + self.GAP
        self.height = self.paddle_y + 1.0
        self.rng = np.random.default_rng(seed)
        self.observations = np.zeros((num_envs, 5 + brick_rows * brick_cols), np.float32)
        self.bricks = self.observations[:, 5:].reshape(num_envs, brick_rows, brick_cols)  # the bitmap is the state
        self.paddle_x, self.x, self.y, self.vx, self.vy = (np.zeros(num_envs, np.float32) for _ in range(5))
        self.lives = np.zeros(num_envs, np.int32)
        self.left = np.zeros(num_envs, np.int32)
        self.tick = np.zeros(num_envs, np.int32)
        self.index = np.arange(num_envs)
        self.move = np.array([0.0, -self.PADDLE_SPEED, self.PADDLE_SPEED], np.float32)
        self.reset_envs(np.ones(num_envs, bool))

    def serve(self, mask):
        k = int(mask.sum())
        self.x[mask] = self.width * (0.25 + 0.5 * self.rng.random(k))
        self.y[mask] = self.bottom + 1.0
        angle = (self.rng.random(k) - 0.5) * (np.pi / 2)
        self.vx[mask] = self.SPEED * np.sin(angle)
        self.vy[mask] = self.SPEED * np.cos(angle)

    def reset_envs(self, mask):
        self.observations[mask, 5:] = 1.0
        self.left[mask] = self.rows * self.cols
        self.lives[mask] = self.max_lives
        self.tick[mask] = 0
        self.paddle_x[mask] = self.width / 2
        self.serve(mask)

    def step(self, actions):
        self.paddle_x = np.clip(self.paddle_x + self.move[actions], self.half, self.width - self.half)
        self.tick += 1
        x, y = self.x + self.vx, self.y + self.vy
        left, right = x < 0, x > self.width
        x = np.where(left, -x, np.where(right, 2 * self.width - x, x))
        self.vx = np.where(left | right, -self.vx, self.vx)
        top = y < 0
        y = np.where(top, -y, y)
        self.vy = np.where(top, -self.vy, self.vy)

        area = (y >= self.ROWS_TOP) & (y < self.bottom) & (x >= 0) & (x < self.width)
        row = np.clip(((y - self.ROWS_TOP) / self.BRICK_H).astype(np.int32), 0, self.rows - 1)
        col = np.clip(x.astype(np.int32), 0, self.cols - 1)
        hit = area & (self.bricks[self.index, row, col] > 0)
        self.bricks[self.index[hit], row[hit], col[hit]] = 0.0
        old_row = ((self.y - self.ROWS_TOP) / self.BRICK_H).astype(np.int32)
        vertical = (self.y < self.ROWS_TOP) | (self.y >= self.bottom) | (old_row != row)
        self.vy = np.where(hit & vertical, -self.vy, self.vy)
        self.vx = np.where(hit & ~vertical, -self.vx, self.vx)
        rewards = hit.astype(np.float32)
        self.left -= hit

        crossing = ~hit & (self.vy > 0) & (self.y < self.paddle_y) & (y >= self.paddle_y)
        with np.errstate(divide="ignore", invalid="ignore"):
            cross_x = self.x + (x - self.x) * (self.paddle_y - self.y) / (y - self.y)
        offset = (cross_x - self.paddle_x) / self.half
        bounce = crossing & (np.abs(offset) <= 1)
        angle = np.where(bounce, offset, 0) * self.MAX_ANGLE
        self.vx = np.where(bounce, self.SPEED * np.sin(angle), self.vx).astype(np.float32)
        self.vy = np.where(bounce, -self.SPEED * np.cos(angle), self.vy).astype(np.float32)
        lost = ~hit & ~crossing & (y > self.height)
        moves = ~hit & ~lost
        self.x = np.where(bounce, cross_x, np.where(moves, x, self.x)).astype(np.float32)
        self.y = np.where(bounce, self.paddle_y, np.where(moves, y, self.y)).astype(np.float32)
        self.lives -= lost
        done = (self.left == 0) | (self.lives == 0) | (self.tick >= self.MAX_STEPS)
        serve = lost & ~done
        if serve.any():
            self.serve(serve)
        if done.any():
            self.reset_envs(done)
        obs = self.observations
        obs[:, 0] = self.paddle_x / self.width
        obs[:, 1] = self.x / self.width
        obs[:, 2] = self.y / self.height
        obs[:, 3] = self.vx / self.SPEED
        obs[:, 4] = self.vy / self.SPEED
        return obs, rewards, done


class Pong:
    WIDTH, HEIGHT, PADDLE_H, PADDLE_SPEED, SPEED, MAX_ANGLE, MAX_STEPS = 16.0, 12.0, 2.0, 0.5, 0.35, np.pi / 3, 10000

    def __init__(self, num_envs, points_to_win=5, opponent_speed=0.2, opponent_reaction=0.5, seed=0):
        self.n, self.points_to_win = num_envs, points_to_win
        self.speed, self.reaction = opponent_speed, opponent_reaction
        self.rng = np.random.default_rng(seed)
        self.observations = np.zeros((num_envs, 6), np.float32)
        self.agent_y, self.opponent_y, self.x, self.y, self.vx, self.vy = (np.zeros(num_envs, np.float32) for _ in range(6))
        self.agent_points, self.opponent_points, self.tick = (np.zeros(num_envs, np.int32) for _ in range(3))
        self.move = np.array([0.0, -self.PADDLE_SPEED, self.PADDLE_SPEED], np.float32)
        self.reset_envs(np.ones(num_envs, bool))

    def serve(self, mask):
        k = int(mask.sum())
        self.x[mask] = self.WIDTH / 2
        self.y[mask] = self.HEIGHT * (0.25 + 0.5 * self.rng.random(k))
        angle = (self.rng.random(k) - 0.5) * (np.pi / 3)
        side = np.where(self.rng.integers(0, 2, k) == 1, 1.0, -1.0)
        self.vx[mask] = side * self.SPEED * np.cos(angle)
        self.vy[mask] = self.SPEED * np.sin(angle)

    def reset_envs(self, mask):
        self.agent_y[mask] = self.opponent_y[mask] = self.HEIGHT / 2
        self.agent_points[mask] = self.opponent_points[mask] = self.tick[mask] = 0
        self.serve(mask)

    def clamp(self, y):
        return np.clip(y, self.PADDLE_H / 2, self.HEIGHT - self.PADDLE_H / 2)

    def returned(self, mask, paddle_y, direction):
        offset = (self.y - paddle_y) * (2 / self.PADDLE_H)
        hit = mask & (np.abs(offset) <= 1)
        angle = offset * self.MAX_ANGLE
        self.vx = np.where(hit, direction * self.SPEED * np.cos(angle), self.vx).astype(np.float32)
        self.vy = np.where(hit, self.SPEED * np.sin(angle), self.vy).astype(np.float32)
        return hit

    def step(self, actions):
        self.agent_y = self.clamp(self.agent_y + self.move[actions])
        tracking = (self.vx < 0) & (self.x < self.reaction * self.WIDTH)
        target = np.where(tracking, self.y, self.HEIGHT / 2)
        self.opponent_y = self.clamp(self.opponent_y + np.clip(target - self.opponent_y, -self.speed, self.speed))
        self.tick += 1
        self.x = self.x + self.vx
        self.y = self.y + self.vy
        low, high = self.y < 0, self.y > self.HEIGHT
        self.y = np.where(low, -self.y, np.where(high, 2 * self.HEIGHT - self.y, self.y))
        self.vy = np.where(low | high, -self.vy, self.vy)
        at_agent, at_opponent = self.x >= self.WIDTH, self.x <= 0
        self.x = np.clip(self.x, 0, self.WIDTH)
        lost = at_agent & ~self.returned(at_agent, self.agent_y, -1.0)
        won = at_opponent & ~self.returned(at_opponent, self.opponent_y, 1.0)
        rewards = won.astype(np.float32) - lost
        self.agent_points += won
        self.opponent_points += lost
        done = (self.agent_points >= self.points_to_win) | (self.opponent_points >= self.points_to_win)
        done |= self.tick >= self.MAX_STEPS
        serve = (won | lost) & ~done
        if serve.any():
            self.serve(serve)
        if done.any():
            self.reset_envs(done)
        obs = self.observations
        obs[:, 0] = self.agent_y / self.HEIGHT
        obs[:, 1] = self.opponent_y / self.HEIGHT
        obs[:, 2] = self.x / self.WIDTH
        obs[:, 3] = self.y / self.HEIGHT
        obs[:, 4] = self.vx / self.SPEED
        obs[:, 5] = self.vy / self.SPEED
        return obs, rewards, done


class Snake:
    """All boards side by side; snakes move in index order (as in C), each snake's move
    vectorised over the boards."""

    EMPTY, FOOD, BODY, HEAD, WALL = range(5)

    def __init__(self, num_envs, width=32, height=32, num_snakes=8, food=32, vision=5, max_length=64,
                 episode_length=1024, seed=0):
        self.n, self.width, self.height, self.snakes, self.food = num_envs, width, height, num_snakes, food
        self.vision, self.max_length, self.episode_length = vision, max_length, episode_length
        self.stride = width + 2 * vision
        self.cells = (height + 2 * vision) * self.stride
        self.rng = np.random.default_rng(seed)
        self.grid = np.full((num_envs, self.cells), self.WALL, np.uint8)
        self.flat = self.grid.reshape(-1)
        self.interior = ((np.arange(height)[:, None] + vision) * self.stride + np.arange(width) + vision).ravel()
        self.base = np.arange(num_envs) * self.cells
        self.bodies = np.zeros((num_envs, num_snakes, max_length), np.int64)  # ring buffers of grid indices
        self.heads = np.zeros((num_envs, num_snakes), np.int64)
        self.lengths = np.ones((num_envs, num_snakes), np.int64)
        self.directions = np.zeros((num_envs, num_snakes), np.int64)
        self.deltas = np.array([-self.stride, self.stride, -1, 1])
        view = np.arange(-vision, vision + 1)
        self.view = (view[:, None] * self.stride + view).ravel()
        self.tick = 0
        self.boards = np.arange(num_envs)
        self.reset()

    def empty_cells(self, boards):
        """A random empty cell on each of the given boards (retrying boards whose draw was taken)."""
        chosen = np.empty(len(boards), np.int64)
        pending = np.arange(len(boards))
        while len(pending):
            cells = self.interior[self.rng.integers(0, len(self.interior), len(pending))]
            free = self.grid[boards[pending], cells] == self.EMPTY
            chosen[pending[free]] = cells[free]
            pending = pending[~free]
        return chosen

    def spawn(self, boards, snake):
        cells = self.empty_cells(boards)
        self.grid[boards, cells] = self.HEAD
        self.heads[boards, snake] = 0
        self.bodies[boards, snake, 0] = cells
        self.lengths[boards, snake] = 1
        self.directions[boards, snake] = self.rng.integers(0, 4, len(boards))

    def reset(self):
        self.grid[:] = self.WALL
        self.grid[:, self.interior] = self.EMPTY
        for s in range(self.snakes):
            self.spawn(self.boards, s)
        for _ in range(self.food):
            self.grid[self.boards, self.empty_cells(self.boards)] = self.FOOD
        self.tick = 0

    def step(self, actions):
        actions = actions.reshape(self.n, self.snakes)
        rewards = np.zeros((self.n, self.snakes), np.float32)
        terminals = np.zeros((self.n, self.snakes), bool)
        boards, ring = self.boards, self.max_length
        for s in range(self.snakes):
            length, head_slot = self.lengths[:, s], self.heads[:, s]
            direction = actions[:, s]
            reverse = (length > 1) & (direction == (self.directions[:, s] ^ 1))
            direction = np.where(reverse, self.directions[:, s], direction)
            self.directions[:, s] = direction
            head = self.bodies[boards, s, head_slot]
            target = head + self.deltas[direction]
            eats = self.grid[boards, target] == self.FOOD
            grows = eats & (length < self.max_length)
            tail = self.bodies[boards, s, (head_slot - length + 1) % ring]
            moving = ~grows
            self.grid[boards[moving], tail[moving]] = self.EMPTY
            cell = self.grid[boards, target]
            dies = (cell != self.EMPTY) & (cell != self.FOOD)
            if dies.any():
                dead = boards[dies]
                for k in range(int(length[dies].max()) - 1):
                    alive = k < length[dies] - 1
                    slots = (head_slot[dies][alive] - k) % ring
                    self.grid[dead[alive], self.bodies[dead[alive], s, slots]] = self.EMPTY
                self.spawn(dead, s)
            lives = ~dies
            keep_body = lives & ((length > 1) | grows)
            self.grid[boards[keep_body], head[keep_body]] = self.BODY
            self.grid[boards[lives], target[lives]] = self.HEAD
            new_slot = (head_slot + 1) % ring
            self.heads[lives, s] = new_slot[lives]
            self.bodies[boards[lives], s, new_slot[lives]] = target[lives]
            self.lengths[lives, s] += grows[lives]
            rewards[:, s] = np.where(dies, -1.0, eats.astype(np.float32))
            terminals[:, s] = dies
            fed = boards[eats & lives]
            if len(fed):
                self.grid[fed, self.empty_cells(fed)] = self.FOOD
        self.tick += 1
        done = self.tick >= self.episode_length
        if done:
            self.reset()
        heads = self.bodies[boards[:, None], np.arange(self.snakes), self.heads] + self.base[:, None]
        observations = self.flat[heads.reshape(-1, 1) + self.view]
        return observations, rewards.reshape(-1), terminals.reshape(-1) | done


class Connect4:
    """The agent against full-width minimax of the same depth (alpha-beta's value without its
    pruning, which does not vectorise), ties broken at random, over all envs at once."""

    ORDER = np.arange(7)
    BOTTOM = sum(1 << (7 * c) for c in range(7))
    BOARD = BOTTOM * ((1 << 6) - 1)
    WIN = 1000

    def __init__(self, num_envs, depth=3, seed=0):
        self.n, self.depth = num_envs, depth
        self.rng = np.random.default_rng(seed)
        self.agent = np.zeros(num_envs, np.uint64)
        self.opponent = np.zeros(num_envs, np.uint64)
        self.moves = np.zeros(num_envs, np.int64)
        self.observations = np.zeros((num_envs, 43), np.uint8)
        self.bits = np.array([1 << (7 * c + 5 - r) for r in range(6) for c in range(7)], np.uint64)
        self.column = [np.uint64(((1 << 6) - 1) << (7 * c)) for c in range(7)]
        self.top = [np.uint64(1 << (5 + 7 * c)) for c in range(7)]
        self.bottom = [np.uint64(1 << (7 * c)) for c in range(7)]
        self.centre = self.column[3]
        self.board_mask = np.uint64(self.BOARD)

    @staticmethod
    def four(stones):
        found = np.zeros(stones.shape, bool)
        for shift in (7, 6, 8, 1):
            s = np.uint64(shift)
            m = stones & (stones >> s)
            found |= (m & (m >> (s + s))) != 0
        return found

    def threats(self, stones, mask):
        r = (stones << np.uint64(1)) & (stones << np.uint64(2)) & (stones << np.uint64(3))
        for shift in (7, 6, 8):
            s = np.uint64(shift)
            p = (stones << s) & (stones << (s + s))
            r |= p & (stones << (s * np.uint64(3)))
            r |= p & (stones >> s)
            p = (stones >> s) & (stones >> (s + s))
            r |= p & (stones << s)
            r |= p & (stones >> (s * np.uint64(3)))
        return r & (self.board_mask ^ mask)

    @staticmethod
    def popcount(x):
        return np.bitwise_count(x).astype(np.int64)

    def evaluate(self, own, mask):
        other = own ^ mask
        threats = self.popcount(self.threats(own, mask)) - self.popcount(self.threats(other, mask))
        return 4 * threats + self.popcount(own & self.centre) - self.popcount(other & self.centre)

    def drop(self, mask, col):
        return (mask + self.bottom[col]) & self.column[col]

    def negamax(self, own, mask, depth):
        if depth == 0:
            return self.evaluate(own, mask)
        best = np.full(own.shape, -2 * self.WIN, np.int64)
        win = np.zeros(own.shape, bool)
        for col in range(7):
            legal = (mask & self.top[col]) == 0
            move = self.drop(mask, col)
            win |= legal & self.four(own | move)
            value = -self.negamax(own ^ mask, mask | move, depth - 1)
            best = np.where(legal, np.maximum(best, value), best)
        best = np.where(win, self.WIN + depth, best)
        return np.where(mask == self.board_mask, 0, best)

    def search(self, own, mask):
        values = np.full((len(own), 7), -4 * self.WIN, np.int64)
        for col in range(7):
            legal = (mask & self.top[col]) == 0
            move = self.drop(mask, col)
            value = np.where(self.four(own | move), self.WIN + self.depth,
                             -self.negamax(own ^ mask, mask | move, self.depth - 1)) if self.depth else 0
            values[:, col] = np.where(legal, value, values[:, col])
        best = values == values.max(axis=1, keepdims=True)
        noise = self.rng.random(best.shape) * best
        return noise.argmax(axis=1)

    def play(self, player, other, cols, active):
        mask = player | other
        bottom = np.array(self.bottom)[cols]
        columns = np.array(self.column)[cols]
        legal = (mask & np.array(self.top)[cols]) == 0
        placed = active & legal
        player = np.where(placed, player | ((mask + bottom) & columns), player)
        self.moves += placed
        return player, active & ~legal, placed & self.four(player), placed & (self.moves == 42)

    def step(self, actions):
        every = np.ones(self.n, bool)
        self.agent, illegal, agent_won, full = self.play(self.agent, self.opponent, actions, every)
        going = ~(illegal | agent_won | full)
        reply = self.search(self.opponent, self.agent | self.opponent)
        self.opponent, _, opponent_won, full_after = self.play(self.opponent, self.agent, reply, going)
        rewards = agent_won.astype(np.float32) - illegal - opponent_won
        done = illegal | agent_won | full | opponent_won | full_after
        self.agent[done] = 0
        self.opponent[done] = 0
        self.moves[done] = 0
        own = (self.agent[:, None] & self.bits) != 0
        other = (self.opponent[:, None] & self.bits) != 0
        self.observations[:, :42] = own + 2 * other
        self.observations[:, 42] = 1
        return self.observations, rewards, done


GAMES = {"puffer_breakout": Breakout, "puffer_pong": Pong, "puffer_snake": Snake, "puffer_connect4": Connect4}
