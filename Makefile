# One entry point per job; every target sets up what it needs (venv, graphviz).
# README: `make diagrams` (main job) and `make test` (every test and check).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: install graphviz check test diagrams bench bench-check clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

# Debian's graphviz provides `dot`; install it only where it is missing.
graphviz:
	@command -v dot >/dev/null 2>&1 || { \
	  echo "dot not found: installing Debian graphviz"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq graphviz >/dev/null; }

check: install
	$(BIN)/ruff check handoff_fsm tests benchmarks examples
	$(BIN)/ruff format --check handoff_fsm tests benchmarks examples
	$(BIN)/mypy

# The Mermaid files are validated by Mermaid's own parser (tools/mermaid-check, npm).
# Plain `pytest` skips a test whose tool (cargo, node, dot) is missing; here every
# skip is a failure (HANDOFF_FSM_REQUIRE_ALL, tests/requirements.py).
test: install graphviz check
	tools/mermaid-check/install.sh
	HANDOFF_FSM_REQUIRE_ALL=1 $(BIN)/pytest

diagrams: install graphviz
	$(BIN)/handoff-fsm diagrams diagrams
	$(BIN)/handoff-fsm review -o diagrams/REVIEW.md

bench: install
	$(PY) benchmarks/run.py

bench-check: install
	$(PY) benchmarks/run.py --check

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
