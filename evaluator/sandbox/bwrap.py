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
call reaches the real kernel (gVisor's job).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from evaluator.sandbox.base import Backend, LaunchSpec, register
from evaluator.sandbox.rootfs import (
    SANDBOX_GID,
    SANDBOX_PATH,
    SANDBOX_UID,
    SCRATCH,
    build_view,
    runner_environment,
)

SANDBOX_PYTHON = "/usr/bin/python3"
"""The system's Python: readable by nobody and inside the read-only view, unlike a
pyenv under /root."""


@register
class BwrapBackend(Backend):
    name = "bwrap"
    strength = 20

    def probe(self) -> str | None:
        if shutil.which("bwrap") is None:
            return "bubblewrap is not installed (Debian package: bubblewrap)"
        if os.geteuid() == 0 and shutil.which("setpriv") is None:
            return "setpriv is missing (Debian package: util-linux), and bwrap must not run as root"
        if not os.access(SANDBOX_PYTHON, os.X_OK):
            return f"{SANDBOX_PYTHON} is missing (Debian package: python3)"
        return self.try_launch(timeout=30)

    def python(self) -> str:
        return SANDBOX_PYTHON

    def environment(self, spec: LaunchSpec) -> dict[str, str]:
        # Only what bwrap itself needs; the runner's environment is given with --setenv.
        return {"PATH": SANDBOX_PATH + ":/usr/sbin:/sbin", "LANG": "C.UTF-8"}

    def command(self, spec: LaunchSpec) -> list[str]:
        workdir = spec.workdir or Path(tempfile.mkdtemp(prefix="evaluator-bwrap-"))
        # bwrap runs as nobody: it must be able to reach the generated files.
        workdir.chmod(0o711)
        view = build_view(spec, workdir / "etc")
        (workdir / "etc").chmod(0o755)

        argv: list[str] = []
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
        ]
        for target, link in view.links:
            argv += ["--symlink", target, link]
        for source, target, writable in view.binds:
            argv += ["--bind" if writable else "--ro-bind", source, target]
        scratch_bytes = spec.limits.scratch_mb * 1024 * 1024
        argv += [
            "--proc", "/proc",
            "--dev", "/dev",
            # /dev is a tmpfs without a size: read-only, so that it (and /dev/shm) cannot
            # be filled. The scratch tmpfs is the only writable place.
            "--remount-ro", "/dev",
            "--size", str(scratch_bytes), "--perms", "0700", "--tmpfs", SCRATCH,
            "--remount-ro", "/",
            "--chdir", SCRATCH,
            "--clearenv",
        ]
        env = runner_environment(spec, EVALUATOR_PID_NAMESPACE="1")
        for key, value in env.items():
            argv += ["--setenv", key, value]
        return [*argv, "--", *spec.argv]
