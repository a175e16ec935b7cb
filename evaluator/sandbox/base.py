"""The sandbox interface: limits, backends, and the registry that levels and `auto` use.

A backend knows one thing: how to launch a command (our job runner) inside its
isolation. Everything per-sample (fork, limits, scratch directory, output caps, the
report channel) is done by the runner inside the sandbox, identically for every backend,
so the backends differ only in what they isolate.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
"""Standard-library-only files that run inside the sandbox (the runner, the harnesses)."""


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the program inside it)."""


WALL_BACKSTOP_FACTOR = 3.0
WALL_BACKSTOP_SECONDS = 5.0


def wall_backstop(cpu_seconds: float) -> float:
    """The wall-clock limit that goes with a CPU limit (see `SandboxLimits.for_timeout`)."""
    return WALL_BACKSTOP_FACTOR * cpu_seconds + WALL_BACKSTOP_SECONDS


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to every program, the same under every backend."""

    wall_seconds: float = 10.0
    cpu_seconds: float = 10.0
    memory_mb: int = 1024
    processes: int = 64
    output_bytes: int = 8 * 1024 * 1024
    """A program that writes more than this to stdout and stderr together is killed."""
    file_size_mb: int = 16
    scratch_mb: int = 128
    """Size of the private scratch file system, where the backend provides one."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def for_timeout(cls, seconds: float, **rest: Any) -> SandboxLimits:
        """Limits for a user's one timeout: `seconds` of CPU time decide, and the wall
        clock is only a backstop, at `wall_backstop(seconds)` (3 × seconds + 5 s).

        CPU time is what a program costs whatever else the machine does; wall time grows
        with the load, and a wall-clock limit flips verdicts on a busy machine. The
        backstop is there for a program that does not compute but waits (sleeps, blocks
        on a read), which no CPU limit ends. It is set so that it does not decide for a
        program that computes: with both cores busy and five processes competing for them
        (two workers' sandboxes and three other jobs, each in its own scheduling group),
        a sandbox gets about two fifths of a core, and a program that uses its whole CPU
        limit takes 2.5 times that on the wall clock, so 3 × leaves room. The 5 s cover
        what is wall time but not the program's CPU time: a busy runner's start, gVisor's
        slow forks and page faults, being scheduled late; they matter most for short
        limits. Under gVisor CPU time is not load-proof: its Sentry counts time that the
        program waited for a CPU as CPU time (docs/sandbox.md, "Verdicts under load").
        """
        return cls(cpu_seconds=seconds, wall_seconds=wall_backstop(seconds), **rest)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxLimits:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown sandbox limit(s): {', '.join(sorted(unknown))}")
        return cls(**data)

    def replace(self, **changes: Any) -> SandboxLimits:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Mount:
    """A host path the runner needs inside the sandbox (a toolchain, a cache).

    Its resolved source is bound at `target`, else at `source` as named (the path the
    jobs use), or, when that path is a link inside another mount, where the link leads.
    """

    source: Path
    target: Path | None = None
    writable: bool = False


@dataclass(frozen=True)
class LaunchSpec:
    """What a backend needs to start one runner."""

    argv: Sequence[str]
    mounts: Sequence[Mount] = ()
    env: dict[str, str] = field(default_factory=dict)
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    runner_processes: int = 256
    """Process budget for the whole sandbox: several jobs' children, plus the runner."""
    workdir: Path | None = None
    """A private host directory for this runner's sandbox files (a bundle, generated
    /etc files); made by the caller, removed by it after the runner has ended."""
    stage: Callable[[str], str] | None = None
    """Gives a world-readable copy of a read-only source the sandbox's user cannot
    reach (`rootfs.Stage.copy_of`); without it such a source is an error."""


class Backend(ABC):
    """One isolation technology."""

    name: ClassVar[str]
    strength: ClassVar[int]
    """Informational; the order of the levels (`levels.LEVELS`) is what `auto` follows."""
    memory_overhead_mb: ClassVar[int] = 64
    """Memory the sandbox itself uses besides the program: added to the cgroup limit."""
    isolated: ClassVar[bool] = True
    """False only for `none`: the runner then shares the host's processes and files."""
    cpu_time_exact: ClassVar[bool] = True
    """False when the CPU time a program is charged includes time it waited for a CPU
    (gVisor's ptrace platform): a CPU limit is then in effect a wall-clock one."""
    keeps_host_tasks: ClassVar[bool] = False
    """True when the sandbox itself may keep host tasks after a job (gVisor's Sentry
    threads): the session then replaces a runner whose task count stays high."""

    @abstractmethod
    def probe(self) -> str | None:
        """Try the backend once; return None if it works, else the reason it does not."""

    @abstractmethod
    def command(self, spec: LaunchSpec) -> list[str]:
        """The host command that starts `spec.argv` inside this backend."""

    chosen: str = "requested"
    """How this backend came to be used: "requested" by name, or `auto`'s reason."""

    @property
    def level(self) -> str:
        """The isolation level this backend provides (`levels.LEVELS`)."""
        from evaluator.sandbox.levels import level_of_backend

        return level_of_backend(self.name)

    def python(self) -> str:
        """The interpreter the runner uses inside this backend."""
        return sys.executable

    def environment(self, spec: LaunchSpec) -> dict[str, str] | None:
        """The host environment for the launching process (None: a minimal default)."""
        return None

    def host_pids(self, spec: LaunchSpec) -> int:
        """The pids-cgroup limit for the whole runner, as the host counts processes."""
        return spec.runner_processes

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name}

    def try_launch(self, timeout: float = 60.0) -> str | None:
        """Start a tiny sandbox that runs a Python one-liner: None if it answered."""
        workdir = Path(tempfile.mkdtemp(prefix=f"evaluator-probe-{self.name}-"))
        try:
            spec = LaunchSpec(
                argv=[self.python(), "-I", "-S", "-c", "import os; print('ok', os.getuid())"],
                workdir=workdir,
            )
            try:
                done = subprocess.run(
                    self.command(spec), env=self.environment(spec), capture_output=True,
                    timeout=timeout, stdin=subprocess.DEVNULL, check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"the test sandbox did not run: {exc}"
            if done.returncode != 0 or not done.stdout.startswith(b"ok"):
                said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
                return (f"the test sandbox failed (status {done.returncode})"
                        + (f": {said[-500:]}" if said else ""))
            return None
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
