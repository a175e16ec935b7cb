"""`/healthz`, the probe's answer: any host name, no sign-in, and 503 when the database
does not answer."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.test import Client

from webapp.stack import REPO_ROOT

PROBE_HOST = "10.1.2.3:8000"  # a kubelet sends the pod's address


@pytest.mark.django_db
def test_the_probe_answers_any_host_without_signing_in() -> None:
    client = Client(HTTP_HOST=PROBE_HOST)
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok\n"
    assert response["Cache-Control"] == "no-store"
    assert client.head("/healthz").status_code == 200
    # Only the probe: any other page from that host is refused, as before.
    assert client.get("/accounts/login/").status_code == 400


@pytest.mark.django_db
def test_the_probe_takes_only_reads() -> None:
    response = Client(HTTP_HOST=PROBE_HOST).post("/healthz")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


_ASK = (
    "import django; django.setup(); from django.test import Client; "
    "response = Client(HTTP_HOST='10.1.2.3:8000').get('/healthz'); "
    "print(response.status_code, response.content.decode().strip())"
)


def _probe_in_a_process(database_url: str, tmp_path) -> str:
    """The probe's answer in a process of its own with this database (the test's own
    in-memory database cannot be taken away)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings",
           "DATABASE_URL": database_url, "WORKBENCH_VAR_DIR": str(tmp_path / "var"),
           "REDIS_URL": ""}
    done = subprocess.run([sys.executable, "-c", _ASK], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_probe_says_503_when_the_database_cannot_be_reached(tmp_path) -> None:
    assert _probe_in_a_process(f"sqlite:///{tmp_path / 'db.sqlite3'}", tmp_path) == "200 ok"
    # A database in a folder that does not exist: SQLite cannot open it.
    gone = f"sqlite:///{tmp_path / 'gone' / 'db.sqlite3'}"
    assert _probe_in_a_process(gone, tmp_path) == "503 the database does not answer"
