"""Fixtures for tests that drive a real inference backend: one bundled server per test
session (the model loads once), bound to the `bundled` Backend row of each test's database."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def bundled_server_url():
    """`python -m inference serve` on the CPU, for the whole session: its /v1 base URL."""
    from inference.testing import spawn_server

    with spawn_server("--devices", "cpu", "--max-cache-tokens", "32768") as url:
        yield url + "/v1"


@pytest.fixture
def bundled_backend(db, bundled_server_url):
    """The bootstrap profiles (stock, sparse, fp8-kv, ...) bound to the session's server."""
    from triage.management.commands.bootstrap import profiles_ensure
    from triage.models import Backend

    profiles_ensure()
    Backend.objects.filter(name="bundled").update(base_url=bundled_server_url)
    return Backend.objects.get(name="bundled")


@pytest.fixture
def demo_transcripts(db):
    """The demo transcripts (real SmolLM2 outputs, some served at T=0), by request_id."""
    from django.core.management import call_command

    from triage.models import Transcript

    call_command("load_demo", verbosity=0)
    return {t.request_id: t for t in Transcript.objects.all()}


@pytest.fixture
def browser_login():
    """Log a Playwright page in through the login form: `browser_login(page, live_server.url,
    username, password, next_url="/")` (next_url as it goes in the query string, encoded)."""
    def login(page, base_url: str, username: str, password: str, *, next_url: str = "") -> None:
        page.goto(base_url + "/accounts/login/" + (f"?next={next_url}" if next_url else ""))
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", password)
        page.click("button[type=submit]")
    return login
