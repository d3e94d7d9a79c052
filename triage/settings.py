"""Settings from environment variables (django-environ), with working defaults for the
embedded run (`make run`: SQLite + filesystem Celery broker under var/).

Production: set DEBUG=0, SECRET_KEY, DATABASE_URL (PostgreSQL), CELERY_BROKER_URL (Redis),
ALLOWED_HOSTS. See .env.example.
"""

import importlib.util
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(environ.Env().str("TRIAGE_VAR_DIR", default=str(BASE_DIR / "var")))

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=True)
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set and DEBUG is off. Production refuses to start without it: "
            "set SECRET_KEY to a long random string (python -c 'import secrets; "
            "print(secrets.token_urlsafe(50))'), or set DEBUG=1 for a local run."
        )
    SECRET_KEY = "insecure-embedded-default-key-only-for-DEBUG-runs"

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_htmx",
    "triage.apps.TriageConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "triage.urls"
WSGI_APPLICATION = "triage.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'triage.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL + a busy timeout let the web process and the worker share the embedded database.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"}
    )
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Rate limits live in the cache: set CACHE_URL=redis://host:6379/1 in production so the limit
# holds across web processes (the local-memory default is per process).
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "transcript-list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# plotly.min.js ships inside the plotly wheel: served from there, never from a CDN.
import plotly as _plotly  # noqa: E402

STATICFILES_DIRS = [BASE_DIR / "static", ("plotly", Path(_plotly.__file__).parent / "package_data")]
STATIC_ROOT = VAR_DIR / "staticfiles"

# Ingestion limits (REST from the router).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("INGEST_MAX_BYTES", default=10 * 1024 * 1024)
INGEST_MAX_BYTES = DATA_UPLOAD_MAX_MEMORY_SIZE
INGEST_MAX_BATCH = env.int("INGEST_MAX_BATCH", default=500)
INGEST_RATE_LIMIT = env.str("INGEST_RATE_LIMIT", default="6000/min")

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "triage.auth.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "EXCEPTION_HANDLER": "triage.api_errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Transcript triage API",
    "DESCRIPTION": "Ingest production transcripts from the router, flag bad responses, read them back.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
}
if importlib.util.find_spec("drf_spectacular_sidecar"):
    # Swagger UI served from our own static files (the docs page works offline); without
    # the package drf-spectacular falls back to a CDN.
    INSTALLED_APPS.append("drf_spectacular_sidecar")
    SPECTACULAR_SETTINGS.update(SWAGGER_UI_DIST="SIDECAR", SWAGGER_UI_FAVICON_HREF="SIDECAR", REDOC_DIST="SIDECAR")

# Celery: filesystem broker under var/ for the embedded run, Redis in production.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _queue, _processed, _control = (VAR_DIR / "celery" / name for name in ("queue", "processed", "control"))
    for _folder in (_queue, _processed, _control):
        _folder.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue),
        "data_folder_out": str(_queue),
        "processed_folder": str(_processed),
        "store_processed": False,
        "control_folder": str(_control),
    }
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_IGNORE_RESULT = True
# Tasks write their results to the database; a result backend is only for round-trip checks.
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=None)
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

# The bundled inference backend that `make run` starts beside the web app.
INFERENCE_URL = env.str("INFERENCE_URL", default="http://127.0.0.1:8001/v1")

# Experiments (triage/experiments). Sampling at the production temperature: greedy decoding
# loops by itself, so the reference arm is stock at 0.6 (DeepSeek-R1's and Qwen3's advice).
EXPERIMENT_PRODUCTION_TEMPERATURE = env.float("EXPERIMENT_PRODUCTION_TEMPERATURE", default=0.6)
EXPERIMENT_PRODUCTION_TOP_P = env.float("EXPERIMENT_PRODUCTION_TOP_P", default=0.95)
EXPERIMENT_STOCK_PROFILE = env.str("EXPERIMENT_STOCK_PROFILE", default="stock")
EXPERIMENT_DEFAULT_SAMPLES = env.int("EXPERIMENT_DEFAULT_SAMPLES", default=16)
EXPERIMENT_MAX_SAMPLES = env.int("EXPERIMENT_MAX_SAMPLES", default=256)
EXPERIMENT_MAX_TOKENS_CAP = env.int("EXPERIMENT_MAX_TOKENS_CAP", default=1024)
EXPERIMENT_MAX_CASES = env.int("EXPERIMENT_MAX_CASES", default=50)  # transcripts in one suite
EXPERIMENT_BASE_SEED = env.int("EXPERIMENT_BASE_SEED", default=0)
EXPERIMENT_CHUNK_SIZE = env.int("EXPERIMENT_CHUNK_SIZE", default=0)  # 0: backend max_concurrency // arms
EXPERIMENT_DECODE_CHECK_SAMPLES = env.int("EXPERIMENT_DECODE_CHECK_SAMPLES", default=1)  # per arm and case
EXPERIMENT_RESCORE_MAX_TOKENS = env.int("EXPERIMENT_RESCORE_MAX_TOKENS", default=256)  # decode vs prefill: first N tokens
EXPERIMENT_DIVERGENCE_MAX_CHARS = env.int("EXPERIMENT_DIVERGENCE_MAX_CHARS", default=3000)  # ~750 tokens scored
# Never stuck: a running chunk refreshes its heartbeat every EXPERIMENT_HEARTBEAT_SECONDS;
# the sweep (every EXPERIMENT_SWEEP_SECONDS) re-dispatches a chunk silent for
# EXPERIMENT_STALE_SECONDS (its worker died), or dispatched and never started for
# EXPERIMENT_PENDING_STALE_SECONDS (its message was lost), at most EXPERIMENT_MAX_CHUNK_ATTEMPTS times.
EXPERIMENT_HEARTBEAT_SECONDS = env.float("EXPERIMENT_HEARTBEAT_SECONDS", default=5.0)
EXPERIMENT_STALE_SECONDS = env.int("EXPERIMENT_STALE_SECONDS", default=120)
EXPERIMENT_PENDING_STALE_SECONDS = env.int("EXPERIMENT_PENDING_STALE_SECONDS", default=1800)
EXPERIMENT_SWEEP_SECONDS = env.float("EXPERIMENT_SWEEP_SECONDS", default=30.0)
EXPERIMENT_FINALIZE_STALE_SECONDS = env.int("EXPERIMENT_FINALIZE_STALE_SECONDS", default=3600)
EXPERIMENT_MAX_CHUNK_ATTEMPTS = env.int("EXPERIMENT_MAX_CHUNK_ATTEMPTS", default=3)
EXPERIMENT_CHUNK_TIME_LIMIT = env.int("EXPERIMENT_CHUNK_TIME_LIMIT", default=3600)
# The backend client (triage/backends.py): attempts on connection errors, 429 and 5xx.
BACKEND_ATTEMPTS = env.int("BACKEND_ATTEMPTS", default=3)
BACKEND_BACKOFF = env.float("BACKEND_BACKOFF", default=0.5)
BACKEND_TIMEOUT = env.float("BACKEND_TIMEOUT", default=900.0)
# Diagnosis thresholds: defaults and their reasons in triage/diagnosis.py (Thresholds); any
# can be overridden here, e.g. DIAGNOSIS_THRESHOLDS="healthy_rate=0.2,kernel_kl=0.05".
DIAGNOSIS_THRESHOLDS = env.dict("DIAGNOSIS_THRESHOLDS", default={})

CELERY_BEAT_SCHEDULE = {
    "experiment-sweep": {"task": "triage.experiment_sweep", "schedule": EXPERIMENT_SWEEP_SECONDS},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

if not DEBUG:
    SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
