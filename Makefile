# medmon: `make demo` runs the whole job on the embedded default; `make test` runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-sqlite test-postgres install system-deps clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip uv

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	DO_NOT_TRACK=1 $(BIN)/medmon demo

# Debian packages the tests use (Chromium for the browser test, Alertmanager for its channel).
system-deps:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=""; \
	  command -v chromium >/dev/null || missing="$$missing chromium"; \
	  command -v prometheus-alertmanager >/dev/null || missing="$$missing prometheus-alertmanager"; \
	  if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; fi; \
	fi

test: $(STAMP) system-deps
	DO_NOT_TRACK=1 $(BIN)/python -m pytest

clean:
	rm -rf $(VENV) medmon-demo .pytest_cache
