"""manage.py reanalyze: verdicts stored under an older detector version brought up to date,
the automatic flags moved with them, people's flags left alone."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from triage.degeneration import VERSION
from triage.models import Flag, Transcript
from triage.services import flags, ingest
from triage.services.reanalyze import transcripts_reanalyze
from triage.tests.ingest_fixtures import LOOP_RESPONSE, transcript_payload

pytestmark = pytest.mark.django_db


def _ingest(request_id, content, finish_reason="stop", **overrides):
    payload = transcript_payload(request_id, response={"content": content, "finish_reason": finish_reason},
                                 **overrides)
    result = ingest.transcript_ingest(source="reanalysis", payload=payload)
    assert result.status == "created", result.errors
    return Transcript.objects.get(pk=result.id)


def _as_if_older(t, *, degenerate):
    """What an older detector stored: another version, the opposite verdict and its flags."""
    t.flags.all().delete()
    Transcript.objects.filter(pk=t.pk).update(
        metrics={**t.metrics, "version": "1"}, degenerate=degenerate, severity=0.9 if degenerate else 0.0,
        reasons=[{"code": "tail_loop", "message": "old", "severity": 0.9, "span": None}] if degenerate else [],
        flagged=degenerate)
    if degenerate:
        Flag.objects.create(transcript=t, reason=Flag.Reason.AUTO, source="auto", note="severity 0.90")


def test_older_verdicts_are_recomputed_and_the_automatic_flags_follow(capsys):
    missed = _ingest("missed", LOOP_RESPONSE, "length")          # an old version missed the loop
    false_alarm = _ingest("false-alarm", "A short, healthy answer about caches.")
    acted_on = _ingest("acted-on", "Another healthy answer, which someone is looking into.")
    current = _ingest("current", "Already analysed by this version.")
    for t, was in ((missed, False), (false_alarm, True), (acted_on, True)):
        _as_if_older(t, degenerate=was)
    # a person moved the third one's automatic flag forward, and flagged it themselves
    flags.flag_update_status(flag=acted_on.flags.get(), status="investigating")
    flags.flag_create(transcript=acted_on, reason="incoherent", note="reads oddly")

    call_command("reanalyze", "--json")
    summary = json.loads(capsys.readouterr().out)
    assert summary["version"] == VERSION
    assert (summary["examined"], summary["changed"]) == (3, 3)   # the current one is not examined
    assert (summary["now_degenerate"], summary["no_longer_degenerate"]) == (1, 2)
    assert (summary["flags_created"], summary["flags_resolved"]) == (1, 1)

    missed.refresh_from_db()
    assert missed.degenerate and missed.flagged and missed.metrics["version"] == VERSION
    assert missed.reasons and missed.reasons[0]["message"] != "old"
    assert missed.flags.get().reason == Flag.Reason.AUTO

    false_alarm.refresh_from_db()
    assert not false_alarm.degenerate and not false_alarm.flagged and false_alarm.reasons == []
    flag = false_alarm.flags.get()
    assert flag.status == "resolved" and "severity 0.90" in flag.note and f"version {VERSION}" in flag.note

    acted_on.refresh_from_db()
    assert not acted_on.degenerate and acted_on.flagged   # people's flags stay open
    assert sorted(acted_on.flags.values_list("status", flat=True)) == ["investigating", "new"]

    # a second run has nothing left to do; --all examines everything and changes nothing
    call_command("reanalyze")
    assert "already at version" in capsys.readouterr().out
    call_command("reanalyze", "--all", "--json")
    again = json.loads(capsys.readouterr().out)
    assert (again["examined"], again["changed"]) == (4, 0)
    current.refresh_from_db()
    assert current.metrics["version"] == VERSION


def test_a_dry_run_writes_nothing_and_says_what_would_change(capsys):
    t = _ingest("dry", LOOP_RESPONSE, "length")
    _as_if_older(t, degenerate=False)
    call_command("reanalyze", "--dry-run")
    out = capsys.readouterr().out
    assert "1 verdicts would change (1 now degenerate, 0 no longer)" in out and "nothing was written" in out
    assert "1 automatic flags to create, 0 to resolve" in out
    assert f"#{t.id} dry: healthy (version 1) -> degenerate" in out
    t.refresh_from_db()
    assert not t.degenerate and t.metrics["version"] == "1" and not t.flags.exists()


def test_only_the_source_asked_for_in_batches():
    rows = [_ingest(f"batch-{i}", LOOP_RESPONSE, "length") for i in range(5)]
    other = _ingest("other-source", LOOP_RESPONSE, "length")
    Transcript.objects.filter(pk=other.pk).update(source="elsewhere")
    for t in rows + [other]:
        _as_if_older(t, degenerate=False)
    calls = []
    summary = transcripts_reanalyze(source="reanalysis", batch=2, progress=calls.append)
    assert calls == [2, 2, 1] and summary.examined == 5 and summary.now_degenerate == 5
    other.refresh_from_db()
    assert other.metrics["version"] == "1" and not other.degenerate


def test_content_stored_escaped_is_analysed_as_sent():
    """A response with NUL characters is stored escaped; re-analysis reads it back as sent (the
    same verdict as at ingestion, which analysed the text as sent) and stores it escaped again."""
    t = _ingest("nul", "before\x00after " + "la " * 200, "length")
    assert t.content_encoding
    at_ingestion = (t.metrics, t.reasons, t.severity)
    _as_if_older(t, degenerate=False)
    summary = transcripts_reanalyze()
    assert summary.examined == 1 and summary.failed == 0
    t.refresh_from_db()
    assert t.degenerate and t.metrics["version"] == VERSION
    assert (t.metrics, t.reasons, t.severity) == at_ingestion


def test_a_failed_analysis_keeps_the_old_verdict_and_its_flags(monkeypatch):
    t = _ingest("fails", "A healthy answer.")
    _as_if_older(t, degenerate=True)
    from triage.services import reanalyze
    monkeypatch.setattr(reanalyze, "transcript_metrics", lambda **kw: {
        "degenerate": False, "severity": 0.0, "reasons": [], "metrics": {"error": "metrics failed: RuntimeError: boom"}})
    summary = transcripts_reanalyze()
    assert (summary.examined, summary.failed, summary.changed, summary.flags_resolved) == (1, 1, 0, 0)
    t.refresh_from_db()
    assert t.degenerate and t.flagged and t.metrics["version"] == "1" and t.flags.get().status == "new"
    assert t.warnings[-1] == "metrics failed: RuntimeError: boom"
    # the next run that works clears the warning and brings the verdict up to date
    monkeypatch.undo()
    transcripts_reanalyze()
    t.refresh_from_db()
    assert not t.degenerate and t.metrics["version"] == VERSION and not any("failed" in w for w in t.warnings)


def test_a_flag_made_during_the_analysis_is_kept(monkeypatch):
    """Someone flags the transcript while its batch is being analysed: flagged stays true."""
    t = _ingest("flag-meanwhile", "A healthy answer.")
    _as_if_older(t, degenerate=False)
    from triage.services import reanalyze
    real = reanalyze.transcript_metrics

    def analyse_while_someone_flags(**kw):
        flags.flag_create(transcript=Transcript.objects.get(pk=t.pk), reason="incoherent", note="odd")
        return real(**kw)

    monkeypatch.setattr(reanalyze, "transcript_metrics", analyse_while_someone_flags)
    transcripts_reanalyze()
    t.refresh_from_db()
    assert t.flagged and not t.degenerate and t.metrics["version"] == VERSION


def test_a_verdict_from_a_newer_version_is_left_alone():
    t = _ingest("newer", LOOP_RESPONSE, "length")
    Transcript.objects.filter(pk=t.pk).update(metrics={**t.metrics, "version": str(int(VERSION) + 1)},
                                              degenerate=False)
    summary = transcripts_reanalyze()
    assert (summary.examined, summary.skipped_newer) == (0, 1)
    t.refresh_from_db()
    assert not t.degenerate


def test_bad_arguments_say_how_to_fix_them(capsys):
    with pytest.raises(CommandError, match="--batch must be at least 1"):
        call_command("reanalyze", "--batch", "0")
    call_command("reanalyze", "--source", "nobody", "--all")
    assert "no transcripts of source 'nobody'" in capsys.readouterr().out
    call_command("reanalyze", "--source", "nobody", "--json")  # the same fields as a run that did something
    out = json.loads(capsys.readouterr().out)
    assert out["examined"] == 0 and out["changed"] == 0 and "already at version" in out["message"]


def test_bootstrap_says_when_transcripts_need_reanalysis(capsys):
    t = _ingest("stale", "A healthy answer.")
    call_command("bootstrap", "--no-demo-data")
    assert "older detector version" not in capsys.readouterr().out
    _as_if_older(t, degenerate=False)
    call_command("bootstrap", "--no-demo-data")
    assert "1 transcripts were judged by an older detector version" in capsys.readouterr().out
