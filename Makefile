# The two commands a fresh machine needs: `make demo` (the main job) and `make test`.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin

.PHONY: install demo test test-all bench clean

install: $(VENV)/.installed

$(VENV)/.installed: setup.py constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e ".[test]"
	touch $@

demo: install
	$(BIN)/bert-tf quickstart

test: install
	$(BIN)/python -m pytest -q -m "not slow"

test-all: install
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) build *.egg-info
