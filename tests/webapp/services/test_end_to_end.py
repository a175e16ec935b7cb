"""The real path: a web server and a Celery worker as separate processes, on PostgreSQL and
Redis (marked `services`) and on the embedded set-up of `make run` (SQLite, a filesystem
broker, the SQLite channel layer)."""

from __future__ import annotations

import shutil

import pytest

from tests.webapp.services.real_services import SANDBOX, services_stack
from tests.webapp.services.scenario import run_scenario


@pytest.mark.services
def test_end_to_end_on_postgresql_and_redis(tmp_path, samples, postgres_database, redis_url):
    stack = services_stack(tmp_path, {"DATABASE_URL": postgres_database, "REDIS_URL": redis_url})
    stack.prepare(static=False)
    try:
        run_scenario(stack, samples, tmp_path, sandbox=SANDBOX)
    finally:
        stack.stop()


@pytest.mark.slow
def test_end_to_end_on_the_embedded_stack(tmp_path, samples):
    stack = services_stack(tmp_path, {"DATABASE_URL": "", "REDIS_URL": ""})
    stack.prepare(static=False)
    try:
        run_scenario(stack, samples, tmp_path, sandbox=SANDBOX)
    finally:
        stack.stop()
        shutil.rmtree(tmp_path / "var", ignore_errors=True)
