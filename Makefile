# Two set-up commands on a fresh machine: `make demo` and `make test`.
# Each creates the virtual environment in .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# pytest-xdist's workers: one per CPU core (`make test JOBS=1` runs the tests in one process)
JOBS ?= auto

.PHONY: demo test test-all bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# setuptools' editable builds print an informational notice (a build warning, no error):
	@# kept off the screen so that the answer is the first thing a newcomer reads
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/p2sim rank --system a100 --axes data=4,tensor=8 --reduce data --algo both --top 5

# the fast tier: every test but those marked slow (tests/conftest.py)
test: $(BIN)/.installed
	$(BIN)/python -m pytest -n $(JOBS) --dist worksteal

# every test, the slow ones too: what .ci/run runs
test-all: $(BIN)/.installed
	$(BIN)/python -m pytest -n $(JOBS) --dist worksteal --runslow

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/synth_appendix.py
	$(BIN)/python benchmarks/simulate_appendix.py
	$(BIN)/python benchmarks/simulate_scale.py
	$(BIN)/python benchmarks/rank_scale.py
	$(BIN)/python benchmarks/scale_states.py
	$(BIN)/python benchmarks/executors.py
	$(BIN)/python benchmarks/flows_scaling.py --flows 100,500,1000,2000

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
