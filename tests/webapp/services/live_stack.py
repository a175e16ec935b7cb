"""Drive a running stack as a browser and a script would: HTTP with a session or a token,
and the run websocket."""

from __future__ import annotations

import http.cookiejar
import json
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

from webapp.stack import REPO_ROOT, Stack


class HttpError(Exception):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:300]!r}")
        self.status = status
        self.body = body


class Browser:
    """A signed-in browser: a cookie jar and CSRF-aware form posts."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, path: str) -> tuple[int, bytes]:
        try:
            with self.opener.open(self.base + path, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def sign_in(self, username: str, password: str) -> None:
        _, page = self.get("/accounts/login/")
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token is not None
        data = urllib.parse.urlencode({"username": username, "password": password,
                                       "csrfmiddlewaretoken": token.group(1).decode()}).encode()
        request = urllib.request.Request(self.base + "/accounts/login/", data=data,
                                         headers={"Referer": self.base + "/accounts/login/"})
        with self.opener.open(request, timeout=30):
            pass
        assert self.cookie("sessionid"), "signed in"

    def cookie(self, name: str) -> str | None:
        return next((c.value for c in self.jar if c.name == name), None)

    def post(self, path: str, data: dict[str, str]) -> tuple[int, str]:
        """A form post, with the CSRF token; the status and where it led."""
        token = self.cookie("csrftoken")
        assert token, "GET a page with a form first"
        body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": token}).encode()
        request = urllib.request.Request(self.base + path, data=body,
                                         headers={"Referer": self.base + path})
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.url
        except urllib.error.HTTPError as exc:
            return exc.code, exc.url

    def websocket(self, run_id: int, *, after: int | None = None) -> Any:
        query = "" if after is None else f"?after={after}"
        url = self.base.replace("http://", "ws://") + f"/ws/runs/{run_id}/{query}"
        return connect(url, additional_headers={"Cookie": f"sessionid={self.cookie('sessionid')}",
                                                "Origin": self.base}, open_timeout=10)


class LiveViewer(threading.Thread):
    """A run page's websocket as the page's script drives it: on any drop it reconnects,
    with backoff, naming the last event number it saw; it stops at `run_finished`.

    `events` holds what it received, in order; `connections` counts the sockets it opened.
    """

    def __init__(self, browser: Browser, run_id: int, *, after: int | None = None,
                 deadline: float = 600.0) -> None:
        super().__init__(daemon=True, name=f"viewer-{run_id}")
        self.browser = browser
        self.run_id = run_id
        self.seq = after
        self.deadline = time.monotonic() + deadline
        self.events: list[dict[str, Any]] = []
        self.connections = 0
        self.errors: list[str] = []
        self.finished = threading.Event()
        self.joined = threading.Event()

    def run(self) -> None:
        delay = 0.25
        while time.monotonic() < self.deadline and not self.finished.is_set():
            try:
                with self.browser.websocket(self.run_id, after=self.seq) as socket:
                    self.connections += 1
                    self.joined.set()
                    delay = 0.25
                    while not self.finished.is_set():
                        for event in frame_events(socket.recv(timeout=60)):
                            self._receive(event)
            except Exception as exc:  # a drop, a refused connection, a restarting server
                self.errors.append(f"{type(exc).__name__}: {exc}")
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _receive(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if event["type"] == "snapshot":
            self.seq = event["seq"]
        elif isinstance(event.get("seq"), int):
            self.seq = max(self.seq or 0, event["seq"])
        if event["type"] == "run_finished" or (
            event["type"] == "snapshot" and event["status"] in ("finished", "failed", "cancelled")
        ):
            self.finished.set()

    def durable(self) -> list[dict[str, Any]]:
        return [e for e in self.events if "seq" in e and e["type"] != "snapshot"]

    def finished_sample_ids(self) -> list[int]:
        return [e["entry"]["sample_id"] for e in self.events if e["type"] == "sample_finished"]


def api(base: str, token: str, path: str, *, fields: dict[str, str] | None = None,
        file: Path | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    data = None
    if fields is not None or file is not None:
        boundary = uuid.uuid4().hex
        parts = []
        for name, value in (fields or {}).items():
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                         f"{value}\r\n".encode())
        if file is not None:
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                         f'filename="{file.name}"\r\nContent-Type: application/octet-stream'
                         "\r\n\r\n".encode() + file.read_bytes() + b"\r\n")
        data = b"".join(parts) + f"--{boundary}--\r\n".encode()
        headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
    request = urllib.request.Request(base + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
            body = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    if path.endswith("/results"):
        return status, [json.loads(line) for line in body.decode().splitlines() if line]
    return status, json.loads(body) if body else None


def add_user(stack: Stack, username: str, password: str, *, staff: bool = False) -> str:
    """Create the account (a staff one with `staff`) and return a fresh API token."""
    return stack.manage("ensure_user", username, f"--password={password}", "--token-name", "tests",
                        *(["--staff"] if staff else []), capture=True).strip().splitlines()[-1]


def receive_until_finished(socket: Any, *, timeout: float) -> Iterator[dict[str, Any]]:
    import time

    deadline = time.monotonic() + timeout
    while True:
        for event in frame_events(socket.recv(timeout=max(0.1, deadline - time.monotonic()))):
            yield event
            if event["type"] == "run_finished" or (
                event["type"] == "snapshot"
                and event["status"] in ("finished", "failed", "cancelled")
            ):
                return


def frame_events(text: str | bytes) -> list[dict[str, Any]]:
    """The events of one websocket frame: one event, or several (`"type": "events"`)."""
    frame = json.loads(text)
    return list(frame["events"]) if frame["type"] == "events" else [frame]


def evaluate_with_cli(samples: Path, out: Path, *,
                      sandbox: str) -> dict[tuple[str, int], dict[str, Any]]:
    """Per-sample results of `python -m evaluator evaluate` on the same file."""
    subprocess.run(
        [sys.executable, "-m", "evaluator", "evaluate", "--samples", str(samples),
         "--sandbox", sandbox, "--workers", "2", "--results", str(out), "--no-cache", "--json"],
        cwd=REPO_ROOT, check=True, capture_output=True,
    )
    lines = [json.loads(line) for line in out.read_text().splitlines() if line]
    return {(line["task_id"], line["completion_id"]): line for line in lines}


COMPARED = ("status", "passed", "result", "program_hash", "error_type", "completion",
            "executed_completion", "language", "dataset_version", "harness_version")


def verdict(line: dict[str, Any]) -> dict[str, Any]:
    """What must agree between the web app and the command line (not timings)."""
    view = {key: line.get(key) for key in COMPARED}
    # Values are left out: some tests draw random inputs (HumanEval/38).
    view["tests"] = [(t["index"], t["status"], t["source"]) for t in line.get("tests", [])]
    return view
