"""The `gvisor` backend: gVisor's `runsc`, with an OCI bundle we write ourselves.

gVisor puts a user-space kernel (the Sentry) between the program and the host: the
program's system calls are served by the Sentry, which itself may use only a small,
seccomp-filtered set of host calls. This is the isolation the Codex paper used.

Why not `runsc do`: it shows the host's whole file system (read-only), and its writable
overlay lives in host memory without a bound. Instead each runner gets a bundle:
- the root is an empty directory, read-only, plus read-only binds of the system paths
  and the toolchain (`rootfs.build_view`), the same view bwrap gives;
- `/tmp` is a gVisor tmpfs with `size=`, the only writable place;
- network `none` (only `lo`); new PID, IPC, UTS and mount namespaces;
- the runner is PID 1 and root *inside* the sandbox, with only the capabilities it needs
  to give each program its own identity (SETUID, SETGID, SETPCAP, CHOWN, KILL,
  DAC_OVERRIDE, FOWNER). Every program runs as nobody with no capabilities, so it cannot signal the
  runner, and `RLIMIT_NPROC` binds it. That rlimit is what stops a fork bomb: a pids
  cgroup alone made the Sentry panic when it could not create its stub processes.

Memory and processes are also bounded from the host by the session's cgroup, around
`runsc` and everything it starts (`--ignore-cgroups` keeps runsc from making its own).
The platform is `systrap` when this runsc has it (trixie's 2024 build, which CI and the
image install pinned), else `ptrace` (bookworm's 2022 build); `kvm` hangs on this machine
kind with both. docs/sandbox.md, "Where gVisor's time goes", has the measurements.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from evaluator.sandbox.base import LaunchSpec
from evaluator.sandbox.confined import ConfinedBackend
from evaluator.sandbox.rootfs import (
    SANDBOX_GID,
    SANDBOX_UID,
    SCRATCH,
    build_view,
    in_scratch,
    runner_environment,
)
from evaluator.sandbox.seccomp_filter import compiled_filter

SECCOMP_TARGET = "/etc/evaluator-seccomp.bpf"
"""Where the runner finds the compiled system-call filter it installs on itself."""
RUNSC = os.environ.get("EVALUATOR_RUNSC", "runsc")
"""The runsc binary: another build can be tried without installing it."""
PLATFORM_OVERRIDE = os.environ.get("EVALUATOR_RUNSC_PLATFORM", "")
"""A platform for runsc to use instead of the one `platform()` picks."""
RUNNER_CAPABILITIES = [
    "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_CHOWN", "CAP_KILL", "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
]
_ids = itertools.count()


@functools.cache
def _flags() -> str:
    """What this runsc's `runsc flags` lists (empty when it cannot say)."""
    try:
        listing = subprocess.run(
            [RUNSC, "flags"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return listing.stdout + listing.stderr


def platform() -> str:
    """`systrap` where this runsc has it (builds from mid-2023 on), else `ptrace`.

    Each system call and page fault of the program is a trap into the Sentry; `ptrace`
    makes each one a round of ptrace stops and host context switches, `systrap` a
    signal handled in the program's own thread and a shared-memory hand-off.
    """
    if PLATFORM_OVERRIDE:
        return PLATFORM_OVERRIDE
    return "systrap" if "systrap" in _flags() else "ptrace"


def file_access_flags() -> list[str]:
    """Keep every file access in the Gofer, as older builds always did.

    Builds from 2023 on default to `directfs`, where the Sentry opens host files itself;
    files are then no longer reached only through the separate Gofer, which is one of
    the layers docs/sandbox.md counts on. It cost nothing measurable to keep it.
    """
    return ["--directfs=false"] if "-directfs" in _flags() else []


def _mount_point(rootfs: Path, target: str, *, directory: bool) -> None:
    """Make `target`'s mount point in the bundle's root, open to the programs (nobody)
    whatever the worker's umask."""
    point = rootfs / target.lstrip("/")
    for parent in reversed(point.parents):
        if not parent.exists():
            parent.mkdir()
            parent.chmod(0o755)
    if directory:
        point.mkdir(exist_ok=True)
        point.chmod(0o755)
    else:
        point.touch(exist_ok=True)
        point.chmod(0o644)


class GvisorBackend(ConfinedBackend):
    name = "gvisor"
    strength = 30
    memory_overhead_mb = 384
    """The Sentry and the Gofer live in the same cgroup as the program. Each task costs
    the Sentry memory: with 192 MB a fork bomb's children (stopped inside by
    RLIMIT_NPROC, but kept) pushed a long-lived sandbox over the cgroup limit. The
    program's own memory limit is an rlimit inside, so this slack is the Sentry's only."""
    keeps_host_tasks = True
    cpu_time_exact = False

    def probe(self) -> str | None:
        if shutil.which(RUNSC) is None:
            return "gVisor is not installed (Debian package: runsc)"
        if os.geteuid() != 0:
            return "runsc needs root to build its sandbox here (rootless OCI runs are not used)"
        return self.runner_missing() or self.try_launch(timeout=60)

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "platform": platform(),
            "seccomp": {"filter": compiled_filter().name, "default": "EPERM"},
        }

    def host_pids(self, spec: LaunchSpec) -> int:
        # Under ptrace every sandboxed thread is a host thread, and the Sentry keeps a
        # host thread per (stub, Sentry thread) pair it has used. A fork bomb held to N
        # processes by RLIMIT_NPROC inside still drove the host count to about 65 * N
        # (a plateau: 2,400 for N = 32 over 25 s). If the host limit is reached, the
        # Sentry panics, so this limit sits well above that plateau; the session
        # replaces a runner whose count stays high after a job.
        return max(2048, 128 * spec.limits.processes + 512)

    def command(self, spec: LaunchSpec) -> list[str]:
        workdir = spec.workdir or Path(tempfile.mkdtemp(prefix="evaluator-gvisor-"))
        bundle = workdir / "bundle"
        rootfs = bundle / "rootfs"
        rootfs.mkdir(parents=True, exist_ok=True)
        # runsc opens the sources as root: only what the programs (nobody) read inside
        # must be open to other users, not the directories above.
        view = build_view(spec, workdir, traverse=False)
        # The same allowlist bwrap applies, installed by the runner on itself before any
        # job (raises if it cannot be built: never a sandbox without it).
        seccomp_copy = workdir / "etc" / "seccomp.bpf"
        shutil.copyfile(compiled_filter(), seccomp_copy)
        seccomp_copy.chmod(0o444)
        binds = (*view.binds, (str(seccomp_copy), SECCOMP_TARGET, False))
        for target, link in view.links:
            path = rootfs / link.lstrip("/")
            if not path.is_symlink():
                path.symlink_to(target)
        # Mount points must exist in the read-only root; those in the scratch, gVisor
        # makes in its tmpfs, which the OCI mounts list first.
        for source, target, _writable in binds:
            if not in_scratch(target):
                _mount_point(rootfs, target, directory=os.path.isdir(source))
        for directory in ("proc", "dev", "sys", SCRATCH.lstrip("/")):
            (rootfs / directory).mkdir(exist_ok=True)
        config = self._config(spec, binds)
        (bundle / "config.json").write_text(json.dumps(config, indent=1))
        container = f"evaluator-{os.getpid()}-{next(_ids)}"
        return [
            RUNSC,
            "--root", str(workdir / "state"),
            "--ignore-cgroups",
            "--network=none",
            f"--platform={platform()}",
            *file_access_flags(),
            "run", "--bundle", str(bundle), container,
        ]

    def _config(self, spec: LaunchSpec,
                binds: tuple[tuple[str, str, bool], ...]) -> dict[str, Any]:
        env = runner_environment(
            spec,
            EVALUATOR_PID_NAMESPACE="1",
            EVALUATOR_JOB_UID=str(SANDBOX_UID),
            EVALUATOR_JOB_GID=str(SANDBOX_GID),
            EVALUATOR_SECCOMP=SECCOMP_TARGET,
        )
        scratch_bytes = spec.limits.scratch_mb * 1024 * 1024
        mounts: list[dict[str, Any]] = [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": SCRATCH, "type": "tmpfs", "source": "tmpfs",
             # Owned by the runner (root inside): programs write only in their job's
             # directory, which the runner gives them.
             "options": ["nosuid", "nodev", "mode=0755", f"size={scratch_bytes}"]},
        ]
        for source, target, writable in binds:
            mounts.append({
                "destination": target, "type": "bind", "source": source,
                "options": ["rbind", "rw" if writable else "ro", "nosuid", "nodev"],
            })
        return {
            "ociVersion": "1.0.0",
            "process": {
                "user": {"uid": 0, "gid": 0},
                "args": list(spec.argv),
                "env": [f"{key}={value}" for key, value in env.items()],
                "cwd": SCRATCH,
                "capabilities": {
                    kind: RUNNER_CAPABILITIES
                    for kind in ("bounding", "effective", "permitted")
                },
                "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 4096, "soft": 4096}],
                "noNewPrivileges": True,
            },
            "root": {"path": "rootfs", "readonly": True},
            "hostname": "sandbox",
            "mounts": mounts,
            "linux": {
                "namespaces": [
                    {"type": kind} for kind in ("pid", "network", "ipc", "uts", "mount")
                ],
            },
        }
