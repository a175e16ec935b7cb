"""Django settings, read from the environment.

With no variables set this is the embedded default: SQLite under `var/`, a filesystem
Celery broker and a SQLite channel layer, so `make run` needs no servers. Production sets
DATABASE_URL (PostgreSQL) and REDIS_URL (broker and channel layer); see docs/webapp.md.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import dj_database_url
import django_stubs_ext

from evaluator.sandbox.levels import SANDBOX_CHOICES
from webapp.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_optional,
    env_optional_float,
    env_path,
    env_str,
)

# Django's generic classes take their model as a type argument at run time too
# (`admin.ModelAdmin[Run]`), as django-stubs check them.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = env_path("WORKBENCH_VAR_DIR", BASE_DIR / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _local_secret_key(var_dir: Path) -> str:
    # The embedded default keeps a random key beside its database, so sessions survive a
    # restart without anyone having to invent a secret.
    path = var_dir / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = env_optional("DJANGO_SECRET_KEY") or _local_secret_key(VAR_DIR)
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])
if env_bool("DJANGO_BEHIND_TLS_PROXY", False):
    # The proxy terminates TLS and says so in this header; trust it only when told to.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "webapp.teams",
    "webapp.benchmarks",
    "webapp.runs",
    "webapp.defects",
    "webapp.suites",
    "webapp.explore",
    "webapp.health",
]

MIDDLEWARE = [
    # First: a probe's answer needs no allowed host, session or redirect (webapp.health.probe).
    "webapp.health.probe.ProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "webapp.urls"
ASGI_APPLICATION = "webapp.asgi.application"

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


WEB_PROCESS = env_str("WORKBENCH_PROCESS", "") == "web"
"""Set by `webapp.asgi` before Django starts: this process serves pages and websockets."""


HTTP_THREADS = env_int("DATABASE_POOL_SIZE", 16, minimum=1)
"""Threads that serve HTTP requests in a web process (`webapp.sync_http`), each holding at
most one pooled database connection at a time: the pool's size is the same number."""


WORKER_CONN_MAX_AGE = 600
"""Seconds a worker or beat process keeps a PostgreSQL connection (`DATABASE_CONN_MAX_AGE`
overrides it). A new connection cost PostgreSQL about 35 ms of CPU to start here, and
workers that opened two for every chunk (the task's and its lease's) spent about 5 % of a
16,400-sample run's CPU on it (issue 26); a kept connection is checked before each task
(`CONN_HEALTH_CHECKS`), so one the server dropped is opened again."""


def _database(url: str) -> dict[str, Any]:
    config: dict[str, Any] = dict(dj_database_url.parse(url))
    postgres = config["ENGINE"] == "django.db.backends.postgresql"
    config["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE",
                                     WORKER_CONN_MAX_AGE if postgres else 0, minimum=0)
    config["CONN_HEALTH_CHECKS"] = postgres
    if postgres and WEB_PROCESS:
        # Under ASGI every request and every socket's read runs on a thread of its own, and
        # a connection per call cost each live viewer seconds under load (issue 23): the
        # web process keeps a pool, checked before each use, so a connection the server
        # dropped is replaced rather than failing a page. Only the web process: a pool's
        # sockets must not cross the fork of Celery's workers, and persistent connections
        # (DATABASE_CONN_MAX_AGE) cannot be used beside it.
        config["CONN_MAX_AGE"] = 0  # Django checks each pooled connection before use
        config.setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": HTTP_THREADS,
            "timeout": 30,
        }
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # The web server and every worker process write to the same file: WAL lets readers
        # run beside a writer, IMMEDIATE transactions take the write lock up front (no
        # deadlock on upgrading a read lock), and the timeout waits out a busy writer.
        config["OPTIONS"] = {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        }
    return config


DATABASES = {
    "default": _database(env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")),
}
CELERY_DB_REUSE_MAX = 1_000_000 if DATABASES["default"]["CONN_MAX_AGE"] else None
"""Celery closes a worker's database connection before and after each task unless told to
reuse it: with connections kept, it is reused, and checked before each task instead
(`tasks._check_connections`)."""
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "runs:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # Plotly's bundles from installed packages, under vendor/plotly/.
    "webapp.static_finders.PackageFileFinder",
]
STATIC_ROOT = env_path("DJANGO_STATIC_ROOT", VAR_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed names, cached forever by browsers (webapp/static_storage.py).
    "staticfiles": {"BACKEND": "webapp.static_storage.HashedStaticFilesStorage"},
}

