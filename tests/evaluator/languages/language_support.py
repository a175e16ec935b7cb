"""Helpers every language test module uses: an engine on the `none` backend, running one
sample, looking for processes a program may have left behind, and asking JavaScript's
gate about programs."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from evaluator.engine import Engine, EngineConfig
from evaluator.languages.js import RUNTIME, node_modules
from evaluator.records import Problem, RunOptions, Sample, SampleResult
from evaluator.sandbox.base import SandboxLimits


@contextmanager
def local_engine(*, seconds: float, memory_mb: int) -> Iterator[Engine]:
    options = RunOptions(limits=SandboxLimits(wall_seconds=seconds, cpu_seconds=seconds,
                                              memory_mb=memory_mb))
    with Engine(EngineConfig(backend="none", workers=2, options=options)) as engine:
        yield engine


def gate_answers(expression: str, programs: Iterable[str]) -> dict[str, object]:
    """What JavaScript's gate (runtime/js/gate.js, loaded as `gate`, with acorn as
    `acorn`) says of each program: `expression` is evaluated with the program as `c`."""
    programs = list(programs)
    script = ("const acorn = require(process.argv[1] + '/acorn');"
              "const gate = require(process.argv[2]);"
              "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              f"console.log(JSON.stringify(cases.map((c) => {expression})));")
    found = subprocess.run(["node", "-e", script, str(node_modules()), str(RUNTIME / "gate.js")],
                           input=json.dumps(programs), capture_output=True, text=True,
                           check=True, timeout=60)
    return dict(zip(programs, json.loads(found.stdout), strict=True))


def evaluate_one(engine: Engine, problem: Problem, sample: Sample) -> SampleResult:
    results = [e["result"] for e in engine.evaluate({problem.task_id: problem}, [sample])
               if e["type"] == "sample_finished"]
    assert len(results) == 1
    return results[0]


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry.name))
    return found


def gone(marker: str, within: float = 3.0) -> bool:
    """No process with `marker` in its command line (a killed one may take a moment)."""
    deadline = time.monotonic() + within
    while processes_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
