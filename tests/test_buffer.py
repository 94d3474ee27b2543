"""The batch as segments of one agent each (pufferlib.buffer): its geometry checked against the env,
and every step placed where the agent-by-agent loop puts it, padded agents and pooled batches included."""

import gymnasium
import hypothesis
import numpy as np
import pytest
import torch
from helpers import HookedSquared, config_for, make_trainer
from hypothesis import strategies as st

from pufferlib import assemble, pufferl
from pufferlib.buffer import SegmentBuffer, Step
from pufferlib.config import ConfigError


def test_bad_batch_geometry_is_explained():
    config = config_for("puffer_squared", "--vec.num-envs", "64", "--train.batch-size", "1024")
    with pytest.raises(ConfigError, match="fewer than the 64 agents"):
        make_trainer(config)


def test_device_hook_env_needs_whole_rows_per_agent():
    config = config_for("puffer_squared", "--train.horizon", "16", "--train.batch-size", "384", "--train.minibatch-size", "128")
    env = HookedSquared(16)
    with pytest.raises(ConfigError, match="multiple of num_agents"):
        pufferl.PuffeRL(config, env, assemble.make_policy(env, config))


def segment_buffer(segments, horizon, num_agents, state_size=0):
    space = gymnasium.spaces.Box(0, 1000, (1,), np.float32)
    start_state = (torch.full((segments, state_size), -1.0),) if state_size else ()
    return SegmentBuffer(segments, horizon, num_agents, space, gymnasium.spaces.Discrete(2), start_state, "cpu")


def store_step(buffer, env_ids, step, masks=None, state=()):
    """Stores one step in which agent i observes 100 * i + step."""
    env_ids = np.asarray(env_ids)
    n = len(env_ids)
    masks = np.ones(n, dtype=bool) if masks is None else np.asarray(masks)
    obs = torch.tensor(100.0 * env_ids + step, dtype=torch.float32).view(n, 1)
    zeros = torch.zeros(n)
    return buffer.store(env_ids, masks, Step(obs, zeros.bool(), zeros.bool(), zeros.long(), zeros, zeros, zeros, state))


def place_one_by_one(records, segments, horizon, env_ids, masks):
    """The plain loop SegmentBuffer.place stands for: agent by agent, in the step's order."""
    rows, cols, stored = [], [], []
    for agent, mask in zip(env_ids.tolist(), masks.tolist()):
        if mask and agent not in records["row"]:
            records["row"][agent] = records["next_row"] if records["next_row"] < segments else None
            records["next_row"] += 1
        keep = bool(mask) and records["row"].get(agent) is not None
        stored.append(keep)
        if keep:
            rows.append(records["row"][agent])
            cols.append(records["col"].get(agent, 0))
            records["col"][agent] = cols[-1] + 1
            if records["col"][agent] == horizon:
                del records["row"][agent], records["col"][agent]
                records["filled"] += 1
    return rows, cols, stored


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(st.data())
def test_segment_buffer_places_steps_as_the_plain_loop_does(data):
    """Steps of runs of agents in order (read through slices, or placed whole by place_run), of
    agents in any order and of padded agents all land where the agent-by-agent loop puts them,
    until the batch is full."""
    num_agents = data.draw(st.integers(1, 9))
    segments, horizon = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 4))
    buffer = segment_buffer(segments, horizon, num_agents)
    records = {"row": {}, "col": {}, "next_row": 0, "filled": 0}
    for _ in range(data.draw(st.integers(1, 25))):
        if data.draw(st.booleans()):
            first = data.draw(st.integers(0, num_agents - 1))
            env_ids = np.arange(first, data.draw(st.integers(first + 1, num_agents)))
        else:
            env_ids = np.array(data.draw(st.permutations(range(num_agents)))[:data.draw(st.integers(1, num_agents))])
        masks = np.array(data.draw(st.lists(st.booleans(), min_size=len(env_ids), max_size=len(env_ids))))
        run = buffer.run_of(env_ids)
        if isinstance(run, slice) and data.draw(st.booleans()):
            masks[:] = True  # a whole run: place_step takes place_run's way
        rows, cols, stored, _ = buffer.place_step(env_ids, masks, run)
        expected = place_one_by_one(records, segments, horizon, env_ids, masks)
        assert (rows.tolist(), cols.tolist(), stored.tolist()) == expected
        assert buffer.full == (records["filled"] >= segments)


