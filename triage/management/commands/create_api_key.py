"""python manage.py create_api_key --name NAME --scopes ingest[,flag,read] [--source SRC]

Prints the key once, alone on its last line (so a script can capture it with tail -1)."""

from django.core.management.base import BaseCommand, CommandError

from triage.models import ApiKey
from triage.services.keys import api_key_create


class Command(BaseCommand):
    help = "Create an API key for a router; the secret is printed once and stored hashed."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True, help="Unique name, e.g. router-eu-1")
        parser.add_argument(
            "--scopes", default="ingest",
            help=f"Comma-separated subset of {','.join(ApiKey.Scope.values)} (default: ingest)",
        )
        parser.add_argument("--source", default="", help="request_id namespace (default: the name)")

    def handle(self, *args, name, scopes, source, **options):
        wanted = [s.strip() for s in scopes.split(",") if s.strip()]
        try:
            key, raw_key = api_key_create(name=name, scopes=wanted, source=source or name)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"Created API key '{key.name}' (source '{key.source}', scopes {','.join(key.scopes)}). "
            "Store it now: it is not shown again."
        )
        self.stdout.write(raw_key)
