"""Builds every Ocean env: ocean/<name>/binding.pyx, a Cython binding over a C header."""

import glob
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

compile_args = ["-O3", "-fopenmp", "-fno-fast-math"]
if os.environ.get("PUFFER_NATIVE") == "1":
    compile_args.append("-march=native")

# Per-env extra flags. Craftax must match its JAX reference bit for bit: no implicit FMA
# contraction (gcc contracts a*b+c by default whenever the target has FMA, e.g. -march=native).
env_compile_args = {"craftax": ["-ffp-contract=off"]}

extensions = [
    Extension(
        name=os.path.dirname(path).replace(os.sep, ".") + ".binding",
        sources=[path],
        include_dirs=["ocean", os.path.dirname(path), numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=compile_args + env_compile_args.get(os.path.basename(os.path.dirname(path)), []),
        extra_link_args=["-fopenmp"],
    )
    for path in sorted(glob.glob(os.path.join("ocean", "*", "binding.pyx")))
]

setup(
    ext_modules=cythonize(
        extensions,
        include_path=["ocean"],
        compiler_directives=dict(language_level=3, boundscheck=False, wraparound=False, cdivision=True),
    ),
)
