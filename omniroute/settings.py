"""One settings module, driven by environment variables (healthchecks style)."""

from __future__ import annotations

import ipaddress
import math
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: str) -> bool:
    return os.getenv(name, default).strip().lower() in ("1", "true", "yes", "on")


def envint(name: str, default: str) -> int:
    return int(os.getenv(name, default))


def envdays(name: str, default: str) -> float:
    """A retention in days: a number from 1 to 36,500 (checked at startup, naming the variable)."""
    raw = os.getenv(name, default)
    try:
        days = float(raw)
    except ValueError:
        days = math.nan
    if not 1 <= days <= 36_500:  # NaN fails too
        raise ValueError(f"{name}: expected a number of days from 1 to 36500, got {raw!r}")
    return days


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.getenv(name, default).split(",") if item.strip()]


def envnetworks(name: str) -> list[str] | None:
    """CIDRs ("10.0.0.0/8,::1/128"), each checked at startup; None when the variable is not set."""
    if name not in os.environ:
        return None
    networks = envlist(name, "")
    for cidr in networks:
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
    return networks


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
        # Kept open between requests, as PostgreSQL's: opening one (and its PRAGMAs) at every request
        # cost the gateway about 0.4 ms of its ~1.5 ms resolution (make bench-api).
        "CONN_MAX_AGE": envint("DB_CONN_MAX_AGE", "60"),
        "OPTIONS": {
            # How long a write waits for SQLite's lock before the API answers 503 (fault tests shorten it).
            "timeout": float(os.getenv("SQLITE_TIMEOUT_S", "20")),
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }


DEBUG = envbool("DEBUG", "false")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

# --- Production profile (docs/DEPLOY.md) ---
# A server that answers for any host name other than this machine's loopback names is a production
# server: it cannot be reached by name without ALLOWED_HOSTS, so no deployment can forget to say so.
# There the defaults below are the safe ones and a missing or weak SECRET_KEY stops every process
# instead of signing sessions with a published key. `make run`, the tests and the benchmarks answer
# for loopback names only and keep plain HTTP.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]", "testserver")
LADDER_PRODUCTION = any(host not in LOOPBACK_HOSTS for host in ALLOWED_HOSTS)
_PROD = "true" if LADDER_PRODUCTION else "false"

DEV_SECRET_KEY = "django-insecure-development-only-never-in-production"  # noqa: S105  (development only: production requires SECRET_KEY)
SECRET_KEY_MIN_LENGTH = 50  # the strength Django's check --deploy asks for (security.W009)
SECRET_KEY_MIN_UNIQUE_CHARACTERS = 5


def secret_key_problem(key: str) -> str | None:
    if len(key) < SECRET_KEY_MIN_LENGTH:
        return f"it has {len(key)} characters, at least {SECRET_KEY_MIN_LENGTH} are needed"
    if len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS:
        return f"it has fewer than {SECRET_KEY_MIN_UNIQUE_CHARACTERS} distinct characters"
    if key.startswith("django-insecure-"):
        return "it starts with 'django-insecure-'"
    return None


SECRET_KEY = os.getenv("SECRET_KEY", "") or ("" if LADDER_PRODUCTION else DEV_SECRET_KEY)
# Old keys, still accepted to verify sessions and signatures while a new SECRET_KEY rolls out.
SECRET_KEY_FALLBACKS = envlist("SECRET_KEY_FALLBACKS", "")
if LADDER_PRODUCTION:
    _named_keys = [("SECRET_KEY", SECRET_KEY), *(("SECRET_KEY_FALLBACKS", k) for k in SECRET_KEY_FALLBACKS)]
    for _name, _key in _named_keys:
        if _problem := secret_key_problem(_key):
            _hosts = ", ".join(host for host in ALLOWED_HOSTS if host not in LOOPBACK_HOSTS)
            raise ImproperlyConfigured(
                f"{_name} is not strong enough for production ({_problem}; ALLOWED_HOSTS names {_hosts}). "
                "Generate one with: python -c 'import secrets; print(secrets.token_urlsafe(50))'"
            )

# TLS ends at the proxy, which must overwrite X-Forwarded-Proto on every request it forwards.
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if envbool("SECURE_PROXY_SSL_HEADER", _PROD) else None
)
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", _PROD)
# Probes and scrapers that talk to a web process directly, over plain HTTP (paths without the "/").
SECURE_REDIRECT_EXEMPT = envlist("SECURE_REDIRECT_EXEMPT", r"^healthz$,^readyz$,^metrics$")
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", "31536000" if LADDER_PRODUCTION else "0")
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", _PROD)
# Preloading puts the registrable domain on the browsers' built-in list, months to undo: a decision
# for the domain's owner, not a default. Declining it is not a defect, so its reminder is silenced.
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", "false")
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", _PROD)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", _PROD)
# Flash messages stay on the server: the admin shows a new gateway token once, in a message, and
# the default cookie storage would carry it in a (signed, not encrypted) cookie.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"
# How often the dashboard's overview and connection pages re-render their partial (at least 0.2 s).
LADDER_DASHBOARD_POLL_S = float(os.getenv("LADDER_DASHBOARD_POLL_S", "5"))

