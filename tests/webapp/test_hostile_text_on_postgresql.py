"""The hostile-text tests again on PostgreSQL, which refuses more than SQLite does (NUL in
text and JSON, lone surrogates in JSON, text longer than its column), each with an error of
its own that would be a 500; and the SQL written by hand for a run's facts
(`webapp.runs.reads.selectors.run_facts_of`), which SQLite might accept where PostgreSQL does not;
and runs evaluated eagerly inside a test's transaction (the run pages' fixtures), where a
worker that closed its connection would break the caller's next query on PostgreSQL only
(SQLite's in-memory test database ignores the close).

The fast suite's database is SQLite, so this runs the two files in a pytest of their own
whose `DATABASE_URL` names a database on the shared server (pytest-django makes and drops
its `test_` copy). Without PostgreSQL it skips, or fails when WORKBENCH_REQUIRE_SERVICES is
set, as the production-path tests do.
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

FILES = ("tests/webapp/test_hostile_text.py", "tests/webapp/test_no_500_from_any_text.py",
         "tests/webapp/runs/test_run_facts.py", "tests/webapp/runs/test_run_row_plan.py",
         "tests/webapp/runs/test_result_batches.py", "tests/webapp/explore/test_run_pages.py")


def test_hostile_text_on_postgresql():
    if connection.vendor == "postgresql":
        pytest.skip("this run is on PostgreSQL already: the files run in it directly")
    try:
        import psycopg

        psycopg.connect(POSTGRES_ADMIN, connect_timeout=3).close()
    except Exception as exc:
        unavailable(f"PostgreSQL is not reachable at {POSTGRES_ADMIN} ({exc})")
    env = {**os.environ,
           "DATABASE_URL": f"{POSTGRES_ADMIN.rsplit('/', 1)[0]}/workbench_text_"
                           f"{secrets.token_hex(4)}"}
    # A scratch folder of its own (settings_test makes one when none is set).
    env.pop("WORKBENCH_VAR_DIR", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *FILES, "-q", "-p", "no:cacheprovider"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
    # Every test ran there: none skipped for want of PostgreSQL.
    assert re.search(r"\d+ passed", summary), summary
    assert "skipped" not in summary, summary
