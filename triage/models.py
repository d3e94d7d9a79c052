"""The data model (docs/architecture.md, "Data flow"). Models hold data and constraints only: writes
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
        EXPERIMENT = "experiment"

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
    max_concurrency = models.PositiveIntegerField(
        default=64, help_text="Most sequences one experiment chunk keeps in flight on this backend "
                              "(the bundled engine batches up to 64 per replica).")
    chat_template = models.CharField(
        max_length=20, blank=True, default="chatml",
        help_text="How to render a conversation as a raw prompt for /v1/completions re-scoring on an "
                  "external backend (top-k divergence): 'chatml', or blank when unknown (then unavailable).")
    default_system_prompt = models.TextField(
        blank=True, help_text="The system prompt the server's chat template inserts when a conversation has "
                              "none (SmolLM2's does), so raw-prompt re-scoring sees the same context.")
    # What a probe found the server honours (n, seed + i per choice, echo logprobs), cached.
    capabilities = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name


class KernelProfile(models.Model):
    """A named kernel setting (docs/architecture.md schema) bound to a backend endpoint."""

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
            # the queue sorted by severity (keyset pages on (severity, id)), all or degenerate only
            models.Index(fields=["-severity", "-id"], name="transcript_severity"),
            models.Index(fields=["degenerate", "-severity", "-id"], name="transcript_degenerate_severity"),
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
    """Regenerate one or more transcripts (cases) under several arms, N paired-seed samples
    per arm and case. Progress is derived from the stored samples, never counted."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        FINALIZING = "finalizing"
        DONE = "done"
        PARTIAL = "partial", "partial (some arms or chunks failed)"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINAL = (Status.DONE, Status.PARTIAL, Status.FAILED, Status.CANCELLED)

    class Verdict(models.TextChoices):
        SAMPLING = "sampling"
        KERNEL = "kernel"
        MODEL_OR_PROMPT = "model_or_prompt"
        INCONCLUSIVE = "inconclusive"

    name = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_via = models.CharField(max_length=100, blank=True, help_text="api-key:NAME, web, or command.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    samples_per_arm = models.PositiveIntegerField(default=16)
    base_seed = models.BigIntegerField(default=0)
    chunk_size = models.PositiveIntegerField(default=16)
    ablate = models.BooleanField(default=False)
    allow_greedy_only = models.BooleanField(default=False)
    selection = models.JSONField(default=dict, blank=True, help_text="The queue selection a suite was built from.")
    error = models.TextField(blank=True)
    verdict = models.CharField(max_length=20, choices=Verdict.choices, blank=True)
    diagnosis = models.JSONField(default=dict, blank=True)
    results = models.JSONField(default=dict, blank=True, help_text="Tests, divergence and suite statistics.")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "-created_at"], name="experiment_status")]

    def __str__(self) -> str:
        return f"experiment {self.pk}"

    @property
    def is_final(self) -> bool:
        return self.status in self.FINAL


class ExperimentCase(models.Model):
    """One transcript of an experiment: its conversation up to the flagged response."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="cases")
    transcript = models.ForeignKey(Transcript, on_delete=models.CASCADE, related_name="experiment_cases")
    position = models.PositiveIntegerField(default=0)
    max_tokens = models.PositiveIntegerField(help_text="Default max_tokens of this case's samples.")
    stats = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["experiment", "position"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "transcript"], name="case_unique_transcript")
        ]

    def __str__(self) -> str:
        return f"case {self.position} (transcript {self.transcript_id})"


class Arm(models.Model):
    """One (kernel profile × sampling params) cell of an experiment, bound to a backend."""

    class Role(models.TextChoices):
        STOCK = "stock"
        CANDIDATE = "candidate"
        ABLATION = "ablation", "ablation (stock with one component switched)"
        CONTROL = "control", "greedy control (T=0)"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="arms")
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=20, choices=Role.choices)
    component = models.CharField(max_length=40, blank=True, help_text="Ablation: the component switched.")
    kernel_profile = models.ForeignKey(KernelProfile, null=True, blank=True, on_delete=models.SET_NULL)
    backend = models.ForeignKey(Backend, null=True, blank=True, on_delete=models.SET_NULL, related_name="arms")
    kernel = models.JSONField(default=dict, validators=[validate_kernel_settings])
    sampling = models.JSONField(default=dict)
    position = models.PositiveSmallIntegerField(default=0)
    # What really ran: backend (name, kind, url), model id, dtype, kernel with defaults and the
    # implementation the server resolved it to, the request mode (n + seed, or one per sample).
    runtime = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    stats = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["experiment", "position"]
        constraints = [models.UniqueConstraint(fields=["experiment", "name"], name="arm_unique_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def temperature(self) -> float:
        return float(self.sampling.get("temperature", 0.0))


class ExperimentChunk(models.Model):
    """A unit of work: seed indices [start, stop) of one case, for every arm at once."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    TERMINAL = (Status.DONE, Status.FAILED, Status.CANCELLED)

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="chunks")
    case = models.ForeignKey(ExperimentCase, on_delete=models.CASCADE, related_name="chunks")
    start = models.PositiveIntegerField()
    stop = models.PositiveIntegerField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    task_id = models.CharField(max_length=100, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["experiment", "case", "start"]
        constraints = [models.UniqueConstraint(fields=["case", "start"], name="chunk_unique_start")]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="chunk_status")]


