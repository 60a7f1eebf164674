# Two commands for a fresh machine:  `make demo` (the daemon on the example session)
# and `make test` (the whole suite). Both set everything up first.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO := clients/examples/demo-session.jsonl
CONFORMANCE := tests/conformance

.PHONY: setup demo test test-slow node bench bench-quick clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

setup: $(VENV)/.installed

$(CONFORMANCE)/node_modules/.installed: $(CONFORMANCE)/package-lock.json
	cd $(CONFORMANCE) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

node: $(CONFORMANCE)/node_modules/.installed

# The daemon on the shipped example session: its tree, then the context the model would see.
demo: setup
	$(VENV)/bin/sessiontree tree $(DEMO)
	@echo
	$(VENV)/bin/sessiontree context $(DEMO)

test: setup node
	$(PY) -m pytest -q

# The long-running variants (more random conformance scenarios, bigger sweeps).
test-slow: setup node
	SESSIONTREE_CONFORMANCE_SCENARIOS=200 $(PY) -m pytest -q -m 'slow or not slow'

# The daemon against pi's SessionManager: prints one table (see BENCHMARKS.md). Data goes to /tmp.
bench: setup node
	$(PY) tests/benchmarks/run.py

bench-quick: setup node
	$(PY) tests/benchmarks/run.py --quick

clean:
	rm -rf $(VENV) $(CONFORMANCE)/node_modules