# -- uploads ------------------------------------------------------------------------------
UPLOAD_MAX_BYTES = env_int("WORKBENCH_UPLOAD_MAX_BYTES", 256 * 1024 * 1024, minimum=1)
"""Largest generations file accepted, as uploaded (compressed size for .jsonl.gz)."""
UPLOAD_MAX_EXPANDED_BYTES = env_int(
    "WORKBENCH_UPLOAD_MAX_EXPANDED_BYTES", UPLOAD_MAX_BYTES, minimum=1
)
"""Largest size a .jsonl.gz may decompress to: no more text than a plain file may hold, so
compression cannot make the server read more than it would accept uncompressed."""
UPLOAD_MAX_SAMPLES_PER_TASK = env_int("WORKBENCH_UPLOAD_MAX_SAMPLES_PER_TASK", 1000, minimum=1)
"""Most samples a file may hold for one task (five times the Codex paper's n = 200): reading
stops past it, so a file of valid lines repeated millions of times is refused at once."""
UPLOAD_DIR = VAR_DIR / "uploads"
UPLOAD_DIR.mkdir(parents=True, exist_ok=True)
FILE_UPLOAD_TEMP_DIR = str(UPLOAD_DIR)
# Every uploaded file goes to disk as it arrives, whatever its size, through a handler that
# stops at the size limit and hashes as it writes.
FILE_UPLOAD_HANDLERS = ["webapp.runs.upload_checks.files.BoundedUploadHandler"]
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

# -- the dataset catalogue ----------------------------------------------------------------
DATASET_CATALOGUE = env_path("WORKBENCH_DATASET_CATALOGUE",
                             BASE_DIR / "evaluator" / "datasets" / "catalogue.toml")
"""The catalogue of public datasets that can be added with a click or `import_dataset
--catalogue`: each entry's upstream URL at a pinned commit, size and sha256."""
DATASET_BASE_URL = env_optional("WORKBENCH_DATASET_BASE_URL")
"""Unset: download each catalogue file from its upstream URL. Set: from this mirror, which
serves the same files under the catalogue's relative paths (as ../shared/datasets holds)."""

# -- evaluation ---------------------------------------------------------------------------
EVALUATOR_SANDBOX = env_choice("EVALUATOR_SANDBOX", "auto", SANDBOX_CHOICES)
"""A level (strict, standard, none), a backend name, or auto (`evaluator.sandbox.levels`)."""
EVALUATOR_WORKERS = env_int("EVALUATOR_WORKERS", 1, minimum=1)
"""Programs one chunk task runs at a time; scale out with worker processes instead."""
EVALUATOR_TIMEOUT_SECONDS = env_optional_float("EVALUATOR_TIMEOUT_SECONDS", minimum=0.1)
"""Unset (the default): each run's profile decides its CPU limit, as on the command line
(`evaluator.profiles.run_time_limit`). Set, it overrides every run's limit, and each such
run records the override and is not verified."""
EVALUATOR_MEMORY_MB = env_int("EVALUATOR_MEMORY_MB", 1024, minimum=64)
CHUNK_SAMPLES = env_int("WORKBENCH_CHUNK_SAMPLES", 25, minimum=1)
"""A chunk holds whole problems and at least this many samples (the last may hold fewer)."""
CHUNK_TIME_LIMIT = env_int("WORKBENCH_CHUNK_TIME_LIMIT", 3600, minimum=10)
"""Seconds a chunk task may run."""
LANGUAGE_CHECK_WAIT_SECONDS = env_int("WORKBENCH_LANGUAGE_CHECK_WAIT", 120, minimum=1)
"""How long an upload waits for the workers that parse its samples (the language check
runs on a worker of each language, in the sandbox; Python's is read by the web process
itself); past it the check is reported not done for the languages that did not answer,
and the upload goes on."""
LEASE_SECONDS = env_int("WORKBENCH_LEASE_SECONDS", 30, minimum=5)
"""A worker holds a chunk (or a run it is scoring) by a lease that its heartbeat renews every
sixth of this; once the lease has passed without a renewal, the sweeper takes the work back."""
SWEEP_SECONDS = env_float("WORKBENCH_SWEEP_SECONDS", 10.0, minimum=1.0)
"""How often the sweeper (`runs.sweep`, run by Celery beat itself) looks for lost work."""
DELETED_RUN_DAYS = env_int("WORKBENCH_DELETED_RUN_DAYS", 30, minimum=0)
"""Days a deleted run can be restored by its owner; then the sweeper purges it."""
LIVE_RECONCILE_SECONDS = env_float("WORKBENCH_LIVE_RECONCILE_SECONDS", 10.0, minimum=0.5)
"""How often a live websocket compares what it sent with the database, and sends what the
channel layer dropped."""

