"""JavaScript: Node.js, with every assertion of the tests reported on its own.

The program is `prefix + completion + "\\n" + test`, as CodeGeeX (HumanEval-X),
MultiPL-E and HumanEval-XL build it. Inside the sandbox, `runtime/js/harness.js` parses
the test part with acorn and rewrites each `console.assert(...)`, `assert.*(...)`,
`assert(...)` and `if (...) throw` check into a recorded, non-throwing check (see the
harness for the forms), then runs the program as a CommonJS module would run.

The exit status is never trusted: `console.assert` prints and exits 0. CodeGeeX's rule
for that (any output at all fails the sample) fails correct solutions that log; here a
sample fails when one of its checks fails, whatever it prints.

Modules: `js-md5` (HumanEval-X JS/162), `lodash` (HumanEval-XL's tests) and `acorn`
(the harness) come from npm, pinned by `runtime/js/package-lock.json`, and are installed
with `npm ci --prefix evaluator/languages/runtime/js` (or into `$EVALUATOR_NODE_MODULES`).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from evaluator.languages.base import (
    Language,
    LanguageError,
    PreparedJob,
    RunOptions,
    program_hash,
)
from evaluator.languages.reporting import LAUNCHER, LAUNCHER_FILE
from evaluator.languages.toolchains import ToolchainError, executable, run_tool, version_key
from evaluator.records import Problem, Sample
from evaluator.sandbox.base import Mount

RUNTIME = Path(__file__).resolve().parent / "runtime" / "js"
REQUIRED_MODULES = ("acorn", "js-md5", "lodash")
INSTALL_HINT = "npm ci --prefix evaluator/languages/runtime/js"


def node_modules() -> Path:
    configured = os.environ.get("EVALUATOR_NODE_MODULES")
    return Path(configured) if configured else RUNTIME / "node_modules"


@functools.lru_cache(maxsize=1)
def _node() -> tuple[str, str]:
    node = executable("node", "EVALUATOR_NODE", ("/usr/bin/node",))
    if node is None:
        raise ToolchainError("Node.js is not installed (apt-get install nodejs)")
    version = run_tool([node, "--version"], timeout=60).strip()
    missing = [m for m in REQUIRED_MODULES if not (node_modules() / m / "package.json").exists()]
    if missing:
        raise ToolchainError(
            f"node modules {', '.join(missing)} are missing from {node_modules()}: run "
            f"`{INSTALL_HINT}`"
        )
    return node, version


@functools.lru_cache(maxsize=1)
def _harness_key() -> str:
    """Names the harness and the pinned modules: part of every program's cache key."""
    lock = RUNTIME / "package-lock.json"
    return version_key((RUNTIME / "harness.js").read_bytes(),
                       lock.read_bytes() if lock.exists() else b"")


class JavaScript(Language):
    name = "js"
    display_name = "JavaScript"
    aliases = ("javascript", "node", "nodejs")
    fence_tags = ("jsx",)
    order = 40

    def build(self, problem: Problem, sample: Sample, options: RunOptions) -> tuple[str, int]:
        """The program and the offset where its test code starts."""
        head = sample.completion if sample.is_full_program else (
            self.prefix(problem, options) + sample.completion)
        head += "\n"
        return head + self.test_text(problem, options), len(head)

    def prepare(self, problem: Problem, sample: Sample, options: RunOptions) -> PreparedJob:
        node, version = self._toolchain()
        program, offset = self.build(problem, sample, options)
        heap = max(64, int(options.limits.memory_mb))
        job: dict[str, Any] = {
            "kind": "command",
            "files": {"program.js": program, LAUNCHER_FILE: LAUNCHER},
            "steps": [{
                "name": "run",
                # V8 reserves far more address space than it uses, so the memory limit is
                # given to V8 itself (and to the cgroup, where the backend has one).
                # The launcher hands the report nonce over on fd 4, outside the environment.
                "argv": ["sh", LAUNCHER_FILE, node, f"--max-old-space-size={heap}",
                         str(RUNTIME / "harness.js"), "program.js", str(offset)],
                "limits": options.limits.to_dict(),
                "report": True,
                "address_space_limit": False,
            }],
            "env": self.environment(),
        }
        digest = program_hash("js", version, _harness_key(), str(offset), program)
        first_line = program[:offset].count("\n") + 1
        return PreparedJob(job=job, program=program, program_hash=digest,
                           context={"mode": "tests", "test_first_line": first_line})

    def _toolchain(self) -> tuple[str, str]:
        try:
            return _node()
        except ToolchainError as exc:
            raise LanguageError(str(exc)) from exc

    def mounts(self) -> list[Mount]:
        mounts = [Mount(RUNTIME)]
        if not node_modules().resolve().is_relative_to(RUNTIME.resolve()):
            mounts.append(Mount(node_modules()))
        return mounts

    def environment(self) -> dict[str, str]:
        return {"NODE_PATH": str(node_modules()), "NODE_OPTIONS": "",
                "NODE_DISABLE_COLORS": "1", "NO_COLOR": "1"}

    def require_toolchain(self) -> None:
        _node()
