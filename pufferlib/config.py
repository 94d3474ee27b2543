"""Training configuration: ``.ini`` files and command-line flags.

A run's config is ``pufferlib/configs/default.ini`` overlaid by its env's own ``.ini``. Env configs
live beside the code of their env family: ``pufferlib/configs/`` for the third-party families and,
for every package registered under the ``pufferlib.env_configs`` entry point (Ocean registers
itself in pyproject.toml), any ``.ini`` inside that package. Each names the envs it serves in
``[base] env_name``. Every key is also a flag: ``--train.learning-rate 0.01``.
"""

import ast
import configparser
import contextlib
import dataclasses
import importlib.metadata
import importlib.util
import re
import textwrap
from pathlib import Path

from pufferlib.exceptions import closest, did_you_mean

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
DEFAULT_CONFIG = CONFIG_DIR / "default.ini"
ENTRY_POINT_GROUP = "pufferlib.env_configs"
# Sections whose keys belong to one env or one policy class: an env's .ini replaces them whole.
REPLACED_SECTIONS = ("env", "policy")
# Sections an env's .ini may add keys to: [sweep] names any config key to search (env.size).
OPEN_SECTIONS = ("sweep",)


class ConfigError(ValueError):
    """A config file or command-line flag that cannot be used as given."""


def parse_value(text):
    """An .ini value as a Python value: bools, None, ints (1_000_000), floats, else the string."""
    text = text.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.lower() == "none":
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def read_ini(path):
    parser = configparser.ConfigParser(inline_comment_prefixes=("#",))
    parser.optionxform = str  # keys are case-sensitive identifiers
    with open(path) as f:
        parser.read_file(f)
    return {section: {key: parse_value(value) for key, value in parser[section].items()} for section in parser.sections()}


KEY_LINE = re.compile(r"^([A-Za-z_][\w.]*)\s*=")


def read_descriptions(path):
    """{section: {key: text}}: the comment lines directly above each key of an .ini, its help."""
    descriptions, section, comment = {}, None, []
    for line in Path(path).read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            comment.append(stripped.lstrip("#").strip())
            continue
        key = KEY_LINE.match(stripped)
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1]
        elif key and section and comment:
            descriptions.setdefault(section, {})[key.group(1)] = " ".join(comment)
        comment = []
    return descriptions


def flag_descriptions(env_name=None):
    """The help of every key: default.ini's comments, overlaid by those of the env's .ini."""
    descriptions = read_descriptions(DEFAULT_CONFIG)
    path = env_config_files().get(env_name) if env_name else None
    for section, values in (read_descriptions(path) if path else {}).items():
        descriptions.setdefault(section, {}).update(values)
    return descriptions


def config_dirs():
    """pufferlib/configs/ and the folder of every package registered as holding env configs.

    The packages are located, not imported: finding configs never loads compiled envs."""
    dirs = [CONFIG_DIR]
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        spec = importlib.util.find_spec(entry.value)
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(f"Entry point {entry.name} = {entry.value!r} ({ENTRY_POINT_GROUP}) names no package")
        dirs.extend(Path(location) for location in spec.submodule_search_locations)
    return dirs


def env_config_files():
    """{env name: .ini path} for every env config in ``config_dirs()`` ([base] env_name)."""
    found = {}
    for path in sorted(path for folder in config_dirs() for path in folder.rglob("*.ini")):
        if path == DEFAULT_CONFIG:
            continue
        names = read_ini(path).get("base", {}).get("env_name")
        for name in str(names or "").replace(",", " ").split():
            found[name] = path
    return found


def canonical_env_name(env_name):
    """Ocean envs may be named without their prefix: 'squared' -> 'puffer_squared'."""
    files = env_config_files()
    if env_name not in files and f"puffer_{env_name}" in files:
        return f"puffer_{env_name}"
    return env_name


