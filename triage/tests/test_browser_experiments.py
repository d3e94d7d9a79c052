"""Experiments in a real browser (Debian Chromium via Playwright) against the bundled backend:
an engineer starts a small experiment from a transcript page, watches its progress reach 100 %
without reloading, and sees the comparison figures and the verdict; ops see no start button and
the endpoint refuses them. Screenshots of every page go to var/test-artifacts/."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from triage.experiments import services
from triage.models import Experiment
from triage.roles import ENGINEERS, OPS, ensure_groups

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ARTIFACTS = Path(django_settings.BASE_DIR) / "var" / "test-artifacts"


def _user(name: str, group: str):
    ensure_groups()  # (a transactional test starts from an empty database)
    user = get_user_model().objects.create_user(name, password="correct-horse-battery")
    user.groups.add(Group.objects.get(name=group))
    return user


def _login(page, base: str, name: str) -> None:
    page.goto(base + "/accounts/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_selector("main")


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_engineer_starts_an_experiment_and_watches_it_finish_without_reloading(
        live_server, browser, bundled_backend, demo_transcripts, settings):
    settings.EXPERIMENT_DIVERGENCE_MAX_CHARS = 400  # a short teacher-forced comparison keeps it quick
    settings.EXPERIMENT_DECODE_CHECK_SAMPLES = 0
    _user("erik", ENGINEERS)
    transcript = demo_transcripts["demo-0024"]  # short, healthy, served at T=0.6
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    runner = None
    try:
        _login(page, live_server.url, "erik")
        page.goto(f"{live_server.url}/transcripts/{transcript.pk}/")
        form = page.locator("#start-experiment")
        assert form.is_visible()
        assert page.input_value("input[name=arm-0-name]") == "stock"  # the default arms, pre-filled
        _shot(page, "transcript-engineer")
        page.fill("input[name=samples]", "4")
        page.fill("input[name=max_tokens]", "24")
        n = int(page.input_value("input[name=arm_count]")) - 1  # the empty "add an arm" row
        page.fill(f"input[name=arm-{n}-name]", "sparse-64")
        page.select_option(f"select[name=arm-{n}-profile]", "sparse")
        page.fill(f"input[name=arm-{n}-kernel]", '{"sparse_budget": 64}')
        page.click("#start-experiment button[type=submit]")
        page.wait_for_selector(".progress-box")
        experiment = Experiment.objects.get()
        assert page.url.endswith(f"/experiments/{experiment.pk}/")
        assert {a.name for a in experiment.arms.all()} >= {"stock", "sparse-64"}
        page.evaluate("window.__same_page = true")  # gone if the page reloads
        _shot(page, "experiment-running")

        # the chunks run here (a worker is tested elsewhere); the page polls for progress
        runner = threading.Thread(target=services.experiment_run_inline, kwargs={"experiment": experiment})
        runner.start()
        page.wait_for_selector("#diagnosis", timeout=240_000)
        assert page.evaluate("window.__same_page") is True
        experiment.refresh_from_db()
        assert experiment.status == "done", experiment.error
        verdict = page.inner_text("#diagnosis .verdict-code")
        assert verdict == experiment.verdict and verdict in ("kernel", "sampling", "model_or_prompt", "inconclusive")
        page.wait_for_function("document.querySelectorAll('.figure .js-plotly-plot svg.main-svg').length >= 4")
        titles = page.locator(".figure .gtitle").all_text_contents()
        assert any("Degenerate samples per arm" in t for t in titles)
        assert any("KL divergence" in t for t in titles)
        assert page.locator("#tests tbody tr").count() >= 1
        assert page.locator(".samples-grid .cell.sample").count() >= 8  # 4 seeds × ≥ 2 arms
        _shot(page, "experiment-done")

        with page.expect_download() as dl:
            page.click("#report-link")
        report = Path(dl.value.path()).read_text(encoding="utf-8")
        assert "Plotly" in report and 'id="experiment-data"' in report and "<script src=" not in report
        report_page = browser.new_page()
        try:  # the report opens by itself, offline (no server): its figures draw
            report_page.route("**/*", lambda route: route.abort() if not route.request.url.startswith("data:") else route.continue_())
            report_page.set_content(report)
            report_page.wait_for_function("document.querySelectorAll('.js-plotly-plot svg.main-svg').length >= 4")
            _shot(report_page, "experiment-report")
        finally:
            report_page.close()
        assert errors == []
    finally:
        if runner is not None:
            runner.join(timeout=300)
        page.close()


def test_ops_see_no_start_button_and_the_endpoint_refuses_them(live_server, browser, demo_transcripts):
    ops = _user("olga", OPS)
    transcript = demo_transcripts["demo-0024"]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        _login(page, live_server.url, "olga")
        page.goto(f"{live_server.url}/transcripts/{transcript.pk}/")
        page.wait_for_selector("section.verdict")
        assert page.locator("#start-experiment").count() == 0
        assert page.locator("text=Flag this response").count() == 1  # ops do flag
        _shot(page, "transcript-ops")
        page.goto(f"{live_server.url}/experiments/")
        assert "No experiments yet" in page.inner_text("main")
        _shot(page, "experiments-empty")
    finally:
        page.close()
    client = Client()
    client.force_login(ops)
    response = client.post(f"/transcripts/{transcript.pk}/experiment/", {"arm_count": "0", "samples": "2"})
    assert response.status_code == 403
    assert Experiment.objects.count() == 0
