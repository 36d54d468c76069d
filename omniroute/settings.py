"""One settings module, driven by environment variables (healthchecks style)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: str) -> bool:
    return os.getenv(name, default).strip().lower() in ("1", "true", "yes", "on")


def envint(name: str, default: str) -> int:
    return int(os.getenv(name, default))


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.getenv(name, default).split(",") if item.strip()]


def database_from_url(url: str) -> dict[str, object]:
    """DATABASE_URL → a Django DATABASES entry (postgres:// or sqlite:///path)."""
    parsed = urlparse(url)
    if parsed.scheme in ("postgres", "postgresql", "pgsql"):
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": envint("DB_CONN_MAX_AGE", "60"),
            "TEST": {"NAME": os.getenv("DB_TEST_NAME", "test_ladder")},
        }
    if parsed.scheme == "sqlite":
        return sqlite_database(unquote(parsed.path) or str(BASE_DIR / "db.sqlite3"))
    raise ValueError(
        f"DATABASE_URL: unsupported scheme {parsed.scheme!r}; expected postgres:// or sqlite:///"
    )


def sqlite_database(name: str) -> dict[str, object]:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": name,
        "OPTIONS": {
            # How long a write waits for SQLite's lock before the API answers 503 (fault tests shorten it).
            "timeout": float(os.getenv("SQLITE_TIMEOUT_S", "20")),
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }


SECRET_KEY = os.getenv("SECRET_KEY", "dev-only-insecure-secret-key-change-me")
DEBUG = envbool("DEBUG", "false")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "django_celery_beat",
    "ladder",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "omniroute.urls"
WSGI_APPLICATION = "omniroute.wsgi.application"

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

if os.getenv("DATABASE_URL"):
    DATABASES = {"default": database_from_url(os.environ["DATABASE_URL"])}
else:
    DATABASES = {"default": sqlite_database(os.getenv("SQLITE_PATH", str(BASE_DIR / "db.sqlite3")))}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]

LOGIN_URL = "admin:login"

REDIS_URL = os.getenv("REDIS_URL", "redis://127.0.0.1:6379/0")

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        "KEY_PREFIX": os.getenv("CACHE_KEY_PREFIX", "ladder"),
    }
}

CELERY_BROKER_URL = os.getenv("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", "false")
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"

# The key that encrypts connection credentials at rest (a Fernet key, urlsafe base64 of 32 bytes).
# Read when a credential is encrypted or decrypted, never at import time.
LADDER_CREDENTIAL_KEY = os.getenv("LADDER_CREDENTIAL_KEY", "")

# Defaults of the ladder configuration singleton (DESIGN §3); the row edited in the admin wins.
LADDER_DEFAULTS = {
    "exit_cutoff_pct": float(os.getenv("LADDER_EXIT_CUTOFF_PCT", "2")),
    "reentry_min_remaining_pct": float(os.getenv("LADDER_REENTRY_MIN_REMAINING_PCT", "5")),
    "max_reading_age_s": envint("LADDER_MAX_READING_AGE_S", "180"),
    "budget_period": os.getenv("LADDER_BUDGET_PERIOD", "month"),
    "free_max_input_usd_per_mtok": float(os.getenv("LADDER_FREE_MAX_INPUT_USD_PER_MTOK", "0")),
    "cheap_max_input_usd_per_mtok": float(os.getenv("LADDER_CHEAP_MAX_INPUT_USD_PER_MTOK", "1.00")),
    "refresh_interval_s": envint("LADDER_REFRESH_INTERVAL_S", "60"),
}

# Base URL override for every provider adapter (the local fake upstream in tests and the demo).
LADDER_UPSTREAM_BASE_URL = os.getenv("LADDER_UPSTREAM_BASE_URL", "")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.getenv("LOG_LEVEL", "INFO")},
}

# --- Refresh pipeline, hot state and history (ladder.services.refresh/readings/hotstate) ---


def envmap(name: str, default: str) -> dict[str, int]:
    """ "claude=4,codex=8" → {"claude": 4, "codex": 8}."""
    pairs = (item.split("=", 1) for item in envlist(name, default) if "=" in item)
    return {key.strip(): int(value) for key, value in pairs}