class Sample(models.Model):
    """Sample i of an arm on a case; sample i of every arm of a case uses seed base+i (paired).
    Text and logprobs are stored byte-exact (NUL escaped like transcripts: content_encoding)."""

    arm = models.ForeignKey(Arm, on_delete=models.CASCADE, related_name="samples")
    case = models.ForeignKey(ExperimentCase, on_delete=models.CASCADE, related_name="samples")
    index = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    text = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=40, blank=True)
    completion_tokens = models.PositiveIntegerField(default=0)
    token_ids = models.JSONField(null=True, blank=True)
    logprobs = models.JSONField(null=True, blank=True, help_text="[{token, logprob}] per generated token.")
    metrics = models.JSONField(default=dict, blank=True)
    degenerate = models.BooleanField(default=False)
    severity = models.FloatField(default=0.0)
    reasons = models.JSONField(default=list, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    content_encoding = models.CharField(max_length=20, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["arm", "case", "index"]
        constraints = [models.UniqueConstraint(fields=["arm", "case", "index"], name="sample_unique_index")]


class Divergence(models.Model):
    """Teacher-forced comparison on one case: a kernel setting against stock on the original
    response (`kernel`), stock against itself (`noise_floor`), or an arm's decode logprobs
    against a re-score of the same tokens on the same setting (`decode_prefill`)."""

    class Kind(models.TextChoices):
        KERNEL = "kernel", "kernel setting vs stock"
        NOISE_FLOOR = "noise_floor", "stock vs stock"
        DECODE_PREFILL = "decode_prefill", "decode vs teacher-forced re-score"

    class Method(models.TextChoices):
        EXACT = "exact", "full distributions (/v1/divergence)"
        TOPK = "topk", "top-k approximation (/v1/completions echo)"
        UNAVAILABLE = "unavailable"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="divergences")
    case = models.ForeignKey(ExperimentCase, on_delete=models.CASCADE, related_name="divergences")
    arm = models.ForeignKey(Arm, on_delete=models.CASCADE, related_name="divergences")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.KERNEL)
    sample_index = models.IntegerField(default=-1, help_text="decode_prefill: the sample re-scored.")
    method = models.CharField(max_length=20, choices=Method.choices, default=Method.EXACT)
    note = models.TextField(blank=True, help_text="Why unavailable, or what the approximation is.")
    reference_kernel = models.JSONField(default=dict)
    candidate_kernel = models.JSONField(default=dict)
    kl_threshold = models.FloatField(default=0.1)
    positions = models.JSONField(default=list, help_text="[{position, token, kl, top1_agree}] or logprob diffs.")
    summary = models.JSONField(default=dict)
    mean_kl = models.FloatField(null=True, blank=True)
    max_kl = models.FloatField(null=True, blank=True)
    top1_agreement = models.FloatField(null=True, blank=True)
    first_over_threshold = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["case", "arm", "kind", "sample_index"], name="divergence_unique")
        ]
