"""Host-side control groups: one per runner, bounding memory and processes from outside.

Limits set inside a sandbox are only as good as the sandbox: `RLIMIT_NPROC` does not bind
root, `RLIMIT_AS` bounds one process but not sixty-four of them, and a tmpfs is memory.
A cgroup around the whole runner (the launcher, the sandbox, every process in it) is the
limit nothing inside can lift, and its `oom_kill` counter tells the host that a job ended
because of memory rather than by a crash.

Both cgroup v1 (separate `memory` and `pids` hierarchies, as on this machine kind) and a
pure v2 tree are handled. Each group is created below the cgroup this process already
lives in, so whatever accounts for the worker also accounts for its sandboxes. When no
group can be created (not root, no delegation), `SandboxCgroup.create` returns None and
the runner's rlimits are the only limits.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()

JOIN_SCRIPT = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); '
    'done; exec "$@"'
)
"""Moves the launcher into the group before it starts anything, then becomes the command.

A shell is used because `Popen(preexec_fn=...)` is unsafe in a threaded worker, and
writing the pid after the start would race with the first fork.
"""


def own_path(controller: str) -> str | None:
    """This process's cgroup path in `controller`'s hierarchy ("" key for v2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and controller in parts[1].split(","):
            return parts[2]
        if len(parts) == 3 and controller == "" and parts[0] == "0" and parts[1] == "":
            return parts[2]
    return None


def _keyed_value(path: Path, key: str) -> int | None:
    """The number after `key` in a cgroup file of `key value` lines (`memory.events`,
    `cpu.stat`...); None when the file cannot be read or has no such line."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return None


class SandboxCgroup:
    """The memory and pids groups of one runner."""

    def __init__(self, dirs: dict[str, Path], version: int) -> None:
        self.dirs = dirs
        """Controller name ("memory", "pids") -> the group's directory."""
        self.version = version
        self.pids_limit = 0

    # -- creation ---------------------------------------------------------------------
    @classmethod
    def create(cls, *, memory_bytes: int, pids: int, label: str = "runner") -> SandboxCgroup | None:
        name = f"evaluator-{label}-{os.getpid()}-{next(_counter)}"
        if (CGROUP_ROOT / "cgroup.controllers").exists():
            group = cls._create_v2(name)
        else:
            group = cls._create_v1(name)
        if group is None:
            return None
        try:
            group.set_memory(memory_bytes)
            group.set_pids(pids)
        except OSError:
            group.remove()
            return None
        return group

    @classmethod
    def _create_v1(cls, name: str) -> SandboxCgroup | None:
        dirs: dict[str, Path] = {}
        for controller in ("memory", "pids"):
            own = own_path(controller)
            mount = CGROUP_ROOT / controller
            if own is None or not (mount / "cgroup.procs").exists():
                continue
            path = _new_group(mount / own.lstrip("/"), name)
            if path is not None:
                dirs[controller] = path
        if "memory" not in dirs or "pids" not in dirs:
            # Half a cgroup would silently leave one limit to the rlimits: all or nothing.
            SandboxCgroup(dirs, 1).remove()
            return None
        # CPU accounting only informs (see `cpu_usage_ns`): a group without it is used.
        own = own_path("cpuacct")
        mount = CGROUP_ROOT / "cpuacct"
        if own is not None and (mount / "cpuacct.usage").exists():
            path = _new_group(mount / own.lstrip("/"), name)
            if path is not None:
                dirs["cpuacct"] = path
        return cls(dirs, 1)

    @classmethod
    def _create_v2(cls, name: str) -> SandboxCgroup | None:
        own = own_path("")
        if own is None:
            return None
        path = _new_group(CGROUP_ROOT / own.lstrip("/"), name)
        if path is None:
            return None
        if not (path / "memory.max").exists() or not (path / "pids.max").exists():
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return cls({"memory": path, "pids": path}, 2)

    # -- limits -----------------------------------------------------------------------
    def set_memory(self, limit: int) -> None:
        path = self.dirs["memory"]
        if self.version == 2:
            (path / "memory.max").write_text(str(limit))
            with contextlib.suppress(OSError):
                (path / "memory.swap.max").write_text("0")
            return
        # v1 wants memsw >= limit at every moment: raise memsw first, lower it last.
        memsw = path / "memory.memsw.limit_in_bytes"
        try:
            current = int((path / "memory.limit_in_bytes").read_text())
        except (OSError, ValueError):
            current = 0
        if limit >= current:
            with contextlib.suppress(OSError):
                memsw.write_text(str(limit))
            (path / "memory.limit_in_bytes").write_text(str(limit))
        else:
            (path / "memory.limit_in_bytes").write_text(str(limit))
            with contextlib.suppress(OSError):
                memsw.write_text(str(limit))

    def set_pids(self, limit: int) -> None:
        (self.dirs["pids"] / "pids.max").write_text(str(limit))
        self.pids_limit = limit

    # -- state ------------------------------------------------------------------------
    def oom_kills(self) -> int:
        """How many processes the kernel has killed in this group for want of memory."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        return _keyed_value(self.dirs["memory"] / name, "oom_kill") or 0

    def pids_refused(self) -> int:
        """How many forks the pids limit has refused."""
        return _keyed_value(self.dirs["pids"] / "pids.events", "max") or 0

    def cpu_usage_ns(self) -> int | None:
        """CPU time, user and system, that every process of the group has used so far, as
        the host counts it: only time spent running, never time spent waiting for a CPU.
        None when the group has no CPU accounting."""
        try:
            if self.version == 2:
                usec = _keyed_value(self.dirs["memory"] / "cpu.stat", "usage_usec")
                return None if usec is None else usec * 1000
            if "cpuacct" not in self.dirs:
                return None
            return int((self.dirs["cpuacct"] / "cpuacct.usage").read_text())
        except (OSError, ValueError):
            return None

    def pids_current(self) -> int:
        """Host tasks (processes and threads) in the group now."""
        try:
            return int((self.dirs["pids"] / "pids.current").read_text())
        except (OSError, ValueError):
            return 0

    def procs_files(self) -> list[str]:
        return [str(path / "cgroup.procs") for path in dict.fromkeys(self.dirs.values())]

    def members(self) -> list[int]:
        pids: set[int] = set()
        for path in self.dirs.values():
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(p) for p in (path / "cgroup.procs").read_text().split())
        return sorted(pids)

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv`, preceded by a shell that first moves itself into this group."""
        files = self.procs_files()
        return ["/bin/sh", "-c", JOIN_SCRIPT, "evaluator-cgroup-join", str(len(files)), *files,
                *argv]

    # -- teardown ---------------------------------------------------------------------
    def kill_all(self, timeout: float = 5.0) -> bool:
        """SIGKILL every process in the group until it is empty; False if some remain."""
        deadline = time.monotonic() + timeout
        while True:
            members = self.members()
            if not members:
                return True
            if time.monotonic() > deadline:
                return False
            if self.version == 2 and (self.dirs["pids"] / "cgroup.kill").exists():
                with contextlib.suppress(OSError):
                    (self.dirs["pids"] / "cgroup.kill").write_text("1")
            for pid in members:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for path in dict.fromkeys(self.dirs.values()):
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    # Killed processes leave the group a moment after they die.
                    time.sleep(0.02)


def _new_group(parent: Path, name: str) -> Path | None:
    """The directory of a new group `name` under `parent`, once the stale groups there are
    removed; None when it cannot be made."""
    _remove_stale(parent)
    path = parent / name
    try:
        path.mkdir()
    except OSError:
        return None
    return path


def _remove_stale(parent: Path) -> None:
    """Remove empty groups left by workers that died without cleaning up."""
    try:
        entries = list(parent.glob("evaluator-*-*-*"))
    except OSError:
        return
    for entry in entries:
        try:
            owner = int(entry.name.rsplit("-", 2)[1])
        except (IndexError, ValueError):
            continue
        if owner == os.getpid() or Path(f"/proc/{owner}").exists():
            continue
        with contextlib.suppress(OSError):
            entry.rmdir()