# Login throttling (ladder.security.login_throttle): failed logins counted per user name and per client
# address in the cache; past either limit within the window, attempts are refused (429) unchecked.
LADDER_LOGIN_FAILURES_PER_USERNAME = envint("LADDER_LOGIN_FAILURES_PER_USERNAME", "5")
LADDER_LOGIN_FAILURES_PER_ADDRESS = envint("LADDER_LOGIN_FAILURES_PER_ADDRESS", "20")
LADDER_LOGIN_WINDOW_S = envint("LADDER_LOGIN_WINDOW_S", "900")
# How many proxies in front of the web processes append to X-Forwarded-For (0: REMOTE_ADDR is the
# client). With one nginx, 1: the address nginx saw is the client's, whatever the client sent.
LADDER_TRUSTED_PROXY_HOPS = envint("LADDER_TRUSTED_PROXY_HOPS", "1" if LADDER_PRODUCTION else "0")

INSTALLED_APPS = [
    "ladder.security.admin_apps.LadderAdminConfig",  # django.contrib.admin; its login throttles failures
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
    "ladder.security.csp.ContentSecurityPolicyMiddleware",
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
            "libraries": {"ladder_dashboard": "ladder.dashboard.templatetags"},
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
    "max_event_cost_usd": float(os.getenv("LADDER_MAX_EVENT_COST_USD", "100")),
}
# Reports (scope report: usage, observations, failures) per gateway token per minute; past it, 429
# rate_limited. Generous: a gateway at full load reports once per upstream request (the load test sent
# 4,674 reports a minute on two cores), and the limit is there to stop a runaway or hostile reporter.
LADDER_REPORT_RATE_PER_MIN = envint("LADDER_REPORT_RATE_PER_MIN", "30000")
# Where the rate limits (reports, credential calls, failed logins) count in REDIS_URL.
LADDER_RATELIMIT_PREFIX = os.getenv("LADDER_RATELIMIT_PREFIX", "ladder:ratelimit")

# Base URL override for every provider adapter (the local fake upstream in tests and the demo).
LADDER_UPSTREAM_BASE_URL = os.getenv("LADDER_UPSTREAM_BASE_URL", "")

# /metrics (ladder.metrics): with LADDER_METRICS_TOKEN set, scrapes send it as a bearer token; with
# LADDER_METRICS_ALLOWED_NETWORKS set (CIDRs, empty: any address), they come from those networks.
# Neither set: loopback only. A token without networks: any address with the token.
LADDER_METRICS_TOKEN = os.getenv("LADDER_METRICS_TOKEN", "")
LADDER_METRICS_ALLOWED_NETWORKS = envnetworks("LADDER_METRICS_ALLOWED_NETWORKS")

# The gateway API (ladder.gateway.resolve): GET /v1/models asks for a resolve token too when this is on.
LADDER_MODELS_REQUIRE_TOKEN = envbool("LADDER_MODELS_REQUIRE_TOKEN", "false")
# How old /readyz lets the last beat tick be (0: ten fan-out periods, at least 60 s).
LADDER_BEAT_MAX_AGE_S = float(os.getenv("LADDER_BEAT_MAX_AGE_S", "0"))
# Re-raise an unexpected error in the API instead of answering the JSON 500 (debugging only).
LADDER_API_PROPAGATE_EXCEPTIONS = envbool("LADDER_API_PROPAGATE_EXCEPTIONS", "false")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Secrets blanked in every line written, whoever logs it (response headers at DEBUG included).
    "filters": {"redact_secrets": {"()": "ladder.security.logredact.SecretRedactingFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["redact_secrets"]}
    },
    "root": {"handlers": ["console"], "level": os.getenv("LOG_LEVEL", "INFO")},
}

# `make run` (ladder_run) restarts a child process that dies: after 1 s, then 2, 4, 8, 16, 30 s (the
# cap), which rides out a minute-long outage of Redis or the database. A child that stayed up
# LADDER_RUN_STABLE_S starts again from 1 s. After LADDER_RUN_MAX_RESTARTS restarts with no such stay,
# ladder_run gives up: it stops the others and exits 1, so that whoever runs it notices.
LADDER_RUN_BACKOFF_S = float(os.getenv("LADDER_RUN_BACKOFF_S", "1"))
LADDER_RUN_BACKOFF_MAX_S = float(os.getenv("LADDER_RUN_BACKOFF_MAX_S", "30"))
LADDER_RUN_STABLE_S = float(os.getenv("LADDER_RUN_STABLE_S", "60"))
LADDER_RUN_MAX_RESTARTS = envint("LADDER_RUN_MAX_RESTARTS", "6")

