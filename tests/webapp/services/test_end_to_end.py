"""The real path: a web server and a Celery worker as separate processes, on PostgreSQL and
Redis (marked `services`) and on the embedded set-up of `make run` (SQLite, a filesystem
broker, the SQLite channel layer)."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.webapp.services.scenario import run_scenario
from tests.webapp.support import CRASH_1, RIGHT_0, WRONG_0, write_jsonl
from webapp.stack import Stack, free_port

POSTGRES_ADMIN = os.environ.get("WORKBENCH_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("WORKBENCH_TEST_REDIS", "redis://127.0.0.1:6379/14")
SANDBOX = os.environ.get("WORKBENCH_TEST_SANDBOX", "none")


def _unavailable(reason: str) -> None:
    if os.environ.get("WORKBENCH_REQUIRE_SERVICES"):
        pytest.fail(f"{reason} (WORKBENCH_REQUIRE_SERVICES is set)")
    pytest.skip(f"{reason}; start PostgreSQL and Redis to run the production-path tests")


@pytest.fixture
def samples(tmp_path: Path, shared_path_or_none) -> Path:
    """Real model output when ../shared is there (40 samples of one model), else a few."""
    target = tmp_path / "samples.jsonl"
    if shared_path_or_none is not None:
        source = shared_path_or_none / "generations/ollama-8-models/qwen2.5-coder_7b_samples.jsonl"
        lines = source.read_text().splitlines()[:40]
        target.write_text("\n".join(lines) + "\n")
        return target
    return write_jsonl(target, [
        {"task_id": "HumanEval/0", "completion": RIGHT_0},
        {"task_id": "HumanEval/0", "completion": WRONG_0},
        {"task_id": "HumanEval/1", "completion": CRASH_1},
    ])


@pytest.fixture
def shared_path_or_none() -> Path | None:
    from tests.conftest import shared_path

    path = shared_path()
    return path if (path / "generations").is_dir() else None


@pytest.fixture
def postgres_database() -> Iterator[str]:
    try:
        import psycopg

        admin = psycopg.connect(POSTGRES_ADMIN, autocommit=True, connect_timeout=3)
    except Exception as exc:
        _unavailable(f"PostgreSQL is not reachable at {POSTGRES_ADMIN} ({exc})")
    name = f"workbench_test_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture
def redis_url() -> str:
    try:
        import redis

        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
        client.ping()
    except Exception as exc:
        _unavailable(f"Redis is not reachable at {REDIS_URL} ({exc})")
    # A database of its own: nothing else's queues or groups are in it.
    client.flushdb()
    return REDIS_URL


def _stack(tmp_path: Path, env: dict[str, str]) -> Stack:
    var_dir = tmp_path / "var"
    return Stack(
        env={"WORKBENCH_VAR_DIR": str(var_dir), "EVALUATOR_SANDBOX": SANDBOX,
             "EVALUATOR_WORKERS": "1", "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
             "WORKBENCH_CHUNK_SAMPLES": "5", **env},
        port=free_port(), concurrency=1, log_dir=tmp_path / "logs",
    )


@pytest.mark.services
def test_end_to_end_on_postgresql_and_redis(tmp_path, samples, postgres_database, redis_url):
    stack = _stack(tmp_path, {"DATABASE_URL": postgres_database, "REDIS_URL": redis_url})
    stack.prepare(static=False)
    try:
        run_scenario(stack, samples, tmp_path, sandbox=SANDBOX)
    finally:
        stack.stop()


@pytest.mark.slow
def test_end_to_end_on_the_embedded_stack(tmp_path, samples):
    stack = _stack(tmp_path, {"DATABASE_URL": "", "REDIS_URL": ""})
    stack.prepare(static=False)
    try:
        run_scenario(stack, samples, tmp_path, sandbox=SANDBOX)
    finally:
        stack.stop()
        shutil.rmtree(tmp_path / "var", ignore_errors=True)