# -- worker canaries (webapp.health) -------------------------------------------------------
CANARY_ENABLED = env_bool("WORKBENCH_CANARY", True)
"""Each worker runs its languages' canaries (`python -m evaluator doctor`) before it takes
their queues, and takes only those whose canary passes; off, it takes every queue at once."""
CANARY_SECONDS = env_int("WORKBENCH_CANARY_SECONDS", 300, minimum=10)
"""How often a worker runs its canaries again (also at start and after a failure)."""
CANARY_STALE_SECONDS = env_int("WORKBENCH_CANARY_STALE_SECONDS", 3 * CANARY_SECONDS,
                               minimum=CANARY_SECONDS)
"""A canary older than this vouches for nothing: its worker missed three rounds, so it is
gone, stuck or cut off from the database."""
CANARY_TIMEOUT_SECONDS = env_int("WORKBENCH_CANARY_TIMEOUT_SECONDS", 600, minimum=10)
"""How long one language's canary may take before it counts as failed."""

# -- Celery and Channels ------------------------------------------------------------------
REDIS_URL = env_optional("REDIS_URL")
REDIS_SOCKET_TIMEOUT = 30.0
"""Seconds a Redis read may take: longer than any blocking wait the channel layer makes."""


def redis_channel_layer(url: str) -> dict[str, Any]:
    return {
        # channels_redis's layer, receiving all that waits in one trip (webapp.redis_channel_layer).
        "BACKEND": "webapp.redis_channel_layer.BatchingRedisChannelLayer",
        "CONFIG": {
            # channels-redis waits on Redis for up to 5 s for a message (BZPOPMIN), and
            # redis-py gives up reading a socket after 5 s by default: every quiet websocket
            # then died of a TimeoutError. Reads must outlast the wait.
            "hosts": [{"address": url, "socket_timeout": REDIS_SOCKET_TIMEOUT,
                       "socket_connect_timeout": 5, "health_check_interval": 15}],
            "capacity": 1000,
            "expiry": 60,
        },
    }


BROKER_DIR = VAR_DIR / "broker"
if REDIS_URL:
    CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
    CHANNEL_LAYERS: dict[str, Any] = {"default": redis_channel_layer(REDIS_URL)}
else:
    # Embedded: no broker server. Celery passes messages through files under var/broker,
    # and the channel layer is a SQLite file that the web server polls, so that events
    # emitted by worker processes reach websockets held by the web process.
    CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
    for folder in ("queue", "processed", "control"):
        (BROKER_DIR / folder).mkdir(parents=True, exist_ok=True)
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "webapp.channel_layers.SQLiteChannelLayer",
            "CONFIG": {"path": str(VAR_DIR / "channels.sqlite3")},
        }
    }
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        "polling_interval": 0.1,
    }
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A broker that restarts, however long it takes, is waited for, never given up on.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# The sweeper: the one beat process runs it itself (webapp.runs.worker.beat, which says why),
# never behind evaluation work in a queue; it re-sends work whose lease expired or whose
# message the broker lost (the database says what still has to run).
CELERY_BEAT_SCHEDULER = "webapp.runs.worker.beat:SweepingScheduler"
CELERY_BEAT_SCHEDULE = {
    "sweep-runs": {"task": "runs.sweep", "schedule": SWEEP_SECONDS,
                   "options": {"queue": "default", "expires": SWEEP_SECONDS}},
}

# -- Page cache -----------------------------------------------------------------------------
# The run pages and leaderboards many people read at once (webapp/runs/reads/page_cache.py).
# Its keys say what each entry was drawn from, so a process never serves a stale one: with Redis the
# web processes share it; embedded, each keeps its own in memory. Short timeouts: a Redis
# that restarts costs a page its cache, never a wait (never `cache.clear()` it: on the
# broker's Redis that is FLUSHDB).
if REDIS_URL:
    CACHES: dict[str, Any] = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env_str("WORKBENCH_CACHE_URL", REDIS_URL),
        "KEY_PREFIX": "workbench",
        "OPTIONS": {"socket_timeout": 1, "socket_connect_timeout": 1},
    }}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                          "OPTIONS": {"MAX_ENTRIES": 2000}}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("WORKBENCH_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
