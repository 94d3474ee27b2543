"""Policies: shapes for every action space, sampling, and recurrent training/acting agreement."""

import gymnasium
import numpy as np
import pytest
import torch
from torch.distributions import Categorical

from pufferlib.exceptions import APIUsageError
from pufferlib.frameworks import cleanrl
from pufferlib.models import Convolutional, Default, LSTMWrapper, MinGRU, MinGRUWrapper, PixelCNN
from pufferlib.pytorch import sample_logits, sampling_noise


class FakeEnv:
    """Just the spaces a policy reads."""

    def __init__(self, observation_space, action_space):
        self.single_observation_space = observation_space
        self.single_action_space = action_space


BOX_OBS = gymnasium.spaces.Box(-1, 1, (6,), np.float32)
ACTION_SPACES = {
    "discrete": gymnasium.spaces.Discrete(5),
    "multidiscrete": gymnasium.spaces.MultiDiscrete([2, 3, 4]),
    "box": gymnasium.spaces.Box(-1, 1, (3,), np.float32),
}


@pytest.mark.parametrize("kind", ACTION_SPACES)
def test_default_policy_samples_and_scores_every_action_space(kind):
    space = ACTION_SPACES[kind]
    policy = Default(FakeEnv(BOX_OBS, space), hidden_size=32)
    obs = torch.randn(7, 6)
    logits, values, state = policy.forward_eval(obs, ())
    assert values.shape == (7,) and state == ()
    action, logprob, entropy = sample_logits(logits)
    assert action.shape == (7, *space.shape)
    assert logprob.shape == entropy.shape == (7,)
    # Scoring the sampled action gives back the same log-probability.
    _, again, _ = sample_logits(logits, action=action)
    torch.testing.assert_close(again, logprob)
    if kind == "box":
        assert action.dtype == torch.float32
    else:
        nvec = [space.n] if kind == "discrete" else list(space.nvec)
        assert int(action.min()) >= 0 and all(int(action.reshape(7, -1)[:, i].max()) < n for i, n in enumerate(nvec))


@pytest.mark.parametrize("kind", ACTION_SPACES)
def test_output_heads_stay_float32_under_bf16_autocast(kind):
    """The trainer's bf16 autocast rounds the body, never the logits and values PPO's ratios and
    advantages are computed from: the heads give the float32 result of the body's bf16 output."""
    torch.manual_seed(0)
    policy = Default(FakeEnv(BOX_OBS, ACTION_SPACES[kind]), hidden_size=32)
    obs = torch.randn(7, 6)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        hidden = policy.encode_observations(obs)
        logits, values = policy.decode_actions(hidden)
    assert hidden.dtype == torch.bfloat16
    assert values.dtype == torch.float32
    torch.testing.assert_close(values, policy.value_head(hidden.float()).squeeze(-1), rtol=0, atol=0)
    head = policy.action_head.linear
    means = logits.mean if kind == "box" else torch.cat(logits, -1) if kind == "multidiscrete" else logits
    assert means.dtype == torch.float32
    torch.testing.assert_close(means, head(hidden.float()), rtol=0, atol=0)


def test_discrete_logprob_and_entropy_match_torch_categorical():
    logits = torch.randn(11, 6)
    action, logprob, entropy = sample_logits(logits)
    reference = Categorical(logits=logits)
    torch.testing.assert_close(logprob, reference.log_prob(action))
    torch.testing.assert_close(entropy, reference.entropy())


def test_sampling_is_reproducible_with_a_generator():
    logits = torch.randn(100, 4)
    first = sample_logits(logits, generator=torch.Generator().manual_seed(3))[0]
    second = sample_logits(logits, generator=torch.Generator().manual_seed(3))[0]
    assert torch.equal(first, second)


@pytest.mark.parametrize("kind", ACTION_SPACES)
def test_noise_drawn_beforehand_samples_what_the_generator_would(kind):
    """The trainer's compiled step takes its random numbers as an input (``sampling_noise``): from
    the same generator state they must pick the actions ``sample_logits`` picks drawing them
    itself, and other numbers must pick others."""
    space = ACTION_SPACES[kind]
    policy = Default(FakeEnv(BOX_OBS, space), hidden_size=32)
    logits, _, _ = policy.forward_eval(torch.randn(64, 6), ())
    drawn = sample_logits(logits, generator=torch.Generator().manual_seed(3))
    noise = sampling_noise(space, 64, torch.Generator().manual_seed(3))
    given = sample_logits(logits, noise=noise)
    for a, b in zip(drawn, given):
        assert torch.equal(a, b)
    other = sample_logits(logits, noise=sampling_noise(space, 64, torch.Generator().manual_seed(4)))[0]
    assert not torch.equal(other, given[0])


def test_convolutional_policy_on_images():
    for channels_last, shape in ((False, (4, 84, 84)), (True, (84, 84, 3))):
        env = FakeEnv(gymnasium.spaces.Box(0, 255, shape, np.uint8), ACTION_SPACES["discrete"])
        policy = Convolutional(env, hidden_size=64, channels_last=channels_last)
        logits, values, _ = policy.forward_eval(torch.randint(0, 255, (2, *shape), dtype=torch.uint8), ())
        assert logits.shape == (2, 5) and values.shape == (2,)


@pytest.mark.parametrize("shape, channels_last", [((64, 48, 3), True), ((3, 64, 48), False)])
def test_pixel_cnn_on_images_of_either_layout(shape, channels_last):
    env = FakeEnv(gymnasium.spaces.Box(0, 255, shape, np.uint8), ACTION_SPACES["multidiscrete"])
    policy = PixelCNN(env, hidden_size=32, channels_last=channels_last)
    logits, values, _ = policy.forward_eval(torch.randint(0, 255, (2, *shape), dtype=torch.uint8), ())
    assert [part.shape for part in logits] == [(2, 2), (2, 3), (2, 4)] and values.shape == (2,)


