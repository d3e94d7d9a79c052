"""The triage queue (/transcripts/): each filter narrows, sorts, cursor pages that visit every
row once (ties on received_at included), bulk flag / suite / export with the role rules, bad
input answered in words, and a bounded number of queries per page."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from triage import selectors
from triage.models import Experiment, Flag, KernelProfile, Transcript
from triage.roles import ENGINEERS, OPS, ensure_groups

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    ensure_groups()
    users = {}
    for name, group in (("olga", OPS), ("erik", ENGINEERS), ("vera", None)):
        user = get_user_model().objects.create_user(name, password=f"pw-{name}-12345")
        if group:
            user.groups.add(Group.objects.get(name=group))
        users[name] = user
    return users


def _login(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def corpus():
    """Ten transcripts that differ in one property each, received one hour apart (q-0 newest)."""
    now = timezone.now()
    sparse = KernelProfile.objects.create(name="q-sparse", settings={"attention": "sparse"})
    specs = [
        dict(model="m-a", temperature=0.6),
        dict(model="m-a", temperature=0.0, degenerate=True, severity=0.9,
             reasons=[{"code": "tail_loop", "message": "tail loop"}]),
        dict(model="m-b", temperature=0.6, kernel_profile=sparse),
        dict(model="m-b", temperature=1.0, degenerate=True, severity=0.5,
             reasons=[{"code": "counting_loop", "message": "counting"}], kernel_profile=sparse),
        dict(model="m-a", temperature=0.7, response="a unique zebra answer"),
        dict(model="m-a", temperature=0.6, degenerate=True, severity=0.7,
             reasons=[{"code": "tail_loop", "message": "tail loop"}]),
        dict(model="m-c", temperature=0.6),
        dict(model="m-a", temperature=0.6),
        dict(model="m-a", temperature=0.6),
        dict(model="m-a", temperature=0.6),
    ]
    rows = []
    for i, spec in enumerate(specs):
        spec = {"response": "plain answer", **spec}
        rows.append(Transcript(source="q", request_id=f"q-{i}", content_hash=f"h{i}",
                               received_at=now - timedelta(hours=i) - timedelta(days=10 if i >= 8 else 0), **spec))
    rows = Transcript.objects.bulk_create(rows)
    flag = Flag.objects.create(transcript=rows[5], reason="repetition", status="investigating")
    Transcript.objects.filter(pk=flag.transcript_id).update(flagged=True)
    return {t.request_id: t for t in Transcript.objects.all()}


def _listed(response) -> list[str]:
    assert response.status_code == 200, response.content[:500]
    return [t.request_id for t in response.context["transcripts"]]


# --- filters and sort ----------------------------------------------------------------------


@pytest.mark.parametrize("query, expected", [
    ("", [f"q-{i}" for i in range(10)]),
    ("degenerate=1", ["q-1", "q-3", "q-5"]),
    ("degenerate=0", ["q-0", "q-2", "q-4", "q-6", "q-7", "q-8", "q-9"]),
    ("flagged=1", ["q-5"]),
    ("flag_status=investigating", ["q-5"]),
    ("flag_status=new", []),
    ("reason=tail_loop", ["q-1", "q-5"]),
    ("model=m-b", ["q-2", "q-3"]),
    ("kernel_profile=q-sparse", ["q-2", "q-3"]),
    ("temperature_min=0.65", ["q-3", "q-4"]),
    ("temperature_max=0.1", ["q-1"]),
    ("temperature_min=0.6&temperature_max=0.7", ["q-0", "q-2", "q-4", "q-5", "q-6", "q-7", "q-8", "q-9"]),
    ("range=7d", [f"q-{i}" for i in range(8)]),
    ("q=zebra", ["q-4"]),
    ("degenerate=1&model=m-a&reason=tail_loop", ["q-1", "q-5"]),
])
def test_each_filter_narrows_the_queue(client, people, corpus, query, expected):
    assert _listed(_login(client, people["vera"]).get("/transcripts/?" + query)) == expected


def test_time_range_with_datetime_local_inputs(client, people, corpus):
    """received after/before as a browser's datetime-local sends them (no seconds, local time)."""
    fmt = "%Y-%m-%dT%H:%M"
    local = timezone.localtime
    after = local(corpus["q-3"].received_at - timedelta(minutes=1)).strftime(fmt)
    before = local(corpus["q-1"].received_at - timedelta(minutes=1)).strftime(fmt)
    listed = _listed(_login(client, people["vera"]).get(f"/transcripts/?received_after={after}&received_before={before}"))
    assert listed == ["q-2", "q-3"]


