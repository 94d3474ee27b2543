"""Every value a user can type is checked in one place: each key of default.ini has a rule, and a
bad value for any of them is one line naming the flag, the value and what is valid."""

import pytest

from pufferlib import cli
from pufferlib.config import DEFAULT_CONFIG, RULES, ConfigError, apply_config_file, check_config, load_config, read_ini

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
