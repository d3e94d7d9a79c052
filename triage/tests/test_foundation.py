"""Foundation: model constraints, settings refusal, roles, API keys."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import IntegrityError, transaction

from triage.auth import find_active_key
from triage.models import ApiKey, KernelProfile, Transcript
from triage.roles import ENGINEERS, OPS, can_experiment, can_flag
from triage.services.keys import api_key_create, api_key_revoke, demo_user_ensure

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_duplicate_request_id_per_source_is_rejected():
    Transcript.objects.create(source="router-a", request_id="r1", content_hash="x")
    Transcript.objects.create(source="router-b", request_id="r1", content_hash="x")  # other source: fine
    with pytest.raises(IntegrityError), transaction.atomic():
        Transcript.objects.create(source="router-a", request_id="r1", content_hash="y")
    assert Transcript.objects.filter(request_id="r1").count() == 2


@pytest.mark.django_db
def test_kernel_profile_settings_are_validated_against_the_schema():
    good = KernelProfile(name="p", settings={"attention": "sparse", "sparse_budget": 256})
    good.full_clean()
    bad = KernelProfile(name="q", settings={"attention": "sparse", "page_size": 17, "colour": "red"})
    with pytest.raises(ValidationError) as info:
        bad.full_clean()
    assert "kernel.colour" in str(info.value)


def _django_check(env_overrides: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG")}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow  # (Django checks in subprocesses)
def test_production_refuses_to_start_without_secret_key(tmp_path):
    result = _django_check({"DEBUG": "0", "TRIAGE_VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path}/db"})
    assert result.returncode != 0
    assert "SECRET_KEY is not set and DEBUG is off" in result.stderr
    ok = _django_check({
        "DEBUG": "0", "SECRET_KEY": "x" * 50, "ALLOWED_HOSTS": "example.com",
        "TRIAGE_VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path}/db",
    })
    assert ok.returncode == 0, ok.stderr


@pytest.mark.django_db
def test_roles_ops_flag_engineers_also_experiment():
    User = get_user_model()
    ops = User.objects.create_user("olga", password="pw-ops-12345")
    ops.groups.add(Group.objects.get(name=OPS))
    eng = User.objects.create_user("erik", password="pw-eng-12345")
    eng.groups.add(Group.objects.get(name=ENGINEERS))
    nobody = User.objects.create_user("nora", password="pw-nobody-123")
    assert can_flag(ops) and not can_experiment(ops)
    assert can_flag(eng) and can_experiment(eng)
    assert not can_flag(nobody) and not can_experiment(nobody)


@pytest.mark.django_db
def test_every_page_needs_login(client):
    for url in ("/", "/transcripts/1/", "/admin/"):
        response = client.get(url)
        assert response.status_code == 302, url
        assert "login" in response["Location"]
    assert client.get("/accounts/login/").status_code == 200


@pytest.mark.django_db
def test_logged_in_user_sees_transcript_list(client):
    Transcript.objects.create(source="s", request_id="visible-1", content_hash="h", response="hello <b>x</b>")
    user = get_user_model().objects.create_user("ella", password="pw-ella-12345")
    client.force_login(user)
    page = client.get("/transcripts/")
    assert page.status_code == 200
    assert b"visible-1" in page.content
    assert b"hello &lt;b&gt;x&lt;/b&gt;" in page.content  # escaped, never rendered as markup


@pytest.mark.django_db
def test_api_keys_are_hashed_scoped_and_revocable(capsys):
    call_command("create_api_key", "--name", "router-1", "--scopes", "ingest,read")
    raw = capsys.readouterr().out.strip().splitlines()[-1]
    key = ApiKey.objects.get(name="router-1")
    assert raw.startswith("tt_") and raw not in key.hashed_key and key.hashed_key == ApiKey.hash_secret(raw)
    assert key.scopes == ["ingest", "read"] and key.source == "router-1"
    assert find_active_key(raw) == key
    assert find_active_key(raw[:-1] + ("A" if raw[-1] != "A" else "B")) is None
    api_key_revoke(key=key)
    assert find_active_key(raw) is None
    with pytest.raises(ValueError, match="scopes must be"):
        api_key_create(name="bad", scopes=["admin"])
    with pytest.raises(ValueError, match="exists already"):
        api_key_create(name="router-1", scopes=["ingest"])


@pytest.mark.django_db
def test_demo_user_password_is_given_once():
    password = demo_user_ensure()
    assert password and len(password) >= 8
    assert demo_user_ensure() is None
    user = get_user_model().objects.get(username="demo")
    assert user.check_password(password) and can_experiment(user)


@pytest.mark.slow  # (docker-compose config in subprocesses)
def test_compose_file_is_valid():
    import shutil

    if not shutil.which("docker-compose"):
        pytest.skip(reason="docker-compose not installed (make test installs it from Debian as root)")
    env = {**os.environ, "SECRET_KEY": "x", "POSTGRES_PASSWORD": "y"}
    result = subprocess.run(["docker-compose", "-f", "docker/compose.yaml", "config"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for service in ("postgres", "redis", "web", "worker", "backend"):
        assert f"  {service}:" in result.stdout
    missing = subprocess.run(["docker-compose", "-f", "docker/compose.yaml", "config"], cwd=ROOT,
                             env={k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "POSTGRES_PASSWORD")},
                             capture_output=True, text=True, timeout=60)
    complaint = missing.stderr + missing.stdout
    assert missing.returncode != 0 and ("SECRET_KEY" in complaint or "POSTGRES_PASSWORD" in complaint)


@pytest.mark.django_db
def test_detail_page_highlights_the_loop_and_escapes_it(client):
    from triage.services import ingest

    text = "Here is your page.\n" + "</div><script>x()</script>\n" * 60
    result = ingest.transcript_ingest(source="t", payload={
        "request_id": "loop-1", "messages": [{"role": "user", "content": "page please"}],
        "response": {"content": text, "finish_reason": "length"}, "sampling": {"temperature": 0.6},
    })
    assert result.status == "created"
    client.force_login(get_user_model().objects.create_user("viewer", password="pw-viewer-123"))
    page = client.get(f"/transcripts/{result.id}/").content.decode()
    assert '<mark class="hl-loop"' in page
    assert "<script>x()" not in page and "&lt;script&gt;x()&lt;/script&gt;" in page
    before, marked = page.split('<mark class="hl-loop"', 1)
    assert "Here is your page." in before  # the healthy prefix stays unmarked
