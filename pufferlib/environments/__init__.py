"""Third-party environment families, each wrapped for pufferlib in one small module.

Every module exposes ``env_creator(name, **kwargs)``, which returns a picklable creator for
``pufferlib.vector.make``, and ``make(name, buf=None, **kwargs)``, which builds one emulated env:

- ``classic_control``: Gymnasium's CartPole, Acrobot, MountainCar and Pendulum
- ``atari``: Atari 2600 games through ale-py (ROMs ship with ale-py), standard DQN preprocessing
- ``nethack``: NetHack through nle
- ``pettingzoo``: PettingZoo butterfly (pistonball, ...) and classic (chess, tictactoe, ...)

The third-party packages are pinned in requirements-envs.txt; modules import them on first use.
"""
