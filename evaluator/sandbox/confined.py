"""What the two real backends, bwrap and gVisor, share about their runner.

Each starts the runner on the system's Python inside the same read-only view
(`rootfs.build_view`), under the same system-call filter (`seccomp_filter`); they differ
in what stands between that runner and the host kernel.
"""

from __future__ import annotations

import os

from evaluator.sandbox.base import Backend, LaunchSpec
from evaluator.sandbox.rootfs import SANDBOX_PATH
from evaluator.sandbox.seccomp_filter import FilterUnavailable, compiled_filter

SANDBOX_PYTHON = "/usr/bin/python3"
"""The system's Python: readable by nobody and inside the read-only view, unlike a
pyenv under /root."""


class ConfinedBackend(Backend):
    """A backend whose runner runs on `SANDBOX_PYTHON` in the view, under the filter."""

    def runner_missing(self) -> str | None:
        """What this host lacks for the runner, for `probe`: the system Python, or a
        system-call filter it can build. None when it has both."""
        if not os.access(SANDBOX_PYTHON, os.X_OK):
            return f"{SANDBOX_PYTHON} is missing (Debian package: python3)"
        try:
            compiled_filter()
        except FilterUnavailable as exc:
            return f"the system-call filter cannot be built: {exc}"
        return None

    def python(self) -> str:
        return SANDBOX_PYTHON

    def environment(self, spec: LaunchSpec) -> dict[str, str]:
        # Only what the launcher itself needs; each backend hands the runner its own
        # environment (`rootfs.runner_environment`).
        return {"PATH": SANDBOX_PATH + ":/usr/sbin:/sbin", "LANG": "C.UTF-8"}