def load_config(env_name):
    """default.ini, overlaid by the env's own .ini. Unknown keys in an env .ini are errors."""
    config = read_ini(DEFAULT_CONFIG)
    files = env_config_files()
    if env_name not in files:
        hint = did_you_mean(env_name, files, ignore_prefix="puffer_")
        raise ConfigError(
            f"No config for env {env_name!r}.{hint} Known envs: {', '.join(sorted(files))}"
        )
    for section, values in read_ini(files[env_name]).items():
        if section in REPLACED_SECTIONS:
            config[section] = dict(values)
            continue
        if section not in config:
            raise ConfigError(f"{files[env_name]}: unknown section [{section}]; valid: {', '.join(config)}")
        for key, value in values.items():
            if key not in config[section] and section not in OPEN_SECTIONS:
                raise ConfigError(f"{files[env_name]}: unknown key {key!r} in [{section}]")
            config[section][key] = value
    config["base"]["env_name"] = env_name
    check_config(config, str(files[env_name]))
    return config


def recipe_files(env_name):
    """{name: path} of the recipes shipped beside an env's .ini: .ini files there that serve no env
    (no [base] env_name), each a set of values to lay on the env's config, ``--config NAME``."""
    path = env_config_files().get(env_name)
    if path is None:
        return {}
    return {other.stem: other for other in sorted(path.parent.glob("*.ini"))
            if other != DEFAULT_CONFIG and not read_ini(other).get("base", {}).get("env_name")}


def config_file_path(env_name, given):
    """--config's argument as a file: a path, or the name of one of the env's recipes."""
    if Path(given).is_file():
        return Path(given)
    recipes = recipe_files(env_name)
    if given in recipes:
        return recipes[given]
    shipped = f"its recipes: {', '.join(recipes)}" if recipes else "it ships no recipes"
    raise ConfigError(f"--config {given}: no such file, and not a recipe of {env_name} ({shipped})")


