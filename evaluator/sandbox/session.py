"""The host side of a sandboxed runner: start it once, feed it many jobs.

Starting a sandbox costs far more than running one HumanEval program (about 60 ms for
bubblewrap and 350 ms for gVisor, against 20–40 ms for the program), so each worker
keeps one runner and sends it job after job. A runner that dies or stops answering is
replaced; the job it was running is reported, and nothing else is lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

from evaluator.sandbox.base import (
    RUNTIME_DIR,
    Backend,
    LaunchSpec,
    Mount,
    SandboxError,
    SandboxLimits,
)

START_TIMEOUT = 60.0
"""Seconds a runner may take to say it is ready (gVisor's first start is slow)."""
ANSWER_GRACE = 10.0
"""Seconds past a job's own time limits before the host gives up on the runner."""


class RunnerDied(SandboxError):
    """The runner ended or stopped answering while it held a job."""


class RunnerSession:
    """One long-lived runner inside one sandbox. Not thread-safe: one per worker thread."""

    def __init__(
        self,
        backend: Backend,
        *,
        limits: SandboxLimits | None = None,
        mounts: Sequence[Mount] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.backend = backend
        self.limits = limits or SandboxLimits()
        self.mounts = tuple(mounts)
        self.env = dict(env or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.info: dict[str, Any] = {}
        self.starts = 0
        self._buffer = b""
        self._stderr_tail = b""
        self._lock = threading.Lock()

    # -- life cycle -------------------------------------------------------------------
    def start(self) -> None:
        spec = LaunchSpec(
            argv=[self.backend.python(), "-I", str(RUNTIME_DIR / "runner.py")],
            mounts=(Mount(RUNTIME_DIR), *self.mounts),
            env=self.env,
            limits=self.limits,
        )
        argv = self.backend.command(spec)
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.backend.environment(spec),
            start_new_session=True,
            close_fds=True,
        )
        self.starts += 1
        self._buffer = b""
        self._stderr_tail = b""
        try:
            self.info = self._read_line(START_TIMEOUT)
        except RunnerDied as exc:
            self.close()
            raise SandboxError(
                f"the {self.backend.name} sandbox did not start: {exc}"
            ) from exc
        if not self.info.get("ready"):
            self.close()
            raise SandboxError(f"the {self.backend.name} runner said {self.info!r} at start")

    def close(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            if process.stdin:
                process.stdin.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
        for stream in (process.stdout, process.stderr):
            with contextlib.suppress(OSError):
                if stream:
                    stream.close()

    def __enter__(self) -> RunnerSession:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    # -- jobs -------------------------------------------------------------------------
    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        """Send one job and wait for its result.

        Raises RunnerDied when the runner ends or hangs; the session is then closed, and
        the next `run` starts a fresh runner.
        """
        with self._lock:
            if not self.alive:
                self.close()
                self.start()
            assert self.process is not None
            assert self.process.stdin is not None
            try:
                self.process.stdin.write(json.dumps(job).encode() + b"\n")
                self.process.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                self.close()
                raise RunnerDied(f"the runner is gone: {exc}") from exc
            try:
                return self._read_line(_job_budget(job) + ANSWER_GRACE)
            except RunnerDied:
                self.close()
                raise

    def _read_line(self, timeout: float) -> dict[str, Any]:
        assert self.process is not None
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        out_fd = self.process.stdout.fileno()
        err_fd = self.process.stderr.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RunnerDied(f"no answer within {timeout:.0f} s{self._stderr_hint()}")
            ready, _, _ = select.select([out_fd, err_fd], [], [], min(remaining, 1.0))
            if err_fd in ready:
                chunk = os.read(err_fd, 65536)
                self._stderr_tail = (self._stderr_tail + chunk)[-4000:]
            if out_fd in ready:
                chunk = os.read(out_fd, 1 << 20)
                if not chunk:
                    code = self.process.poll()
                    raise RunnerDied(f"the runner exited (status {code}){self._stderr_hint()}")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            answer: dict[str, Any] = json.loads(line)
        except ValueError as exc:
            raise RunnerDied(f"the runner sent something that is not JSON: {line[:200]!r}") from exc
        return answer

    def _stderr_hint(self) -> str:
        text = self._stderr_tail.decode("utf-8", "replace").strip()
        return f"; it said: {text[-1000:]}" if text else ""


def _job_budget(job: dict[str, Any]) -> float:
    """The most wall time a job may legitimately take: the sum of its steps' limits."""
    if job.get("kind") == "command":
        return sum(float(s.get("limits", {}).get("wall_seconds", 10)) + 1 for s in job["steps"])
    return float(job.get("limits", {}).get("wall_seconds", 10)) + 1
