"""The result-batch tests again on PostgreSQL, where a cancel from another connection waits
for the run's row lock rather than for SQLite's one writer, and the hand-written statements
of `execution.sample_results_record` meet PostgreSQL's types (jsonb, timestamptz).

The fast suite's database is SQLite, so this runs the file in a pytest of its own whose
`DATABASE_URL` names a database on the shared server (pytest-django makes and drops its
`test_` copy). Without PostgreSQL it skips, or fails when WORKBENCH_REQUIRE_SERVICES is set.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys

import pytest
from django.db import connection

from tests.conftest import REPO_ROOT
from tests.webapp.services.real_services import POSTGRES_ADMIN, unavailable

FILES = ("tests/webapp/runs/test_result_batches.py",)


def test_result_batches_on_postgresql():
    if connection.vendor == "postgresql":
        pytest.skip("this run is on PostgreSQL already: the file runs in it directly")
    try:
        import psycopg

        psycopg.connect(POSTGRES_ADMIN, connect_timeout=3).close()
    except Exception as exc:
        unavailable(f"PostgreSQL is not reachable at {POSTGRES_ADMIN} ({exc})")
    env = {**os.environ,
           "DATABASE_URL": f"{POSTGRES_ADMIN.rsplit('/', 1)[0]}/workbench_batches_"
                           f"{secrets.token_hex(4)}"}
    env.pop("WORKBENCH_VAR_DIR", None)  # settings_test makes a scratch folder of its own
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *FILES, "-q", "-p", "no:cacheprovider"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
    assert re.search(r"\d+ passed", summary), summary
    assert "skipped" not in summary, summary
