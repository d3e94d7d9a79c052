"""Groups and what they may do: ops flag; engineers also start experiments."""

OPS = "ops"
ENGINEERS = "engineers"

GROUP_PERMISSIONS = {
    OPS: ["view_transcript", "add_flag", "change_flag", "view_flag"],
    ENGINEERS: [
        "view_transcript", "add_flag", "change_flag", "view_flag",
        "add_experiment", "change_experiment", "view_experiment",
        "view_kernelprofile", "view_backend",
    ],
}


def ensure_groups() -> None:
    from django.contrib.auth.models import Group, Permission

    for group_name, codenames in GROUP_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=group_name)
        perms = Permission.objects.filter(content_type__app_label="triage", codename__in=codenames)
        group.permissions.set(perms)


def can_flag(user) -> bool:
    return bool(user and user.is_authenticated and user.has_perm("triage.add_flag"))


def can_experiment(user) -> bool:
    return bool(user and user.is_authenticated and user.has_perm("triage.add_experiment"))
