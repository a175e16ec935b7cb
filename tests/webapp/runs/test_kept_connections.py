"""Workers keep their PostgreSQL connections from task to task and from lease to lease: a
new connection cost the server about 35 ms of CPU to start, and a worker opened two for
every chunk (issue 26). What keeps them: the settings a worker starts with, and the
threads that renew leases, kept for the process's life and made again in a forked child.
The chaos tests in tests/webapp/services/ restart PostgreSQL under running workers, whose
kept connections must then be replaced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from unittest import mock

from tests.conftest import REPO_ROOT
from webapp.runs.worker import leases
from webapp.runs.worker.leases import Heartbeat


def _worker_settings(**env: str) -> dict[str, object]:
    """The database settings a worker process starts with, under `env`."""
    code = ("import json; from django.conf import settings; d = settings.DATABASES['default'];"
            "print(json.dumps({'max_age': d['CONN_MAX_AGE'],"
            " 'checked': d['CONN_HEALTH_CHECKS'], 'pool': 'pool' in d.get('OPTIONS', {}),"
            " 'reuse': settings.CELERY_DB_REUSE_MAX}))")
    clean = {key: value for key, value in os.environ.items()
             if key not in ("DATABASE_CONN_MAX_AGE", "WORKBENCH_PROCESS")}
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"], cwd=REPO_ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "webapp.settings", **env},
        capture_output=True, text=True, timeout=120, check=True)
    figures: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def test_a_worker_keeps_a_postgresql_connection_checked_and_celery_leaves_it_open(tmp_path):
    postgres = {"DATABASE_URL": "postgres://user@127.0.0.1:5432/workbench",
                "WORKBENCH_VAR_DIR": str(tmp_path)}
    kept = _worker_settings(**postgres)
    assert kept == {"max_age": 600, "checked": True, "pool": False, "reuse": 1_000_000}
    # Asked not to keep them, a worker opens one a task, and Celery closes it after each.
    assert _worker_settings(**postgres, DATABASE_CONN_MAX_AGE="0") == {
        "max_age": 0, "checked": True, "pool": False, "reuse": None}
    # A web process keeps a pool instead.
    assert _worker_settings(**postgres, WORKBENCH_PROCESS="web")["pool"] is True
    # SQLite, embedded: a connection a task, as before (opening one costs next to nothing).
    assert _worker_settings(WORKBENCH_VAR_DIR=str(tmp_path)) == {
        "max_age": 0, "checked": False, "pool": False, "reuse": None}


def _lease_thread() -> int:
    """The thread a new lease is renewed on (its first look at whether to stop)."""
    seen: list[int] = []

    def should_stop() -> bool:
        seen.append(threading.get_ident())
        return True

    stop = threading.Event()
    with Heartbeat(name="kept", renew=lambda: True, stop=stop, should_stop=should_stop):
        assert stop.wait(timeout=60), "the heartbeat looked at its work"
    return seen[0]


def test_one_lease_after_another_is_renewed_on_the_same_kept_thread():
    first = _lease_thread()
    assert first != threading.get_ident()
    # The thread is idle again before the holder hears that its lease ended, so however
    # busy the machine, the next lease finds it (CI once saw a new thread under a pool
    # that went idle only after the holder moved on).
    for _ in range(20):
        assert _lease_thread() == first, "the thread, and so its connection, outlived its lease"


def test_a_lease_whose_renewal_breaks_is_lost_and_its_thread_serves_the_next():
    def broken() -> bool:
        raise RuntimeError("not a database error")

    stop = threading.Event()
    heartbeat = Heartbeat(name="broken", renew=broken, stop=stop, should_stop=lambda: False)
    with mock.patch.object(leases, "lease_seconds", return_value=0.06), heartbeat:
        assert stop.wait(timeout=60), "the holder was told to stop"
    assert heartbeat.lost, "work whose lease is no longer renewed is not ours to finish"
    first = _lease_thread()
    assert _lease_thread() == first


def test_a_forked_child_renews_its_leases_on_threads_of_its_own():
    _lease_thread()  # this process's lease thread exists, idle, before the fork
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: a Celery pool process, forked by the worker
        status = 1
        try:
            os.close(read)
            os.write(write, str(_lease_thread()).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read) as pipe:
        answer = pipe.read()
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child's lease was never renewed"
    assert answer.isdigit()
