# One entry point per job; every target sets up what it needs (venv, graphviz).
# README: `make diagrams` (main job) and `make test` (every test and check).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# The test runs write bytecode even where the machine asks for none
# (PYTHONDONTWRITEBYTECODE): every worker and every interpreter a test starts then compiles
# the package, its dependencies (installed uncompiled, below) and the tests' rewritten
# asserts once, not each time.
WRITE_BYTECODE := env -u PYTHONDONTWRITEBYTECODE

.PHONY: install graphviz chromium check mermaid-check test test-quick docs diagrams figures sweep-figures notebook-figure bench bench-check clean

install: $(VENV)/.installed

# --no-compile: pip would compile every file of every dependency; the test runs compile
# what they import, once ($(WRITE_BYTECODE)).

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile --disable-pip-version-check -e '.[dev]'
	touch $@

# Debian's graphviz provides `dot`; install it only where it is missing.
graphviz:
	@command -v dot >/dev/null 2>&1 || { \
	  echo "dot not found: installing Debian graphviz"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq graphviz >/dev/null; }

# Debian's chromium is the browser the inspector page's tests drive (Playwright, with
# executable_path; never `playwright install`); install it only where it is missing.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "chromium not found: installing Debian chromium"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

check: install
	$(BIN)/ruff check handoff_fsm tests benchmarks examples tools/docs
	$(BIN)/ruff format --check handoff_fsm tests benchmarks examples tools/docs
	$(BIN)/mypy

# The Mermaid files are validated by Mermaid's own parser (tools/mermaid-check, npm).
# Plain `pytest` skips a test whose tool (cargo, node, dot, chromium) is missing; here every
# skip is a failure (HANDOFF_FSM_REQUIRE_ALL, tests/requirements.py). One pytest worker
# per core (pytest-xdist): every test runs in its own temporary folder.
# Before the tests, two jobs at a time: the venv's install beside the npm install, then
# the lint and type checks beside the docs site's build (each keeps one core busy). The
# slow tests start first (tests/conftest.py), and an idle worker takes queued tests from
# a busy one (--dist worksteal). The ten slowest tests close the run (--durations), so
# the next slow one is seen when it lands.
test: graphviz chromium
	$(MAKE) --no-print-directory -j2 check docs mermaid-check
	$(WRITE_BYTECODE) HANDOFF_FSM_REQUIRE_ALL=1 $(BIN)/pytest -n auto --dist worksteal --durations=10

mermaid-check:
	tools/mermaid-check/install.sh

# The edit-test loop: the tests not marked slow (no tool, no process, no exploration;
# tests/quick.py fails one that starts a process, explores or overruns its CPU budget).
test-quick: install
	$(WRITE_BYTECODE) HANDOFF_FSM_QUICK=1 $(BIN)/pytest -n auto --dist worksteal -m "not slow"

# The docs site (mkdocs.yml) into site/; --strict fails on a broken link or reference,
# a page missing from the nav, or a warning while reading the docstrings.
MKDOCS_BUILD := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs: install
	$(MKDOCS_BUILD)

diagrams: install graphviz figures
	$(BIN)/handoff-fsm diagrams diagrams
	$(BIN)/handoff-fsm review -o diagrams/REVIEW.md

# The simulation guide's figures (docs/simulation.md): one seeded run (trace, plots, summary.md) and the lifecycle
# of one of its handoffs, drawn from that trace. tests/test_figures.py runs these lines.
FIGURES := docs/figures
FIGURES_RUN := --handoffs 200 --fault-rate 0.05 --seed 7
FIGURES_LIFECYCLE := --coordinator h12 --title "h12: the release acknowledgement comes late, the deadline cancels"

figures: install graphviz sweep-figures notebook-figure
	mkdir -p $(FIGURES)
	$(BIN)/handoff-fsm simulate $(FIGURES_RUN) --trace $(FIGURES)/run.jsonl --plots $(FIGURES)
	$(BIN)/handoff-fsm lifecycle $(FIGURES)/run.jsonl $(FIGURES_LIFECYCLE) -o $(FIGURES)/lifecycle.mmd
	$(BIN)/handoff-fsm lifecycle $(FIGURES)/run.jsonl $(FIGURES_LIFECYCLE) -o $(FIGURES)/lifecycle.svg

# The sweeps guide's figure (docs/sweeps.md): destination KV held after a decode cancel against
# the decode-cancel rate, both revisions on SGLang, over five seeds (summary.md, sweep.json,
# one plot). tests/test_figures.py runs this line and checks docs/figures/sweep against it.
SWEEP_RUN := --backend sglang --revision seed,a976b2bf --decode-cancel-rate 0,0.1,0.2,0.3 --handoffs 200 --seeds 0-4 --metrics destination_held_after_cancel_ms

sweep-figures: install
	$(BIN)/handoff-fsm sweep $(SWEEP_RUN) -o $(FIGURES)/sweep

# The inspector guide's notebook picture (docs/inspect.md): examples/notebook.ipynb run by a
# real Jupyter kernel (nbclient), and the SVG its coordinator shows, as it came.
# tests/test_notebook_run.py runs the notebook the same way and checks the figure against it.
NOTEBOOK_FIGURE := $(FIGURES)/notebook/coordinator.svg

notebook-figure: install graphviz
	$(PY) tools/docs/notebook_figure.py $(NOTEBOOK_FIGURE)

bench: install
	$(PY) benchmarks/run.py

bench-check: install
	$(PY) benchmarks/run.py --check

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache site