# --- Refresh pipeline, Redis and history (ladder.services.refresh/readings/hotstate) ---


def envmap(name: str, default: str) -> dict[str, int]:
    """ "claude=4,codex=8" → {"claude": 4, "codex": 8}."""
    pairs = (item.split("=", 1) for item in envlist(name, default) if "=" in item)
    return {key.strip(): int(value) for key, value in pairs}


# Poll floors per provider, over the adapters' own (ladder.domain.windows.PROVIDER_POLL_FLOOR_S):
# LADDER_POLL_FLOOR_S="claude=600"; 0 lifts a floor. Tests lower it to compress time (DESIGN L5).
LADDER_POLL_FLOOR_S = {key: float(value) for key, value in envmap("LADDER_POLL_FLOOR_S", "").items()}

# Readings (and poll/gateway failure events) older than this are purged daily; each connection's
# latest reading is always kept.
LADDER_READING_RETENTION_DAYS = envdays("LADDER_READING_RETENTION_DAYS", "30")
# The escalation log (an audit trail of rung changes) is kept longer; the same daily purge trims it.
LADDER_ESCALATION_RETENTION_DAYS = envdays("LADDER_ESCALATION_RETENTION_DAYS", "90")
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
# What lives in Redis besides the broker (escalation log, resolution and refresh counters, refresh
# requests in flight, last beat tick); the database stays the truth, and no resolution reads Redis.
LADDER_HOTSTATE_REDIS_URL = os.getenv("LADDER_HOTSTATE_REDIS_URL", "")  # empty: REDIS_URL
LADDER_HOTSTATE_PREFIX = os.getenv("LADDER_HOTSTATE_PREFIX", "ladder:hot")
LADDER_HOTSTATE_TIMEOUT_S = float(os.getenv("LADDER_HOTSTATE_TIMEOUT_S", "0.5"))
# The escalation log's Redis keys expire this long after an auto id's last change (ladder.services.
# escalations): after a Redis outage, Redis lags the database for that long at most.
LADDER_ESCALATION_RECHECK_S = envint("LADDER_ESCALATION_RECHECK_S", "60")

# --- Credentials (ladder.services.credentials; docs/CREDENTIALS.md) ---
# Refresh a ladder-owned credential this long before it expires, per kind (never more than half its
# lifetime): "claude-oauth=3600,codex-chatgpt=86400". LADDER_CREDENTIAL_LEAD_SCALE shrinks every lead
# at once (the soak compresses a week into minutes).
LADDER_CREDENTIAL_LEAD_S = {
    "claude-oauth": 3600,
    "codex-chatgpt": 86400,
    "gemini-cli": 300,
    "antigravity": 300,
    "kiro": 300,
} | envmap("LADDER_CREDENTIAL_LEAD_S", "")
LADDER_CREDENTIAL_LEAD_SCALE = float(os.getenv("LADDER_CREDENTIAL_LEAD_SCALE", "1"))
# A refresh's claim lasts this long: longer than a token endpoint's timeout, short enough that a
# dead claimer blocks no one for long.
LADDER_CREDENTIAL_LEASE_S = float(os.getenv("LADDER_CREDENTIAL_LEASE_S", "30"))
# The beat's credential sweep (whole seconds, at least 1).
LADDER_CREDENTIAL_BEAT_S = max(1, round(float(os.getenv("LADDER_CREDENTIAL_BEAT_S", "30"))))
# A process that finds another one's refresh in progress waits this long for it before answering.
LADDER_CREDENTIAL_WAIT_S = float(os.getenv("LADDER_CREDENTIAL_WAIT_S", "5"))
# A 401 that a gateway reports on a ladder-owned credential schedules one refresh, then no other one
# until this long after the credential's renewal (DESIGN L7; repeated reports are about the old token).
LADDER_CREDENTIAL_401_COOLDOWN_S = float(os.getenv("LADDER_CREDENTIAL_401_COOLDOWN_S", "60"))
# Credential fetches and pushes of the gateway API per gateway token and minute (0: unlimited).
LADDER_CREDENTIALS_RATE_PER_MIN = envint("LADDER_CREDENTIALS_RATE_PER_MIN", "60")

