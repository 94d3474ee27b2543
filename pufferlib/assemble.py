"""The env, the policy and the device a config describes.

Envs are found through their family's module, named in ``[base] package`` (``ocean``,
``pufferlib.environments.classic_control``, ...): the module's ``env_creator(name)`` gives what
``pufferlib.vector.make`` builds, so the trainer never names an env family itself. Policies are
``pufferlib.models`` classes by short name, or an env's own class as ``module:Class``.
"""

import importlib
import inspect

import torch

import pufferlib.models
import pufferlib.vector
from pufferlib.config import ConfigError


def env_family(config):
    """The module named by [base] package, imported."""
    package = config["base"].get("package")
    env_name = config["base"]["env_name"]
    if not package:
        raise ConfigError(f"{env_name}: its .ini must name [base] package, the module of its env family (ocean, ...)")
    try:
        return importlib.import_module(package)
    except ModuleNotFoundError as error:
        raise ConfigError(f"{env_name}: [base] package {package!r} cannot be imported ({error})") from None


def make_vecenv(env_name, config, num_envs=None):
    """Builds the vectorized env a config describes, always with the async surface
    (``async_reset``/``send``/``recv``) of ``pufferlib.vector``.

    With backend 'native', a batched env (an Ocean env) is stepped in this process by its own C
    vecenv with ``[vec] num_threads`` threads, the fastest way to run it; with a batch size below
    num_envs, the env objects of the batches step one after another on all of those threads. With
    ``[vec] device`` cuda, the env's GPU version is built instead: it has device hooks
    (``gpu_step``, ...) in place of that surface.
    """
    vec = config["vec"]
    env_kwargs = dict(config["env"])
    num_envs = num_envs or vec["num_envs"]
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ConfigError(f"--vec.num-envs {num_envs!r}: give a positive number of envs")
    if vec["device"] != "cpu":
        check_env_device(vec["device"])
        # An env on the GPU is its own vectorization: the trainer drives its device hooks.
        creator = env_family(config).env_creator(env_name, device=vec["device"])
        return creator(num_envs=num_envs, device=vec["device"], **env_kwargs)
    backend = pufferlib.vector.resolve_backend(vec["backend"])
    if backend is pufferlib.vector.Native:
        env_kwargs["num_threads"] = vec["num_threads"]
    backend_kwargs = {}
    train_device = str(config["train"]["device"])
    on_gpu = torch.cuda.is_available() and (train_device == "auto" or train_device.startswith("cuda"))
    if issubclass(backend, pufferlib.vector.Serial) and on_gpu:
        # In-process buffers the policy reads on a GPU: page-locked, so each step's copy is async.
        backend_kwargs["pin_memory"] = True
    return pufferlib.vector.make(
        env_family(config).env_creator(env_name), env_kwargs=env_kwargs, backend=backend, num_envs=num_envs,
        num_workers=None if vec["num_workers"] == "auto" else vec["num_workers"],
        batch_size=None if vec["batch_size"] == "auto" else vec["batch_size"],
        seed=config["base"]["seed"], timeout=vec_timeout(vec), **backend_kwargs,
    )


def vec_timeout(vec):
    """[vec] timeout: positive seconds (inf or None: no limit). A run saved before the key existed
    keeps the vector default."""
    value = vec.get("timeout", pufferlib.vector.DEFAULT_TIMEOUT_S)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
        raise ConfigError(f"--vec.timeout {value!r}: give a positive number of seconds, or inf for no limit")
    return value


def set_torch_threads(config):
    """Applies [train] torch_threads. Before a policy is built too: the orthogonal initialisation's
    QR factorisation rounds differently with different thread counts."""
    if config["train"]["torch_threads"] > 0:
        torch.set_num_threads(config["train"]["torch_threads"])


def make_policy(env, config):
    """The [base] policy (and [base] rnn around it) with the [policy] / [rnn] sections as arguments,
    initialised from [base] seed (without disturbing torch's global RNG)."""
    set_torch_threads(config)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config["base"]["seed"])
        return _build_policy(env, config)


def _build_policy(env, config):
    base = config["base"]
    policy_class = policy_class_named(str(base["policy"]))
    policy = policy_class(env, **_arguments_for(policy_class, config["policy"], "policy"))
    rnn = base.get("rnn")
    if rnn in (None, "none", False):
        return policy
    if str(rnn).lower() not in pufferlib.models.RNNS:
        raise ConfigError(f"Unknown rnn {rnn!r}; valid: none, {', '.join(pufferlib.models.RNNS)}")
    rnn_class = pufferlib.models.RNNS[str(rnn).lower()]
    arguments = _arguments_for(rnn_class, config["rnn"], "rnn")
    width = arguments.get("hidden_size", policy.hidden_size)
    if width != policy.hidden_size:  # the policy's heads read the rnn's output
        raise ConfigError(
            f"[rnn] hidden_size {width} differs from [policy] hidden_size {policy.hidden_size}, whose action and "
            f"value heads read the rnn's output; give both the same width: --policy.hidden-size {width} --rnn.hidden-size {width}"
        )
    return rnn_class(env, policy, input_size=policy.hidden_size, **arguments)


def _arguments_for(cls, values, section):
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "env", "policy", "input_size"}
    unknown = set(values) - accepted
    if unknown:
        raise ConfigError(
            f"[{section}] keys {sorted(unknown)} are not arguments of {cls.__name__} (it takes {sorted(accepted)})"
        )
    return dict(values)


def resolve_device(name):
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if str(name).startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"--train.device {name}: this torch ({torch.__version__}) sees no CUDA device")
    return name


def check_env_device(name):
    """--vec.device other than cpu: a CUDA device this torch can see."""
    if not str(name).startswith("cuda"):
        raise ConfigError(f"--vec.device {name!r}: valid are cpu, and cuda or cuda:N for an env with a GPU version")
    if not torch.cuda.is_available():
        raise ConfigError(
            f"--vec.device {name}: this torch ({torch.__version__}) sees no CUDA device; "
            "--vec.device cpu steps the env on this machine's cores"
        )


def policy_class_named(name):
    """A pufferlib.models policy by short name, or any class as 'module:Class'."""
    if ":" in name:
        module, _, attribute = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as error:
            raise ConfigError(f"[base] policy {name!r}: {error}") from None
    if name.lower() not in pufferlib.models.POLICIES:
        raise ConfigError(f"Unknown policy {name!r}; valid: {', '.join(pufferlib.models.POLICIES)}, or module:Class")
    return pufferlib.models.POLICIES[name.lower()]
