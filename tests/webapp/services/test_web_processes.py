"""Several web processes behind a proxy (issue 23): two uvicorn processes that share the
PostgreSQL database but not a disk. An upload checked on one is confirmed, switched to
another variant, or cancelled on the other, because what waits for the confirmation is a
staged run in the database, never a file on the web host that checked it."""

from __future__ import annotations

import re
import secrets
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.polyglot import generations, require_parser, write_dataset
from tests.webapp.services.live_stack import Browser, add_user
from tests.webapp.services.real_services import PostgresDatabase, services_stack
from tests.webapp.support import write_jsonl
from webapp.stack import Stack

pytestmark = pytest.mark.services

PASSWORD = "a-long-proxy-password"


def page_upload(browser: Browser, path: Path, fields: dict[str, str]) -> tuple[int, str]:
    """The upload form posted as a browser posts it: multipart, with the CSRF token."""
    token = browser.cookie("csrftoken")
    assert token, "GET a page with a form first"
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
             f"{value}\r\n".encode()
             for name, value in {**fields, "csrfmiddlewaretoken": token}.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                 f'filename="{path.name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
                 .encode() + path.read_bytes() + b"\r\n")
    request = urllib.request.Request(
        browser.base + "/runs/new/", data=b"".join(parts) + f"--{boundary}--\r\n".encode(),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}",
                 "Referer": browser.base + "/runs/new/"})
    try:
        with browser.opener.open(request, timeout=120) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def hidden(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]+)"', page)
    assert found, f"no {name} on the page"
    return found.group(1)


def files_on(stack: Stack, *, timeout: float = 30.0) -> list[Path]:
    """Files left in the process's upload folder once it has closed the request (after
    sending the answer): polled until there are none, or `timeout`."""
    uploads = Path(stack.env["WORKBENCH_VAR_DIR"]) / "uploads"
    deadline = time.monotonic() + timeout
    while True:
        left = [path for path in uploads.rglob("*") if path.is_file()]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def test_an_upload_checked_on_one_web_process_is_confirmed_on_another(tmp_path):
    require_parser("cpp")
    database = PostgresDatabase()
    # Only C++ has a worker here: the other languages' parts of the check (asked which
    # language the file is) go unanswered, and are given up after this many seconds.
    shared = {"DATABASE_URL": database.url, "REDIS_URL": "",
              "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
              "WORKBENCH_LANGUAGE_CHECK_WAIT": "15"}
    first = services_stack(tmp_path / "first", shared)
    second = services_stack(tmp_path / "second", shared)
    try:
        first.prepare(static=False)
        for language in ("cpp", "python"):
            first.manage("import_dataset", str(write_dataset(tmp_path, language)))
        add_user(first, "owner", PASSWORD)
        for stack in (first, second):
            stack.start_web()
        # The C++ part of the language check runs on a worker of C++ (the first host's
        # broker is its own folder: embedded Celery, no Redis).
        first.start_worker(queues=("eval-cpp",))
        for stack in (first, second):
            stack.wait_ready(timeout=120)
        (cpp,), = database.query("SELECT id FROM benchmarks_dataset WHERE language = 'cpp'")
        (python,), = database.query(
            "SELECT id FROM benchmarks_dataset WHERE language = 'python' "
            "AND name = 'humaneval-x'")

        # One browser session, sent by the proxy to either process.
        on_first = Browser(first.url)
        on_first.sign_in("owner", PASSWORD)
        on_first.get("/runs/new/")
        on_second = Browser(second.url)
        on_second.jar, on_second.opener = on_first.jar, on_first.opener

        def flagged(tag: str) -> tuple[str, str]:
            """Python generations uploaded against the C++ variant on the first process:
            the confirm page's token and the suggested variant's id."""
            records = [{**record, "completion": record["completion"] + f"    # {tag}\n"}
                       for record in generations("python")]
            path = write_jsonl(tmp_path / f"{tag}.jsonl", records)
            status, page = page_upload(on_first, path, {
                "dataset": str(cpp), "name": tag, "team": "", "visibility": "team"})
            assert status == 200, page[:2000]
            assert "These generations look like Python, not C++" in page
            assert files_on(first) == [], "nothing waits on the first host's disk"
            return hidden(page, "token"), hidden(page, "use_dataset")

        # Confirmed on the other process, the mismatch allowed: the staged run starts.
        token, _ = flagged("allowed")
        (staged, samples), = database.query(
            "SELECT id, samples_total FROM runs_run WHERE status = 'staged'")
        assert samples == 6
        status, url = on_second.post("/runs/new/confirm/",
                                     {"token": token, "allow_language_mismatch": "on"})
        assert (status, url) == (200, f"{second.url}/runs/{staged}/")
        assert database.query("SELECT status, dataset_id, samples_total FROM runs_run "
                              "WHERE id = %s", staged) == [("queued", cpp, 6)]

        # Switched on the other process to the variant the generations look like.
        token, suggested = flagged("switched")
        assert suggested == str(python)
        status, url = on_second.post("/runs/new/confirm/",
                                     {"token": token, "use_dataset": suggested})
        found = re.fullmatch(rf"{re.escape(second.url)}/runs/(\d+)/", url)
        assert status == 200
        assert found is not None, url
        switched = int(found.group(1))
        assert database.query("SELECT status, dataset_id, samples_total, name FROM runs_run "
                              "WHERE id = %s", switched) == [("queued", python, 6, "switched")]
        assert database.query("SELECT count(*) FROM runs_sample WHERE run_id = %s",
                              switched) == [(6,)]

        # Cancelled on the other process: gone at once, rows and all.
        token, _ = flagged("cancelled")
        status, url = on_second.post("/runs/new/cancel/", {"token": token})
        assert (status, url) == (200, f"{second.url}/runs/new/")
        assert database.query("SELECT count(*) FROM runs_run WHERE status = 'staged'") == [(0,)]
        assert database.query("SELECT count(*) FROM runs_sample") == [(12,)]
        assert database.query("SELECT count(*) FROM runs_run") == [(2,)]
        assert files_on(first) == files_on(second) == []
    finally:
        for stack in (first, second):
            stack.stop()
        database.drop()
