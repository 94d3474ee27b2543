"""CleanRL-style interfaces over PufferLib policies: ``get_value`` and ``get_action_and_value``.

Any policy split into ``encode_observations`` / ``decode_actions`` works; ``RecurrentPolicy``
adds an LSTM around such a policy (or takes a ``pufferlib.models`` recurrent wrapper as it is).
"""

from torch import nn

from pufferlib.models import LSTMWrapper, RecurrentWrapper
from pufferlib.pytorch import clear_finished, sample_logits


class Policy(nn.Module):
    """A feed-forward policy as CleanRL's PPO agent sees one."""

    def __init__(self, policy):
        super().__init__()
        self.policy = policy

    def get_value(self, x):
        _, value = self.policy.decode_actions(self.policy.encode_observations(x))
        return value

    def get_action_and_value(self, x, action=None):
        """Returns (action, log-probability, entropy, value) for a batch of observations."""
        logits, value = self.policy.decode_actions(self.policy.encode_observations(x))
        action, logprob, entropy = sample_logits(logits, action)
        return action, logprob, entropy, value


class RecurrentPolicy(nn.Module):
    """A recurrent policy as CleanRL's LSTM PPO agent sees one.

    ``policy`` is either a recurrent wrapper from ``pufferlib.models`` or a plain encode/decode
    policy, which gets an LSTM of ``hidden_size`` (default: the policy's ``hidden_size``).
    Observations are one step per agent, [B, ...], with ``done`` [B] clearing the memory of agents
    whose episode just began; or whole sequences, [N, T, ...], with ``done`` [N, T] marking episode
    starts inside them (CleanRL's training pass over stored rollouts).
    """

    def __init__(self, policy, hidden_size=None):
        super().__init__()
        if not isinstance(policy, RecurrentWrapper):
            size = hidden_size or policy.hidden_size
            policy = LSTMWrapper(None, policy, input_size=policy.hidden_size, hidden_size=size)
        self.policy = policy

    def initial_state(self, batch_size, device="cpu"):
        return self.policy.initial_state(batch_size, device)

    def _forward(self, x, state, done):
        if done is not None and done.ndim == 2:
            logits, value = self.policy(x, state, done.bool())
            return logits, value.reshape(-1), state
        if done is not None:
            state = clear_finished(state, done)
        return self.policy.forward_eval(x, state)

    def get_value(self, x, state, done=None):
        return self._forward(x, state, done)[1]

    def get_action_and_value(self, x, state, done=None, action=None):
        """Returns (action, log-probability, entropy, value, new state). For sequences the state
        returned is the one given: the caller keeps acting state separately, as CleanRL does."""
        logits, value, state = self._forward(x, state, done)
        action, logprob, entropy = sample_logits(logits, None if action is None else action.reshape(value.shape[0], -1))
        return action, logprob, entropy, value, state
