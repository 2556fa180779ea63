# Two entry points for a fresh machine with only Python and make:
#   make demo   installs snipe alone into .venv and runs `snipe demo` on the embedded sandbox
#   make test   installs snipe with its test tools (dev extras) into .venv and runs the tests
# The demo needs only the package: the test tools (ray, matplotlib, mypy, hypothesis...)
# are installed by the first `make test`, `make lint` or `make install`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_STAMP := $(VENV)/.installed-demo
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint install install-demo

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(DEMO_STAMP)

install-demo: $(DEMO_STAMP)

install: $(DEV_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/snipe demo

# the whole suite, slow tests included, one worker per core (CI runs this; `-m "not slow"` is
# for quick local runs)
test: $(DEV_STAMP)
	$(BIN)/python -m pytest -n auto

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
