"""Writes for API keys (router credentials) and the demo user."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from triage.models import ApiKey
from triage.roles import ENGINEERS, OPS, ensure_groups


@transaction.atomic
def api_key_create(*, name: str, scopes: list[str], source: str = "", created_by=None) -> tuple[ApiKey, str]:
    allowed = set(ApiKey.Scope.values)
    unknown = [s for s in scopes if s not in allowed]
    if unknown or not scopes:
        raise ValueError(
            f"scopes must be a non-empty subset of {', '.join(sorted(allowed))}; got {','.join(scopes) or 'nothing'}"
        )
    if not name.strip():
        raise ValueError("name must not be empty")
    if ApiKey.objects.filter(name=name).exists():
        raise ValueError(f"an API key named '{name}' exists already; pick another name or revoke it")
    while True:
        raw_key = ApiKey.generate_raw_key()
        prefix = raw_key[3 : 3 + ApiKey.PREFIX_LENGTH]
        if not ApiKey.objects.filter(prefix=prefix).exists():
            break
    key = ApiKey.objects.create(
        name=name,
        source=source or name,
        prefix=prefix,
        hashed_key=ApiKey.hash_secret(raw_key),
        scopes=sorted(set(scopes)),
        created_by=created_by,
    )
    return key, raw_key


def api_key_revoke(*, key: ApiKey) -> None:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])


@transaction.atomic
def demo_user_ensure(*, username: str = "demo") -> str | None:
    """Create the demo engineer once; returns the new password, or None if it existed."""
    ensure_groups()
    User = get_user_model()
    if User.objects.filter(username=username).exists():
        return None
    password = secrets.token_urlsafe(9)
    user = User.objects.create_user(username=username, password=password, is_staff=True, is_superuser=True)
    user.groups.add(Group.objects.get(name=OPS), Group.objects.get(name=ENGINEERS))
    return password
