# aiolbc developer entry points. `make test` is the project's test command; `make demo` runs the
# whole system on local stand-ins. Both create the virtualenv on first use. `make bench-check`
# runs every benchmark in --quick mode and checks what it prints (CI runs it after `make test`).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
BENCH_ARGS ?=
# pytest-xdist workers: one more than the cores by default (`PYTEST_WORKERS=0` runs in this
# process). The integration tests wait on their servers about half of the time, so a third worker
# on two cores keeps both busy: 7 min 43 s on two workers, 5 min 51 s on three; four made the
# webhook flood test starve its own reviews.
# worksteal hands each worker half of the tests, in order, and an idle worker takes half of what
# another still has queued, so no queue of slow integration tests is left to one worker at the end.
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
XDIST := -n $(PYTEST_WORKERS) --dist worksteal
PYTEST_ARGS ?=
# The quick benchmarks mostly wait on their own windows (about 45 s of CPU in 110 s on two
# workers): four at a time end when the longest (scale.py) does.
BENCH_WORKERS ?= 4

.PHONY: install test lint typecheck pytest bench bench-check demo clean

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
	$(PY) -m pytest -q $(XDIST) --durations=20 $(PYTEST_ARGS)

bench: install
	@set -e; for f in tests/bench/*.py; do echo "== $$f"; $(PY) $$f $(BENCH_ARGS); done

bench-check: install
	$(PY) -m pytest -q --bench -n $(BENCH_WORKERS) --dist worksteal --durations=0 \
		tests/test_benchmarks.py

demo: install
	$(BIN)/aiolbc demo

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
