"""The host side of a sandboxed runner: start it once, feed it many jobs.

Starting a sandbox costs far more than running one HumanEval program (about 60 ms for
bubblewrap and 350 ms for gVisor, against 20–40 ms for the program), so each worker
keeps one runner and sends it job after job. A runner that dies or stops answering is
replaced; the job it was running is reported, and nothing else is lost.

The session also owns the runner's host-side limits: a cgroup around the whole sandbox
(`cgroups.SandboxCgroup`) whose memory limit follows each job's, and whose OOM counter
lets it mark a step `oom_killed` (or, when the memory limit took the whole sandbox down,
answer for the job as a memory failure instead of reporting a crash).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.sandbox.base import (
    RUNTIME_DIR,
    Backend,
    LaunchSpec,
    Mount,
    SandboxError,
    SandboxLimits,
)
from evaluator.sandbox.cgroups import SandboxCgroup
from evaluator.sandbox.rootfs import Stage
from evaluator.surrogates import escape_lone_surrogates, might_hold_lone_surrogate

START_TIMEOUT = 60.0
"""Seconds a runner may take to say it is ready (gVisor's first start is slow)."""
ANSWER_GRACE = 10.0
"""Seconds past a job's own time limits before the host gives up on the runner."""
RUNTIME_TARGET = Path("/opt/evaluator")
"""Where a sandbox sees its copy of the runtime files."""
CLOSE_GRACE = 2.0
"""Seconds a runner may take to end by itself when its session closes."""
MB = 1024 * 1024
WORKDIR_PREFIX = "evaluator-"
HARNESSES_VARIABLE = "EVALUATOR_HARNESSES"
"""The harnesses a runner imports as it starts (host paths here, the runner's there)."""
HOST_CPU_MARGIN = 0.1
"""Seconds of CPU the sandbox may use for a job beyond its program's limit before the
host stops the program (`_CpuWatch`): the runner's own work for the job (a fork, compiling
a problem's tests) is in the cgroup's figure too."""
CPU_POLL_MIN = 0.005
"""The shortest wait between two readings of the cgroup's CPU time."""
RESTART_CPU_CLOCK = "restart_cpu_clock"
"""The runner's word that the job's program runs again from its start, after work that
was not the program's (runner.RESTART_CPU_CLOCK)."""


def stop_line(epoch: int) -> bytes:
    """Asks the runner to end run `epoch` of the job's program as a CPU timeout
    (runner.STOP_REQUEST)."""
    return json.dumps({"stop": "cpu", "epoch": epoch}).encode() + b"\n"

_open_sessions: weakref.WeakSet[RunnerSession] = weakref.WeakSet()
_stage_lock = threading.Lock()
_stages: dict[int, Stage] = {}
"""This process's staged copies (`_staged_copy`), by pid: a forked child makes its own."""


@atexit.register
def _close_open_sessions() -> None:
    """A worker that exits without closing its sessions still leaves nothing behind."""
    for session in list(_open_sessions):
        session.close()
    stage = _stages.pop(os.getpid(), None)
    if stage is not None:
        shutil.rmtree(stage.root, ignore_errors=True)


def _staged_copy(source: str) -> str:
    """A copy of `source` that the sandbox's user can read, made once per content by
    this process, in a directory named like the workdirs (removed at exit, or by
    `_remove_stale_workdirs` once this process is gone)."""
    with _stage_lock:
        stage = _stages.get(os.getpid())
        if stage is None:
            try:
                root = Path(tempfile.mkdtemp(
                    prefix=f"{WORKDIR_PREFIX}stage-{os.getpid()}-"))
                root.chmod(0o711)
            except OSError as exc:
                raise SandboxError(f"no directory for the sandbox's staged copies: {exc}"
                                   ) from exc
            stage = _stages[os.getpid()] = Stage(root)
    return stage.copy_of(source)


def _remove_stale_workdirs() -> None:
    """Remove the session directories of workers that died without cleaning up."""
    root = Path(tempfile.gettempdir())
    for path in root.glob(WORKDIR_PREFIX + "*-*-*"):
        try:
            owner = int(path.name.split("-")[2])
        except (IndexError, ValueError):
            continue
        if owner != os.getpid() and not Path(f"/proc/{owner}").exists():
            shutil.rmtree(path, ignore_errors=True)


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
        self.cgroup: SandboxCgroup | None = None
        self.workdir: Path | None = None
        self._memory_limit = 0
        self._buffer = b""
        self._stderr_tail = b""
        self._lock = threading.Lock()
        self._busy = False
        """A job was sent and its answer not read: the runner is not idle."""

    # -- life cycle -------------------------------------------------------------------
    def start(self) -> None:
        try:
            self._launch()
        except BaseException:
            self.close()
            raise
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

    def _launch(self) -> None:
        if self.starts == 0:
            _remove_stale_workdirs()
        _open_sessions.add(self)
        self.workdir = Path(tempfile.mkdtemp(
            prefix=f"{WORKDIR_PREFIX}{self.backend.name}-{os.getpid()}-"))
        # Readable by an unprivileged launcher (bwrap runs as nobody); nothing secret here.
        self.workdir.chmod(0o711)
        if self.backend.isolated:
            # A private copy: the sandbox sees the runner's files and not the project
            # tree (which an unprivileged launcher might not even be able to reach).
            runtime = self.workdir / "runtime"
            runtime.mkdir(mode=0o755)
            for source in sorted(RUNTIME_DIR.glob("*.py")):
                shutil.copyfile(source, runtime / source.name)
                (runtime / source.name).chmod(0o644)
            runtime_mount = Mount(runtime, RUNTIME_TARGET)
            runner = RUNTIME_TARGET / "runner.py"
        else:
            runtime_mount, runner = Mount(RUNTIME_DIR), RUNTIME_DIR / "runner.py"
        env = dict(self.env)
        if env.get(HARNESSES_VARIABLE):
            env[HARNESSES_VARIABLE] = os.pathsep.join(
                self.sandbox_path(path) for path in env[HARNESSES_VARIABLE].split(os.pathsep))
        spec = LaunchSpec(
            argv=[self.backend.python(), "-I", str(runner)],
            mounts=(runtime_mount, *self.mounts),
            env=env,
            limits=self.limits,
            workdir=self.workdir,
            stage=_staged_copy,
        )
        argv = self.backend.command(spec)
        self._memory_limit = self._cgroup_memory(self.limits.memory_mb)
        self.cgroup = SandboxCgroup.create(
            memory_bytes=self._memory_limit, pids=self.backend.host_pids(spec),
            label=self.backend.name,
        )
        if self.cgroup is not None:
            argv = self.cgroup.wrap(argv)
        host_env = self.backend.environment(spec)
        if host_env is None:
            host_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=host_env,
            start_new_session=True,
            close_fds=True,
        )

    def close(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            with contextlib.suppress(OSError):
                if process.stdin:
                    process.stdin.close()
            if process.poll() is None and not self._busy:
                # An idle runner ends at its input's end, after stopping the services it
                # keeps (so their CPU time is accounted to us); a busy or stuck one is
                # killed at once, below.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=CLOSE_GRACE)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
            for stream in (process.stdout, process.stderr):
                with contextlib.suppress(OSError):
                    if stream:
                        stream.close()
        self._busy = False
        cgroup, self.cgroup = self.cgroup, None
        if cgroup is not None:
            # Whatever the sandbox left (a Sentry, a Gofer, anything detached) ends here.
            cgroup.remove()
        workdir, self.workdir = self.workdir, None
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
        _open_sessions.discard(self)

    def __enter__(self) -> RunnerSession:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ensure_started(self) -> None:
        """Start the runner now if it is not running: a job then finds it ready."""
        with self._lock:
            self._ensure_started()

    def _ensure_started(self) -> None:
        if not self.alive:
            self.close()
            self.start()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def describe(self) -> dict[str, Any]:
        """How this runner is confined, for logs and results."""
        return {
            "backend": self.backend.name,
            "cgroup": self.cgroup is not None,
            "memory_limit_mb": self._memory_limit // MB if self.cgroup else None,
            "runner": {k: v for k, v in self.info.items() if k != "ready"},
        }

    def sandbox_path(self, path: str) -> str:
        """Where the runner finds host `path`: under the target of the mount that holds
        it, when the backend mounts it elsewhere (the `none` backend mounts nothing)."""
        if not self.backend.isolated:
            return path
        for mount in self.mounts:
            if mount.target is not None and Path(path).is_relative_to(mount.source):
                return str(mount.target / Path(path).relative_to(mount.source))
        return path

    def _cgroup_memory(self, memory_mb: int) -> int:
        # The program's own limit, the scratch tmpfs (its pages are charged here too),
        # and the sandbox's own needs.
        return (memory_mb + self.limits.scratch_mb + self.backend.memory_overhead_mb) * MB

    # -- jobs -------------------------------------------------------------------------
    def run(self, job: dict[str, Any],
            on_progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Send one job and wait for its result.

        With `on_progress`, the runner streams each test record as the program reports
        it, and `on_progress` is called with it before the final answer arrives.

        Raises RunnerDied when the runner ends or hangs; the session is then closed, and
        the next `run` starts a fresh runner.
        """
        with self._lock:
            self._ensure_started()
            before = self._prepare_cgroup(job)
            started = time.monotonic()
            if on_progress is not None:
                job = {**job, "stream": True}
            watch = self._cpu_watch(job, before)
            if watch is not None:
                job = {**job, "cpu_by_host": True}
            harness = job.get("harness")
            if isinstance(harness, dict) and self.backend.isolated:
                job = {**job, "harness": {**harness, "path": self.sandbox_path(harness["path"])}}
            self._send(job)
            try:
                answer = self._await_answer(job, started, on_progress, watch)
            except RunnerDied as exc:
                return self._runner_died(exc, job, started, before)
            self._busy = False
            self._account(answer, before)
            self._retire_if_spent(answer)
            return answer

    def _prepare_cgroup(self, job: dict[str, Any]) -> _CgroupCounts | None:
        """Fit the cgroup's memory limit to `job`; its counters before the job."""
        cgroup = self.cgroup
        if cgroup is None:
            return None
        limit = self._cgroup_memory(_job_memory_mb(job, self.limits.memory_mb))
        if limit != self._memory_limit:
            with contextlib.suppress(OSError):
                cgroup.set_memory(limit)
                self._memory_limit = limit
        return _CgroupCounts(oom_kills=cgroup.oom_kills(), pids_refused=cgroup.pids_refused(),
                             cpu_ns=cgroup.cpu_usage_ns())

    def _cpu_watch(self, job: dict[str, Any],
                   before: _CgroupCounts | None) -> _CpuWatch | None:
        """A watch on the sandbox's CPU time for `job`, when the backend's own CPU clock
        is not exact (gVisor's counts time spent waiting for a CPU) and the host can read
        the sandbox's: the host then ends the program at its CPU limit (`_CpuWatch`).
        Only a harness job runs one timed program; other jobs keep the rlimit."""
        cgroup = self.cgroup
        limit = job.get("limits", {}).get("cpu_seconds")
        if (self.backend.cpu_time_exact or cgroup is None or before is None
                or before.cpu_ns is None or job.get("kind") != "harness" or not limit):
            return None
        return _CpuWatch(cgroup, float(limit), before.cpu_ns, self._send_stop)

    def _send_stop(self, epoch: int) -> None:
        process = self.process
        if process is None or process.stdin is None:
            return
        # A runner that is gone shows it when its answer is read.
        with contextlib.suppress(OSError):
            process.stdin.write(stop_line(epoch))
            process.stdin.flush()

    def _send(self, job: dict[str, Any]) -> None:
        assert self.process is not None
        assert self.process.stdin is not None
        self._busy = True
        try:
            self.process.stdin.write(json.dumps(job).encode() + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            self.close()
            raise RunnerDied(f"the runner is gone: {exc}") from exc

    def _await_answer(self, job: dict[str, Any], started: float,
                      on_progress: Callable[[dict[str, Any]], None] | None,
                      watch: _CpuWatch | None = None) -> dict[str, Any]:
        """The runner's answer, passing on the progress records that come before it."""
        deadline = started + _job_budget(job) + ANSWER_GRACE
        while True:
            answer = self._read_line(deadline - time.monotonic(), watch)
            if "progress" in answer:
                if on_progress is not None:
                    on_progress(answer["progress"])
            elif answer.get(RESTART_CPU_CLOCK):
                if watch is not None:
                    watch.restart()
            else:
                return answer

    def _runner_died(self, exc: RunnerDied, job: dict[str, Any], started: float,
                     before: _CgroupCounts | None) -> dict[str, Any]:
        """The runner ended while it held `job`: a memory answer when the cgroup's memory
        limit ended it, else RunnerDied (saying so when it reached its process limit)."""
        cgroup = self.cgroup
        oom = cgroup is not None and before is not None and cgroup.oom_kills() > before.oom_kills
        refused = (cgroup is not None and before is not None
                   and cgroup.pids_refused() > before.pids_refused)
        self.close()
        if oom:
            # gVisor: the kernel's OOM killer hit the Sentry; the program's memory
            # use did that, so the job failed on memory, not the sandbox.
            return _memory_answer(job, time.monotonic() - started)
        if refused:
            raise RunnerDied(f"{exc}; the sandbox reached its process limit") from exc
        raise exc

    def _account(self, answer: dict[str, Any], before: _CgroupCounts | None) -> None:
        """Add what the cgroup saw during the job to its last step."""
        cgroup = self.cgroup
        steps = answer.get("steps") or []
        if cgroup is None or before is None or not steps:
            return
        if cgroup.oom_kills() > before.oom_kills:
            steps[-1]["oom_killed"] = True
        cpu_after = cgroup.cpu_usage_ns()
        if before.cpu_ns is not None and cpu_after is not None:
            # What the whole sandbox (runner, program, and under gVisor the Sentry
            # working for it) used of the host's CPU during this job: unlike the
            # program's own CPU time under gVisor, waiting for a CPU is not in it.
            steps[-1]["sandbox_cpu_ms"] = round((cpu_after - before.cpu_ns) / 1e6, 3)

    def _retire_if_spent(self, answer: dict[str, Any]) -> None:
        """Close a runner that should not take the next job; the next `run` starts a
        fresh one."""
        cgroup = self.cgroup
        if answer.get("runner_poisoned"):
            # The runner answered, then ended.
            self.close()
        elif (self.backend.keeps_host_tasks and cgroup is not None
              and cgroup.pids_current() > cgroup.pids_limit // 4):
            # Tasks the sandbox kept after the job (gVisor's Sentry after a fork bomb):
            # the next job starts in a fresh sandbox, far from the host limit. The
            # Sentry never returns them and every job adds a few, so a bomb that
            # stopped just short of this line is replaced after some later job.
            self.close()

    def _read_line(self, timeout: float, watch: _CpuWatch | None = None) -> dict[str, Any]:
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
            wait = min(remaining, 1.0) if watch is None else min(remaining, watch.wait())
            ready, _, _ = select.select([out_fd, err_fd], [], [], wait)
            if watch is not None:
                watch.check()
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
        if might_hold_lone_surrogate(line):
            # A program can make a lone surrogate (`raise ValueError("\\ud800")`); as it is,
            # no results file, database or page could hold its message.
            answer = escape_lone_surrogates(answer)
        return answer

    def _stderr_hint(self) -> str:
        text = self._stderr_tail.decode("utf-8", "replace").strip()
        return f"; it said: {text[-1000:]}" if text else ""


class _CpuWatch:
    """Ends a job's program once the whole sandbox has used its CPU limit of the host's
    CPU, as the sandbox's cgroup counts it.

    gVisor charges a program for the time its thread waited for a CPU, so on a busy
    machine its own RLIMIT_CPU ends an endless loop after a fraction of its limit of real
    CPU, and the engine must run it again alone to know. The cgroup counts only what the
    sandbox (the program, and the Sentry working for it) really ran: a loop stopped by it
    has spent its budget, and is not run again (`engine.load_may_decide`). The limit is
    RLIMIT_CPU's (whole seconds, rounded up) plus `HOST_CPU_MARGIN` for the runner's own
    work; the program's rlimit is then only a backstop at its wall-clock limit.
    """

    def __init__(self, cgroup: SandboxCgroup, cpu_seconds: float, start_ns: int,
                 stop: Callable[[int], None]) -> None:
        self.cgroup = cgroup
        self.budget_ns = int((math.ceil(cpu_seconds) + HOST_CPU_MARGIN) * 1e9)
        self.start_ns = start_ns
        self.stop = stop
        self.stopped = False
        self.epoch = 0
        """Which run of the program the clock times: the runner's restarts count them."""
        self.cpus = os.cpu_count() or 1

    def _used_ns(self) -> int | None:
        now = self.cgroup.cpu_usage_ns()
        return None if now is None else now - self.start_ns

    def restart(self) -> None:
        """Count from now, for the program's next run: what the sandbox did so far was
        not that run's (a stop sent for an earlier run, the runner ignores)."""
        now = self.cgroup.cpu_usage_ns()
        if now is not None:
            self.start_ns = now
        self.epoch += 1
        self.stopped = False

    def wait(self) -> float:
        """Seconds before the budget can be spent, at the earliest (every CPU busy)."""
        used = self._used_ns()
        if self.stopped or used is None:
            return 1.0
        return min(1.0, max(CPU_POLL_MIN, (self.budget_ns - used) / 1e9 / self.cpus))

    def check(self) -> None:
        used = self._used_ns()
        if not self.stopped and used is not None and used >= self.budget_ns:
            self.stopped = True
            self.stop(self.epoch)


@dataclass(frozen=True)
class _CgroupCounts:
    """A sandbox cgroup's counters, read before a job."""

    oom_kills: int
    pids_refused: int
    cpu_ns: int | None


def _job_memory_mb(job: dict[str, Any], default: int) -> int:
    """The largest memory limit among the job's steps."""
    if job.get("kind") == "command":
        values = [int(s.get("limits", {}).get("memory_mb", default)) for s in job["steps"]]
        return max(values, default=default)
    return int(job.get("limits", {}).get("memory_mb", default))


def _memory_answer(job: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The runner's answer for a job whose memory use brought the whole sandbox down."""
    return {
        "id": job.get("id"),
        "steps": [{
            "name": "compile" if job.get("kind") == "service" else "run",
            "exit_code": None, "signal": signal.SIGKILL, "timed_out": False,
            "output_exceeded": False, "oom_killed": True, "wall_ms": round(seconds * 1000, 3),
            "cpu_ms": None, "max_rss_kb": None, "stdout": "",
            "stderr": "the sandbox was killed by its memory limit",
        }],
        "records": [],
        "forged_lines": 0,
        "outputs": [],
        "sandbox_restarted": True,
    }


def _job_budget(job: dict[str, Any]) -> float:
    """The most wall time a job may legitimately take: the sum of its steps' limits."""
    if job.get("kind") == "command":
        return sum(float(s.get("limits", {}).get("wall_seconds", 10)) + 1 for s in job["steps"])
    return float(job.get("limits", {}).get("wall_seconds", 10)) + 1
