"""API-key authentication for routers (Authorization: Bearer <key>) and scope permissions."""

from __future__ import annotations

import hmac

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
        key = find_active_key(raw_key.strip())
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        now = timezone.now()
        if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
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
    }

    def has_permission(self, request, view) -> bool:
        scope = getattr(view, "required_scope", None)
        if scope is None or not (request.user and request.user.is_authenticated):
            return bool(request.user and request.user.is_authenticated)
        key = request_api_key(request)
        if key is not None:
            if not key.has_scope(scope):
                self.message = f"This API key lacks the '{scope}' scope (it has: {', '.join(key.scopes) or 'none'})."
                return False
            return True
        perm = self.USER_PERMISSION_FOR_SCOPE.get(scope)
        if perm and not request.user.has_perm(perm):
            self.message = f"Your account may not do this (needs permission {perm})."
            return False
        return True
