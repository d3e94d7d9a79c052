from django.apps import AppConfig


class TriageConfig(AppConfig):
    name = "triage"
    verbose_name = "Transcript triage"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Make shared tasks bind to our app (Celery's Django pattern, done here instead of in
        # triage/__init__.py so that triage.degeneration imports without Celery).
        from triage import celery_app  # noqa: F401
