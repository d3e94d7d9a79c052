"""Real browser (Debian Chromium via Playwright): log in, see the list, open a transcript,
and hostile content stays inert text."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from triage.models import Flag, Transcript
from triage.roles import OPS, ensure_groups

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'
           '<a href="javascript:alert(1)">click me</a> <script>alert(1)</script>' + "</div>" * 50)


def test_login_list_and_detail_in_a_real_browser(live_server, browser):
    ensure_groups()  # (an earlier transactional test may have flushed the migrations' groups)
    user = get_user_model().objects.create_user("ops1", password="correct-horse-battery")
    user.groups.add(Group.objects.get(name=OPS))
    transcript = Transcript.objects.create(
        source="s", request_id="browser-1", content_hash="h", model="m", response=HOSTILE,
        messages=[{"role": "user", "content": "hi <b>there</b>"}], degenerate=True, severity=0.9,
        reasons=[{"message": "tail loop: period 1 tokens ×50"}],
    )
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        page.goto(live_server.url + "/")
        assert "/accounts/login/" in page.url
        page.fill("input[name=username]", "ops1")
        page.fill("input[name=password]", "wrong-password")
        page.click("button[type=submit]")
        assert "Wrong username or password" in page.content()
        page.fill("input[name=username]", "ops1")
        page.fill("input[name=password]", "correct-horse-battery")
        page.click("button[type=submit]")
        page.wait_for_selector("h1:has-text('Overview')")  # the landing page
        page.click("nav >> text=Transcripts")
        page.wait_for_selector("table.list")
        assert page.locator("table.list tbody tr").count() == 1
        assert "degenerate" in page.inner_text("table.list")
        page.click("text=browser-1")
        page.wait_for_selector("section.verdict")
        assert page.evaluate("window.__pwned") is None  # the script never ran
        shown = page.inner_text(".turn.response pre")
        assert shown.startswith("<script>window.__pwned = 1</script>")
        assert '<a href="javascript:alert(1)">click me</a>' in shown  # shown as text, not a link
        assert page.locator(".turn.response a").count() == 0
        page.click(".turn.response pre")  # clicking the text opens nothing
        assert dialogs == []
        assert "tail loop" in page.inner_text("section.verdict")
        assert f"/transcripts/{transcript.pk}/" in page.url

        # Ops flag it from the page, then move the flag along.
        page.select_option("select[name=reason]", "repetition")
        page.fill("textarea[name=note]", "users saw </div> spam")
        page.click("text=Flag this response")
        page.wait_for_selector("li.flag-row")
        flag = Flag.objects.get(transcript=transcript)
        assert (flag.reason, flag.note, flag.user, flag.status) == ("repetition", "users saw </div> spam", user, "new")
        page.select_option("li.flag-row select[name=status]", "investigating")
        page.click("li.flag-row >> text=Set status")
        page.wait_for_selector("text=is now investigating")
        flag.refresh_from_db()
        assert flag.status == "investigating"
        page.select_option("li.flag-row select[name=status]", "new")
        page.click("li.flag-row >> text=Set status")
        page.wait_for_selector("text=cannot go back")
        flag.refresh_from_db()
        assert flag.status == "investigating"
    finally:
        page.close()


def test_the_queue_moves_with_j_k_and_opens_with_o_and_f(live_server, browser, browser_login):
    ensure_groups()
    user = get_user_model().objects.create_user("ops2", password="correct-horse-battery")
    user.groups.add(Group.objects.get(name=OPS))
    for i in range(3):
        Transcript.objects.create(source="s", request_id=f"queue-{i}", content_hash=f"q{i}", model="m", response="r")
    page = browser.new_page()
    try:
        browser_login(page, live_server.url, "ops2", "correct-horse-battery", next_url="/transcripts/")
        page.wait_for_selector("table.queue tr.row")
        page.keyboard.press("j")
        page.keyboard.press("j")
        page.keyboard.press("k")
        page.keyboard.press("j")
        selected = page.locator("table.queue tr.selected")
        assert selected.count() == 1 and "queue-1" in selected.inner_text()  # newest first: 2, 1, 0
        page.keyboard.press("o")
        page.wait_for_selector("h1:has-text('queue-1')")
        page.go_back()
        page.wait_for_selector("table.queue tr.row")
        page.keyboard.press("j")
        page.keyboard.press("f")
        page.wait_for_selector("#flag")
        assert page.url.endswith("#flag") and "queue-2" in page.inner_text("h1")
        page.wait_for_function("document.activeElement && document.activeElement.name === 'reason'")  # ready to flag
    finally:
        page.close()


def test_the_queue_filters_selects_two_rows_and_bulk_flags_them(live_server, browser, browser_login):
    ensure_groups()
    user = get_user_model().objects.create_user("ops3", password="correct-horse-battery")
    user.groups.add(Group.objects.get(name=OPS))
    for i, temperature in enumerate((0.6, 0.6, 0.6, 1.2)):
        Transcript.objects.create(source="s", request_id=f"bulk-{i}", content_hash=f"b{i}", model="m",
                                  response="r", temperature=temperature, degenerate=True, severity=0.2 * (i + 1))
    Transcript.objects.create(source="s", request_id="bulk-ok", content_hash="bok", model="m", response="r",
                              temperature=0.6)
    page = browser.new_page()
    try:
        browser_login(page, live_server.url, "ops3", "correct-horse-battery", next_url="/transcripts/")
        page.wait_for_selector("table.queue tr.row")
        page.check("form.filters input[name=degenerate]")
        page.fill("input[name=temperature_min]", "0.5")
        page.fill("input[name=temperature_max]", "0.7")
        page.select_option("select[name=sort]", "severity")
        page.click("form.filters button[type=submit]")
        page.wait_for_url("**temperature_max=0.7**")
        rows = page.locator("table.queue tr.row")
        assert rows.count() == 3 and "bulk-2" in rows.nth(0).inner_text()  # most severe first, 1.2 filtered out
        rows.nth(0).locator("input.pick").check()
        page.keyboard.press("j")
        page.keyboard.press("j")
        page.keyboard.press("x")  # the keyboard selects the second row
        assert page.inner_text("#selected-count") == "2 selected"
        page.select_option("#bulk select[name=reason]", "repetition")
        page.click("#bulk-flag")
        page.wait_for_selector("text=Flagged 2 transcripts (repetition).")
        assert "temperature_max=0.7" in page.url  # back on the same filtered page
        flagged = set(Flag.objects.values_list("transcript__request_id", flat=True))
        assert flagged == {"bulk-2", "bulk-1"}
        assert page.locator("table.queue tr.row .badge.flag").count() == 2
    finally:
        page.close()
