"""Start the whole application as processes: the ASGI server and Celery workers.

`bin/serve` (behind `make run`) uses it in the foreground; the services tests and the
benchmark use it to start a real stack on PostgreSQL and Redis, or on the embedded
defaults, with their own environment. It imports nothing from Django, so it can set the
environment before any settings are read.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LANGUAGES = ("python", "cpp", "java", "js", "go", "rust")
ALL_QUEUES = ("default", *(f"eval-{language}" for language in LANGUAGES))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Stack:
    env: Mapping[str, str] = field(default_factory=dict)
    """Added to this process's environment for every child (DATABASE_URL, REDIS_URL...)."""
    host: str = "127.0.0.1"
    port: int = 8000
    concurrency: int = 2
    queues: tuple[str, ...] = ALL_QUEUES
    log_dir: Path | None = None
    """Where the children's output goes; None lets it through to this terminal."""
    python: str = sys.executable
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        # The production settings, even when started from a test process whose environment
        # names the test settings (eager Celery would run every task inside the web server).
        env["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
        env.update(self.env)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def manage(self, *args: str, capture: bool = False) -> str:
        done = subprocess.run(
            [self.python, str(REPO_ROOT / "manage.py"), *args],
            env=self.child_env(), cwd=REPO_ROOT, check=True,
            stdout=subprocess.PIPE if capture else None, text=True,
        )
        return done.stdout or ""

    def prepare(self, *, static: bool = True) -> None:
        """Migrate, import the bundled HumanEval, and collect static files (all idempotent)."""
        self.manage("migrate", "--no-input", "-v", "0")
        self.manage("import_dataset", "package:humaneval")
        if static:
            self.manage("collectstatic", "--no-input", "-v", "0")

    def _spawn(self, name: str, argv: list[str]) -> None:
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            output = (self.log_dir / f"{name}.log").open("ab")
        else:
            output = None
        # Each child leads its own process group, so stopping it also stops its pool.
        self.processes[name] = subprocess.Popen(
            argv, env=self.child_env(), cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def start_worker(self) -> None:
        self._spawn("worker", [
            self.python, "-m", "celery", "-A", "webapp", "worker", "--loglevel", "INFO",
            "--queues", ",".join(self.queues), "--concurrency", str(self.concurrency),
            "--without-gossip", "--without-mingle", "--hostname", f"worker-{self.port}@%h",
        ])

    def start_web(self) -> None:
        self._spawn("web", [
            self.python, "-m", "uvicorn", "webapp.asgi:application", "--host", self.host,
            "--port", str(self.port), "--lifespan", "off", "--no-access-log",
        ])

    def start(self, *, timeout: float = 60.0) -> None:
        self.start_worker()
        self.start_web()
        self.wait_ready(timeout=timeout)

    def wait_ready(self, *, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with status {process.returncode}"
                                       + self._log_tail(name))
            try:
                with urllib.request.urlopen(f"{self.url}/accounts/login/", timeout=2):  # noqa: S310
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise RuntimeError(f"the web server did not answer within {timeout:.0f} s"
                           + self._log_tail("web"))

    def _log_tail(self, name: str) -> str:
        if self.log_dir is None:
            return ""
        path = self.log_dir / f"{name}.log"
        return "\n" + path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self, *, timeout: float = 15.0) -> None:
        # SIGTERM to each leader only: Celery then stops its own pool after the current
        # task; whatever is still alive at the deadline is killed with its whole group.
        for process in self.processes.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.terminate()
        deadline = time.monotonic() + timeout
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # Pool children left behind, if any.
        self.processes.clear()

    def wait(self) -> int:
        """Block until a child exits (or Ctrl-C), then stop the rest; the exit status."""
        try:
            while True:
                for name, process in self.processes.items():
                    if process.poll() is not None:
                        print(f"{name} stopped (status {process.returncode}); stopping the rest.",
                              file=sys.stderr)
                        return process.returncode or 1
                time.sleep(0.5)
        except KeyboardInterrupt:
            return 0
        finally:
            self.stop()


@contextlib.contextmanager
def running_stack(stack: Stack, *, prepare: bool = True) -> Iterator[Stack]:
    if prepare:
        stack.prepare(static=False)
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()
