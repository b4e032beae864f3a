# Two set-up commands on a fresh machine: `make demo` and `make test`.
# Each creates the virtual environment in .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/p2sim synth --hierarchy 2,16 --axes 4,8 --reduce 0 --limit 8

test: $(BIN)/.installed
	$(BIN)/python -m pytest

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/synth_appendix.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
