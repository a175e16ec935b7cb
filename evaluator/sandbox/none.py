"""The `none` backend: the runner runs directly on the host.

For trusted local debugging only. The runner still gives every program its own session
and process group (killed as a whole), rlimits, a fresh scratch directory and capped
output, but nothing stops a program from reading or writing whatever the user can.
"""

from __future__ import annotations

import os
import sys

from evaluator.sandbox.base import Backend, LaunchSpec

WARNING = (
    "\n*** WARNING: sandbox backend 'none' runs untrusted model-generated code directly on "
    "this machine, with your user's rights. Use it only for trusted debugging. ***\n"
)


class NoneBackend(Backend):
    name = "none"
    strength = 0
    isolated = False

    def probe(self) -> str | None:
        return None

    def command(self, spec: LaunchSpec) -> list[str]:
        # Said every time a runner starts, so that nobody uses it by accident.
        sys.stderr.write(WARNING)
        sys.stderr.flush()
        return list(spec.argv)

    def environment(self, spec: LaunchSpec) -> dict[str, str] | None:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        env.update(spec.env)
        return env
