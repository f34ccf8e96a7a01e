# Two entry points (README): `make demo` runs the main job on bundled data, `make test` runs
# the test suite. Each creates its own virtual environment in .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-newest test-slow lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/dpfit demo

test: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(PY) -m pytest -q -n 2 -m "not slow"

# The suite against the newest versions pyproject.toml allows, in a fresh environment: run it
# before raising a bound, and now and then, so a breaking release is found here first.
test-newest:
	rm -rf .venv-newest
	$(PYTHON) -m venv .venv-newest
	.venv-newest/bin/python -m pip install --quiet --upgrade pip
	.venv-newest/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e ".[test]"
	.venv-newest/bin/python -m pip list --format=freeze
	.venv-newest/bin/ruff check src tests benchmarks
	.venv-newest/bin/python -m pytest -q -n 2 -m "not slow"

test-slow: $(STAMP)
	$(PY) -m pytest -q -n 2 -m slow

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks

clean:
	rm -rf $(VENV) .venv-newest .pytest_cache .ruff_cache .hypothesis
