"""First-run set-up for `make run`: demo user, the bundled backend and the named kernel
profiles, demo transcripts. Idempotent."""

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from kernels.settings import PROFILES
from triage.degeneration import VERSION
from triage.models import Backend, KernelProfile
from triage.services.reanalyze import transcripts_to_reanalyze
from triage.services.keys import demo_user_ensure


@transaction.atomic
def profiles_ensure() -> None:
    backend, _ = Backend.objects.get_or_create(
        name="bundled",
        defaults={"kind": Backend.Kind.BUNDLED, "base_url": settings.INFERENCE_URL, "model_name": ""},
    )
    for name, kernel in PROFILES.items():
        KernelProfile.objects.get_or_create(
            name=name, defaults={"settings": kernel.to_dict(), "backend": backend, "description": kernel.label}
        )


class Command(BaseCommand):
    help = "Create the demo user (password printed once), kernel profiles and demo data."

    def add_arguments(self, parser):
        parser.add_argument("--no-demo-data", action="store_true")

    def handle(self, *args, no_demo_data=False, **options):
        profiles_ensure()
        if not no_demo_data:
            call_command("load_demo", verbosity=options.get("verbosity", 1))
        password = demo_user_ensure()
        stale = transcripts_to_reanalyze().count()
        if stale:
            self.stdout.write(f"{stale} transcripts were judged by an older detector version than {VERSION}: "
                              f"re-analyse them with: .venv/bin/python manage.py reanalyze")
        bar = "=" * 64
        if password:
            self.stdout.write(
                f"\n{bar}\n  Log in at http://127.0.0.1:8000/  as  demo / {password}\n"
                f"  (shown once; reset with: .venv/bin/python manage.py changepassword demo)\n{bar}\n"
            )
        else:
            self.stdout.write(
                f"\n{bar}\n  Log in at http://127.0.0.1:8000/  as  demo (password shown on the first run;\n"
                f"  reset with: .venv/bin/python manage.py changepassword demo)\n{bar}\n"
            )
