"""The backends and kernel profiles pages (engineers: view_backend / view_kernelprofile). Each
backend's health is fetched by htmx after the page loads, one short request per backend, so a
dead one never holds the page up. Editing happens in the admin; a backend's API key is never
shown."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.views.decorators.http import require_GET

from kernels.settings import KernelSettings, KernelSettingsError
from triage import selectors_backends as selectors
from triage.backends import BackendClient

HEALTH_TIMEOUT_S = 3.0  # (health() itself caps its GET at 5 s)


def _require(request, perm: str, what: str) -> None:
    if not request.user.has_perm(f"triage.{perm}"):
        raise PermissionDenied(f"Only engineers may see the {what} (permission triage.{perm}).")


def capabilities_summary(capabilities: dict | None) -> str:
    """What a probe found the server honours, in words ("not probed yet" before the first
    experiment on it)."""
    caps = capabilities or {}
    if not caps:
        return "not probed yet"
    parts = []
    if caps.get("mode"):
        parts.append({"n_seed": "n samples per request (seed + i)",
                      "per_sample": "one request per sample"}.get(caps["mode"], str(caps["mode"])))
    for key, label in (("n", "n"), ("seed_reproducible", "reproducible seeds"), ("seed_plus_i", "seed + i"),
                       ("echo_logprobs", "echo logprobs")):
        if key in caps:
            parts.append(f"{label} {'✓' if caps[key] else '✗'}")
    return " · ".join(parts) or ", ".join(sorted(caps))


def _error_in_words(error: str) -> str:
    lowered = error.lower()
    for needle, words in (("refused", "connection refused"), ("timed out", "timed out"), ("timeout", "timed out"),
                          ("name or service not known", "host not found"), ("nodename", "host not found"),
                          ("unreachable", "network unreachable")):
        if needle in lowered:
            return words
    return error


def health_summary(body: dict) -> dict:
    """BackendClient.health()'s answer for the page: ok or down, the error in words, replicas."""
    status = str(body.get("status", "unknown"))
    error = body.get("error") or (body.get("detail") if isinstance(body.get("detail"), str) else "")
    if status == "unreachable":
        return {"ok": False, "state": "down", "words": _error_in_words(error), "error": error, "replicas": []}
    replicas = [r for r in body.get("replicas") or [] if isinstance(r, dict)]
    state = {"ok": "ok", "degraded": "degraded"}.get(status, "down")
    words = "" if state == "ok" else (error or f"status {status}")
    if state != "ok" and body.get("dead"):
        words = f"{words}; dead replicas {', '.join(map(str, body['dead']))}"
    return {"ok": state == "ok", "state": state, "words": words, "error": error, "replicas": replicas,
            "model": body.get("model", "")}


@require_GET
def backend_list_view(request):
    _require(request, "view_backend", "backends")
    rows = [{"backend": b, "capabilities": capabilities_summary(b.capabilities)} for b in selectors.backend_list()]
    return render(request, "triage/backend_list.html", {"rows": rows})


@require_GET
def backend_health_view(request, pk: int):
    """A fragment for htmx: the backend's live health."""
    _require(request, "view_backend", "backends")
    backend = selectors.backend_get(backend_id=pk)
    try:  # health() answers in at most a few seconds and never raises on HTTP errors; a bad URL may
        with BackendClient.for_backend(backend, timeout=HEALTH_TIMEOUT_S, connect_timeout=HEALTH_TIMEOUT_S,
                                       attempts=1) as client:
            body = client.health()
    except Exception as exc:  # noqa: BLE001 - the page shows any failure as "down" with the reason
        body = {"status": "unreachable", "error": f"{exc.__class__.__name__}: {exc}"}
    return render(request, "triage/_backend_health.html", {"backend": backend, "health": health_summary(body)})


def _settings_label(settings: dict) -> str:
    try:
        return KernelSettings.from_dict(settings or None).label
    except (KernelSettingsError, TypeError) as exc:
        return f"invalid settings: {exc}"


@require_GET
def kernel_profile_list_view(request):
    _require(request, "view_kernelprofile", "kernel profiles")
    rows = [{"profile": p, "label": _settings_label(p.settings)} for p in selectors.kernel_profile_list()]
    return render(request, "triage/profile_list.html", {"rows": rows})