def test_sort_by_severity_orders_most_severe_first(client, people, corpus):
    listed = _listed(_login(client, people["vera"]).get("/transcripts/?sort=severity&degenerate=1"))
    assert listed == ["q-1", "q-5", "q-3"]  # 0.9, 0.7, 0.5
    everything = _listed(client.get("/transcripts/?sort=severity"))
    severities = [corpus[r].severity for r in everything]
    assert severities == sorted(severities, reverse=True) and len(everything) == 10
    # equal severities (0.0) fall back to the id, highest first
    zero = [corpus[r].pk for r in everything if corpus[r].severity == 0]
    assert zero == sorted(zero, reverse=True)


@pytest.mark.parametrize("query, wrong", [
    ("temperature_min=abc", "temperature min: Enter a number (got 'abc')."),
    ("temperature_max=nan", "temperature max: Enter a number"),
    ("temperature_min=0.9&temperature_max=0.1", "temperature max: is below temperature min"),
    ("received_after=yesterday", "received after: Enter a valid date/time (got 'yesterday')."),
    ("received_after=2025-02-01T00:00&received_before=2025-01-01T00:00", "received before: must be later"),
    ("sort=random", "sort: Select a valid choice"),
    ("flag_status=open", "flag status: Select a valid choice"),
    ("range=1y", "range: Select a valid choice"),
])
def test_bad_filter_values_say_what_was_wrong(client, people, corpus, query, wrong):
    response = _login(client, people["vera"]).get("/transcripts/?" + query)
    assert response.status_code == 400
    assert wrong in response.content.decode().replace("&#x27;", "'")
    assert b'class="row' not in response.content  # nothing listed under a filter that was not applied


def test_a_bad_cursor_says_so(client, people, corpus):
    _login(client, people["vera"])
    for cursor in ("garbage", "eyJzIjoidGltZSJ9", "!!!"):
        response = client.get(f"/transcripts/?degenerate=1&cursor={cursor}")
        assert response.status_code == 400 and b"cursor is not valid" in response.content
        assert b"start from the first page" in response.content
    cursor = selectors.queue_cursor(sort="severity", row=corpus["q-0"])  # used on the time sort
    response = client.get(f"/transcripts/?cursor={cursor}")
    assert response.status_code == 400 and b"belongs to the &#x27;severity&#x27; sort" in response.content


# --- cursor pagination ---------------------------------------------------------------------