@pytest.mark.parametrize("policy_class, shape, channels_last, network", [
    (Convolutional, (84, 84, 3), True, {
        "0.weight": (32, 3, 8, 8), "0.bias": (32,), "2.weight": (64, 32, 4, 4), "2.bias": (64,),
        "4.weight": (64, 64, 3, 3), "4.bias": (64,), "7.weight": (64, 64 * 7 * 7), "7.bias": (64,),
    }),
    (PixelCNN, (3, 64, 48), False, {
        "0.weight": (32, 3, 3, 3), "0.bias": (32,), "3.weight": (64, 32, 3, 3), "3.bias": (64,),
        "6.weight": (64, 64, 3, 3), "6.bias": (64,), "10.weight": (64, 64 * 8 * 6), "10.bias": (64,),
    }),
], ids=["convolutional", "pixelcnn"])
def test_image_policies_keep_their_parameter_names_and_shapes(policy_class, shape, channels_last, network):
    """Saved checkpoints load by these names; the hidden layer's input is the convolutions' output
    on the observation's shape (84 -> 20 -> 9 -> 7 for Nature-DQN; three halvings for PixelCNN)."""
    env = FakeEnv(gymnasium.spaces.Box(0, 255, shape, np.uint8), ACTION_SPACES["discrete"])
    policy = policy_class(env, hidden_size=64, channels_last=channels_last)
    heads = {"action_head.linear.weight": (5, 64), "action_head.linear.bias": (5,), "value_head.weight": (1, 64),
             "value_head.bias": (1,)}
    expected = {**{f"network.{name}": size for name, size in network.items()}, **heads}
    assert {name: tuple(value.shape) for name, value in policy.state_dict().items()} == expected
    assert list(policy.state_dict()) == list(expected)


@pytest.mark.parametrize("policy_class", [Convolutional, PixelCNN])
def test_image_policies_refuse_observations_that_are_not_images(policy_class):
    with pytest.raises(APIUsageError, match=f"{policy_class.__name__} needs image observations of rank 3"):
        policy_class(FakeEnv(BOX_OBS, ACTION_SPACES["discrete"]))


@pytest.mark.parametrize("wrapper", ["lstm", "mingru"])
def test_recurrent_training_pass_matches_stepping(wrapper):
    """Training replays a segment in one call; it must see exactly what acting step by step saw,
    including memory cleared where an episode begins inside the segment."""
    torch.manual_seed(0)
    env = FakeEnv(BOX_OBS, ACTION_SPACES["discrete"])
    base = Default(env, hidden_size=16)
    if wrapper == "lstm":
        policy = LSTMWrapper(env, base, input_size=16, hidden_size=16)
    else:
        policy = MinGRUWrapper(env, base, input_size=16, hidden_size=16, num_layers=3)
    segments, steps = 4, 9
    obs = torch.randn(segments, steps, 6)
    resets = torch.rand(segments, steps) < 0.25
    start = tuple(torch.randn_like(s) for s in policy.initial_state(segments, "cpu"))

    state, step_logits, step_values = start, [], []
    for t in range(steps):
        if t > 0:
            keep = (~resets[:, t]).float()
            state = tuple(s * keep.view(-1, *[1] * (s.ndim - 1)) for s in state)
        logits, values, state = policy.forward_eval(obs[:, t], state)
        step_logits.append(logits)
        step_values.append(values)
    logits, values = policy(obs, start, resets)
    torch.testing.assert_close(logits.reshape(segments, steps, -1), torch.stack(step_logits, 1), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(values, torch.stack(step_values, 1), rtol=1e-4, atol=1e-5)


def test_mingru_scan_gradients_match_stepping():
    torch.manual_seed(1)
    rnn = MinGRU(5, 8, num_layers=2)
    x = torch.randn(3, 12, 5, requires_grad=True)
    state = torch.zeros(3, 2, 8)
    rnn(x, state).sum().backward()
    scan_grad = x.grad.clone()
    x.grad = None
    outputs, h = [], state
    for t in range(12):
        out, h = rnn.step(x[:, t], h)
        outputs.append(out)
    torch.stack(outputs, 1).sum().backward()
    torch.testing.assert_close(scan_grad, x.grad, rtol=1e-4, atol=1e-5)


def test_cleanrl_wrappers():
    env = FakeEnv(BOX_OBS, ACTION_SPACES["multidiscrete"])
    agent = cleanrl.Policy(Default(env, hidden_size=32))
    action, logprob, entropy, value = agent.get_action_and_value(torch.randn(5, 6))
    assert action.shape == (5, 3) and logprob.shape == entropy.shape == value.shape == (5,)
    assert agent.get_value(torch.randn(5, 6)).shape == (5,)

    recurrent = cleanrl.RecurrentPolicy(Default(env, hidden_size=32))
    state = recurrent.initial_state(5)
    action, logprob, entropy, value, state = recurrent.get_action_and_value(torch.randn(5, 6), state, done=torch.zeros(5))
    assert action.shape == (5, 3) and state[0].shape == (5, 1, 32)
    # A training pass over stored sequences scores the given actions.
    done = torch.zeros(5, 4, dtype=torch.bool)
    actions = torch.zeros(20, 3, dtype=torch.long)
    _, logprob, _, value, _ = recurrent.get_action_and_value(torch.randn(5, 4, 6), recurrent.initial_state(5), done, actions)
    assert logprob.shape == value.shape == (20,)
