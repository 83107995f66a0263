# aiolbc developer entry points. `make test` is the project's test command; `make demo` runs the
# whole system on local stand-ins. Both create the virtualenv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
BENCH_ARGS ?=

.PHONY: install test lint typecheck pytest bench demo clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

test: lint typecheck pytest

lint: install
	$(BIN)/ruff check runtime controller tests

typecheck: install
	$(BIN)/mypy

pytest: install
	$(PY) -m pytest -q

bench: install
	@set -e; for f in tests/bench/*.py; do echo "== $$f"; $(PY) $$f $(BENCH_ARGS); done

demo: install
	$(BIN)/aiolbc demo

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
