"""Fixtures of the production-path tests; the services themselves are in real_services."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.webapp.services.real_services import (
    REDIS_URL,
    PostgresDatabase,
    unavailable,
)
from tests.webapp.support import CRASH_1, RIGHT_0, WRONG_0, write_jsonl


@pytest.fixture
def shared_path_or_none() -> Path | None:
    from tests.conftest import shared_path

    path = shared_path()
    return path if (path / "generations").is_dir() else None


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
def postgres_database() -> Iterator[str]:
    database = PostgresDatabase()
    try:
        yield database.url
    finally:
        database.drop()


@pytest.fixture
def redis_url() -> str:
    try:
        import redis

        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
        client.ping()
    except Exception as exc:
        unavailable(f"Redis is not reachable at {REDIS_URL} ({exc})")
    # A database of its own: nothing else's queues or groups are in it.
    client.flushdb()
    return REDIS_URL


