"""Settings for the fast test suite: eager Celery, the in-memory channel layer, the `none`
sandbox and a cheap password hash. The services tests start real processes with the
production settings instead."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

# Uploads, the broker folder and the secret key of a test run go to a scratch folder, never
# to the var/ of a running `make run`; it is removed when the test process ends.
if "WORKBENCH_VAR_DIR" not in os.environ:
    _scratch = tempfile.mkdtemp(prefix="workbench-test-")
    os.environ["WORKBENCH_VAR_DIR"] = _scratch
    atexit.register(shutil.rmtree, _scratch, ignore_errors=True)

from webapp.settings import *  # noqa: E402, F403

CELERY_TASK_ALWAYS_EAGER = True
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
# The page cache in memory whatever the environment says: tests empty it between them, and
# emptying a Redis cache is FLUSHDB.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
EVALUATOR_SANDBOX = "none"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# WhiteNoise warns about a missing folder; tests never collect static files.
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405
# Eager tasks run inside a test's transaction, which the heartbeat thread's own database
# connection cannot see: its renewal finds no chunk and reports the lease lost. On a busy
# machine a chunk outlived the first renewal (LEASE_SECONDS / 6) and its run never
# finished. Tests of leases set a short lease themselves, on committed data.
LEASE_SECONDS = 3600
