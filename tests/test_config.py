"""Every value a user can type is checked in one place: each key of default.ini has a rule, and a
bad value for any of them is one line naming the flag, the value and what is valid. Configs layer
an env's .ini, found beside the env, over the defaults; flags override both with the key's type,
and a misspelled one is answered with the closest."""

import dataclasses
import typing
from pathlib import Path

import numpy as np
import pytest
from helpers import config_for, make_trainer, run_epochs

import ocean
from pufferlib import cli
from pufferlib.config import (
    DEFAULT_CONFIG,
    RULES,
    VIEWS,
    ConfigError,
    apply_config_file,
    apply_flags,
    check_config,
    env_config_files,
    load_config,
    read_ini,
    view,
)

# The command that reads each section's keys (the others refuse them as not theirs).
COMMAND_OF = {"eval": "eval", "bench": "bench", "sweep": "sweep"}
DEFAULTS = read_ini(DEFAULT_CONFIG)
# [env] keys are the env's own (checked at its construction); [sweep] holds search spaces besides
# its settings, section.key names that the sweep parses.
CHECKED = [(section, key) for section, values in DEFAULTS.items() for key in values
           if section != "env" and not (section == "sweep" and "." in key)]
WALKED = [(section, key) for section, key in CHECKED if RULES[section][key].bad is not None]


def test_every_key_of_the_defaults_has_a_rule():
    assert [f"{section}.{key}" for section, key in CHECKED if key not in RULES.get(section, {})] == []


@pytest.mark.parametrize("section", sorted(VIEWS))
def test_each_typed_view_has_the_defaults_keys_and_types(section):
    fields = {field.name: field.type for field in dataclasses.fields(VIEWS[section])}
    assert list(fields) == list(DEFAULTS[section])
    for key, value in DEFAULTS[section].items():
        allowed = typing.get_args(fields[key]) or (fields[key],)
        allowed += (int,) if float in allowed else ()  # an int is a float's value, as in type checkers
        if value is not None and value != "auto":
            assert isinstance(value, allowed), f"[{section}] {key} = {value!r}"


@pytest.mark.parametrize("env_name", sorted(env_config_files()))
def test_every_env_config_reads_through_the_typed_views(env_name):
    config = load_config(env_name)
    assert {section: dataclasses.asdict(view(config, section)) for section in VIEWS} == {section: config[section] for section in VIEWS}


def test_the_defaults_and_every_env_config_pass_their_rules():
    check_config(DEFAULTS, str(DEFAULT_CONFIG))
    load_config("puffer_craftax_compact")  # checks the env's .ini as it loads


@pytest.mark.parametrize("section, key", WALKED, ids=[f"{s}.{k}" for s, k in WALKED])
def test_a_bad_value_for_any_flag_is_one_line_naming_it(section, key, capsys, tmp_path):
    flag = f"--{section}.{key.replace('_', '-')}"
    bad = str(RULES[section][key].bad)
    command = COMMAND_OF.get(section, "train")
    argv = [command, "puffer_squared", flag, bad, "--train.data-dir", str(tmp_path)] if command != "eval" else \
        [command, "puffer_squared", flag, bad]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("puffer: error: ") and flag in err and bad in err, err
    assert not list(tmp_path.iterdir())  # refused before any run folder was made


@pytest.mark.parametrize("value, says", [
    ("-0.1", "--train.learning-rate -0.1: expected a number >= 0"),
    ("nan", "--train.learning-rate nan: expected a number >= 0"),
])
def test_a_learning_rate_out_of_range_names_the_range(value, says, capsys):
    assert cli.main(["train", "puffer_squared", "--train.learning-rate", value]) == 2
    assert says in capsys.readouterr().err


def test_a_config_file_is_checked_key_by_key(tmp_path):
    path = tmp_path / "bad.ini"
    path.write_text("[train]\ngamma = 1.5\n")
    with pytest.raises(ConfigError, match=r"bad\.ini: \[train\] gamma 1\.5: expected a number >= 0 and <= 1"):
        apply_config_file(load_config("puffer_squared"), path)


def test_values_inside_the_rules_are_taken_as_given():
    config = load_config("puffer_squared")
    config["train"].update(gamma=1.0, total_timesteps=1, batch_size="auto", compile=True, checkpoint_minutes=0)
    config["base"]["solve_score"] = None
    check_config(config)


def test_config_layers_default_and_env_ini():
    config = load_config("puffer_squared")
    assert config["base"]["env_name"] == "puffer_squared"
    assert "size" in config["env"]
    assert isinstance(config["train"]["learning_rate"], float)
    assert isinstance(config["train"]["total_timesteps"], int)


@pytest.mark.parametrize("env_name", [pytest.param(name, marks=pytest.mark.slow) if name == "puffer_craftax_pixels" else name
                                      for name in ocean.ENVS])  # the pixel env's CNN trains in make test only
def test_every_ocean_env_has_a_config_beside_it_and_trains(env_name):
    config = config_for(env_name, "--vec.num-envs", "32", "--train.horizon", "8", "--train.minibatch-size", "128")
    assert env_config_files()[env_name].parent == Path(ocean.__file__).parent / env_name.removeprefix("puffer_").removesuffix("_compact").removesuffix("_pixels")
    trainer = make_trainer(config)
    run_epochs(trainer, 1)
    assert trainer.global_step == trainer.num_agents * 8
    assert all(np.isfinite(trainer.losses[key]) for key in ("policy_loss", "value_loss", "entropy"))
    trainer.close()


def test_flags_override_with_types():
    config = load_config("puffer_squared")
    apply_flags(config, [
        "--train.learning-rate", "0.01", "--env.size=9", "--train.total_timesteps", "2e6",
        "--train.anneal-lr", "false", "--base.rnn", "mingru", "--train.compile", "true", "--base.stop-on-solve",
    ])
    assert config["train"]["learning_rate"] == 0.01
    assert config["env"]["size"] == 9
    assert config["train"]["total_timesteps"] == 2_000_000 and isinstance(config["train"]["total_timesteps"], int)
    assert config["train"]["anneal_lr"] is False
    assert config["base"]["rnn"] == "mingru"
    assert config["train"]["compile"] is True
    assert config["base"]["stop_on_solve"] is True


def test_unknown_flags_suggest_the_closest():
    config = load_config("puffer_squared")
    with pytest.raises(ConfigError, match="Did you mean --train.learning-rate"):
        apply_flags(config, ["--train.learnin-rate", "0.1"])
    with pytest.raises(ConfigError, match="Did you mean --env.size"):
        apply_flags(config, ["--env.sise", "5"])
    with pytest.raises(ConfigError, match="integer"):
        apply_flags(config, ["--train.horizon", "3.5"])
    with pytest.raises(ConfigError, match="true or false"):
        apply_flags(config, ["--train.anneal-lr", "maybe"])
    with pytest.raises(ConfigError, match="needs a value"):
        apply_flags(config, ["--train.learning-rate"])
    with pytest.raises(ConfigError, match="Did you mean puffer_squared"):
        load_config("puffer_sqared")