def _bulk(n: int, *, same_time_every: int = 7) -> list[Transcript]:
    """n rows where runs of `same_time_every` share one received_at, with varied severities."""
    base = timezone.now().replace(microsecond=0)
    rows = [Transcript(source="p", request_id=f"p-{i}", content_hash=f"p{i}", model="m", response="r",
                       received_at=base - timedelta(seconds=i // same_time_every),
                       severity=[0.0, 0.5, 0.5, 0.9][i % 4], degenerate=i % 4 != 0, flagged=i % 10 == 0)
            for i in range(n)]
    return Transcript.objects.bulk_create(rows)


@pytest.mark.parametrize("sort", ["time", "severity"])
def test_cursor_pages_visit_every_row_once_with_ties(sort):
    _bulk(123)
    expected = list(Transcript.objects.order_by(f"-{selectors.QUEUE_SORTS[sort]}", "-id").values_list("id", flat=True))
    seen, cursor, pages = [], None, []
    while True:
        page = selectors.transcript_queue_page(sort=sort, cursor=cursor, page_size=10)
        pages.append(page)
        seen.extend(t.pk for t in page.rows)
        if not page.older:
            break
        cursor = page.older
    assert seen == expected and len(set(seen)) == 123  # every row, once, in order
    assert len(pages) == 13 and pages[0].newer is None and all(p.newer for p in pages[1:])
    # and back up again with the 'newer' links: the same pages, in reverse
    back, cursor = [], pages[-1].newer
    while cursor:
        page = selectors.transcript_queue_page(sort=sort, cursor=cursor, page_size=10)
        back.append([t.pk for t in page.rows])
        cursor = page.newer
    assert back == [[t.pk for t in p.rows] for p in reversed(pages[:-1])]


def test_the_page_links_carry_the_filters_and_an_opaque_cursor(client, people):
    _bulk(130)
    _login(client, people["vera"])
    first = client.get("/transcripts/?degenerate=1")
    assert first.status_code == 200 and first.context["newer_url"] is None
    older = first.context["older_url"]
    assert older.startswith("?degenerate=1&cursor=") and "received" not in older  # opaque
    second = client.get("/transcripts/" + older)
    ids = [t.pk for t in first.context["transcripts"]] + [t.pk for t in second.context["transcripts"]]
    assert len(ids) == len(set(ids)) == 97  # 130 × ¾ degenerate, 50 + 47
    assert all(t.degenerate for t in second.context["transcripts"]) and second.context["older_url"] is None
    assert "older →" in first.content.decode() and "← newer" in second.content.decode()
    back = client.get("/transcripts/" + second.context["newer_url"])
    assert [t.pk for t in back.context["transcripts"]] == ids[:50]
    assert first.context["page"].matching == 97 and not first.context["page"].matching_capped


def test_the_count_is_capped_not_a_count_of_the_whole_table(monkeypatch):
    _bulk(30)
    monkeypatch.setattr(selectors, "QUEUE_COUNT_CAP", 20)
    page = selectors.transcript_queue_page(page_size=10)
    assert (page.matching, page.matching_capped) == (20, True)


def test_the_queue_page_runs_a_bounded_number_of_queries(client, people, django_assert_max_num_queries):
    rows = _bulk(200)
    for t in rows[:60]:
        Flag.objects.create(transcript=t, reason="repetition")
        Flag.objects.create(transcript=t, reason="other", status="investigating")
    Transcript.objects.filter(pk__in=[t.pk for t in rows[:60]]).update(flagged=True)
    KernelProfile.objects.create(name="q-dense", settings={})
    Transcript.objects.filter(pk__in=[t.pk for t in rows[::2]]).update(kernel_profile=KernelProfile.objects.get())
    _login(client, people["erik"])
    # session, user, 2 × permissions, models, profiles, the page, its flag counts, the capped count:
    # the same 9 whatever the page holds
    for query in ("", "?sort=severity", "?flagged=1&flag_status=investigating&kernel_profile=q-dense&q=r"):
        with django_assert_max_num_queries(9):
            response = client.get("/transcripts/" + query)
        assert response.status_code == 200 and len(response.context["transcripts"]) in (50, 30)
        if query != "?sort=severity":
            continue
        for _ in range(3):  # deeper pages cost the same
            with django_assert_max_num_queries(9):
                response = client.get("/transcripts/" + response.context["older_url"])
            assert response.status_code == 200
    assert "flagged ×2" in client.get("/transcripts/").content.decode()  # flag counts shown


# --- bulk actions --------------------------------------------------------------------------


def test_ops_bulk_flag_the_selected_rows(client, people, corpus):
    _login(client, people["olga"])
    ids = [corpus["q-0"].pk, corpus["q-2"].pk]
    response = client.post("/transcripts/bulk/flag/", {"ids": ids, "reason": "repetition", "note": "loops",
                                                       "next": "/transcripts/?model=m-a"}, follow=True)
    assert response.redirect_chain[-1][0] == "/transcripts/?model=m-a"
    assert "Flagged 2 transcripts (repetition)." in response.content.decode()
    flags = Flag.objects.filter(transcript_id__in=ids)
    assert sorted(f.transcript_id for f in flags) == sorted(ids)
    assert {(f.reason, f.note, f.user, f.source) for f in flags} == {("repetition", "loops", people["olga"], "ui")}
    assert Transcript.objects.filter(pk__in=ids, flagged=True).count() == 2


def test_viewers_cannot_bulk_flag(client, people, corpus):
    response = _login(client, people["vera"]).post("/transcripts/bulk/flag/", {"ids": [corpus["q-0"].pk], "reason": "other"})
    assert response.status_code == 403 and not Flag.objects.filter(transcript=corpus["q-0"]).exists()
    page = client.get("/transcripts/").content.decode()
    assert 'id="bulk-flag"' not in page and 'id="bulk-experiment"' not in page and 'id="bulk-export"' in page


@pytest.mark.parametrize("post, says", [
    ({"reason": "repetition"}, "no rows selected"),
    ({"ids": ["12abc"], "reason": "repetition"}, "not transcript ids: &#x27;12abc&#x27;"),
    ({"ids": ["99999999"], "reason": "repetition"}, "unknown transcript id 99999999"),
    ({"ids": ["99999999999999999999"], "reason": "repetition"}, "not transcript ids"),
    ({"ids": ["1"], "reason": "auto"}, "choose a flag reason"),
    ({"ids": ["1"]}, "choose a flag reason"),
])
def test_bad_bulk_flag_input_is_a_message_not_a_500(client, people, corpus, post, says):
    response = _login(client, people["olga"]).post("/transcripts/bulk/flag/", post, follow=True)
    assert response.status_code == 200 and "Nothing flagged: " in response.content.decode()
    assert says in response.content.decode()
    assert Flag.objects.count() == 1  # only the corpus's own flag


def test_bulk_flag_refuses_get_and_requires_csrf(people, corpus):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(people["olga"])
    assert strict.get("/transcripts/bulk/flag/").status_code == 405
    assert strict.post("/transcripts/bulk/flag/", {"ids": [corpus["q-0"].pk], "reason": "other"}).status_code == 403
    assert not Flag.objects.filter(transcript=corpus["q-0"]).exists()


def test_a_foreign_next_url_is_not_followed(client, people, corpus):
    response = _login(client, people["olga"]).post(
        "/transcripts/bulk/flag/", {"ids": [corpus["q-0"].pk], "reason": "other", "next": "https://evil.example/"})
    assert response.status_code == 302 and response["Location"] == "/transcripts/"


def test_engineers_start_a_suite_across_the_selected_rows(client, people, corpus):
    from triage.management.commands.bootstrap import profiles_ensure

    profiles_ensure()
    _login(client, people["erik"])
    assert 'id="bulk-experiment"' in client.get("/transcripts/").content.decode()
    ids = [corpus["q-1"].pk, corpus["q-5"].pk, corpus["q-3"].pk]
    response = client.post("/transcripts/bulk/experiment/", {"ids": ids, "filter-degenerate": "1"}, follow=True)
    experiment = Experiment.objects.get()
    assert response.redirect_chain[-1][0] == f"/experiments/{experiment.pk}/"
    assert f"Started experiment {experiment.pk}: a suite across 3 transcripts." in response.content.decode()
    assert [c.transcript_id for c in experiment.cases.order_by("position")] == ids
    assert experiment.created_by == people["erik"] and experiment.selection == {"queue": {"degenerate": "1"}}


def test_ops_see_no_suite_button_and_the_endpoint_refuses_them(client, people, corpus):
    _login(client, people["olga"])
    page = client.get("/transcripts/").content.decode()
    assert 'id="bulk-flag"' in page and 'id="bulk-experiment"' not in page
    assert client.post("/transcripts/bulk/experiment/", {"ids": [corpus["q-1"].pk]}).status_code == 403
    assert not Experiment.objects.exists()


def test_bad_suite_input_is_a_message(client, people, corpus, settings):
    _login(client, people["erik"])
    response = client.post("/transcripts/bulk/experiment/", {}, follow=True)
    assert "Experiment suite not started: no rows selected" in response.content.decode()
    # no backend configured yet: the service's reason is shown
    response = client.post("/transcripts/bulk/experiment/", {"ids": [corpus["q-1"].pk]}, follow=True)
    assert "Experiment suite not started — arms: no backend is configured" in response.content.decode()
    settings.EXPERIMENT_MAX_CASES = 2
    from triage.management.commands.bootstrap import profiles_ensure

    profiles_ensure()
    response = client.post("/transcripts/bulk/experiment/", {"ids": [t.pk for t in corpus.values()][:3]}, follow=True)
    assert "over the suite cap of 2" in response.content.decode() and not Experiment.objects.exists()


def _body(response) -> str:
    return b"".join(response.streaming_content).decode()


def test_bulk_export_of_the_selection_as_csv_and_jsonl(client, people, corpus):
    _login(client, people["vera"])  # reading is everyone's
    ids = [corpus["q-4"].pk, corpus["q-1"].pk]
    response = client.post("/transcripts/bulk/export/", {"ids": ids, "format": "csv", "scope": "selected"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert 'filename="transcripts.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(_body(response))))
    assert [r["request_id"] for r in rows] == ["q-1", "q-4"]  # the queue's order, newest first
    assert rows[1]["response"] == "a unique zebra answer"
    response = client.post("/transcripts/bulk/export/", {"ids": ids, "format": "jsonl"})
    lines = [json.loads(line) for line in _body(response).splitlines()]
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert [line["request_id"] for line in lines] == ["q-1", "q-4"] and lines[0]["messages"] == []


def test_bulk_export_of_the_whole_current_filter(client, people, corpus):
    _login(client, people["olga"])
    response = client.post("/transcripts/bulk/export/", {
        "scope": "filter", "format": "jsonl", "filter-degenerate": "1", "filter-sort": "severity",
        "ids": [corpus["q-0"].pk],  # ticked rows do not matter for 'all matching'
    })
    assert sorted(json.loads(line)["request_id"] for line in _body(response).splitlines()) == ["q-1", "q-3", "q-5"]


@pytest.mark.parametrize("post, says", [
    ({"scope": "selected", "format": "csv"}, "Nothing exported: no rows selected"),
    ({"scope": "selected", "format": "xml", "ids": ["1"]}, "&#x27;xml&#x27; is not an export format"),
    ({"scope": "filter", "format": "csv", "filter-temperature_min": "hot"}, "the filters are not valid: temperature min"),
])
def test_bad_export_input_is_a_message(client, people, corpus, post, says):
    response = _login(client, people["vera"]).post("/transcripts/bulk/export/", post, follow=True)
    assert response.status_code == 200 and says in response.content.decode()


def test_the_queue_page_renders_its_filters_and_bulk_form(client, people, corpus):
    page = _login(client, people["olga"]).get("/transcripts/?temperature_min=0.5&range=7d&kernel_profile=q-sparse")
    html = page.content.decode()
    assert page.status_code == 200
    for needle in ('name="temperature_min" inputmode="decimal" size="4" value="0.5"', 'value="7d" selected',
                   'value="q-sparse" selected', 'type="datetime-local" name="received_after"',
                   'name="filter-temperature_min" value="0.5"', 'id="select-page"', 'name="ids" value="'):
        assert needle in html, needle
    assert "2 transcripts match" in html  # q-2 and q-3
