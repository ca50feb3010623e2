# The two commands a fresh machine needs: `make demo` (the main job) and `make test`.
# Each installs what it needs, pinned by constraints.txt, once: the demo the package alone, the tests
# also its `test` extra (torch and transformers: the Hugging Face parity tests and the benchmarks);
# `make bench` adds the `bench` extra (ONNX Runtime and OpenVINO, the benchmarks' peers).
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin

.PHONY: install install-test install-bench demo test test-all bench compat clean

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

install-bench: $(VENV)/.installed-bench

$(VENV)/bin/pip:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: setup.py constraints.txt | $(VENV)/bin/pip
	$(BIN)/pip install --quiet -c constraints.txt -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/pip install --quiet -c constraints.txt -e ".[test]"
	touch $@

$(VENV)/.installed-bench: $(VENV)/.installed-test
	$(BIN)/pip install --quiet -c constraints.txt -e ".[test,bench]"
	touch $@

demo: install
	$(BIN)/bert-tf quickstart

# pytest-xdist processes for the tests; each test file runs whole in one of them. On 2 CPU cores `make test` takes
# 12 to 15 minutes (1,188 tests in 12.3 min when last timed, on 2026-11-29, an AMD EPYC Zen 3); each test file
# says when it is done (tests/file_progress.py), with its counts and time.
TEST_WORKERS ?= 2

test: install-test
	$(BIN)/python -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadfile

test-all: install-test
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

bench: install-bench
	$(BIN)/python -m benchmarks.run

# Which older TensorFlow (and so TF Serving) releases read the exports (compat/__init__.py): one virtualenv
# per release, made on first use under COMPAT_VENVS (about 2 GB each, pinned by compat/constraints/).
COMPAT_VENVS ?= .compat-venvs

compat: install
	$(BIN)/python -m compat --venvs $(COMPAT_VENVS)

clean:
	rm -rf $(VENV) $(COMPAT_VENVS) build *.egg-info