# Readings (and poll/gateway failure events) older than this are purged daily; each connection's
# latest reading is always kept.
LADDER_READING_RETENTION_DAYS = float(os.getenv("LADDER_READING_RETENTION_DAYS", "30"))
# The beat's fan-out period (whole seconds, at least 1); a tick no worker started within it is dropped.
LADDER_REFRESH_BEAT_S = max(1, round(float(os.getenv("LADDER_REFRESH_BEAT_S", "5"))))
# Polls in flight per fan-out task (threads, each with its own httpx.Client).
LADDER_REFRESH_CONCURRENCY = envint("LADDER_REFRESH_CONCURRENCY", "64")
# Polls in flight per provider within one task: LADDER_REFRESH_PROVIDER_CONCURRENCY="claude=4,codex=8",
# the default for the others.
LADDER_REFRESH_PROVIDER_CONCURRENCY = envmap("LADDER_REFRESH_PROVIDER_CONCURRENCY", "")
LADDER_REFRESH_PROVIDER_CONCURRENCY_DEFAULT = envint("LADDER_REFRESH_PROVIDER_CONCURRENCY_DEFAULT", "16")
# Connections claimed by one fan-out at most.
LADDER_REFRESH_BATCH_MAX = envint("LADDER_REFRESH_BATCH_MAX", "5000")
# Time limits of the refresh tasks; a claim lasts the hard limit.
LADDER_REFRESH_TIME_LIMIT_S = envint("LADDER_REFRESH_TIME_LIMIT_S", "60")
LADDER_REFRESH_SOFT_TIME_LIMIT_S = envint("LADDER_REFRESH_SOFT_TIME_LIMIT_S", "50")
# A refresh asked for by resolutions is queued once per connection within this many seconds.
LADDER_REFRESH_REQUEST_DEDUPE_S = envint("LADDER_REFRESH_REQUEST_DEDUPE_S", "30")
# Hot state in Redis (latest reading per connection, last beat tick); the database stays the truth.
LADDER_HOTSTATE_REDIS_URL = os.getenv("LADDER_HOTSTATE_REDIS_URL", "")  # empty: REDIS_URL
LADDER_HOTSTATE_PREFIX = os.getenv("LADDER_HOTSTATE_PREFIX", "ladder:hot")
LADDER_HOTSTATE_TTL_S = envint("LADDER_HOTSTATE_TTL_S", "86400")
LADDER_HOTSTATE_TIMEOUT_S = float(os.getenv("LADDER_HOTSTATE_TIMEOUT_S", "0.5"))

CELERY_TASK_DEFAULT_QUEUE = os.getenv("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_ANNOTATIONS = {
    "ladder.tasks.refresh_due": {
        "time_limit": LADDER_REFRESH_TIME_LIMIT_S,
        "soft_time_limit": LADDER_REFRESH_SOFT_TIME_LIMIT_S,
    },
    "ladder.tasks.refresh_connections": {
        "time_limit": LADDER_REFRESH_TIME_LIMIT_S,
        "soft_time_limit": LADDER_REFRESH_SOFT_TIME_LIMIT_S,
    },
}
# Synced by name into django-celery-beat's database scheduler. Every entry expires: a tick no worker
# started in time is dropped, never run late. The database scheduler stores "expire_seconds" (it
# ignores "expires"); the default scheduler passes "expires" to apply_async.
_REFRESH_EXPIRES_S = LADDER_REFRESH_BEAT_S
CELERY_BEAT_SCHEDULE = {
    "ladder-refresh-due": {
        "task": "ladder.tasks.refresh_due",
        "schedule": LADDER_REFRESH_BEAT_S,
        "options": {"expires": _REFRESH_EXPIRES_S, "expire_seconds": _REFRESH_EXPIRES_S},
    },
    "ladder-readings-purge": {
        "task": "ladder.tasks.readings_purge",
        "schedule": 24 * 3600.0,
        "options": {"expires": 3600, "expire_seconds": 3600},
    },
}
