"""`python -m evaluator submit` against a real running workbench (uvicorn and a Celery worker,
as `make run` starts them): the scores after --wait, as text and JSON, and each error path
with its own exit code and message."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from evaluator.client import ExitCode
from tests.webapp.services.live_stack import add_user, api
from tests.webapp.support import CRASH_1, RIGHT_0, WRONG_0, write_jsonl
from webapp.stack import REPO_ROOT, Stack, free_port

PASSWORD = "a-long-client-password"
UPLOAD_LIMIT = 1_000_000
SLOW = "    import time\n    time.sleep(90)\n    return False\n"


@dataclass
class Site:
    stack: Stack
    token: str
    work: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    work = tmp_path_factory.mktemp("submit-site")
    stack = Stack(env={
        "WORKBENCH_VAR_DIR": str(work / "var"), "EVALUATOR_SANDBOX": "none",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "DATABASE_URL": "", "REDIS_URL": "",
        "WORKBENCH_CHUNK_SAMPLES": "2", "EVALUATOR_TIMEOUT_SECONDS": "120",
        "WORKBENCH_UPLOAD_MAX_BYTES": str(UPLOAD_LIMIT),
    }, port=free_port(), concurrency=1, log_dir=work / "logs")
    try:
        stack.prepare(static=False)
        token = add_user(stack, "pipeline", PASSWORD)
        stack.start()
        yield Site(stack=stack, token=token, work=work)
    finally:
        stack.stop()


def submit(*args: str, env: dict[str, str] | None = None,
           timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaluator", "submit", *args], cwd=REPO_ROOT, text=True,
        capture_output=True, timeout=timeout,
        env={**os.environ, "WORKBENCH_TOKEN": "", **(env or {})})


def _samples(site: Site, name: str, tag: str) -> Path:
    # A comment makes each file's programs new, so no run is a duplicate of another.
    return write_jsonl(site.work / name, [
        {"task_id": "HumanEval/0", "completion": RIGHT_0 + f"    # {tag}\n"},
        {"task_id": "HumanEval/0", "completion": WRONG_0 + f"    # {tag}\n"},
        {"task_id": "HumanEval/1", "completion": CRASH_1 + f"    # {tag}\n"},
    ])


def test_wait_prints_pass_at_k_with_intervals(site):
    done = submit("--server", site.stack.url, "--token", site.token, "--model", "m-7b",
                  str(_samples(site, "text.jsonl", "text")), "--wait")
    assert done.returncode == ExitCode.OK, done.stderr
    assert re.search(r"^run \d+ finished: http://127\.0\.0\.1:\d+/runs/\d+/$", done.stdout,
                     re.MULTILINE)
    assert re.search(r"^pass@1 +25\.00%  \[\d+\.\d\d%, \d+\.\d\d%\]$", done.stdout,
                     re.MULTILINE), done.stdout
    assert re.search(r"run \d+: finished 3/3 \(100%\), 1 passed", done.stderr)
    # This site's operator set a CPU limit for every run (a slow test program needs it).
    assert ("not verified: its CPU limit of 120.0 s was chosen by the server's operator, an "
            "override; 162 problem(s) without samples") in done.stdout


def test_json_and_token_from_the_environment(site):
    done = submit("--server", site.stack.url, str(_samples(site, "json.jsonl", "json")),
                  "--wait", "--json", env={"WORKBENCH_TOKEN": site.token})
    assert done.returncode == ExitCode.OK, done.stderr
    run = json.loads(done.stdout)
    assert run["status"] == "finished"
    assert (run["progress"]["done"], run["progress"]["total"]) == (3, 3)
    pass1 = next(metric for metric in run["pass_at_k"] if metric["k"] == 1)
    assert pass1["value"] == pytest.approx(0.25)
    assert pass1["low"] <= pass1["value"] <= pass1["high"]


def test_without_wait_prints_the_url_and_a_duplicate_follows_the_existing_run(site):
    path = _samples(site, "again.jsonl", "again")
    first = submit("--server", site.stack.url, "--token", site.token, str(path))
    assert first.returncode == ExitCode.OK, first.stderr
    url = first.stdout.strip()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/runs/\d+/", url)
    again = submit("--server", site.stack.url, "--token", site.token, str(path), "--wait")
    assert again.returncode == ExitCode.OK, again.stderr
    assert "already evaluated as run" in again.stderr
    assert url in again.stdout


def test_invalid_file_prints_each_issue_on_its_line(site):
    bad = site.work / "bad.jsonl"
    bad.write_text('{"task_id": "HumanEval/0", "completion": "x"}\n'
                   '{"task_id": "HumanEval/0", "completion": "x" "oops"}\n'
                   '{"task_id": "humaneval_0", "completion": "    return 1\\n"}\n')
    done = submit("--server", site.stack.url, "--token", site.token, str(bad), "--wait")
    assert done.returncode == ExitCode.INVALID_FILE
    assert "error: the file was refused" in done.stderr
    issue_lines = [line for line in done.stderr.splitlines() if line.startswith("  ")]
    assert any(line.startswith("  error: Line 2, column ") for line in issue_lines), done.stderr
    assert not any("line 2, column" in line for line in issue_lines), done.stderr
    assert any("Line 3" in line and "humaneval_0" in line for line in issue_lines), done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr


def test_a_file_over_the_servers_limit_is_refused_as_such_not_as_unreachable(site):
    """The server answers 413 as soon as it reads the length, and closes: the client sees
    that answer or only the reset, and must not call the server unreachable either way."""
    big = site.work / "big.jsonl"
    line = json.dumps({"task_id": "HumanEval/0", "completion": "    return 1\n" * 50}) + "\n"
    big.write_text(line * (8 * UPLOAD_LIMIT // len(line)))
    done = submit("--server", site.stack.url, "--token", site.token, str(big), "--wait")
    assert done.returncode == ExitCode.INVALID_FILE, done.stderr
    assert "larger than" in done.stderr
    assert "cannot reach" not in done.stderr
    assert "Traceback" not in done.stderr


def test_unknown_dataset_is_a_usage_error_that_lists_the_valid_ones(site):
    done = submit("--server", site.stack.url, "--token", site.token, "--dataset",
                  "humaneval/pyhton/en", str(_samples(site, "ds.jsonl", "ds")), "--wait")
    assert done.returncode == ExitCode.USAGE
    lines = done.stderr.splitlines()
    assert lines[0] == "error: the request was refused: Some fields are invalid."
    assert "  dataset: No such dataset." in lines
    # The server's own datasets, the closest to the mistyped key first, and where to look.
    assert "  give --dataset one of: humaneval/python/en" in lines, done.stderr
    assert f"{site.stack.url}/api/datasets" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("token", ["wb_nope_nope", ""])
def test_bad_or_missing_token_is_an_auth_failure(site, token):
    done = submit("--server", site.stack.url, "--token", token,
                  str(_samples(site, "auth.jsonl", "auth")))
    assert done.returncode == ExitCode.AUTH
    if token:
        assert done.stderr == ("error: refused (401): The token is unknown or has been "
                               "revoked.\n")
    else:
        assert "WORKBENCH_TOKEN" in done.stderr


def test_unreachable_server_is_one_line_not_a_traceback(site):
    down = f"http://127.0.0.1:{free_port()}"
    done = submit("--server", down, "--token", site.token,
                  str(_samples(site, "down.jsonl", "down")), "--wait", timeout=60)
    assert done.returncode == ExitCode.UNREACHABLE
    assert done.stderr == (f"error: cannot reach {down}: connection refused; is the "
                           "workbench running there?\n")
    assert done.stdout == ""


@pytest.mark.parametrize("args", [["--server", "ftp://example.invalid"],
                                  ["--server", "http://127.0.0.1:1", "/no/such/file.jsonl"]])
def test_bad_arguments(site, args):
    if len(args) == 2:
        args = [*args, str(_samples(site, "args.jsonl", "args"))]
    done = submit(*args, "--token", site.token)
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.startswith("error: ")


@contextmanager
def waiting_on_a_slow_run(site: Site, tag: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`submit --wait` of samples that sleep far longer than the test, and the id of its
    run, read from the page URL the client prints first."""
    path = write_jsonl(site.work / f"slow-{tag}.jsonl", [
        {"task_id": "HumanEval/0", "completion": SLOW + f"    # {tag}\n"},
        {"task_id": "HumanEval/1", "completion": SLOW + f"    # {tag}\n"},
    ])
    process = subprocess.Popen(
        [sys.executable, "-m", "evaluator", "submit", "--server", site.stack.url, "--token",
         site.token, str(path), "--wait"],
        cwd=REPO_ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        found = re.search(r"/runs/(\d+)/", first)
        assert found, first
        yield process, int(found.group(1))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_failed_run_ends_the_wait_with_its_reason_and_own_code(site):
    """The worker stays busy with the slow sample (the next test's run waits in the queue,
    which does not matter to it)."""
    with waiting_on_a_slow_run(site, "fail") as (process, run_id):
        # The way a worker gives up on a run, in the server's own process environment.
        site.stack.manage("shell", "-c", (
            "from webapp.runs.worker.execution import run_fail; "
            f"run_fail(run_id={run_id}, error='MemoryError: the worker ran out')"))
        out, err = process.communicate(timeout=120)
    assert process.returncode == ExitCode.RUN_FAILED, err
    assert re.search(rf"^run {run_id} failed: ", out, re.MULTILINE)
    assert "error: MemoryError: the worker ran out" in out
    assert err.splitlines()[-1] == (f"error: run {run_id} failed: MemoryError: the worker ran "
                                    "out (0 of 2 samples were evaluated)")
    assert "Traceback" not in err


def test_a_run_deleted_while_waiting_ends_the_wait_with_a_message(site):
    with waiting_on_a_slow_run(site, "gone") as (process, run_id):
        # The owner's delete, in one transaction: as `DELETE /api/runs/<id>` alone it would
        # cancel the run first, and a poll in between would see it cancelled instead.
        site.stack.manage("shell", "-c", (
            "from django.db import transaction; from webapp.runs.models import Run; "
            "from webapp.runs.services.lifecycle import run_delete; "
            f"run = Run.objects.get(pk={run_id}); "
            "transaction.atomic()(run_delete)(user=run.owner, run=run)"))
        out, err = process.communicate(timeout=120)
    assert process.returncode == ExitCode.UNEXPECTED, err
    assert err.splitlines()[-1] == (f"error: run {run_id} is gone: deleted, or no longer "
                                    "visible to this token")
    assert out == ""


def test_a_cancelled_run_ends_the_wait_with_its_own_code(site):
    """Last in the module: the worker stays busy with the slow samples until the stack stops."""
    with waiting_on_a_slow_run(site, "cancel") as (process, run_id):
        status, body = api(site.stack.url, site.token, f"/api/runs/{run_id}/cancel", fields={})
        assert status == 200, body
        out, err = process.communicate(timeout=120)
    assert process.returncode == ExitCode.RUN_CANCELLED, err
    assert re.search(rf"^run {run_id} cancelled: ", out, re.MULTILINE)
    assert err.splitlines()[-1] == (f"error: run {run_id} was cancelled (0 of 2 samples were "
                                    "evaluated); its page can resume it")
    _, changes = api(site.stack.url, site.token, f"/api/runs/{run_id}/changes")
    assert [(c["field"], c["after"], c["by"]) for c in changes["changes"]] == [
        ("status", "cancelled", "pipeline")]
