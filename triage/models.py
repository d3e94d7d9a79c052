"""The data model (DESIGN.md, "Data flow"). Models hold data and constraints only: writes
live in triage.services, reads in triage.selectors."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from kernels.settings import KernelSettings, KernelSettingsError


def validate_kernel_settings(value: object) -> None:
    try:
        KernelSettings.from_dict(value)  # type: ignore[arg-type]
    except KernelSettingsError as exc:
        raise ValidationError(str(exc)) from None


class ApiKey(models.Model):
    """A router's key. Only a SHA-256 of the secret is stored; the key is shown once."""

    class Scope(models.TextChoices):
        INGEST = "ingest"
        FLAG = "flag"
        READ = "read"

    PREFIX_LENGTH = 8

    name = models.CharField(max_length=100, unique=True)
    source = models.CharField(
        max_length=100, help_text="Namespace of request_id: the router this key belongs to."
    )
    prefix = models.CharField(max_length=PREFIX_LENGTH, unique=True, editable=False)
    hashed_key = models.CharField(max_length=64, editable=False)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def hash_secret(raw_key: str) -> str:
        return hashlib.sha256(raw_key.encode()).hexdigest()

    @staticmethod
    def generate_raw_key() -> str:
        return "tt_" + secrets.token_urlsafe(32)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


class Backend(models.Model):
    """An inference endpoint the worker drives (OpenAI-compatible)."""

    class Kind(models.TextChoices):
        BUNDLED = "bundled", "bundled (python -m inference serve)"
        OPENAI = "openai", "external OpenAI-compatible (vLLM, SGLang, llama.cpp)"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.BUNDLED)
    base_url = models.URLField(help_text="e.g. http://127.0.0.1:8001/v1")
    model_name = models.CharField(max_length=200, blank=True)
    # Never rendered by the page views or API serializers; admin shows it write-only.
    api_key = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name


class KernelProfile(models.Model):
    """A named kernel setting (DESIGN.md schema) bound to a backend endpoint."""

    name = models.CharField(max_length=100, unique=True)
    settings = models.JSONField(default=dict, validators=[validate_kernel_settings])
    backend = models.ForeignKey(Backend, null=True, blank=True, on_delete=models.SET_NULL)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name

    @property
    def kernel_settings(self) -> KernelSettings:
        return KernelSettings.from_dict(self.settings)


class Transcript(models.Model):
    """One finished conversation as the router served it, with its degeneration metrics."""

    source = models.CharField(max_length=100, default="default")
    request_id = models.CharField(max_length=200)
    content_hash = models.CharField(
        max_length=64, help_text="SHA-256 of the canonical content: tells a replay from a conflict."
    )
    received_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(null=True, blank=True)
    model = models.CharField(max_length=200, blank=True)
    messages = models.JSONField(default=list)
    response = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=40, blank=True)
    sampling = models.JSONField(default=dict, blank=True)
    temperature = models.FloatField(null=True, blank=True)
    kernel = models.JSONField(default=dict, blank=True)
    kernel_profile = models.ForeignKey(
        KernelProfile, null=True, blank=True, on_delete=models.SET_NULL, related_name="transcripts"
    )
    usage = models.JSONField(default=dict, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    route = models.JSONField(default=dict, blank=True)
    logprobs = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    degenerate = models.BooleanField(default=False)
    severity = models.FloatField(default=0.0)
    reasons = models.JSONField(default=list, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    flagged = models.BooleanField(default=False)
    # PostgreSQL text and jsonb cannot hold U+0000. A transcript whose content contains it
    # is stored with every string escaped (triage.content_codec); this names the codec so
    # reads decode it back byte-exact. Empty for the (usual) content stored as sent.
    content_encoding = models.CharField(max_length=20, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "request_id"], name="transcript_unique_request")
        ]
        indexes = [
            models.Index(fields=["-received_at"], name="transcript_received"),
            models.Index(fields=["degenerate", "-received_at"], name="transcript_degenerate"),
            models.Index(fields=["flagged", "-received_at"], name="transcript_flagged"),
            models.Index(fields=["model", "-received_at"], name="transcript_model"),
            models.Index(fields=["kernel_profile", "-received_at"], name="transcript_profile"),
            models.Index(fields=["temperature"], name="transcript_temperature"),
        ]
        ordering = ["-received_at", "-id"]

    def __str__(self) -> str:
        return f"{self.source}/{self.request_id}"


