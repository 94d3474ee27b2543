"""The Python side of the device vecenv: every GPU env's library exports the shared C API under its
prefix, and its class is a DeviceEnv with its Log's fields. Runs without a GPU (the libraries load
and answer layout questions on the host)."""

import pytest

import ocean
from ocean.gpu_env import SHARED_FUNCTIONS, DeviceEnv

# (module, library prefix) of each game with a CUDA library
LIBRARIES = [("ocean.craftax.gpu", "craftax_gpu_"), ("ocean.craftax_classic.gpu", "craftax_classic_gpu_")]


@pytest.mark.parametrize("module_name, prefix", LIBRARIES)
def test_each_library_exports_the_shared_api_with_its_signatures(module_name, prefix):
    module = pytest.importorskip(module_name)
    if not module.LIBRARY_PATH.exists():
        pytest.skip(f"{module.LIBRARY_PATH.name} is not built here (no nvcc when the package was built)")
    library = module.load_library()  # declares the shared functions: a missing one is an AttributeError
    undeclared = [name for name in SHARED_FUNCTIONS if name != "runs_here" and getattr(library, prefix + name).argtypes is None]
    assert undeclared == []


@pytest.mark.parametrize("name", sorted(ocean.GPU_ENV_MODULES))
def test_every_gpu_env_is_a_device_env_with_its_cpu_env_log_fields(name):
    env_class = ocean.env_creator(name, device="cuda")
    assert issubclass(env_class, DeviceEnv) and env_class.name == name
    module = __import__(env_class.__module__, fromlist=["load_library", "LIBRARY_PATH"])
    if module.LIBRARY_PATH.exists():
        library = module.load_library()
        sum_count = getattr(library, f"{'craftax_classic_gpu_' if 'classic' in name else 'craftax_gpu_'}sum_count")()
        assert sum_count == len(env_class.log_fields) + 3
