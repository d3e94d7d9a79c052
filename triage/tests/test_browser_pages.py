"""Every page in a real browser (Debian Chromium via Playwright) at 1280 px: no console errors, no
horizontal overflow, and a full-page screenshot of each in var/test-artifacts/pages-*.png to look
at. The transcript page shows code fences as code blocks with the highlights inside and across
them; the backends page fills in each backend's health after it loads (one up with replicas,
one down with the reason)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from triage.experiments import services as experiment_services
from triage.management.commands.bootstrap import profiles_ensure
from triage.models import Backend, KernelProfile, Transcript
from triage.roles import ENGINEERS, ensure_groups

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ARTIFACTS = Path(django_settings.BASE_DIR) / "var" / "test-artifacts"
PASSWORD = "correct-horse-battery"
SECRET = "sk-never-show-this-in-a-page"

PROMPT = "Write add(a, b) in Python, then a page layout in HTML:\n```python\n# start here\n```"
LOOP = "</div>" * 60
RESPONSE = ("Here is the function:\n\n```python\ndef add(a, b):\n    return a + b  # <script>alert(1)</script>\n```\n\n"
            "And the layout, nested as asked:\n\n```html\n<div class=\"page\"><div>" + LOOP + "\n" + LOOP)
HEALTH = {"status": "ok", "model": "SmolLM2-135M-Instruct", "alive": 2, "dead": [], "busy": 1, "replicas": [
    {"index": 0, "device": "cuda:0", "dtype": "bfloat16", "state": "ready", "alive": True, "busy": 1, "completed": 812},
    {"index": 1, "device": "cuda:1", "dtype": "bfloat16", "state": "ready", "alive": True, "busy": 0, "completed": 790}]}


class _HealthHandler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        body = json.dumps(HEALTH).encode()
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def healthy_server_url():
    """A stand-in bundled server that only answers /health (two replicas)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HealthHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


def _world(healthy_url: str) -> dict:
    ensure_groups()  # (a transactional test starts from an empty database)
    user = get_user_model().objects.create_user("erin", password=PASSWORD, is_staff=True)
    user.groups.add(Group.objects.get(name=ENGINEERS))
    profiles_ensure()
    Backend.objects.filter(name="bundled").update(base_url=healthy_url)
    Backend.objects.create(name="llama-cpp-eu", kind="openai", base_url="http://127.0.0.1:9/v1", model_name="smollm2",
                           api_key=SECRET, max_concurrency=4, capabilities={"mode": "per_sample", "n": False,
                                                                            "seed_reproducible": True})
    loop_start = RESPONSE.index("nested as asked")
    fenced = Transcript.objects.create(
        source="router-eu-1", request_id="fenced-1", content_hash="f1", model="SmolLM2-135M-Instruct",
        messages=[{"role": "system", "content": "You are helpful."}, {"role": "user", "content": PROMPT}],
        response=RESPONSE, finish_reason="length", temperature=0.6, degenerate=True, severity=0.93,
        kernel_profile=KernelProfile.objects.get(name="stock"),
        reasons=[{"code": "tail_loop", "message": "tail loop: period 1 tokens ×120"},
                 {"code": "unbalanced_fence", "message": "unbalanced code fence"}],
        metrics={"highlights": [{"start": loop_start, "end": len(RESPONSE), "kind": "loop", "label": "period 6 ×120"}]},
    )
    for i in range(12):
        Transcript.objects.create(source="router-eu-1", request_id=f"plain-{i}", content_hash=f"p{i}", model="m",
                                  response=f"answer {i}", temperature=0.6, degenerate=i % 4 == 0,
                                  severity=0.8 if i % 4 == 0 else 0.0)
    experiment = experiment_services.experiment_start(transcripts=[fenced.pk], samples=4, max_tokens=64,
                                                      user=user, via="web", dispatch=False)
    return {"fenced": fenced, "experiment": experiment}


def _check(page, errors: list[str], name: str) -> None:
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)  # (figures.js fits the figures to their cells on load)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{name}: {overflow}px wider than the 1280px window"
    assert errors == [], f"{name}: {errors}"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"pages-{name}.png"), full_page=True)


def test_every_page_in_a_real_browser(live_server, browser, browser_login, healthy_server_url):
    world = _world(healthy_server_url)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    base = live_server.url
    try:
        page.goto(base + "/accounts/login/")
        _check(page, errors, "login")

        browser_login(page, base, "erin", PASSWORD, next_url="/")
        page.wait_for_selector("h1:has-text('Overview')")
        page.wait_for_function("document.querySelectorAll('.figure .js-plotly-plot svg.main-svg').length >= 2")
        _check(page, errors, "overview")

        page.click("nav >> text=Transcripts")
        page.wait_for_selector("table.list tbody tr")
        _check(page, errors, "transcripts")

        page.goto(f"{base}/transcripts/{world['fenced'].pk}/")
        response = page.locator(".turn.response")
        code = response.locator(".codeblock")
        assert code.count() == 2
        assert code.nth(0).locator(".lang").inner_text() == "python"
        assert code.nth(0).locator("code.language-python").inner_text().startswith("```python\ndef add(a, b):")
        assert "<script>alert(1)</script>" in code.nth(0).inner_text()  # shown as text
        assert page.evaluate("document.querySelectorAll('.turn.response script').length") == 0
        assert "unclosed fence" in code.nth(1).locator(".lang").inner_text()
        assert code.nth(1).inner_text().rstrip().endswith("</div>")  # the unclosed fence runs to the end
        marks = response.locator("mark.hl-loop")
        assert marks.count() == 3  # the loop starts in the text and goes on through the fence into the code
        assert response.locator(".codeblock mark.hl-loop").count() == 2
        assert page.locator(".turn.user .codeblock code.language-python").count() == 1
        _check(page, errors, "transcript-detail")

        page.click("nav >> text=Experiments")
        page.wait_for_selector("#experiments")
        _check(page, errors, "experiments")

        page.goto(f"{base}/experiments/{world['experiment'].pk}/")
        page.wait_for_selector("main h1")
        _check(page, errors, "experiment-detail")

        page.click("nav >> text=Backends")
        page.wait_for_function("document.querySelectorAll('#backends td.health .badge').length === 2")
        rows = {name: page.locator(f"#backends tr:has-text('{name}') td.health").inner_text()
                for name in ("bundled", "llama-cpp-eu")}
        assert rows["bundled"].startswith("ok") and "replica 1 · cuda:1 bfloat16" in rows["bundled"]
        assert rows["llama-cpp-eu"].startswith("down") and "connection refused" in rows["llama-cpp-eu"]
        assert SECRET not in page.content()
        _check(page, errors, "backends")

        page.click("nav >> text=Profiles")
        page.wait_for_selector("#profiles")
        assert "sparse budget=" in page.inner_text("#profiles")
        _check(page, errors, "profiles")
    finally:
        page.close()