def apply_config_file(config, path):
    """Overlays an .ini (a `puffer sweep` result, or a search space for one) on a config key by
    key; its sections and keys must exist, as for flags, except the section.key names in [sweep]
    that choose what a sweep searches."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--config {path}: no such file")
    try:
        overlay = read_ini(path)
    except configparser.Error as error:
        raise ConfigError(f"--config {path}: not a valid .ini file: {error}") from None
    for section, values in overlay.items():
        if section not in config:
            raise ConfigError(f"{path}: unknown section [{section}]; valid: {', '.join(config)}")
        for key, value in values.items():
            searched = section in OPEN_SECTIONS and "." in key  # a section.key to search, checked by the sweep
            if key not in config[section] and not searched:
                hint = did_you_mean(key, config[section])
                raise ConfigError(f"{path}: unknown key {key!r} in [{section}].{hint}")
            check_value(section, key, value, f"{path}: [{section}] {key}")
            config[section][key] = value
    return config


class Rule:
    """What values a config key takes: ``accepts(value)``, the words a user reads (``valid``), and
    one value it refuses, so a test can walk every key with a bad value (None: any text is fine)."""

    def __init__(self, accepts, valid, bad, options=()):
        self.accepts, self.valid, self.bad, self.options = accepts, valid, bad, options


def number(low=None, high=None, integer=False, low_open=False, high_open=False, auto=False, none=False, valid=None):
    """A number in [low, high] (an end left open or absent as asked); ``auto`` and ``none`` also
    allow 'auto' and None. ``valid`` words the range for a user where the bounds alone say too little."""
    kind = "an integer" if integer else "a number"
    bounds = []
    if low is not None:
        bounds.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        bounds.append(f"{'<' if high_open else '<='} {high:g}")
    valid = valid or f"{kind} {' and '.join(bounds)}".strip() + (", auto" if auto else "") + (", none" if none else "")

    def accepts(value):
        if (auto and value == "auto") or (none and value is None):
            return True
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
            return False
        if value != value:  # NaN fails every bound
            return False
        if low is not None and (value <= low if low_open else value < low):
            return False
        return high is None or (value < high if high_open else value <= high)

    bad = (low - 1) if low is not None else (high + 1) if high is not None else "nonsense"
    return Rule(accepts, valid, bad)


def choice(*options):
    """One of ``options`` (names compare case-insensitively, as the backends' do)."""
    names = {str(option).lower() for option in options}

    def accepts(value):
        return str(value).lower() in names

    return Rule(accepts, "one of " + ", ".join(str(option) for option in options), "nonsense", options)


def auto_or_bool():
    return Rule(lambda value: value == "auto" or isinstance(value, bool), "auto, true or false", "nonsense")


def pattern(regex, valid, bad):
    """Text that ``regex`` matches whole."""
    compiled = re.compile(regex)
    return Rule(lambda value: isinstance(value, str) and compiled.fullmatch(value) is not None, valid, bad)


def text(bad=None, valid="any text"):
    return Rule(lambda value: value is None or isinstance(value, str), valid, bad)


POSITIVE = number(0, low_open=True)
NON_NEGATIVE = number(0)
COUNT = number(1, integer=True)
FRACTION = number(0, 1)
# The values each key of default.ini takes, checked wherever values enter a config: an .ini, a
# --config file, a flag. The env's own [env] keys are the env's to check (at construction), and
# [sweep]'s search spaces are parsed by the sweep.
RULES = {
    "base": {
        "env_name": text(), "package": text(valid="the module of an env family"), "policy": text(valid="default, convolutional or module:Class"),
        "rnn": choice("none", "lstm", "mingru"), "seed": number(0, integer=True), "solve_metric": text(valid="an episode statistic"),
        "solve_score": number(auto=True, none=True), "solve_tolerance": NON_NEGATIVE, "solve_episodes": COUNT,
        "score_max_steps": COUNT, "stop_on_solve": choice(True, False),
    },
    "vec": {
        "backend": choice("native", "Serial", "Multiprocessing", "Ray"), "num_envs": COUNT, "num_threads": COUNT,
        "device": pattern(r"cpu|cuda(:\d+)?", "cpu, cuda or cuda:N", "tpu"), "num_workers": number(1, integer=True, auto=True),
        "batch_size": number(1, integer=True, auto=True), "timeout": number(0, low_open=True, valid="a number of seconds > 0, or inf for no limit"),
    },
    "policy": {"hidden_size": COUNT, "num_layers": number(0, integer=True)},
    "rnn": {"hidden_size": COUNT, "num_layers": COUNT},
    "train": {
        "device": pattern(r"auto|cpu|cuda(:\d+)?", "auto, cpu, cuda or cuda:N", "tpu"), "total_timesteps": COUNT, "torch_threads": number(0, integer=True),
        "optimizer": choice("adam", "muon"), "learning_rate": NON_NEGATIVE, "anneal_lr": choice(True, False),
        "adam_beta1": number(0, 1, high_open=True), "adam_beta2": number(0, 1, high_open=True), "adam_eps": POSITIVE,
        "muon_momentum": number(0, 1, high_open=True), "gamma": FRACTION, "gae_lambda": FRACTION,
        "horizon": number(2, integer=True), "batch_size": number(1, integer=True, auto=True), "minibatch_size": COUNT,
        "update_epochs": COUNT, "clip_coef": POSITIVE, "vf_coef": NON_NEGATIVE, "vf_clip_coef": POSITIVE,
        "ent_coef": NON_NEGATIVE, "max_grad_norm": POSITIVE, "vtrace_rho_clip": POSITIVE, "vtrace_c_clip": POSITIVE,
        "prio_alpha": NON_NEGATIVE, "prio_beta0": FRACTION, "precision": choice("auto", "float32", "bfloat16"),
        "compile": auto_or_bool(), "cudagraphs": auto_or_bool(), "distributed": choice("auto", "on", "off"),
        "distributed_timeout": POSITIVE, "checkpoint_interval": number(0, integer=True), "checkpoint_minutes": NON_NEGATIVE,
        "data_dir": text(), "dashboard": choice("auto", "rich", "plain", "off"), "print_interval": POSITIVE,
        "wandb": choice(True, False), "wandb_project": text(), "tensorboard": choice(True, False),
    },
    "eval": {"num_envs": COUNT, "episodes": COUNT, "max_steps": COUNT, "fps": NON_NEGATIVE, "output": text(valid="auto, or a .gif or .mp4 path")},
    "bench": {"seconds": POSITIVE},
    "sweep": {
        "trials": COUNT, "seeds": COUNT, "trial_steps": number(0, integer=True), "trial_seconds": NON_NEGATIVE,
        "metric": text(valid="an episode statistic"), "direction": choice("maximize", "minimize"),
        "cost": choice("seconds", "steps", "cpu_seconds"), "sampler": choice("tpe", "random", "nsga2"),
        "startup_trials": number(0, integer=True), "pruner": choice("median", "successive_halving", "none"),
        "prune_startup": number(0, integer=True), "prune_warmup": FRACTION, "report_points": COUNT,
        "storage": text(valid="auto, or postgresql://user:password@host:port/db"), "study": text(),
    },
}


def check_value(section, key, value, where):
    """Raises ConfigError naming ``where`` (a flag, or an .ini and its key), the value and what is
    valid, unless ``value`` is one that ``section.key`` takes."""
    rule = RULES.get(section, {}).get(key)
    if rule is not None and not rule.accepts(value):
        hint = did_you_mean(value, [str(option) for option in rule.options]) if isinstance(value, str) else ""
        raise ConfigError(f"{where} {value!r}: expected {rule.valid}.{hint}".rstrip("."))


def check_config(config, where=None):
    """Checks every key of ``config`` that has a rule (a whole config, before anything is built);
    an error names the key as ``where`` (an .ini file) holds it, else as its flag."""
    for section, values in config.items():
        for key, value in values.items():
            check_value(section, key, value, f"{where}: [{section}] {key}" if where else flag_name(section, key))


# Typed views: a section as the module that reads it sees it, attributes instead of string keys.
# Their fields are the default.ini section's keys (tests/test_config.py checks that they agree),
# and `view` takes a config that check_config has passed. "auto" and None are kept as given; the
# module that reads a field resolves them.


@dataclasses.dataclass(frozen=True)
class BaseSettings:
    env_name: str
    package: str | None
    policy: str
    rnn: str | None
    seed: int
    solve_metric: str
    solve_score: float | str | None
    solve_tolerance: float
    solve_episodes: int
    score_max_steps: int
    stop_on_solve: bool


@dataclasses.dataclass(frozen=True)
class VecSettings:
    backend: str
    num_envs: int
    num_threads: int
    device: str
    num_workers: int | str
    batch_size: int | str
    timeout: float


@dataclasses.dataclass(frozen=True)
class TrainSettings:
    device: str
    total_timesteps: int
    torch_threads: int
    optimizer: str
    learning_rate: float
    anneal_lr: bool
    adam_beta1: float
    adam_beta2: float
    adam_eps: float
    muon_momentum: float
    gamma: float
    gae_lambda: float
    horizon: int
    batch_size: int | str
    minibatch_size: int
    update_epochs: int
    clip_coef: float
    vf_coef: float
    vf_clip_coef: float
    ent_coef: float
    max_grad_norm: float
    vtrace_rho_clip: float
    vtrace_c_clip: float
    prio_alpha: float
    prio_beta0: float
    precision: str
    compile: bool | str
    cudagraphs: bool | str
    distributed: str
    distributed_timeout: float
    checkpoint_interval: int
    checkpoint_minutes: float
    data_dir: str
    dashboard: str
    print_interval: float
    wandb: bool
    wandb_project: str
    tensorboard: bool


@dataclasses.dataclass(frozen=True)
class EvalSettings:
    num_envs: int
    episodes: int
    max_steps: int
    fps: float
    output: str


VIEWS = {"base": BaseSettings, "vec": VecSettings, "train": TrainSettings, "eval": EvalSettings}


def view(config, section):
    """``config[section]`` as its typed view (a snapshot: later changes to the dict are not seen)."""
    return VIEWS[section](**config[section])


def flag_name(section, key):
    return f"--{section}.{key.replace('_', '-')}"


def flag_names(config):
    return [flag_name(section, key) for section, values in config.items() for key in values]


def suggest_flag(flag, config, extra_flags=()):
    """' Did you mean --x.y?' for a mistyped flag: its key against the keys of its section (then
    of every section, for a key put in the wrong one), or its section against the sections.
    Flags share their '--section.' prefix, so whole flags would all look alike."""
    section, dot, key = flag[2:].partition(".")
    key = key.replace("-", "_")
    if not dot:
        return did_you_mean(flag, extra_flags)
    if section in config and closest(key, config[section]):
        return f" Did you mean {flag_name(section, closest(key, config[section]))}?"
    for other, values in config.items():
        if key in values:
            return f" Did you mean {flag_name(other, key)}?"
    other = None if section in config else closest(section, config)
    if other:
        return f" Did you mean {flag_name(other, closest(key, config[other]) or '*')}?"
    return ""


def convert_flag(flag, text, default):
    """Casts a flag's text to the type of the key's default value ("1e6" is a fine integer)."""
    expected = None
    if isinstance(default, bool):
        if text.lower() in ("true", "1", "yes", "on"):
            return True
        if text.lower() in ("false", "0", "no", "off"):
            return False
        expected = "true or false"
    elif isinstance(default, int):
        with contextlib.suppress(ValueError):
            number = float(text.replace("_", ""))
            if number.is_integer():
                return int(number)
        expected = "an integer"
    elif isinstance(default, float):
        with contextlib.suppress(ValueError):
            return float(text.replace("_", ""))
        expected = "a number"
    else:
        return parse_value(text)
    raise ConfigError(f"{flag} {text!r}: expected {expected} (default: {default!r})")


def apply_flags(config, argv, extra_flags=(), allowed=None, command="this command"):
    """Applies '--section.key value' / '--section.key=value' flags; hyphens and underscores match.

    An unknown flag is an error naming the closest valid one. ``extra_flags`` are the command's
    own options, offered as suggestions too. ``allowed(section, key)``, when given, says which
    keys ``command`` uses; a flag for any other key is an error.
    """
    i = 0
    while i < len(argv):
        token = argv[i]
        if not token.startswith("--") or "." not in token.split("=")[0]:
            hint = suggest_flag(token.split("=")[0], config, extra_flags) if token.startswith("--") else ""
            raise ConfigError(f"Unknown argument {token!r}.{hint} Flags look like --train.learning-rate 0.01")
        flag, equals, text = token.partition("=")
        section, _, key = flag[2:].partition(".")
        key = key.replace("-", "_")
        if section not in config or key not in config[section]:
            hint = suggest_flag(flag, config, extra_flags) or " Run with --help to list every flag."
            raise ConfigError(f"Unknown flag {flag}.{hint}")
        if allowed is not None and not allowed(section, key):
            raise ConfigError(f"{flag} does not apply to {command}: its flags are listed by {command} --help")
        default = config[section][key]
        if not equals:
            if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                text = argv[i + 1]
                i += 1
            elif isinstance(default, bool):
                text = "true"
            else:
                raise ConfigError(f"Flag {flag} needs a value")
        config[section][key] = convert_flag(flag, text, default)
        check_value(section, key, config[section][key], flag)
        i += 1
    return config


def format_flags(config, descriptions, allowed=None, width=80):
    """The flags of ``config`` (those ``allowed(section, key)``), by section: each with its value
    and, on the lines below, its description."""
    lines = []
    for section, values in config.items():
        keys = [key for key in values if allowed is None or allowed(section, key)]
        if not keys:
            continue
        lines.append(f"[{section}]")
        for key in keys:
            lines.append(f"  {flag_name(section, key)} {values[key]!r}")
            text = descriptions.get(section, {}).get(key)
            if text:
                lines.extend(textwrap.wrap(text, width=width, initial_indent=" " * 6, subsequent_indent=" " * 6))
    return "\n".join(lines)
