"""`bin/serve` (behind `make run`) stops every process it started, on Ctrl-C or SIGTERM,
even when the signal comes twice (a service manager, or `timeout`, passing it on)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from webapp.stack import REPO_ROOT, Stack, free_port

pytestmark = pytest.mark.slow


def _children_of(var_dir: Path) -> list[str]:
    """Every process whose environment names this var folder: all that bin/serve started."""
    marker = f"WORKBENCH_VAR_DIR={var_dir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # gone meanwhile
        found.append(f"{entry.name}: {command}")
    return found


def _blocks_stop_signals(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False  # gone meanwhile
    blocked = int(next(line.split()[1] for line in status.splitlines()
                       if line.startswith("SigBlk:")), 16)
    return any(blocked & (1 << (number - 1)) for number in (signal.SIGINT, signal.SIGTERM))


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _wait_for(condition, serve, what: str) -> None:
    deadline = time.monotonic() + 300
    while not condition():
        assert serve.poll() is None, serve.stdout.read().decode()[-3000:]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2):  # noqa: S310
            return True
    except OSError:
        return False


@pytest.mark.parametrize(("when", "signals"), [
    ("running", (signal.SIGTERM, signal.SIGTERM)),
    ("running", (signal.SIGINT,)),
    # While the stack is still starting: the worker is up, the web server may not be yet.
    ("starting", (signal.SIGINT,)),
    ("starting", (signal.SIGTERM,)),
])
def test_serve_stops_every_process_it_started(tmp_path, when, signals):
    var_dir = tmp_path / "serve-var"  # in every child's command line or environment
    port = free_port()
    # A kept demo password may begin with "-" (token_urlsafe's alphabet has it); it must
    # reach ensure_user as a value, not as an option.
    var_dir.mkdir()
    (var_dir / "demo-password").write_text("-leading-dash")
    env = {**os.environ, "WORKBENCH_VAR_DIR": str(var_dir), "DATABASE_URL": "", "REDIS_URL": "",
           "EVALUATOR_SANDBOX": "none", "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    # Started as a shell starts a background job: with SIGINT ignored, which the child
    # inherits (as in CI). bin/serve must stop on Ctrl-C all the same.
    serve = subprocess.Popen([sys.executable, str(REPO_ROOT / "bin" / "serve"), "--port",
                              str(port), "--workers", "1"], env=env, cwd=REPO_ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             preexec_fn=_ignore_sigint)
    try:
        if when == "running":
            _wait_for(lambda: _answers(port), serve, "bin/serve never answered")
            started = " ".join(_children_of(var_dir))
            for part in ("uvicorn", "celery -A webapp worker", "celery -A webapp beat"):
                assert part in started, (part, started)
            # Each can receive the SIGTERM that stops it cleanly: none keeps it blocked. A
            # process blocks every signal for a moment on its own (Python's subprocess,
            # around the vfork of each child it starts; billiard, while it reports a pool
            # process's exit); a mask inherited through exec would stay.
            for child in _children_of(var_dir):
                pid = int(child.split(":")[0])
                _wait_for(lambda pid=pid: not _blocks_stop_signals(pid), serve,
                          f"{child} keeps SIGINT or SIGTERM blocked")
        else:
            _wait_for(lambda: "celery -A webapp worker" in " ".join(_children_of(var_dir)),
                      serve, "bin/serve never started a worker")
        for number in signals:
            serve.send_signal(number)
            time.sleep(0.2)
        assert serve.wait(timeout=120) is not None
        left = _children_of(var_dir)
        assert not left, left
    finally:
        if serve.poll() is None:
            serve.kill()
        for left_behind in _children_of(var_dir):  # so that a failure leaves nothing running
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(left_behind.split(":")[0]), signal.SIGKILL)


def test_a_stop_signal_another_thread_takes_while_a_child_starts_leaves_nothing(tmp_path):
    """`bin/serve` reads the doctor's report in a thread. While the main thread starts a
    child it blocks the stop signals, so the kernel hands one to that thread instead; its
    handler still runs in the main thread, in the middle of starting the child. The child
    must be on record all the same, and stopped with the rest."""
    marker = f"stack-spawn-race-{os.getpid()}-{time.monotonic_ns()}"
    stack = Stack(log_dir=tmp_path)

    def signal_from_this_thread() -> None:
        while not stack._spawning:
            time.sleep(0)
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

    firing = threading.Thread(target=signal_from_this_thread)
    firing.start()
    with stack.stopped_on_signal():
        stack._spawn("sleeper", [sys.executable, "-c", "import time; time.sleep(600)", marker])
        time.sleep(60)  # interrupted by the signal: never slept through
    firing.join()
    left = [entry.name for entry in Path("/proc").iterdir() if entry.name.isdigit()
            and marker.encode() in _read_or_empty(entry / "cmdline")]
    assert not left, left


def _read_or_empty(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
