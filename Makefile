# Two set-up commands on a fresh machine: `make demo` and `make test`.
# Each creates the virtual environment in .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# setuptools' editable builds print an informational notice (a build warning, no error):
	@# kept off the screen so that the answer is the first thing a newcomer reads
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/p2sim rank --system a100 --axes data=4,tensor=8 --reduce data --algo both --top 5

test: $(BIN)/.installed
	$(BIN)/python -m pytest

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
