"""Issue 23 against a real web server (uvicorn, as `make run` starts it): an upload of any
size or compression is read as a stream, so the web process's memory stays bounded, and
a gzip bomb of valid lines is refused in seconds, not minutes.

The peak is the process's own high-water mark (VmHWM in /proc/<pid>/status), read before
and after each upload; "idle" is after a small upload has loaded everything an upload
uses, so the difference is what the large one cost.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bombs import write_gzip_bomb
from tests.webapp.services.live_stack import add_user, api
from tests.webapp.support import RIGHT_0
from webapp.stack import Stack, free_port

BUDGET = 256 * 1024 * 1024
"""What one upload may add to the web process's peak memory, whatever its size."""
TASKS = 164
PER_TASK = 500


@dataclass
class Site:
    stack: Stack
    token: str
    work: Path

    @property
    def web_pid(self) -> int:
        return self.stack.processes["web"].pid

    def peak(self) -> int:
        """The web process's peak resident memory so far, in bytes."""
        status = Path(f"/proc/{self.web_pid}/status").read_text()
        line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
        return int(line.split()[1]) * 1024

    def upload(self, path: Path, **fields: str) -> tuple[int, dict[str, object], float]:
        started = time.monotonic()
        status, body = api(self.stack.url, self.token, "/api/runs", file=path,
                           fields={"dataset": "humaneval/python/en", **fields})
        return status, body, time.monotonic() - started


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to read the web process's memory")
    work = tmp_path_factory.mktemp("upload-memory")
    # The web server alone: the runs made here are only stored, never evaluated.
    stack = Stack(env={
        "WORKBENCH_VAR_DIR": str(work / "var"), "EVALUATOR_SANDBOX": "none",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "DATABASE_URL": "", "REDIS_URL": "",
    }, port=free_port(), concurrency=1, log_dir=work / "logs")
    try:
        stack.prepare(static=False)
        token = add_user(stack, "uploader", "a-long-upload-password")
        stack.start_web()
        stack.wait_ready(timeout=120)
        site = Site(stack=stack, token=token, work=work)
        warm = work / "warm.jsonl"
        warm.write_text(json.dumps({"task_id": "HumanEval/0", "completion": RIGHT_0}) + "\n")
        status, body, _ = site.upload(warm, dry_run="1")
        assert status == 200, body
        yield site
    finally:
        stack.stop()


def _stored_samples(site: Site, run_id: int) -> int:
    with sqlite3.connect(site.work / "var" / "db.sqlite3") as db:
        (count,), = db.execute("SELECT count(*) FROM runs_sample WHERE run_id = ?", (run_id,))
    return int(count)


def _leftover_uploads(site: Site, *, timeout: float = 30.0) -> list[Path]:
    """Files left under the upload folder once Django has closed the request, which it
    does after the answer is sent: polled until there are none, or `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in (site.work / "var" / "uploads").rglob("*") if p.is_file()]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def test_a_gzip_bomb_of_valid_lines_is_refused_in_seconds_with_bounded_memory(site):
    """The issue's bomb, `yes '{"task_id": "HumanEval/0", ...}' | head -c 2600M | gzip -9`:
    it took 317 s and 8.6 GB before it was refused."""
    bomb = write_gzip_bomb(site.work / "bomb.jsonl.gz", expanded=2600 * 1024 * 1024)
    assert bomb.stat().st_size < 10 * 1024 * 1024
    idle = site.peak()

    status, body, elapsed = site.upload(bomb)

    grown = site.peak() - idle
    print(f"bomb of {bomb.stat().st_size:,} bytes: {status} in {elapsed:.1f} s, "
          f"peak +{grown / 2**20:.1f} MiB")
    assert status in (400, 413), body
    issues = body["issues"]
    assert isinstance(issues, list)
    assert [issue["code"] for issue in issues] == ["too_large"]
    assert "Split the file" in issues[0]["message"]
    assert elapsed < 60, f"refused after {elapsed:.1f} s"
    assert grown <= BUDGET, f"the web process grew by {grown:,} bytes"
    assert _leftover_uploads(site) == []


def _large_file(path: Path) -> Path:
    with path.open("w") as out:
        for index in range(PER_TASK):
            for number in range(TASKS):
                out.write(json.dumps({
                    "task_id": f"HumanEval/{number}", "completion_id": index,
                    "completion": f"    # sample {index} of {number}\n" + RIGHT_0 * 3,
                }) + "\n")
    return path


def test_a_large_valid_file_is_checked_and_stored_with_bounded_memory(site):
    path = _large_file(site.work / "large.jsonl")
    samples = TASKS * PER_TASK
    idle = site.peak()

    status, dry, dry_seconds = site.upload(path, dry_run="1")
    assert status == 200, dry
    assert dry["coverage"]["samples_total"] == samples
    after_dry = site.peak()
    status, created, seconds = site.upload(path, name="large")
    assert status == 201, created
    assert created["coverage"]["samples_total"] == samples

    grown = site.peak() - idle
    print(f"{samples:,} samples, {path.stat().st_size:,} bytes: dry run {dry_seconds:.1f} s "
          f"(+{(after_dry - idle) / 2**20:.1f} MiB), upload {seconds:.1f} s; "
          f"peak +{grown / 2**20:.1f} MiB")
    assert grown <= BUDGET, f"the web process grew by {grown:,} bytes"
    run_id = created["id"]
    assert isinstance(run_id, int)
    assert _stored_samples(site, run_id) == samples
    assert _leftover_uploads(site) == []