# --- Alerts (ladder.services.alert_delivery; docs/ALERTS.md) ---
# Attempts per delivery (the first included); transient faults only (network, HTTP 408/429/5xx, SMTP
# 4xx) are tried again, after base, 2 x base, 4 x base ... seconds (capped), each with jitter.
LADDER_ALERT_MAX_ATTEMPTS = max(1, envint("LADDER_ALERT_MAX_ATTEMPTS", "8"))
LADDER_ALERT_RETRY_BASE_S = float(os.getenv("LADDER_ALERT_RETRY_BASE_S", "10"))
# Keep the cap below the Redis broker's visibility timeout (1 h): a retry waits as a message due later.
LADDER_ALERT_RETRY_MAX_S = float(os.getenv("LADDER_ALERT_RETRY_MAX_S", "600"))
# The beat's sweep of pending deliveries whose task was lost (whole seconds, at least 1).
LADDER_ALERT_SWEEP_S = max(1, round(float(os.getenv("LADDER_ALERT_SWEEP_S", "60"))))
# A queued delivery that no worker started within this long (past its countdown) is queued again.
LADDER_ALERT_QUEUED_S = float(os.getenv("LADDER_ALERT_QUEUED_S", "300"))
# deliver_alert's time limits; an attempt holds its delivery for the hard one.
LADDER_ALERT_TIME_LIMIT_S = envint("LADDER_ALERT_TIME_LIMIT_S", "60")
LADDER_ALERT_SOFT_TIME_LIMIT_S = envint("LADDER_ALERT_SOFT_TIME_LIMIT_S", "50")
LADDER_ALERT_HTTP_TIMEOUT_S = float(os.getenv("LADDER_ALERT_HTTP_TIMEOUT_S", "10"))
# `make run` gives this URL a webhook channel ("default-webhook"), made once.
LADDER_ALERT_WEBHOOK_URL = os.getenv("LADDER_ALERT_WEBHOOK_URL", "")
# Where the dashboard is reached (https://ladder.example.com): notifications link to it when set.
LADDER_PUBLIC_URL = os.getenv("LADDER_PUBLIC_URL", "")
# E-mail channels send through Django's mail settings.
EMAIL_HOST = os.getenv("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", "25")
EMAIL_HOST_USER = os.getenv("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.getenv("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", "false")
EMAIL_USE_SSL = envbool("EMAIL_USE_SSL", "false")
EMAIL_TIMEOUT = float(os.getenv("EMAIL_TIMEOUT", "10"))
DEFAULT_FROM_EMAIL = os.getenv("DEFAULT_FROM_EMAIL", "ladder@localhost")
# The alert rules (ladder.services.alerts; docs/ALERTS.md).
# The beat evaluates the alert rules this often (whole seconds, at least 1); tests compress it.
LADDER_ALERT_EVALUATE_S = max(1, round(float(os.getenv("LADDER_ALERT_EVALUATE_S", "60"))))

CELERY_TASK_DEFAULT_QUEUE = os.getenv("CELERY_TASK_DEFAULT_QUEUE", "celery")
# The tasks' time limits (ladder.tasks keeps fallbacks of the same values).
CELERY_TASK_ANNOTATIONS = {
    f"ladder.tasks.{task}": {"time_limit": hard_s, "soft_time_limit": soft_s}
    for task, hard_s, soft_s in (
        ("refresh_due", LADDER_REFRESH_TIME_LIMIT_S, LADDER_REFRESH_SOFT_TIME_LIMIT_S),
        ("refresh_connections", LADDER_REFRESH_TIME_LIMIT_S, LADDER_REFRESH_SOFT_TIME_LIMIT_S),
        ("deliver_alert", LADDER_ALERT_TIME_LIMIT_S, LADDER_ALERT_SOFT_TIME_LIMIT_S),
    )
}


def beat_entry(task: str, every_s: float, expires_s: float | None = None) -> dict[str, object]:
    """ladder.tasks.<task> every `every_s`, expiring after one period unless told otherwise: a tick no
    worker started in time is dropped, never run late. The database scheduler stores "expire_seconds"
    (it ignores "expires"); the default scheduler passes "expires" to apply_async."""
    expires = every_s if expires_s is None else expires_s
    return {
        "task": f"ladder.tasks.{task}",
        "schedule": every_s,
        "options": {"expires": expires, "expire_seconds": expires},
    }


# Synced by name into django-celery-beat's database scheduler.
CELERY_BEAT_SCHEDULE = {
    "ladder-refresh-due": beat_entry("refresh_due", LADDER_REFRESH_BEAT_S),
    "ladder-credentials-refresh": beat_entry("credentials_refresh", LADDER_CREDENTIAL_BEAT_S),
    "ladder-alerts-sweep": beat_entry("alert_deliveries_sweep", LADDER_ALERT_SWEEP_S),
    "ladder-alerts-evaluate": beat_entry("alerts_evaluate", LADDER_ALERT_EVALUATE_S),
    "ladder-readings-purge": beat_entry("readings_purge", 24 * 3600.0, expires_s=3600),
}
