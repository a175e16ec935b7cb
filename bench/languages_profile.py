"""Where a language's time goes, per program: compiling, running, and the sandbox around both.

    .venv/bin/python bench/languages_profile.py cpp go [--programs 20] [--backend auto,none]

Each language's first N HumanEval-X canonical solutions run as the engine runs them (the
same job, in one long-lived runner with the language's mounts and environment), under
each backend in turn, program by program, so that a change in the machine's load hits
every backend alike. For each program the runner reports the CPU time of each step (the
compiler and linker, then the program, with every process they started), and the
session's cgroup the CPU time of the whole sandbox during the job. Their difference is
what the sandbox and the runner cost around the steps: the runner's fork, Landlock, the
system-call filter, the launch scripts, writing the files and emptying the scratch.
Printed: the mean of each part, in milliseconds of CPU per program, and the wall time.

CPU time, not wall time, is what limits throughput on a shared machine, and it barely
moves with the load. Java is left out: its compiler is a warm service of its own
(`--no-warm-compilers` in the command line), which a lone job does not use.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import load_average, shared_dir  # noqa: E402
from evaluator.calibration import resolve_backend  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.languages import get_language  # noqa: E402
from evaluator.records import RunOptions, Sample  # noqa: E402
from evaluator.sandbox.base import SandboxError, SandboxLimits  # noqa: E402
from evaluator.sandbox.levels import level_of_backend  # noqa: E402
from evaluator.sandbox.session import RunnerSession  # noqa: E402

DATASETS = {name: f"humaneval-x/humaneval_{name}.jsonl.gz"
            for name in ("cpp", "go", "rust", "js", "python")}
LIMITS = SandboxLimits(wall_seconds=60.0, cpu_seconds=60.0)
"""CodeGeeX's per-sample timeout, as in languages_bench.py."""


def _jobs(language_name: str, programs: int) -> list[dict[str, Any]]:
    dataset = load_dataset(path=shared_dir() / "datasets" / DATASETS[language_name])
    language = get_language(language_name)
    options = RunOptions(limits=LIMITS)
    return [language.prepare(problem, Sample(task_id=problem.task_id, index=0,
                                             raw=problem.canonical_solution,
                                             completion=problem.canonical_solution),
                             options).job
            for problem in dataset.problems[:programs]]


def _session(language_name: str, backend_name: str) -> RunnerSession:
    language = get_language(language_name)
    env = {"EVALUATOR_PRELOAD": ",".join(language.preload), **language.environment()}
    session = RunnerSession(resolve_backend(backend_name), limits=LIMITS,
                            mounts=language.mounts(), env=env)
    session.start()
    return session


def _parts(answer: dict[str, Any], wall_ms: float) -> dict[str, float]:
    steps = answer.get("steps") or []
    if "runner_error" in answer or not steps:
        raise SystemExit(f"a job failed in the sandbox: {answer.get('runner_error', answer)}")
    compile_ms = sum(float(s.get("cpu_ms") or 0) for s in steps if s.get("name") == "compile")
    run_ms = sum(float(s.get("cpu_ms") or 0) for s in steps if s.get("name") != "compile")
    sandbox = steps[-1].get("sandbox_cpu_ms")
    parts = {"compile": compile_ms, "run": run_ms, "wall": wall_ms}
    if sandbox is not None:
        parts["sandbox"] = float(sandbox)
        parts["around"] = float(sandbox) - compile_ms - run_ms
    return parts


def profile(language_name: str, backends: list[str], programs: int) -> None:
    jobs = _jobs(language_name, programs)
    sessions = {name: _session(language_name, name) for name in backends}
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in backends}
    try:
        for warm in (True, False):
            for job in jobs[:2] if warm else jobs:
                for name, session in sessions.items():
                    sent = time.monotonic()
                    answer = session.run(job)
                    parts = _parts(answer, (time.monotonic() - sent) * 1000)
                    if not warm:
                        rows[name].append(parts)
    finally:
        for session in sessions.values():
            session.close()
    for name in backends:
        found = rows[name]

        def mean(key: str, found: list[dict[str, float]] = found) -> str:
            values = [row[key] for row in found if key in row]
            return f"{statistics.fmean(values):8.1f}" if values else f"{'n/a':>8}"

        print(f"{language_name:8} {name:7} {mean('compile')} {mean('run')} {mean('around')} "
              f"{mean('sandbox')} {mean('wall')}  load {load_average()}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("languages", nargs="*", default=list(DATASETS),
                        help=f"any of {', '.join(DATASETS)} (default: all)")
    parser.add_argument("--programs", type=int, default=20)
    parser.add_argument("--backend", default="auto,none",
                        help="comma-separated levels or backends, measured side by side")
    args = parser.parse_args(argv)
    unknown = [name for name in args.languages if name not in DATASETS]
    if unknown:
        parser.error(f"unknown language(s) {', '.join(unknown)}; choose from "
                     f"{', '.join(DATASETS)}")
    backends = [name.strip() for name in args.backend.split(",") if name.strip()]
    for name in backends:
        try:
            backend = resolve_backend(name)
        except SandboxError as exc:
            parser.error(str(exc))
        chosen = f"; {backend.chosen}" if name == "auto" else ""
        print(f"{name}: the {level_of_backend(backend.name) or backend.name} level "
              f"({backend.name}){chosen}")
    print(f"{args.programs} programs a language, one runner each, {os.cpu_count()} cores, "
          f"load {load_average()}")
    print("CPU ms per program (wall: ms per job, as the host waited for it)")
    print(f"{'language':8} {'sandbox':7} {'compile':>8} {'run':>8} {'around':>8} "
          f"{'sandbox':>8} {'wall':>8}")
    for name in args.languages:
        profile(name, backends, args.programs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
