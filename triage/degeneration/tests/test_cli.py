"""The command line: per-line results and per-line errors, --json, --bench."""

import io
import json
import subprocess
import sys
from pathlib import Path

from triage.degeneration import cli

ROOT = Path(__file__).resolve().parents[3]


def _write(tmp_path, lines: list[bytes]) -> str:
    p = tmp_path / "in.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    return str(p)


BAD_AND_GOOD = [
    json.dumps({"id": "ok", "text": "The capital of France is Paris.", "finish_reason": "stop"}).encode(),
    json.dumps({"id": "flood", "text": "Page:\n" + "</div>" * 400, "finish_reason": "length"}).encode(),
    b"{not json",
    json.dumps({"finish_reason": "stop"}).encode(),
    b"\xff\xfe\x00binary junk\x80",
    json.dumps([1, 2, 3]).encode(),
    json.dumps({"text": 42}).encode(),
    json.dumps({"text": ""}).encode(),
    json.dumps({"text": "x", "token_ids": ["a"]}).encode(),
    json.dumps({"text": "\ud800 lone surrogate escaped in JSON"}).encode(),
    b"[" * 100000 + b"]" * 100000,
    b"",  # blank lines are skipped
    json.dumps({"text": "x", "messages": "not a list"}).encode(),
]


def test_json_output_one_object_per_line_with_errors(tmp_path):
    path = _write(tmp_path, BAD_AND_GOOD)
    out = io.StringIO()
    rc = cli.cmd_analyze(path, as_json=True, out=out)
    rows = [json.loads(l) for l in out.getvalue().splitlines()]
    assert rc == 1
    assert len(rows) == len(BAD_AND_GOOD) - 1
    by_line = {r["line"]: r for r in rows}
    assert by_line[1]["degenerate"] is False and by_line[1]["id"] == "ok"
    assert by_line[2]["degenerate"] is True and "tail loop" in by_line[2]["reasons"][0]["message"]
    assert {"degenerate", "severity", "reasons", "metrics"} <= set(by_line[2])
    assert by_line[3]["error"].startswith("not valid JSON")
    assert by_line[4]["error"] == 'missing "text"'
    assert by_line[5]["error"].startswith("not valid UTF-8")
    assert by_line[6]["error"] == "expected a JSON object, got list"
    assert by_line[7]["error"] == '"text" must be a string, got int'
    assert by_line[8]["degenerate"] is False  # empty text is a result, not an error
    assert "token_ids" in by_line[9]["error"]
    assert by_line[10]["degenerate"] is False
    assert "error" in by_line[11]
    assert by_line[13]["error"] == '"messages" must be a list, got str'


def test_text_output(tmp_path):
    path = _write(tmp_path, BAD_AND_GOOD[:3])
    out = io.StringIO()
    assert cli.cmd_analyze(path, as_json=False, out=out) == 1
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("line 1 [ok]: ok 0.00")
    assert lines[1].startswith("line 2 [flood]: DEGENERATE") and "period 4 tokens ×400" in lines[1]
    assert lines[2].startswith("line 3: error: not valid JSON")


def test_all_good_exit_zero(tmp_path):
    path = _write(tmp_path, BAD_AND_GOOD[:2])
    assert cli.cmd_analyze(path, as_json=True, out=io.StringIO()) == 0


def test_bench_prints_throughput(tmp_path):
    path = _write(tmp_path, BAD_AND_GOOD[:2] * 5)
    out = io.StringIO()
    assert cli.cmd_bench(path, repeat=1, out=out) == 0
    text = out.getvalue()
    assert "MB/s" in text and "100 KB response" in text and "1 MB of '</div>'" in text


def test_module_entry_point_without_django(tmp_path):
    path = _write(tmp_path, BAD_AND_GOOD[:1])
    code = ("import sys, runpy; sys.argv=['x', %r, '--json'];\n"
            "try:\n runpy.run_module('triage.degeneration', run_name='__main__')\n"
            "except SystemExit as e:\n"
            " assert not [m for m in sys.modules if m == 'django' or m.startswith('django.')], 'django imported'\n"
            " assert not [m for m in sys.modules if m.startswith(('inference', 'kernels'))]\n"
            " raise\n") % path
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["degenerate"] is False


def test_missing_file_is_a_clear_error(tmp_path, capsys):
    assert cli.main([str(tmp_path / "nope.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
