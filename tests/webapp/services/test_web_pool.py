"""The web process keeps a pool of PostgreSQL connections (webapp/settings.py): requests
reuse them instead of opening one each, and a connection the server dropped is replaced
before a request uses it, never a 500."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.webapp.services.live_stack import add_user, api
from tests.webapp.services.real_services import PostgresDatabase, services_stack

pytestmark = pytest.mark.services

REQUESTS = 60
POOL_SIZE = 4


def _sessions(database: PostgresDatabase) -> int:
    (sessions,), = database.admin.execute(
        "SELECT sessions FROM pg_stat_database WHERE datname = %s", (database.name,)
    ).fetchall()
    return int(sessions)


def test_requests_share_pooled_connections_and_survive_their_loss(tmp_path: Path,
                                                                   redis_url: str) -> None:
    database = PostgresDatabase()
    stack = services_stack(tmp_path, {"DATABASE_URL": database.url, "REDIS_URL": redis_url,
                                      "DATABASE_POOL_SIZE": str(POOL_SIZE)})
    try:
        stack.prepare(static=False)
        token = add_user(stack, "owner", "a-long-pool-password")
        stack.start_web()
        stack.wait_ready(timeout=120)

        def read(_: int) -> int:
            status, _body = api(stack.url, token, "/api/datasets")
            return status

        before = _sessions(database)
        with ThreadPoolExecutor(max_workers=8) as clients:
            assert set(clients.map(read, range(REQUESTS))) == {200}
        # Sessions the web process opened for 60 requests, 8 at a time: at most its pool.
        # Without one, each request's session would have ended by now, and a backend
        # reports its session to pg_stat_database at the latest as it ends.
        assert _sessions(database) - before <= POOL_SIZE

        assert database.terminate_connections() >= 1
        with ThreadPoolExecutor(max_workers=8) as clients:
            assert set(clients.map(read, range(REQUESTS))) == {200}
    finally:
        stack.stop()
        database.drop()
