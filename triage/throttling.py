"""Rate limit per API key (or per logged-in user): settings.INGEST_RATE_LIMIT, e.g. "6000/min".

A fixed-window counter in the Django cache (cache.add + cache.incr: O(1) per request, and
atomic on a shared cache such as Redis; with the default per-process local-memory cache the
limit holds per web process). "0", "off" or "" disables it. Over the limit DRF answers 429
with Retry-After (the seconds left in the window).
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

from triage.auth import request_api_key

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str | None) -> tuple[int, int] | None:
    """'6000/min' -> (6000, 60); None when disabled. Raises ValueError on nonsense."""
    if not rate or str(rate).strip().lower() in ("0", "off", "none"):
        return None
    count, _, period = str(rate).partition("/")
    seconds = PERIODS.get(period.strip().lower()[:1])
    if not count.strip().isdigit() or seconds is None:
        raise ValueError(f"INGEST_RATE_LIMIT must look like '6000/min' (per s, min, hour or day), got {rate!r}")
    return int(count), seconds


class ApiKeyRateThrottle(BaseThrottle):
    cache_prefix = "triage:rate"

    def __init__(self):
        self._wait: float | None = None

    def identity(self, request) -> str | None:
        key = request_api_key(request)
        if key is not None:
            return f"key:{key.pk}"
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and getattr(user, "pk", None):
            return f"user:{user.pk}"
        return None  # unauthenticated requests are refused before they cost anything

    def allow_request(self, request, view) -> bool:
        parsed = parse_rate(getattr(settings, "INGEST_RATE_LIMIT", None))
        ident = self.identity(request)
        if parsed is None or ident is None:
            return True
        limit, period = parsed
        now = time.time()
        window = int(now // period)
        cache_key = f"{self.cache_prefix}:{ident}:{period}:{window}"
        if cache.add(cache_key, 1, timeout=period + 1):
            count = 1
        else:
            try:
                count = cache.incr(cache_key)
            except ValueError:  # expired between add and incr
                cache.set(cache_key, 1, timeout=period + 1)
                count = 1
        if count <= limit:
            return True
        self._wait = max(1.0, (window + 1) * period - now)
        return False

    def wait(self) -> float | None:
        return self._wait
