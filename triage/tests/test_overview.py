"""The overview (landing page): its numbers, a bounded number of queries, the empty state, and
its figures in a real browser (click-through to the filtered list)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from triage import selectors
from triage.models import Flag, Transcript


def _transcripts(n: int = 30):
    now = timezone.now()
    rows = []
    for i in range(n):
        degenerate = i % 3 == 0
        rows.append(Transcript(
            source="s", request_id=f"ov-{i}", content_hash=f"h{i}", model="m-a" if i % 2 else "m-b",
            response="x", received_at=now - timedelta(hours=i * 5), temperature=0.0 if i % 5 == 0 else 0.6,
            degenerate=degenerate, severity=0.9 if degenerate else 0.0,
            reasons=[{"code": "tail_loop" if i % 2 else "counting_loop", "message": "m"}, {"code": "runaway"}]
            if degenerate else []))
    Transcript.objects.bulk_create(rows)
    Flag.objects.create(transcript=Transcript.objects.get(request_id="ov-0"), reason="repetition")


@pytest.mark.django_db
def test_overview_numbers(django_assert_max_num_queries):
    _transcripts()
    with django_assert_max_num_queries(6):
        o = selectors.overview(range_key="7d")
    recent = [t for t in Transcript.objects.all() if t.received_at >= o["since"]]
    assert o["totals"]["n"] == len(recent) and o["totals"]["degenerate"] == sum(t.degenerate for t in recent)
    assert sum(r["n"] for r in o["by_model"]) == len(recent) and {r["group"] for r in o["by_model"]} == {"m-a", "m-b"}
    assert dict(o["reasons"]).keys() <= {"tail_loop", "counting_loop"}  # weak reasons (runaway) not counted
    assert dict(o["flags"])["new"] == 1
    assert o["greedy_share"] == sum(t.temperature == 0 for t in recent) / len(recent)
    assert not o["hourly"] and selectors.overview(range_key="24h")["hourly"]


@pytest.mark.django_db
def test_overview_page_and_its_empty_state(client):
    user = get_user_model().objects.create_user("vera", password="pw-vera-12345")
    client.force_login(user)
    empty = client.get("/")
    assert empty.status_code == 200 and b"No transcripts in this range yet" in empty.content
    _transcripts()
    page = client.get("/?range=30d")
    assert page.status_code == 200
    assert b"fig-by-model" in page.content and b"Top degeneration reasons" in page.content
    assert b"temperature 0" in page.content  # the warning for greedy traffic
    listed = client.get("/transcripts/?degenerate=1&reason=counting_loop")
    assert b"ov-0" in listed.content and b"ov-3" not in listed.content  # ov-3 looped with tail_loop


@pytest.mark.django_db(transaction=True)
def test_overview_in_a_real_browser(live_server, browser, browser_login):
    get_user_model().objects.create_user("vera", password="pw-vera-12345")
    _transcripts()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        browser_login(page, live_server.url, "vera", "pw-vera-12345", next_url="/%3Frange%3D30d")
        page.wait_for_function("document.querySelectorAll('.figure .js-plotly-plot svg.main-svg').length >= 4")
        titles = page.locator(".figure .gtitle").all_text_contents()
        assert any("by model" in t for t in titles) and any("reasons" in t for t in titles)
        from django.conf import settings
        from pathlib import Path
        shots = Path(settings.BASE_DIR) / "var" / "test-artifacts"
        shots.mkdir(parents=True, exist_ok=True)
        page.wait_for_load_state("load")
        page.wait_for_timeout(300)  # (figures.js fits the figures to their cells on load)
        widths = page.evaluate("[...document.querySelectorAll('.figure')].map(f => [f.clientWidth, "
                               "f.querySelector('svg.main-svg').getBoundingClientRect().width])")
        assert all(svg <= box + 1 for box, svg in widths), widths  # no figure wider than its cell
        page.screenshot(path=str(shots / "overview.png"), full_page=True)
        box = page.locator(".figure[data-filter=reason] .bars path").first.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # (plotly's drag layer
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # takes the events)
        page.wait_for_url("**/transcripts/?*reason=*")
        assert "degenerate=1" in page.url
        assert page.locator("table.list tbody tr").count() >= 1
        assert errors == []
    finally:
        page.close()


def test_colours_mean_the_same_on_every_page():
    """The stock kernel profile is the stock arm's blue on the overview too; no other group gets a
    colour that means something else (stock, control, degenerate, healthy, the noise floor)."""
    from datetime import datetime, timezone as tz

    from triage import figures

    t = datetime(2026, 12, 1, tzinfo=tz.utc)
    rows = [{"bucket": t, "group": g, "n": 10, "degenerate": 2} for g in ("stock", "sparse-64", "fp8-kv", "")]
    fig = figures.rate_over_time(rows, group_label="kernel profile", bucket_label="day")
    colours = {tr.name: tr.line.color for tr in fig.data}
    assert colours["stock"] == figures.STOCK
    reserved = {figures.STOCK, figures.CONTROL, figures.DEGENERATE, figures.HEALTHY, figures.NOISE}
    assert not {c for n, c in colours.items() if n != "stock"} & reserved
    # the same name, the same colour, wherever it is drawn
    assert colours["sparse-64"] == figures.arm_color("sparse-64")
