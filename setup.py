"""Builds every Ocean env: ocean/<name>/binding.pyx, a Cython binding over a C header; and, where
nvcc is found, the GPU Craftax libraries (ocean/craftax/libcraftax_gpu.so, the full game;
ocean/craftax_classic/libcraftax_classic_gpu.so, Craftax-Classic).

Environment: PUFFER_NO_EXTENSIONS=1 installs the packages without compiling anything (the Makefile
does so, then compiles once with build_ext --inplace: pip's editable build compiles in a temporary
folder that a later build_ext --inplace cannot reuse, so it would compile everything twice);
PUFFER_NO_CUDA=1 skips the CUDA libraries; PUFFER_REQUIRE_CUDA=1 fails the build when
nvcc is missing; PUFFER_CUDA_ARCH lists the compute capabilities to compile machine code for
(default "80,90": sm_80 and sm_90 code plus compute_90 PTX for newer GPUs). PUFFER_BUILD_CACHE=DIR
keeps Cython's generated C and the CUDA libraries in DIR, keyed by the content they are built from,
so that a fresh copy of the sources (an image build) regenerates only what changed; pair it with
CC="ccache gcc" for the C compiles.
"""

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.modified import newer_group

compile_args = ["-O3", "-fopenmp", "-fno-fast-math"]
if os.environ.get("PUFFER_NATIVE") == "1":
    compile_args.append("-march=native")

# Per-env extra flags. Craftax must match its JAX reference bit for bit: no implicit FMA
# contraction (gcc contracts a*b+c by default whenever the target has FMA, e.g. -march=native).
env_compile_args = {"craftax": ["-ffp-contract=off"], "craftax_classic": ["-ffp-contract=off"]}

# Headers a game includes from another game's folder: editing one rebuilds it too.
shared_headers = {"craftax_classic": [os.path.join("ocean", "craftax", name) for name in ("common.h", "jax_random.h", "perlin.h", "canvas.h")]}

