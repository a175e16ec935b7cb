"""The language check on the production path: the web process parses nothing, and each
language's part goes to that language's queue, where a worker parses it in its sandbox.

A real stack (PostgreSQL, Redis, uvicorn, two Celery workers: one serving only the C++
queue, the other everything else) with the real sandbox and real compilers. The web
process runs with a PATH that holds only Python, and an audit hook in it records every
process it starts: there must be none.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.backends import require_backend
from tests.evaluator.test_language_check_sandbox import MEMORY_BOMB, SECRET
from tests.polyglot import generations, require_parser, write_dataset
from tests.webapp.services.live_stack import add_user
from tests.webapp.services.real_services import PostgresDatabase, services_stack
from tests.webapp.support import write_jsonl
from webapp.stack import ALL_QUEUES

pytestmark = [pytest.mark.services, pytest.mark.slow]

AUDIT_HOOK = """
import os
import sys

_LOG = os.environ.get("WORKBENCH_TEST_SPAWN_LOG")
_EVENTS = {"subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system",
           "os.fork", "os.forkpty"}

def _record(event, args):
    if event not in _EVENTS:
        return
    if event == "os.exec" and "uvicorn" in list(args[1]):
        return  # the stack's launcher becoming the web server
    with open(_LOG, "a") as log:
        log.write(f"{event} {args[0] if args else ''!r} {args[1:2]!r}\\n")

if _LOG:
    sys.addaudithook(_record)
"""


def _upload(base: str, token: str, file: Path, fields: dict[str, str]) -> tuple[int, Any]:
    """POST /api/runs, waiting as long as the check may take (the helper in live_stack
    gives up after a minute; a bomb is parsed twice, alone the second time)."""
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
             f"{value}\r\n".encode() for name, value in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                 f'filename="{file.name}"\r\nContent-Type: application/octet-stream'
                 "\r\n\r\n".encode() + file.read_bytes() + b"\r\n")
    request = urllib.request.Request(
        base + "/api/runs", data=b"".join(parts) + f"--{boundary}--\r\n".encode(),
        headers={"Authorization": f"Bearer {token}",
                 "Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with urllib.request.urlopen(request, timeout=600) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_check_runs_on_the_languages_workers_never_in_the_web_process(tmp_path,
                                                                           redis_url):
    require_backend("bwrap")
    for language in ("cpp", "python"):
        require_parser(language)
    only_python = tmp_path / "web-path"
    only_python.mkdir()
    (only_python / "python3").symlink_to(sys.executable)
    audit = tmp_path / "audit"
    audit.mkdir()
    (audit / "sitecustomize.py").write_text(AUDIT_HOOK)
    spawn_log = tmp_path / "web-spawns.log"
    secret = tmp_path / "secret.h"
    secret.write_text(f"#error {SECRET}\n")

    database = PostgresDatabase()
    stack = services_stack(tmp_path, {"DATABASE_URL": database.url, "REDIS_URL": redis_url,
                                      "EVALUATOR_SANDBOX": "bwrap",
                                      "WORKBENCH_LANGUAGE_CHECK_WAIT": "300"})
    try:
        stack.prepare(static=False)
        stack.manage("import_dataset", str(write_dataset(tmp_path, "cpp")))
        token = add_user(stack, "owner", "a-long-test-password")
        stack.start_worker("worker-cpp", ("eval-cpp",))
        stack.start_worker("worker-rest", tuple(q for q in ALL_QUEUES if q != "eval-cpp"))
        # The web process: no toolchain on its PATH, and every process it starts recorded.
        stack.env = {**stack.env, "PATH": str(only_python), "PYTHONPATH": str(audit),
                     "WORKBENCH_TEST_SPAWN_LOG": str(spawn_log)}
        stack.start_web()
        stack.wait_ready(timeout=120)

        cpp = [dict(record) for record in generations("cpp", copies=1)]
        hostile = [
            # A host file named through a macro: the worker's sandbox does not have it.
            {"task_id": cpp[0]["task_id"],
             "completion": f'#define WHERE "{secret}"\n#include WHERE\n' + cpp[0]["completion"]},
            # A template bomb after the function: stopped at the memory limit, undecided.
            {"task_id": cpp[1]["task_id"],
             "completion": "    return {};\n}\n" + MEMORY_BOMB + "auto _g() {\n"},
        ]
        hostile_file = write_jsonl(tmp_path / "hostile.jsonl", cpp + hostile)
        status, answer = _upload(stack.url, token, hostile_file,
                                 {"dataset": "humaneval-x/cpp/en", "dry_run": "1"})
        assert status == 200, answer
        codes = [warning["code"] for warning in answer["warnings"]]
        assert "language_check_not_done" not in codes
        assert SECRET not in json.dumps(answer)

        # Python against C++: the C++ worker says none parse as C++, the other worker
        # that they parse as Python; the answer reaches the upload.
        python_file = write_jsonl(tmp_path / "python.jsonl", generations("python"))
        status, refused = _upload(stack.url, token, python_file,
                                  {"dataset": "humaneval-x/cpp/en", "dry_run": "1"})
        assert status == 400, refused
        (issue,) = [i for i in refused["issues"] if i["code"] == "wrong_language"]
        assert issue["message"].startswith("These generations look like Python, not C++")

        logs = tmp_path / "logs"
        assert "runs.check_language_part" in (logs / "worker-cpp.log").read_text()
        assert "runs.check_language_part" in (logs / "worker-rest.log").read_text()
        spawned = spawn_log.read_text() if spawn_log.exists() else ""
        assert spawned == "", f"the web process started processes:\n{spawned}"
    finally:
        stack.stop()
        database.drop()
