"""The backends and kernel profiles pages: who may see them, live health per backend (a dead one
says "down" and why, never a 500), empty states, and a backend's API key never in the HTML."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from triage.models import Backend, KernelProfile, Transcript
from triage.roles import ENGINEERS, OPS, ensure_groups
from triage.views_backends import capabilities_summary, health_summary

pytestmark = pytest.mark.django_db

SECRET = "sk-never-show-this-0123456789"
DEAD_URL = "http://127.0.0.1:9/v1"  # the discard port: nothing listens, the connection is refused


@pytest.fixture
def login(client):
    def as_(group: str | None, *, staff: bool = False):
        ensure_groups()
        user = get_user_model().objects.create_user(f"u-{group}-{staff}-{get_user_model().objects.count()}",
                                                    password="pw-12345678", is_staff=staff)
        if group:
            user.groups.add(Group.objects.get(name=group))
        client.force_login(user)
        return client
    return as_


@pytest.fixture
def dead_backend():
    backend = Backend.objects.create(name="dead-vllm", kind="openai", base_url=DEAD_URL, model_name="m",
                                     api_key=SECRET, max_concurrency=8, chat_template="chatml",
                                     capabilities={"mode": "per_sample", "n": False, "seed_plus_i": False})
    profile = KernelProfile.objects.create(name="sparse-64", backend=backend, description="budget 64",
                                           settings={"attention": "sparse", "sparse_budget": 64})
    Transcript.objects.create(source="s", request_id="r1", content_hash="h1", model="m", response="x",
                              kernel_profile=profile)
    return backend


@pytest.mark.parametrize("path", ["/backends/", "/profiles/"])
def test_anonymous_users_are_sent_to_the_login_page(client, path):
    response = client.get(path)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("path", ["/backends/", "/profiles/", "/backends/1/health/"])
@pytest.mark.parametrize("group", [OPS, None])
def test_ops_and_plain_users_get_403(login, path, group):
    assert login(group).get(path).status_code == 403


def test_engineers_see_the_backends_and_the_key_never_appears(login, dead_backend):
    response = login(ENGINEERS).get("/backends/")
    html = response.content.decode()
    assert response.status_code == 200
    for shown in ("dead-vllm", "openai", DEAD_URL, "chatml", "one request per sample", "n ✗"):
        assert shown in html
    assert f'hx-get="/backends/{dead_backend.pk}/health/"' in html  # health comes later, by htmx
    assert SECRET not in html and "api_key" not in html
    assert "managed in the admin" in html
    assert "/admin/" not in html  # engineers are not staff: no edit links
    assert b"Backends" in login(ENGINEERS).get("/").content  # in the nav


def test_a_down_backend_says_down_with_the_error_not_a_500(login, dead_backend):
    response = login(ENGINEERS).get(f"/backends/{dead_backend.pk}/health/", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert ">down<" in html and "connection refused" in html
    assert SECRET not in html


def test_a_healthy_bundled_backend_lists_its_replicas(login, monkeypatch):
    backend = Backend.objects.create(name="bundled", kind="bundled", base_url="http://127.0.0.1:8001/v1",
                                     api_key=SECRET)
    body = {"status": "ok", "alive": 2, "dead": [], "replicas": [
        {"index": 0, "device": "cuda:0", "dtype": "bfloat16", "state": "ready", "alive": True, "busy": 3, "completed": 7},
        {"index": 1, "device": "cuda:1", "dtype": "bfloat16", "state": "ready", "alive": True, "busy": 0, "completed": 9}]}
    monkeypatch.setattr("triage.backends.BackendClient.health", lambda self: body)
    html = login(ENGINEERS).get(f"/backends/{backend.pk}/health/").content.decode()
    assert ">ok<" in html and "replica 0 · cuda:0 bfloat16 · ready · busy 3" in html and "replica 1 · cuda:1" in html


def test_staff_get_edit_links_to_the_admin(login, dead_backend):
    client = login(ENGINEERS, staff=True)
    assert f"/admin/triage/backend/{dead_backend.pk}/change/" in client.get("/backends/").content.decode()
    profile = KernelProfile.objects.get(name="sparse-64")
    assert f"/admin/triage/kernelprofile/{profile.pk}/change/" in client.get("/profiles/").content.decode()


def test_profiles_show_the_settings_label_backend_and_transcript_count(login, dead_backend, django_assert_max_num_queries):
    KernelProfile.objects.create(name="stock", settings={})
    client = login(ENGINEERS)
    with django_assert_max_num_queries(8):  # (session, user, perms, the list: no query per row)
        response = client.get("/profiles/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "sparse budget=64 decode=torch indexer=torch" in html and "budget 64" in html
    assert '<a href="/transcripts/?kernel_profile=sparse-64">1</a>' in html
    assert "dead-vllm" in html and SECRET not in html
    assert "stock" in html and ">none<" in html  # a profile without a backend


def test_empty_states_say_what_to_do(login):
    client = login(ENGINEERS)
    assert b"manage.py bootstrap" in client.get("/backends/").content
    assert b"manage.py bootstrap" in client.get("/profiles/").content


@pytest.mark.parametrize("body, state, words", [
    ({"status": "unreachable", "error": "ConnectError: [Errno 111] Connection refused"}, "down", "connection refused"),
    ({"status": "unreachable", "error": "ReadTimeout: timed out"}, "down", "timed out"),
    ({"status": "unavailable", "dead": [0, 1], "replicas": []}, "down", "status unavailable; dead replicas 0, 1"),
    ({"status": "degraded", "dead": [1]}, "degraded", "status degraded; dead replicas 1"),
    ({"status": "http 404"}, "down", "status http 404"),
    ({"status": "ok"}, "ok", ""),
])
def test_health_in_words(body, state, words):
    summary = health_summary(body)
    assert (summary["state"], summary["words"]) == (state, words)


def test_capabilities_summary():
    assert capabilities_summary({}) == "not probed yet"
    assert capabilities_summary({"mode": "n_seed", "n": True, "seed_plus_i": True}) == \
        "n samples per request (seed + i) · n ✓ · seed + i ✓"
