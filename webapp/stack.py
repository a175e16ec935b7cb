"""Start the whole application as processes: the ASGI server and Celery workers.

`bin/serve` (behind `make run`) uses it in the foreground; the services tests and the
benchmark use it to start a real stack on PostgreSQL and Redis, or on the embedded
defaults, with their own environment. It imports nothing from Django, so it can set the
environment before any settings are read.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from evaluator.languages.registry import language_names

REPO_ROOT = Path(__file__).resolve().parent.parent
ALL_QUEUES = ("default", *(f"eval-{language}" for language in language_names()))


_UNBLOCK_AND_EXEC = (
    "import os, signal, sys; "
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM}); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)
"""Run by each child before its program (`python -c ... PROGRAM ARGS`), in its place."""


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
    helpers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    """Children that end by themselves (the doctor at start-up): stopped with the others,
    never started again, and their end does not stop the stack."""
    _worker_queues: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _spawning: bool = False
    _stop_deferred: bool = False

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
        """Migrate, import the bundled HumanEval (and the catalogue's datasets when asked),
        and collect static files (all idempotent)."""
        self.manage("migrate", "--no-input", "-v", "0")
        self.manage("import_dataset", "package:humaneval")
        # WORKBENCH_IMPORT_CATALOGUE=all (or keys and groups) adds the public datasets; a
        # failed download (offline, say) is reported and does not stop the start.
        wanted = self.child_env().get("WORKBENCH_IMPORT_CATALOGUE", "").replace(",", " ").split()
        if wanted:
            with contextlib.suppress(subprocess.CalledProcessError):
                self.manage("import_dataset", "--catalogue", *wanted)
        if static:
            self.manage("collectstatic", "--no-input", "-v", "0")

    def _spawn(self, name: str, argv: list[str], *, helper: bool = False) -> None:
        output: IO[bytes] | int | None
        if helper:
            output = subprocess.PIPE
        elif self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            output = (self.log_dir / f"{name}.log").open("ab")
        else:
            output = None
        # Each child leads its own process group, so stopping it also stops its pool. Ctrl-C
        # waits until the child is on record: one started but not yet known would be left.
        # Blocking the signals covers this thread; a signal that another thread (the
        # doctor's reader) takes still runs its handler here, so `stopped_on_signal` defers
        # it while `_spawning` is set. A child inherits the blocked mask through exec, and
        # would then never see the SIGTERM that `stop` sends: it unblocks both before it
        # becomes the program.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        self._spawning = True
        try:
            (self.helpers if helper else self.processes)[name] = subprocess.Popen(
                [sys.executable, "-c", _UNBLOCK_AND_EXEC, *argv],
                env=self.child_env(), cwd=REPO_ROOT, stdout=output,
                stderr=subprocess.DEVNULL if helper else subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            self._spawning = False
        if self._stop_deferred:
            self._stop_deferred = False
            raise KeyboardInterrupt

    def start_worker(self, name: str = "worker", queues: tuple[str, ...] | None = None) -> None:
        """A Celery worker serving `queues` (all of them by default); several workers with
        different queues stand in for machines with different toolchains."""
        self._worker_queues[name] = queues or self._worker_queues.get(name) or self.queues
        self._spawn(name, [
            self.python, "-m", "celery", "-A", "webapp", "worker", "--loglevel", "INFO",
            "--queues", ",".join(self._worker_queues[name]),
            "--concurrency", str(self.concurrency),
            "--without-gossip", "--without-mingle", "--hostname", f"{name}-{self.port}@%h",
        ])

    def start_web(self) -> None:
        self._spawn("web", [
            self.python, "-m", "uvicorn", "webapp.asgi:application", "--host", self.host,
            "--port", str(self.port), "--lifespan", "off", "--no-access-log",
        ])

    def start_beat(self) -> None:
        """The one beat, which runs the periodic sweeper (`runs.sweep`) in its own process
        (`webapp.runs.worker.beat`), so a sweep never waits for a free worker; its schedule file
        lives under the var folder, so a restart keeps its place."""
        var_dir = Path(self.child_env().get("WORKBENCH_VAR_DIR") or REPO_ROOT / "var")
        var_dir.mkdir(parents=True, exist_ok=True)
        self._spawn("beat", [
            self.python, "-m", "celery", "-A", "webapp", "beat", "--loglevel", "INFO",
            "--schedule", str(var_dir / "celerybeat-schedule"),
        ])

    def start_doctor(self) -> subprocess.Popen[bytes]:
        """`python -m evaluator doctor --json` in the background, for `make run` to say
        which languages are ready; its report is on the process's stdout."""
        self._spawn("doctor", [self.python, "-m", "evaluator", "doctor", "--json"], helper=True)
        return self.helpers["doctor"]

    def start(self, *, timeout: float = 60.0) -> None:
        self.start_worker()
        self.start_beat()
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
        children = [*self.processes.values(), *self.helpers.values()]
        for process in children:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.terminate()
        deadline = time.monotonic() + timeout
        for process in children:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # Pool children left behind, if any.
            _wait_until_group_gone(process.pid, deadline=time.monotonic() + timeout)
        self.processes.clear()
        self.helpers.clear()

    @contextlib.contextmanager
    def stopped_on_signal(self) -> Iterator[None]:
        """Everything started inside stops on Ctrl-C or SIGTERM, from the first child on:
        a signal that comes while the stack is still starting must not leave the children
        started so far running. A second signal (a service manager's, or `timeout`'s passing
        one on) must not cut the stop short either.

        Ctrl-C is handled here too, not left to Python's default: a process started in the
        background by a shell inherits SIGINT *ignored*, and Python then installs no
        handler, so `bin/serve` would never stop on it."""
        def terminate(_signum: int, _frame: object) -> None:
            if self._spawning:
                self._stop_deferred = True  # raised once the child is on record
                return
            raise KeyboardInterrupt

        previous = {number: signal.signal(number, terminate)
                    for number in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        except KeyboardInterrupt:
            pass
        finally:
            for number in previous:
                signal.signal(number, signal.SIG_IGN)
            try:
                self.stop()
            finally:
                for number, handler in previous.items():
                    signal.signal(number, handler)

    def wait(self) -> int:
        """Supervise the children until the web server dies; the exit status. A worker or
        beat that dies (killed, out of memory) is started again, as a service manager
        would; its lost work is taken back by the sweeper. Run it inside
        `stopped_on_signal`, which turns Ctrl-C and SIGTERM into a clean stop."""
        restarts: dict[str, Callable[[], None]] = {"beat": self.start_beat}
        for name in self._worker_queues:
            restarts[name] = functools.partial(self.start_worker, name)
        recent: dict[str, list[float]] = {name: [] for name in restarts}
        while True:
            for name, process in list(self.processes.items()):
                if process.poll() is None:
                    continue
                now = time.monotonic()
                if name in restarts:
                    recent[name] = [t for t in recent[name] if now - t < 60] + [now]
                if name in restarts and len(recent[name]) <= 5:
                    print(f"{name} stopped (status {process.returncode}); starting it again.",
                          file=sys.stderr, flush=True)
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)  # its pool, if any is left
                    restarts[name]()
                    continue
                print(f"{name} stopped (status {process.returncode}); stopping the rest.",
                      file=sys.stderr)
                return process.returncode or 1
            time.sleep(0.5)


def process_files(name: str) -> Iterator[tuple[int, bytes]]:
    """The pid and the bytes of `/proc/<pid>/<name>` of each process; one that is gone by
    the time its file is read is left out."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            data = (entry / name).read_bytes()
        except OSError:
            continue
        yield int(entry.name), data


def process_stats() -> Iterator[tuple[int, list[str]]]:
    """The pid of each process and the fields of its `/proc/<pid>/stat` that follow the
    command name (state, ppid, pgrp, ...), a name that may hold spaces and parentheses."""
    for pid, data in process_files("stat"):
        stat = data.decode()
        yield pid, stat[stat.rindex(")") + 2:].split()


def group_members(group: int) -> list[int]:
    """Live (not zombie) processes of a process group, from /proc."""
    return [pid for pid, fields in process_stats() if fields[0] != "Z" and int(fields[2]) == group]


def _wait_until_group_gone(group: int, *, deadline: float) -> None:
    """A SIGKILLed process lives on until the kernel has torn it down, which on a busy
    machine takes a while: return only when none of the group is left (or at the
    deadline), so that whoever waits for us finds nothing of ours still running."""
    while group_members(group) and time.monotonic() < deadline:
        time.sleep(0.05)


@contextlib.contextmanager
def running_stack(stack: Stack, *, prepare: bool = True) -> Iterator[Stack]:
    if prepare:
        stack.prepare(static=False)
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()
