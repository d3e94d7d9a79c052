from django.db import migrations


def create_groups(apps, schema_editor):
    # Permissions are created by a post_migrate signal, after all migrations ran; create them
    # here so the groups get them on the first migrate.
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    from triage.roles import GROUP_PERMISSIONS

    for name, codenames in GROUP_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.set(
            Permission.objects.filter(content_type__app_label="triage", codename__in=codenames)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("triage", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(create_groups, migrations.RunPython.noop)]
