"""Real services for the production-path tests: a PostgreSQL database of each test's own
(on the shared server), a Redis database of its own, or a whole Redis server of its own on a
spare port where a test kills and restarts it. The shared servers are never stopped."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, NoReturn

import pytest

from webapp.stack import Stack, free_port

POSTGRES_ADMIN = os.environ.get("WORKBENCH_TEST_POSTGRES",
                                "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("WORKBENCH_TEST_REDIS", "redis://127.0.0.1:6379/14")
SANDBOX = os.environ.get("WORKBENCH_TEST_SANDBOX", "none")


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("WORKBENCH_REQUIRE_SERVICES"):
        pytest.fail(f"{reason} (WORKBENCH_REQUIRE_SERVICES is set)")
    pytest.skip(f"{reason}; start PostgreSQL and Redis to run the production-path tests")


class PostgresDatabase:
    """A database of its own on the shared server, dropped at the end."""

    def __init__(self) -> None:
        try:
            import psycopg

            self.admin = psycopg.connect(POSTGRES_ADMIN, autocommit=True, connect_timeout=3)
        except Exception as exc:
            unavailable(f"PostgreSQL is not reachable at {POSTGRES_ADMIN} ({exc})")
        self.name = f"workbench_test_{secrets.token_hex(4)}"
        self.admin.execute(f'CREATE DATABASE "{self.name}"')
        self.url = POSTGRES_ADMIN.rsplit("/", 1)[0] + f"/{self.name}"

    def terminate_connections(self) -> int:
        """Drop every connection to this database, as a failover or a restart would."""
        rows = self.admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()", (self.name,)
        ).fetchall()
        return len(rows)

    def query(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as connection:
            return connection.execute(sql, params).fetchall()

    def wait_finished(self, run_id: int, *, timeout: float) -> str:
        """Wait for the run to end (a backstop, not a speed limit); its final status, or
        "still running"."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            (status,), = self.query("SELECT status FROM runs_run WHERE id = %s", run_id)
            if status in ("finished", "failed", "cancelled"):
                return str(status)
            time.sleep(0.5)
        return "still running"

    def drop(self) -> None:
        self.admin.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        self.admin.close()


class RedisServer:
    """A Redis server of the test's own on a spare port, so that it can be killed. Like the
    shared one it keeps nothing on disk: a restart loses every queued message."""

    def __init__(self, log_dir: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            unavailable("redis-server is not installed")
        self.binary = binary
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.log = log_dir / "redis.log"
        log_dir.mkdir(parents=True, exist_ok=True)
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--logfile", str(self.log)],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )
        import redis

        deadline = time.monotonic() + 30
        while True:
            try:
                redis.Redis(port=self.port, socket_connect_timeout=1).ping()
                return
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(
                        f"redis-server did not start: {self.log.read_text()}") from None
                time.sleep(0.1)

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()


def services_stack(tmp_path: Path, env: dict[str, str], *, concurrency: int = 1,
                   chunk_samples: int = 5) -> Stack:
    return Stack(
        env={"WORKBENCH_VAR_DIR": str(tmp_path / "var"), "EVALUATOR_SANDBOX": SANDBOX,
             "EVALUATOR_WORKERS": "1", "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
             "WORKBENCH_CHUNK_SAMPLES": str(chunk_samples), **env},
        port=free_port(), concurrency=concurrency, log_dir=tmp_path / "logs",
    )
