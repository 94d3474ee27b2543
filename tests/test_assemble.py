"""What a config builds (pufferlib.assemble): the vecenv with the timeout and threads its [vec]
section names, and a policy whose recurrent width must match its own."""

import pytest
from helpers import config_for

from pufferlib import assemble, vector
from pufferlib.config import ConfigError, load_config


def test_vec_timeout_reaches_the_workers_and_bad_values_are_explained():
    flags = ["--vec.backend", "Multiprocessing", "--vec.num-envs", "2", "--vec.num-workers", "2"]
    assert load_config("puffer_squared")["vec"]["timeout"] == vector.DEFAULT_TIMEOUT_S
    for given, expected in (("7.5", 7.5), ("inf", None)):
        vecenv = assemble.make_vecenv("puffer_squared", config_for("puffer_squared", *flags, "--vec.timeout", given))
        try:
            assert isinstance(vecenv, vector.Multiprocessing) and vecenv.timeout == expected
        finally:
            vecenv.close()
    with pytest.raises(ConfigError, match="--vec.timeout -1.0: expected a number of seconds > 0, or inf for no limit"):
        assemble.make_vecenv("puffer_squared", config_for("puffer_squared", *flags, "--vec.timeout", "-1"))


def test_native_env_objects_step_one_at_a_time_on_all_the_threads_or_side_by_side_on_one_each():
    cases = (("4", "auto", [4], 0), ("4", "32", [4, 4], 1), ("4", "16", [4] * 4, 1), ("1", "16", [1] * 4, 4))
    for num_threads, batch_size, env_threads, stepping_threads in cases:
        config = config_for("puffer_squared", "--vec.num-envs", "64", "--vec.num-threads", num_threads, "--vec.batch-size", batch_size)
        vecenv = assemble.make_vecenv("puffer_squared", config)
        try:
            assert [worker.envs[0].num_threads for worker in vecenv.workers] == env_threads
            assert vecenv.stepping_threads == stepping_threads
        finally:
            vecenv.close()


def test_a_recurrent_width_unlike_the_policys_is_a_config_error():
    config = config_for("puffer_memory", "--policy.hidden-size", "32", "--rnn.hidden-size", "64")
    env = assemble.make_vecenv("puffer_memory", config)
    try:
        with pytest.raises(ConfigError, match=r"\[rnn\] hidden_size 64 differs from \[policy\] hidden_size 32.*--policy.hidden-size 64 --rnn.hidden-size 64"):
            assemble.make_policy(env, config)
    finally:
        env.close()
