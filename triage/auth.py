"""API-key authentication for routers (Authorization: Bearer <key>) and scope permissions."""

from __future__ import annotations

import hmac
import time

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone
from rest_framework import authentication, exceptions, permissions

from triage.models import ApiKey


class ApiKeyPrincipal:
    """request.user for a router key: authenticated, but not a Django user."""

    is_authenticated = True
    is_active = True
    is_anonymous = False
    is_staff = False

    def __init__(self, api_key: ApiKey):
        self.api_key = api_key
        self.pk = None
        self.id = None

    def __str__(self) -> str:
        return f"api-key:{self.api_key.name}"

    def has_perm(self, perm: str) -> bool:
        return False


def find_active_key(raw_key: str) -> ApiKey | None:
    prefix = raw_key[3 : 3 + ApiKey.PREFIX_LENGTH] if raw_key.startswith("tt_") else ""
    if not prefix:
        return None
    key = ApiKey.objects.filter(prefix=prefix, revoked_at__isnull=True).first()
    if key is None or not hmac.compare_digest(key.hashed_key, ApiKey.hash_secret(raw_key)):
        return None
    return key


# A verified key is remembered for a few seconds per process, sparing every ingest request
# a database round trip. Saving or deleting a key clears this process's memory at once;
# a revocation made in another process takes effect here within KEY_CACHE_SECONDS.
KEY_CACHE_SECONDS = 10.0
_verified_keys: dict[str, tuple[float, ApiKey]] = {}


def cached_active_key(raw_key: str) -> ApiKey | None:
    digest = ApiKey.hash_secret(raw_key)
    now = time.monotonic()
    hit = _verified_keys.get(digest)
    if hit is not None and hit[0] > now:
        return hit[1]
    key = find_active_key(raw_key)
    if key is None:
        _verified_keys.pop(digest, None)
    else:
        if len(_verified_keys) > 1000:
            _verified_keys.clear()
        _verified_keys[digest] = (now + KEY_CACHE_SECONDS, key)
    return key


@receiver([post_save, post_delete], sender=ApiKey, dispatch_uid="triage.auth.forget_keys")
def _forget_verified_keys(**kwargs) -> None:
    _verified_keys.clear()


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw_key = header.partition(" ")
        if scheme.lower() != self.keyword.lower() or not raw_key.strip():
            raise exceptions.AuthenticationFailed(
                "Authorization header must be 'Bearer <api key>'; create a key with "
                "'python manage.py create_api_key --name NAME --scopes ingest'."
            )
        key = cached_active_key(raw_key.strip())
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        now = timezone.now()
        if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
            key.last_used_at = now
        return ApiKeyPrincipal(key), key

    def authenticate_header(self, request) -> str:
        return f'{self.keyword} realm="api"'


def request_api_key(request) -> ApiKey | None:
    return request.auth if isinstance(request.auth, ApiKey) else None


class HasScope(permissions.BasePermission):
    """Keys need the view's `required_scope`; browser users need the matching permission
    (ops may flag, engineers may also start experiments, anyone logged in may read)."""

    USER_PERMISSION_FOR_SCOPE = {
        ApiKey.Scope.INGEST: "triage.add_transcript",
        ApiKey.Scope.FLAG: "triage.add_flag",
        ApiKey.Scope.READ: None,
        ApiKey.Scope.EXPERIMENT: "triage.add_experiment",
    }

    def has_permission(self, request, view) -> bool:
        scope = getattr(view, "required_scope", None)
        if scope is None or not (request.user and request.user.is_authenticated):
            return bool(request.user and request.user.is_authenticated)
        scopes = scope if isinstance(scope, tuple) else (scope,)  # a tuple: any one of them will do
        key = request_api_key(request)
        if key is not None:
            if not any(key.has_scope(s) for s in scopes):
                wanted = "' or '".join(scopes)
                self.message = f"This API key lacks the '{wanted}' scope (it has: {', '.join(key.scopes) or 'none'})."
                return False
            return True
        perm = self.USER_PERMISSION_FOR_SCOPE.get(scopes[0])
        if perm and not request.user.has_perm(perm):
            self.message = f"Your account may not do this (needs permission {perm})."
            return False
        return True