extensions = [
    Extension(
        name=os.path.dirname(path).replace(os.sep, ".") + ".binding",
        sources=[path],
        # The game's headers and the shared ones: an edited header rebuilds the binding.
        depends=glob.glob(os.path.join(os.path.dirname(path), "*.h")) + glob.glob(os.path.join("ocean", "*.h"))
        + shared_headers.get(os.path.basename(os.path.dirname(path)), []),
        include_dirs=["ocean", os.path.dirname(path), numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=compile_args + env_compile_args.get(os.path.basename(os.path.dirname(path)), []),
        extra_link_args=["-fopenmp"],
    )
    for path in sorted(glob.glob(os.path.join("ocean", "*", "binding.pyx")))
]


class CudaLibrary:
    """A library nvcc builds: its label in the build's messages, its .cu sources, the headers they
    include (an edited one rebuilds it) and where it goes."""

    def __init__(self, label, sources, headers, output):
        self.label, self.sources, self.headers, self.output = label, sources, headers, output


CRAFTAX_HEADERS = glob.glob(os.path.join("ocean", "craftax", "*.h")) + [os.path.join("ocean", "vecenv_gpu.cuh")]
CUDA_LIBRARIES = [
    # The GPU env (craftax_gpu.cu) and the CraftaxCells policy's kernels (cell_embedding.cu), linked into one library.
    CudaLibrary("CraftaxGPU", [os.path.join("ocean", "craftax", name) for name in ("craftax_gpu.cu", "cell_embedding.cu", "pixels_gpu.cu")],
                CRAFTAX_HEADERS + glob.glob(os.path.join("ocean", "craftax", "*.cuh")),
                os.path.join("ocean", "craftax", "libcraftax_gpu.so")),
    # Craftax-Classic's headers over the generic device vecenv; they include the full game's shared ones.
    CudaLibrary("CraftaxClassicGPU", [os.path.join("ocean", "craftax_classic", "craftax_classic_gpu.cu")],
                glob.glob(os.path.join("ocean", "craftax_classic", "*.h")) + CRAFTAX_HEADERS,
                os.path.join("ocean", "craftax_classic", "libcraftax_classic_gpu.so")),
]
BUILD_CACHE = os.environ.get("PUFFER_BUILD_CACHE")


def find_nvcc():
    """nvcc on PATH, else $CUDA_HOME/bin/nvcc, else None."""
    found = shutil.which("nvcc")
    if found:
        return found
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    candidate = os.path.join(cuda_home, "bin", "nvcc") if cuda_home else None
    return candidate if candidate and os.access(candidate, os.X_OK) else None


def cuda_arch_flags():
    capabilities = [c.strip() for c in os.environ.get("PUFFER_CUDA_ARCH", "80,90").replace(";", ",").split(",")]
    capabilities = sorted({c for c in capabilities if c}, key=int)
    if not capabilities or not all(c.isdigit() for c in capabilities):
        raise SystemExit(f"PUFFER_CUDA_ARCH must list compute capabilities such as 80,90; got {os.environ['PUFFER_CUDA_ARCH']!r}")
    flags = [f"-gencode=arch=compute_{c},code=sm_{c}" for c in capabilities]
    return flags + [f"-gencode=arch=compute_{capabilities[-1]},code=compute_{capabilities[-1]}"]


def cached_cuda_library(library, command):
    """Where $PUFFER_BUILD_CACHE keeps the library that COMMAND builds from its sources as they are now."""
    digest = hashlib.sha256(" ".join(command[1:-1]).encode())  # the flags: neither nvcc's path nor the output
    digest.update(subprocess.run([command[0], "--version"], capture_output=True, check=True).stdout)
    for path in sorted([*library.sources, *library.headers]):
        with open(path, "rb") as source:
            digest.update(path.encode() + b"\0" + source.read())
    stem = os.path.splitext(os.path.basename(library.output))[0]
    return os.path.join(BUILD_CACHE, "cuda", f"{stem}-{digest.hexdigest()[:32]}.so")


def nvcc_command(nvcc, library, output):
    # Bitwise parity with the host build: no FMA contraction on either side, no fast math.
    # cudart is linked statically, so the library loads where only the driver is installed.
    folder = os.path.dirname(library.sources[0])
    return [nvcc, "-O3", "--fmad=false", "-std=c++17", "--threads", "0", "-shared", "-cudart", "static",
            "-Xcompiler", "-fPIC,-O3,-ffp-contract=off,-fno-fast-math", "-Iocean", f"-I{folder}",
            *cuda_arch_flags(), *library.sources, "-o", output]


class BuildWithCuda(build_ext):
    """build_ext, then the CUDA library: its absence is reported in one line, its failure fails the build.
    Each extension that needs compiling says so as it starts, numbered among those that do."""

    def build_extensions(self):
        # The same test build_extension applies, made before any compile so that the count is known.
        self.stale = [ext.name for ext in self.extensions
                      if self.force or newer_group(ext.sources + ext.depends, self.get_ext_fullpath(ext.name), "newer")]
        self.started = 0
        self.progress_lock = threading.Lock()  # --parallel builds extensions on threads
        super().build_extensions()

    def build_extension(self, ext):
        if ext.name in self.stale:
            # Under the lock: print writes the line and its newline separately, which threads interleave.
            with self.progress_lock:
                self.started += 1
                width = len(str(len(self.stale)))
                print(f"[{self.started:{width}}/{len(self.stale)}] compiling {ext.name}", flush=True)
        super().build_extension(ext)

    def run(self):
        super().run()
        if os.environ.get("PUFFER_NO_CUDA") == "1":
            print("CraftaxGPU: PUFFER_NO_CUDA=1, not building the CUDA libraries")
            return
        nvcc = find_nvcc()
        if nvcc is None:
            if os.environ.get("PUFFER_REQUIRE_CUDA") == "1":
                raise SystemExit("CraftaxGPU: PUFFER_REQUIRE_CUDA=1 but nvcc is not on PATH or in $CUDA_HOME/bin")
            print("CraftaxGPU: nvcc not found (PATH, $CUDA_HOME/bin): building without the CUDA libraries")
            return
        for library in CUDA_LIBRARIES:
            self.build_cuda_library(nvcc, library)

    def build_cuda_library(self, nvcc, library):
        in_source = self.inplace or getattr(self, "editable_mode", False)
        output = library.output if in_source else os.path.join(self.build_lib, library.output)
        sources = [*library.sources, *library.headers, __file__]
        if os.path.exists(output) and not self.force:
            if os.path.getmtime(output) >= max(os.path.getmtime(path) for path in sources):
                return
        os.makedirs(os.path.dirname(output), exist_ok=True)
        command = nvcc_command(nvcc, library, output)
        cached = cached_cuda_library(library, command) if BUILD_CACHE else None
        if cached and os.path.exists(cached):
            shutil.copyfile(cached, output)
            print(f"{library.label}: {output} from the build cache ({cached})")
            return
        print(f"{library.label}: " + " ".join(command), flush=True)
        started = time.monotonic()
        if subprocess.run(command).returncode != 0:
            raise SystemExit(f"{library.label}: nvcc failed to compile {' and '.join(library.sources)} (see above)")
        print(f"{library.label}: built {output} in {time.monotonic() - started:.0f} s", file=sys.stderr)
        if cached:
            os.makedirs(os.path.dirname(cached), exist_ok=True)
            shutil.copyfile(output, cached + ".part")
            os.replace(cached + ".part", cached)


setup(
    cmdclass={"build_ext": BuildWithCuda},
    ext_modules=[] if os.environ.get("PUFFER_NO_EXTENSIONS") == "1" else cythonize(
        extensions,
        include_path=["ocean"],
        compiler_directives=dict(language_level=3, boundscheck=False, wraparound=False, cdivision=True),
        cache=os.path.join(BUILD_CACHE, "cython") if BUILD_CACHE else None,
    ),
)