def test_segment_buffer_skips_padded_agents():
    buffer = segment_buffer(segments=3, horizon=2, num_agents=4)
    stored = [store_step(buffer, [0, 1, 2, 3], step, masks=[False, True, True, True]) for step in range(2)]
    assert stored == [3, 3] and buffer.full
    assert buffer.observations[..., 0].tolist() == [[100, 101], [200, 201], [300, 301]]


def test_segment_buffer_fills_from_pooled_batches_and_stops_when_full():
    buffer = segment_buffer(segments=3, horizon=2, num_agents=4)
    # An EnvPool-style backend: each step returns whichever half of the agents is ready.
    batches = [[0, 1], [2, 3], [1, 0], [3, 2], [0, 1]]
    stored = [store_step(buffer, ids, step) for step, ids in enumerate(batches)]
    assert buffer.full
    rows = buffer.observations[..., 0].tolist()
    # Agents 0 and 1 took rows 0 and 1 first, agent 2 row 2; agent 3 found no row left.
    assert rows == [[0, 2], [100, 102], [201, 203]]
    assert stored == [2, 1, 2, 1, 0]


def test_segment_buffer_keeps_the_state_each_segment_started_from():
    buffer = segment_buffer(segments=4, horizon=2, num_agents=2, state_size=3)
    for step in range(4):
        state = (torch.tensor([[10.0 * step] * 3, [10.0 * step + 1] * 3]),)
        store_step(buffer, [0, 1], step, state=state)
    assert buffer.full
    # Segments start at steps 0 and 2 of each agent: rows 0, 1 at step 0; rows 2, 3 at step 2.
    assert buffer.start_state[0][:, 0].tolist() == [0, 1, 20, 21]
    assert buffer.observations[..., 0].tolist() == [[0, 1], [100, 101], [2, 3], [102, 103]]


@pytest.mark.parametrize("obs_shape", [(2, 4), (5,)], ids=["whole-words", "odd-bytes"])
def test_byte_observations_are_stored_as_they_came(obs_shape):
    """Byte observations of whole 32-bit words are written as words; odd sizes, non-contiguous and
    unaligned tensors take the plain write. Each stores exactly the bytes it was given."""
    space = gymnasium.spaces.Box(0, 255, obs_shape, np.uint8)
    buffer = SegmentBuffer(2, 4, 2, space, gymnasium.spaces.Discrete(2), (), "cpu")
    sent = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (4, 2, *obs_shape), dtype=np.uint8))
    padded = torch.cat([torch.zeros(1, dtype=torch.uint8), sent[3].flatten()])
    given = [
        sent[0],
        sent[1].transpose(0, 1).contiguous().transpose(0, 1),  # not contiguous
        sent[2],
        padded[1:].view(sent[3].shape),  # storage offset 1: not word-aligned
    ]
    zeros = torch.zeros(2)
    for step, obs in enumerate(given):
        written = Step(obs, zeros.bool(), zeros.bool(), zeros.long(), zeros, zeros, zeros, ())
        if step % 2:
            buffer.write_at(torch.tensor([0, 1]), torch.tensor(step), False, written)
        else:
            buffer.write_rows(0, step, written)
    assert torch.equal(buffer.observations, sent.transpose(0, 1))
    none = torch.zeros(0, dtype=torch.long)  # a step in which no agent is stored
    buffer.write_at(none, torch.tensor(0), False, Step(sent[0][:0], none.bool(), none.bool(), none, *[none.float()] * 3, ()))
    assert torch.equal(buffer.observations, sent.transpose(0, 1))
