# Every target does its own set-up: a .venv inside the checkout, from Python 3.11.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

ENSURE_POSTGRES := bash scripts/ensure-debian.sh postgresql "the PostgreSQL tests" \
	'ls /usr/lib/postgresql/*/bin/initdb || command -v initdb'
ENSURE_CHROMIUM := bash scripts/ensure-debian.sh chromium "the browser tests" 'test -x /usr/bin/chromium'
ENSURE_NODE := bash scripts/ensure-debian.sh npm "the TypeScript SDK test" 'command -v node && command -v npm'
NODE_SDK := $(VENV)/sdk/node/.installed

.PHONY: demo test fuzz lint typecheck bench screenshots chat-ui-check clean

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "quotebound needs Python 3.11+"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,local,entail,integrations,mcp]'
	# an earlier major release of the anthropic SDK, for the Messages API's tests (one venv
	# cannot hold two releases of a package: beside it, put on PYTHONPATH by the test)
	$(BIN)/python -m pip install --quiet --no-deps --upgrade --target $(VENV)/sdk/anthropic-0 'anthropic==0.49.0'
	touch $(STAMP)

demo: $(STAMP)
	@bash examples/demo.sh $(BIN)/quotebound

# the official TypeScript SDK for the Messages API's test, beside the venv (Node.js from Debian
# when missing; without it that one test skips and says why)
$(NODE_SDK): $(STAMP)
	@$(ENSURE_NODE)
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --silent --no-audit --no-fund --prefix $(VENV)/sdk/node '@anthropic-ai/sdk@1.17.0' \
	    && touch $@ || echo "note: npm install failed; the TypeScript SDK test will skip"; \
	else echo "note: no npm; the TypeScript SDK test will skip"; fi

test: $(STAMP) $(NODE_SDK)
	@$(ENSURE_POSTGRES)
	@$(ENSURE_CHROMIUM)
	$(BIN)/ruff check src tests benchmarks examples kits
	$(BIN)/ruff format --check src tests benchmarks examples kits
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest

# The property tests with fresh random examples, 20 times as many (make test draws the same
# ones on every run). A failure prints the seed and a @reproduce_failure blob.
fuzz: $(STAMP)
	QB_HYPOTHESIS=fuzz QB_FUZZ_SCALE=$${QB_FUZZ_SCALE:-20} $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/verify/test_properties.py tests/text/test_fastpaths.py tests/ingest/test_ingest.py \
		tests/server/test_server.py

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples kits
	$(BIN)/ruff format --check src tests benchmarks examples kits

bench: $(STAMP)
	$(BIN)/python -m benchmarks.speed.verify_speed

# The screenshots in docs/img/, made by the browser tests in real headless Chromium.
screenshots: $(STAMP)
	@$(ENSURE_CHROMIUM)
	QB_SCREENSHOTS=docs/img $(BIN)/python -m pytest tests/server/test_web.py -q

# Open WebUI itself (in .chat-ui/venv, about 3 GB, installed once), offline, asking
# quotebound serve a question; saves docs/img/chat-ui.png. Not part of make test.
chat-ui-check: $(STAMP)
	@$(ENSURE_CHROMIUM)
	$(BIN)/python scripts/chat_ui_check.py

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis .import_linter_cache
