"""simulate_router against a stub OpenAI-compatible backend and the live app; its error
when the backend is down; bench_ingest's argument checks."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import CommandError, call_command

from triage.models import Transcript
from triage.services.ingest import GREEDY_WARNING
from triage.services.keys import api_key_create


class _StubBackend(BaseHTTPRequestHandler):
    """Just enough of /v1/models and /v1/chat/completions (greedy answers loop)."""

    def log_message(self, *args):
        pass

    def _json(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._json({"object": "list", "data": [{"id": "stub-model", "object": "model"}]})

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        greedy = request["temperature"] == 0
        text = "</div>\n" * 300 if greedy else f"A fine answer to: {request['messages'][-1]['content']}"
        self._json({
            "id": "x", "object": "chat.completion", "created": 1738324800, "model": "stub-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "length" if greedy else "stop",
                         "logprobs": {"content": [{"token": "A", "logprob": -0.1, "top_logprobs": []}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
        })


@pytest.fixture
def stub_backend():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StubBackend)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


@pytest.mark.django_db(transaction=True)
def test_simulate_router_posts_generated_conversations(live_server, stub_backend, capsys):
    _, raw = api_key_create(name="sim-router", scopes=["ingest"])
    call_command("simulate_router", count=6, url=live_server.url, key=raw, inference_url=stub_backend,
                 greedy_share=0.5, seed=3, concurrency=2, turns=2)
    assert "6 created" in capsys.readouterr().out
    rows = Transcript.objects.filter(source="sim-router")
    assert rows.count() == 6
    assert all(len(row.messages) == 4 and row.model == "stub-model" and row.logprobs for row in rows)
    greedy = [row for row in rows if row.temperature == 0]
    assert greedy and all(row.degenerate and GREEDY_WARNING in row.warnings for row in greedy)


def test_simulate_router_says_how_to_start_the_backend(db):
    with pytest.raises(CommandError, match="python -m inference serve"):
        call_command("simulate_router", count=1, url="http://127.0.0.1:9", key="tt_x",
                     inference_url="http://127.0.0.1:9/v1")


def test_bench_ingest_checks_its_arguments(db):
    with pytest.raises(CommandError, match="--url needs --key"):
        call_command("bench_ingest", url="http://127.0.0.1:9")
    with pytest.raises(CommandError, match="--batch must be between"):
        call_command("bench_ingest", batch=10_000)


def test_load_demo_spreads_the_demo_traffic_over_the_last_days(db):
    """So the overview's degenerate rate over time has points to draw on a fresh `make run`; a
    second load is all replays and moves nothing."""
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    from triage.models import Transcript

    call_command("load_demo", verbosity=0)
    times = sorted(Transcript.objects.filter(source="demo").values_list("received_at", flat=True))
    assert len(times) > 10
    assert timedelta(days=5.9) < times[-1] - times[0] < timedelta(days=6.1)
    assert timezone.now() - times[-1] < timedelta(minutes=5)
    assert len({t.date() for t in times}) >= 6
    call_command("load_demo", verbosity=0)
    assert sorted(Transcript.objects.filter(source="demo").values_list("received_at", flat=True)) == times