class Flag(models.Model):
    """An ops flag on a bad response, or an automatic one from the degeneration verdict."""

    class Reason(models.TextChoices):
        AUTO = "auto", "automatic (degeneration metrics)"
        REPETITION = "repetition"
        INCOHERENT = "incoherent"
        CONFABULATION = "confabulation"
        FORMAT = "format"
        TRUNCATED = "truncated"
        OTHER = "other"

    class Status(models.TextChoices):
        NEW = "new"
        INVESTIGATING = "investigating"
        DIAGNOSED = "diagnosed"
        RESOLVED = "resolved"

    transcript = models.ForeignKey(Transcript, on_delete=models.CASCADE, related_name="flags")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    source = models.CharField(max_length=100, blank=True, help_text="API key name or 'auto'.")
    reason = models.CharField(max_length=20, choices=Reason.choices)
    note = models.TextField(blank=True)
    details = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.NEW)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "-created_at"], name="flag_status")]

    def __str__(self) -> str:
        return f"{self.reason} on {self.transcript_id} ({self.status})"


class Experiment(models.Model):
    """Regenerate one transcript under several arms, N paired-seed samples each."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Verdict(models.TextChoices):
        SAMPLING = "sampling"
        KERNEL = "kernel"
        MODEL_OR_PROMPT = "model_or_prompt"
        INCONCLUSIVE = "inconclusive"

    transcript = models.ForeignKey(Transcript, on_delete=models.CASCADE, related_name="experiments")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    samples_per_arm = models.PositiveIntegerField(default=16)
    base_seed = models.BigIntegerField(default=0)
    max_tokens = models.PositiveIntegerField(default=512)
    samples_done = models.PositiveIntegerField(default=0)
    samples_total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    verdict = models.CharField(max_length=20, choices=Verdict.choices, blank=True)
    diagnosis = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "-created_at"], name="experiment_status")]

    def __str__(self) -> str:
        return f"experiment {self.pk} on transcript {self.transcript_id}"


class Arm(models.Model):
    """One (kernel profile × sampling params) cell of an experiment."""

    class Role(models.TextChoices):
        STOCK = "stock"
        CANDIDATE = "candidate"
        CONTROL = "control", "greedy control (T=0)"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="arms")
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=20, choices=Role.choices)
    kernel_profile = models.ForeignKey(KernelProfile, null=True, blank=True, on_delete=models.SET_NULL)
    kernel = models.JSONField(default=dict, validators=[validate_kernel_settings])
    sampling = models.JSONField(default=dict)
    position = models.PositiveSmallIntegerField(default=0)
    stats = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["experiment", "position"]
        constraints = [models.UniqueConstraint(fields=["experiment", "name"], name="arm_unique_name")]

    def __str__(self) -> str:
        return self.name


class Sample(models.Model):
    """Sample i of an arm; sample i of every arm uses the same seed (paired)."""

    arm = models.ForeignKey(Arm, on_delete=models.CASCADE, related_name="samples")
    index = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    text = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=40, blank=True)
    completion_tokens = models.PositiveIntegerField(default=0)
    metrics = models.JSONField(default=dict, blank=True)
    degenerate = models.BooleanField(default=False)
    severity = models.FloatField(default=0.0)
    reasons = models.JSONField(default=list, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["arm", "index"]
        constraints = [models.UniqueConstraint(fields=["arm", "index"], name="sample_unique_index")]


class Divergence(models.Model):
    """Teacher-forced comparison of a candidate arm's kernels against stock on the
    original response: per-position KL(stock‖candidate) and top-1 agreement."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="divergences")
    arm = models.ForeignKey(Arm, on_delete=models.CASCADE, related_name="divergences")
    reference_kernel = models.JSONField(default=dict)
    candidate_kernel = models.JSONField(default=dict)
    kl_threshold = models.FloatField(default=0.1)
    per_position_kl = models.JSONField(default=list)
    per_position_top1 = models.JSONField(default=list)
    mean_kl = models.FloatField(null=True, blank=True)
    max_kl = models.FloatField(null=True, blank=True)
    top1_agreement = models.FloatField(null=True, blank=True)
    first_over_threshold = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["experiment", "arm"], name="divergence_unique_arm")
        ]
