# Front door. `make train` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup build train test test-fast bench results-page lint clean

setup: $(STAMP)

# torch==2.13.0 first: on these machines that resolves to the CPU wheel on local disk, so the
# project's `torch` requirement is met without pulling a multi-GB CUDA build.
# The third-party env families (NetHack, Atari, PettingZoo, Ray) come from requirements-envs.txt,
# pinned to versions that install together; requirements-craftax.txt is the JAX reference that
# the C Craftax is checked against.
# The editable install compiles nothing (PUFFER_NO_EXTENSIONS=1): `build` compiles every extension
# once, in place, where later builds reuse it; pip's editable build would compile them all in a
# temporary folder first, and `build` again.
$(STAMP): pyproject.toml setup.py requirements-envs.txt requirements-craftax.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip setuptools wheel cython numpy
	$(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -r requirements-envs.txt -r requirements-craftax.txt
	PUFFER_NO_EXTENSIONS=1 $(BIN)/pip install --no-build-isolation -e '.[dev]'
	touch $(STAMP)

# Compiles the Ocean extensions in place; after C or Cython edits only the changed ones rebuild.
build: setup
	$(BIN)/python setup.py build_ext --inplace

train: build
	$(BIN)/puffer train puffer_squared

test: build
	$(BIN)/python -m pytest -q -rs --durations=15

# The inner loop: everything but learning runs and other slow ones (compiles, runs in fresh
# processes), image builds, Ray clusters, the JAX reference and GPU tests (tests/conftest.py
# lists the markers).
test-fast: build
	$(BIN)/python -m pytest -q -rs -m "not slow and not docker and not ray and not reference and not gpu"

# Measures every Ocean env on this machine, stores the figures in benchmarks/results.jsonl
# (replacing this machine's earlier ones) and rewrites BENCHMARKS.md from them.
bench: build
	$(BIN)/python scripts/bench_ocean.py --record
	$(BIN)/python scripts/results_page.py

# BENCHMARKS.md from benchmarks/results.jsonl, after any bench script ran with --record.
results-page:
	$(PYTHON) scripts/results_page.py

lint: setup
	$(BIN)/ruff check pufferlib ocean scripts tests

clean:
	rm -rf build $(VENV) $(TANK_VENV) ocean/*/binding.c ocean/*/*.so *.egg-info

include docker/Makefile.tank
