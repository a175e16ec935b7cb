"""JavaScript: Node.js, with every assertion of the tests reported on its own.

The program is `prefix + completion + "\\n" + test`, as CodeGeeX (HumanEval-X),
MultiPL-E and HumanEval-XL build it. Inside the sandbox, `runtime/js/harness.js` parses
the test part with acorn and rewrites each `console.assert(...)`, `assert.*(...)`,
`assert(...)` and `if (...) throw` check into a recorded, non-throwing check (see the
harness for the forms), then runs the program as a CommonJS module would run.

The exit status is never trusted: `console.assert` prints and exits 0. CodeGeeX's rule
for that (any output at all fails the sample) fails correct solutions that log; here a
sample fails when one of its checks fails, whatever it prints.

Speed: rather than start node for each program, a pool (`runtime/js/pool.js`: one
long-lived node process in a sandbox of its own, kept by the runner as a "service") runs
most programs one after another in one worker thread, each in a realm of its own
(`runtime/js/realm.js`: its own globals and built-ins, about a millisecond to make),
with acorn loaded once and each test's rewrite done once. A realm shares its isolate
with the pool's code, so it is handed nothing of the host's and the host shows only
plain data from it; anything else runs again in a worker thread of its own (an isolate
of its own), as do programs that require modules or use node's timers. Limits keep
their meaning (the thread's own CPU time, V8's heap cap, the output cap, the wall clock
as a backstop); after anything abnormal the realm worker, or the pool, is replaced.

A worker shares its process with the pool, so a conservative gate (`runtime/js/gate.js`)
sends a program to a process of its own, as before the pool, when it does not parse, or
names `process`, `global`, `globalThis`, `eval`, `Function`, `Atomics`,
`SharedArrayBuffer`, `WebAssembly`, `Worker`, `BroadcastChannel`, `MessageChannel`,
`MessagePort`, the recorder, or what allocates outside V8's heap (`ArrayBuffer`, `Buffer`,
`DataView`, `Blob`, the typed arrays) as a variable, uses `require` other than as
`require('<name>')` for assert, util, js-md5 or lodash, `module` other than as
`module.exports`, or `import()`. Should the pool fail as a sandbox, the program also runs
in a process of its own; so it does when twice its wall-clock limit is longer than a pool
request may wait (`POOL_REQUEST_WALL`, less a margin: a realm's program may run twice).
Verdicts are the same either way.

Modules: `js-md5` (HumanEval-X JS/162), `lodash` (HumanEval-XL's tests) and `acorn`
(the harness) come from npm, pinned by `runtime/js/package-lock.json`, and are installed
with `npm ci --prefix evaluator/languages/runtime/js` (or into `$EVALUATOR_NODE_MODULES`).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import os
from pathlib import Path
from typing import Any

from evaluator.languages.base import (
    AskCompiler,
    CompileService,
    Language,
    PreparedJob,
    RemoteBuild,
    program_hash,
    required_toolchain,
)
from evaluator.languages.reporting import LAUNCHER, LAUNCHER_FILE
from evaluator.languages.syntax_check import Answer, RunJob, parse_by_script
from evaluator.languages.toolchains import Tool, ToolchainError, run_tool, version_key
from evaluator.records import Problem, RunOptions, Sample
from evaluator.sandbox.base import Mount, SandboxError, SandboxLimits

RUNTIME = Path(__file__).resolve().parent / "runtime" / "js"
REQUIRED_MODULES = ("acorn", "js-md5", "lodash")
INSTALL_HINT = "npm ci --prefix evaluator/languages/runtime/js"
NODE = Tool("node", "EVALUATOR_NODE", ("/usr/bin/node",), "apt-get install nodejs")
POOL_SERVICE = "js-pool"
POOL_THREADS = 48
"""Threads the pool needs beyond the limits' process count: node's own (V8's platform
workers, libuv's), and each worker thread with its own platform threads."""
POOL_REQUEST_WALL = 600.0
"""How long one request to the pool may wait: a program whose wall-clock limit does not
fit in it twice (with the margin) runs in a process of its own."""
POOL_WALL_MARGIN = 10.0
"""Seconds a pool request may take beyond twice the program's wall-clock limit (a
program a realm hands back runs again in a worker; a worker's start, the answer's way
back)."""
POOL_RAN, POOL_DECLINED, POOL_RAN_ABNORMALLY = 0, 1, 2


def node_modules() -> Path:
    configured = os.environ.get("EVALUATOR_NODE_MODULES")
    return Path(configured) if configured else RUNTIME / "node_modules"


@functools.lru_cache(maxsize=1)
def _node() -> tuple[str, str]:
    node = NODE.find()
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
    return version_key(*(path.read_bytes() for path in sorted(RUNTIME.glob("*.js"))),
                       lock.read_bytes() if lock.exists() else b"")


class JavaScript(Language):
    name = "js"
    display_name = "JavaScript"
    aliases = ("javascript", "node", "nodejs")
    fence_tags = ("jsx",)
    order = 40
    _pool_wait: float = 0.0
    """How long a request to the pool may wait (the service's wall-clock limit)."""
    pygments_lexer = "javascript"
    function_pattern = (r"^\s*(?:const\s+(\w+)\s*=\s*(?:\(|function)"
                        r"|function\s+(\w+)\s*\()")
    syntax_check = "node"
    toolchain = NODE
    harness_reports_first = True
    # Closes the function: the datasets' tests in JavaScript start after it.
    selfcheck_body = "  throw new Error('selfcheck stub');\n}\n"

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
        pool = {"program": program, "offset": offset, "limits": options.limits.to_dict()}
        return PreparedJob(job=job, program=program, program_hash=digest,
                           context={"mode": "tests", "test_first_line": first_line,
                                    "pool": pool})

    def compile_service(self, limits: SandboxLimits) -> CompileService | None:
        """The pool that runs programs in worker threads (see the module's docstring)."""
        try:
            node, _ = _node()
        except ToolchainError:
            return None
        service = CompileService(name=POOL_SERVICE,
                                 argv=(node, str(RUNTIME / "pool.js"), str(node_modules())),
                                 extra_processes=POOL_THREADS,
                                 request_wall_seconds=POOL_REQUEST_WALL)
        self._pool_wait = float(service.to_dict(limits)["limits"]["wall_seconds"])
        return service

    def build_remotely(self, prepared: PreparedJob, ask: AskCompiler) -> RemoteBuild | None:
        """Run the program in the pool; None when it needs a process of its own."""
        request = prepared.context.get("pool")
        if not request:
            return None
        wall = float(request["limits"].get("wall_seconds") or 0)
        # A program a realm hands over to a worker of its own runs twice.
        if 2 * wall + POOL_WALL_MARGIN > self._pool_wait:
            return None
        answer = ask([json.dumps(request)])
        step = answer["steps"][0]
        if step.get("timed_out"):
            raise SandboxError("the JavaScript pool did not answer in time")
        status = step.get("exit_code")
        if status == POOL_DECLINED:
            return None
        outputs = answer.get("outputs") or []
        if status not in (POOL_RAN, POOL_RAN_ABNORMALLY) or not outputs:
            raise SandboxError(f"the JavaScript pool failed: {step.get('stderr') or status}")
        try:
            result = json.loads(base64.b64decode(outputs[0]))
        except (ValueError, binascii.Error) as exc:
            raise SandboxError(f"the JavaScript pool's answer is unreadable: {exc}") from exc
        if not isinstance(result, dict) or not isinstance(result.get("steps"), list):
            raise SandboxError("the JavaScript pool's answer has no run step")
        return RemoteBuild(steps=[], job=None, answer=result)

    def _toolchain(self) -> tuple[str, str]:
        return required_toolchain(_node)

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

    def tool_path(self, *, python: str) -> str | None:
        return _node()[0]

    def check_syntax(self, sources: list[str], run: RunJob) -> list[Answer]:
        # V8's parser through `vm.compileFunction`, with CommonJS's module wrapper.
        return parse_by_script(sources, run, [NODE.beside("node")], "check.js", _CHECK_SCRIPT)

    def syntax_contexts(self, code: str) -> list[str]:
        return [code, "function _f() {\n" + code, "function _f() {\n" + code + "\n}"]


_CHECK_SCRIPT = r"""
const fs = require("fs");
const vm = require("vm");
const params = ["exports", "require", "module", "__filename", "__dirname"];
const answers = JSON.parse(fs.readFileSync("sources.json", "utf8")).map((source) => {
  try { vm.compileFunction(source, params); return true; } catch (e) { return false; }
});
process.stdout.write(JSON.stringify(answers));
"""
