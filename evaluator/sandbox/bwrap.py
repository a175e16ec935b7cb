"""The `bwrap` backend: bubblewrap namespaces, launched as an unprivileged user.

bubblewrap started by root keeps every capability inside its namespaces (the user
namespace maps root to root): a read-only bind could be remounted read-write and the
host written through it. So when we are root, bwrap itself is started as nobody with
`setpriv`, with no groups, no capabilities, and `no_new_privs`; inside, the runner is
nobody too and holds nothing.

What the runner gets: new user, PID, network, IPC, UTS, mount and cgroup namespaces (only
`lo`, which reaches nothing), no further user namespaces, a read-only view of the system
paths and the language's toolchain (`rootfs.build_view`), a size-limited tmpfs scratch,
a read-only `/dev`, and the environment of the `LaunchSpec` only. The runner is PID 1 of
its namespace: a program cannot signal it, and after each job it kills everything else.
What bwrap does not do is stand between the program and the host kernel: every system
call reaches the real kernel (gVisor's job). Two kernel features narrow that surface
(docs/sandbox.md, "The standard level"):
- a seccomp allowlist (`seccomp_filter`), which bwrap applies to the whole sandbox before
  it starts the runner: the calls the toolchains need pass, the rest fail with EPERM. It
  is not optional: without it the backend does not offer itself;
- Landlock, where the kernel has it: each program the runner starts may read the view
  and write only the scratch (`runtime/landlock.py`). A kernel without it is reported in
  `describe()`, and the mounts alone decide.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
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
    runner_environment,
)
from evaluator.sandbox.seccomp_filter import compiled_filter

SECCOMP_FD = 3
"""The descriptor at which bwrap reads the compiled filter."""
WITH_FILTER = f'filter=$1; shift; exec "$@" {SECCOMP_FD}<"$filter"'
"""Opens the filter at fd 3 for the command that follows (setpriv, then bwrap): the fd
lives exactly as long as the launch, whoever starts it (a session, a probe)."""
LANDLOCK_CREATE_RULESET = 444
LANDLOCK_CREATE_RULESET_VERSION = 1


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 without Landlock."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(ctypes.c_long(LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                           ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(int(version), 0)


class BwrapBackend(ConfinedBackend):
    name = "bwrap"
    strength = 20

    def probe(self) -> str | None:
        if shutil.which("bwrap") is None:
            return "bubblewrap is not installed (Debian package: bubblewrap)"
        if os.geteuid() == 0 and shutil.which("setpriv") is None:
            return "setpriv is missing (Debian package: util-linux), and bwrap must not run as root"
        return self.runner_missing() or self.try_launch(timeout=30)

    def describe(self) -> dict[str, Any]:
        abi = landlock_abi()
        return {
            "backend": self.name,
            "seccomp": {"filter": compiled_filter().name, "default": "EPERM"},
            "landlock": {"active": abi > 0, "abi": abi or None},
        }

    def command(self, spec: LaunchSpec) -> list[str]:
        # Built (or found in the cache) before anything starts; raises if it cannot be.
        seccomp = compiled_filter()
        workdir = spec.workdir or Path(tempfile.mkdtemp(prefix="evaluator-bwrap-"))
        # bwrap runs as nobody: it must be able to reach the generated files.
        workdir.chmod(0o711)
        view = build_view(spec, workdir, traverse=True)
        (workdir / "etc").chmod(0o755)

        argv: list[str] = ["/bin/sh", "-c", WITH_FILTER, "evaluator-seccomp", str(seccomp)]
        if os.geteuid() == 0:
            argv += [
                "setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
            ]
        argv += [
            "bwrap",
            "--unshare-all", "--unshare-user", "--disable-userns",
            "--die-with-parent", "--new-session", "--as-pid-1",
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID),
            "--hostname", "sandbox",
            "--seccomp", str(SECCOMP_FD),
        ]
        scratch_bytes = spec.limits.scratch_mb * 1024 * 1024
        # The scratch first: what the view puts in it (the read-only skeleton that leads to
        # a checkout under /tmp, `rootfs._out_of_scratch`) goes on top of it.
        argv += ["--size", str(scratch_bytes), "--perms", "0700", "--tmpfs", SCRATCH]
        for target, link in view.links:
            argv += ["--symlink", target, link]
        for source, target, writable in view.binds:
            argv += ["--bind" if writable else "--ro-bind", source, target]
        argv += [
            "--proc", "/proc",
            "--dev", "/dev",
            # /dev is a tmpfs without a size: read-only, so that it (and /dev/shm) cannot
            # be filled. The scratch tmpfs is the only writable place.
            "--remount-ro", "/dev",
            "--remount-ro", "/",
            "--chdir", SCRATCH,
            "--clearenv",
        ]
        # What Landlock lets each program reach: the view and /proc to read; the scratch
        # and any writable mount (a build cache) to write.
        landlock_paths = {
            "read": sorted({target for _, target, _ in view.binds} | {"/proc"}),
            "write": [SCRATCH, *(target for _, target, rw in view.binds if rw)],
        }
        env = runner_environment(spec, EVALUATOR_PID_NAMESPACE="1",
                                 EVALUATOR_LANDLOCK=json.dumps(landlock_paths))
        for key, value in env.items():
            argv += ["--setenv", key, value]
        return [*argv, "--", *spec.argv]
