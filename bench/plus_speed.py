"""How fast the plus sets evaluate beside the base sets, per language, in the default sandbox.

    .venv/bin/python bench/plus_speed.py [--languages python,cpp,java,js,go,rust]
        [--problems 12] [--workers 2] [--plus-dir DIR] [--broken]

For each language, the canonical solutions of the first `--problems` problems are
evaluated on the base set (HumanEval for Python, HumanEval-X for the others) and on the
plus set (HumanEval+ Mini for Python; for the others, `python -m evaluator datasets
build-plus --set mini` output: `--plus-dir`, or built here before any clock starts). Both
sets get the same problems: those of the first N that the plus set has (the builder
leaves out a problem none of whose inputs translate), and the same programs: the plus
set's canonical solutions (for Python, HumanEval+'s, which rewrote a few of HumanEval's).
`--broken` adds, per problem, the canonical solution with its last line dropped, which
mostly fails to compile or fails its first test.

Ours runs as the command line would: sandbox `auto`, the dataset's own profile and time
limit, a cold result cache. Per row: samples/s, tests/s, the plus/base ratio, and the
load average before and after.

One process per program: each row counts the times the engine ran a program
(`Engine._build_and_run`, wrapped to count) and, in each run's answer, the steps that ran
it (not `compile`), with the jobs sent to the sandboxed runners by kind. A program is run
once whatever its number of tests (`Engine._execute`; a timeout is retried once, alone),
and the runner runs a job in one child: `_run_harness_child` for Python, `_run_step` per
step of a command job (compile, then one `run`: `sh launcher ./prog` for C++, Go and
Rust). JavaScript's programs mostly run as one request to the pool (a `service` job: one
long-lived node process, a fresh realm per program), Java's compile goes to its warm
javac service. So a plus program's hundreds of tests share one process, as the base
program's few do.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import load_average, shared_dir  # noqa: E402
from evaluator.datasets import Dataset, load_dataset  # noqa: E402
from evaluator.engine import Engine, EngineConfig  # noqa: E402
from evaluator.languages import get_language  # noqa: E402
from evaluator.plus.build import LANGUAGES, build_plus  # noqa: E402
from evaluator.profiles import default_profile, run_time_limit  # noqa: E402
from evaluator.records import Problem, RunOptions, Sample  # noqa: E402
from evaluator.sandbox.base import SandboxLimits  # noqa: E402
from evaluator.sandbox.session import RunnerSession  # noqa: E402

ALL_LANGUAGES = ("python", *LANGUAGES)
PLUS_SET = "mini"
MEMORY_MB = 1024
"""The command line's default `--memory-mb`."""


@dataclass
class JobCount:
    """How each program was run, counted as the engine runs it."""

    executions: int = 0
    """Times the engine ran a program (`Engine._build_and_run`): one per distinct
    program, one more for each retry of a timeout."""
    run_processes: Counter[int] = field(default_factory=Counter)
    """Steps that ran the program (not `compile`) in one execution -> executions."""
    sandbox_jobs: Counter[str] = field(default_factory=Counter)
    """Jobs sent to the sandboxed runners, by kind: `service` (a warm compiler, or
    JavaScript's pool that runs the program), `harness`, `command`."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_execution(self, answer: object) -> None:
        if not isinstance(answer, dict):
            return  # a sandbox failure: nothing ran
        steps = answer.get("steps") or []
        with self.lock:
            self.executions += 1
            self.run_processes[sum(1 for s in steps if s.get("name") != "compile")] += 1

    def add_job(self, job: dict[str, Any]) -> None:
        with self.lock:
            self.sandbox_jobs[str(job.get("kind", "?"))] += 1


def counting_runs(count: JobCount) -> Callable[[], None]:
    """Count each program the engine runs, and each job it sends to a sandboxed runner,
    until the returned undo is called. The engine's own methods, wrapped: nothing changes
    how a program runs."""
    execute = Engine._build_and_run
    send = RunnerSession.run

    def build_and_run(self: Engine, unit: Any, on_progress: Any = None) -> Any:
        answer = execute(self, unit, on_progress)
        count.add_execution(answer)
        return answer

    def run(self: RunnerSession, job: dict[str, Any], on_progress: Any = None) -> Any:
        count.add_job(job)
        return send(self, job, on_progress)

    Engine._build_and_run = build_and_run  # type: ignore[method-assign]
    RunnerSession.run = run  # type: ignore[method-assign]

    def undo() -> None:
        Engine._build_and_run = execute  # type: ignore[method-assign]
        RunnerSession.run = send  # type: ignore[method-assign]

    return undo


@dataclass(frozen=True)
class Row:
    language: str
    tests_set: str
    samples: int
    passed: int
    tests: int
    seconds: float
    jobs: JobCount
    load: str

    @property
    def rate(self) -> float:
        return self.samples / self.seconds if self.seconds else 0.0

    @property
    def test_rate(self) -> float:
        return self.tests / self.seconds if self.seconds else 0.0


def cli_options(dataset: Dataset) -> RunOptions:
    """The options `python -m evaluator evaluate` gives this dataset with no flags."""
    profile = default_profile(dataset.name)
    timeout, source = run_time_limit(profile, dataset.language)
    return RunOptions(profile=profile.name, limit_source=source,
                      limits=SandboxLimits.for_timeout(timeout, memory_mb=MEMORY_MB))


def canonical_samples(problems: Sequence[Problem], broken: bool) -> list[Sample]:
    samples = [Sample(task_id=p.task_id, index=0, raw=p.canonical_solution,
                      completion=p.canonical_solution) for p in problems]
    if broken:
        samples += [Sample(task_id=p.task_id, index=1, raw=text, completion=text)
                    for p in problems if (text := drop_last_line(p.canonical_solution))]
    return samples


def drop_last_line(solution: str) -> str:
    """The solution without its last non-blank line: for most, a closing brace or the
    final return, so it fails to compile or returns nothing; "" for a one-liner."""
    lines = solution.rstrip().split("\n")
    return "\n".join(lines[:-1]) + "\n" if len(lines) > 1 else ""


def evaluate(dataset: Dataset, problems: Sequence[Problem], samples: Sequence[Sample],
             workers: int) -> tuple[float, int, int, JobCount]:
    """Wall seconds, passed samples, reported tests, and the jobs counted."""
    count = JobCount()
    language = get_language(dataset.language)
    options = cli_options(dataset)
    by_task = {p.task_id: p for p in problems}
    # Toolchain artefacts (precompiled headers, the Java harness) are built once per
    # machine: before the clock, as a machine in use has them.
    for sample in samples:
        language.prepare(by_task[sample.task_id], sample, options)
    passed = tests = 0
    undo = counting_runs(count)
    try:
        started = time.monotonic()
        with Engine(EngineConfig(backend="auto", workers=workers, options=options,
                                 cache=None)) as engine:
            for event in engine.evaluate(by_task, samples):
                if event["type"] == "sample_finished":
                    passed += event["result"].passed
                    tests += len(event["result"].tests)
        seconds = time.monotonic() - started
    finally:
        undo()
    return seconds, passed, tests, count


def datasets_for(language: str, shared: Path, plus_dir: Path) -> tuple[Dataset, Dataset]:
    base_dir = shared / "datasets"
    if language == "python":
        return (load_dataset(),
                load_dataset(path=base_dir / "humanevalplus" / "HumanEvalPlus-Mini.jsonl.gz"))
    return (load_dataset(path=base_dir / "humaneval-x" / f"humaneval_{language}.jsonl.gz"),
            load_dataset(path=plus_dir / f"humaneval_{language}.jsonl.gz"))


def shared_problems(base: Dataset, plus: Dataset, count: int,
                    ) -> tuple[list[Problem], list[Problem]]:
    """The first `count` problem numbers that both sets have, from each set."""
    wanted = {f"HumanEval/{n}" for n in range(count)}
    in_plus = {p.task_id for p in plus.problems}
    keep = [t for t in (p.task_id for p in base.problems) if t in wanted and t in in_plus]
    plus_by_task = {p.task_id: p for p in plus.problems}
    base_by_task = {p.task_id: p for p in base.problems}
    return [base_by_task[t] for t in keep], [plus_by_task[t] for t in keep]


def measure(language: str, shared: Path, plus_dir: Path, count: int, workers: int,
            broken: bool) -> list[Row]:
    base, plus = datasets_for(language, shared, plus_dir)
    base_problems, plus_problems = shared_problems(base, plus, count)
    # Runners and page cache warm for both sets, untimed: neither row pays the first start.
    for dataset, problems in ((base, base_problems), (plus, plus_problems)):
        evaluate(dataset, problems[:2], canonical_samples(problems[:2], False), workers)
    # The same programs on both sets: HumanEval+'s canonical solutions for Python (it
    # rewrote some of HumanEval's); HumanEval-X's, which its plus set keeps, for the rest.
    samples = canonical_samples(plus_problems, broken)
    rows = []
    for name, dataset, problems in (("base", base, base_problems), ("plus", plus, plus_problems)):
        before = load_average()
        seconds, passed, tests, jobs = evaluate(dataset, problems, samples, workers)
        rows.append(Row(language, name, len(samples), passed, tests, seconds, jobs,
                        f"{before} -> {load_average()}"))
    return rows


def print_row(row: Row, base: Row | None) -> None:
    per_run = ", ".join(f"{n} in {runs}" + (" (did not compile)" if n == 0 else "")
                        for n, runs in sorted(row.jobs.run_processes.items()))
    jobs = ", ".join(f"{n} {kind}" for kind, n in sorted(row.jobs.sandbox_jobs.items()))
    ratio = f"{row.rate / base.rate:.2f}x" if base and base.rate else "-"
    print(f"{row.language:7} {row.tests_set:5} {row.samples:>4} {row.passed:>4} "
          f"{row.tests:>7} {row.seconds:>7.1f} {row.rate:>9.2f} {row.test_rate:>9.0f} "
          f"{ratio:>6}  runs {row.jobs.executions}/{row.samples} samples, processes per "
          f"run: {per_run}; sandbox jobs: {jobs}; load {row.load}", flush=True)


def one_process_per_program(rows: Sequence[Row]) -> bool:
    """Every sample's program was run (a retry of a timeout runs it once more), and no run
    ran the program in more than one process: in one, all its tests, or in none when it
    did not compile (a broken variant's compile step stops its job)."""
    return all(max(row.jobs.run_processes, default=0) <= 1 and row.jobs.run_processes[1] > 0
               and row.jobs.executions >= row.samples for row in rows)


def prepare_plus_dir(given: Path | None, work: Path, languages: Sequence[str], count: int,
                     workers: int) -> Path:
    typed = [language for language in languages if language != "python"]
    if given is not None or not typed:
        return given or work
    started = time.monotonic()
    shared = shared_dir() / "datasets"
    build_plus(shared / "humanevalplus", shared / "humaneval-x", work, PLUS_SET, typed,
               task_ids=[f"HumanEval/{n}" for n in range(count)], workers=workers)
    print(f"built the {PLUS_SET} plus sets of {', '.join(typed)} for HumanEval/0-{count - 1} "
          f"in {time.monotonic() - started:.0f} s (untimed)", flush=True)
    return work


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--languages", default=",".join(ALL_LANGUAGES))
    parser.add_argument("--problems", type=int, default=12,
                        help="the first N problems (HumanEval/0..N-1) that the plus set has")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--plus-dir", type=Path,
                        help="a `build-plus --set mini` output holding these problems "
                             "(default: built here, untimed)")
    parser.add_argument("--broken", action="store_true",
                        help="also each canonical solution without its last line")
    args = parser.parse_args(argv)
    languages = [name.strip() for name in args.languages.split(",") if name.strip()]
    unknown = sorted(set(languages) - set(ALL_LANGUAGES))
    if unknown:
        parser.error(f"unknown languages {unknown}; choose from {', '.join(ALL_LANGUAGES)}")
    shared = shared_dir()
    print(f"{args.workers} workers, load at the start {load_average()}")
    with tempfile.TemporaryDirectory(prefix="plus-speed-") as tmp:
        plus_dir = prepare_plus_dir(args.plus_dir, Path(tmp), languages, args.problems,
                                    args.workers)
        print(f"{'lang':7} {'tests':5} {'n':>4} {'pass':>4} {'tests':>7} {'seconds':>7} "
              f"{'samples/s':>9} {'tests/s':>9} {'ratio':>6}  one process per program")
        rows: list[Row] = []
        for language in languages:
            base, plus = measure(language, shared, plus_dir, args.problems, args.workers,
                                 args.broken)
            print_row(base, None)
            print_row(plus, base)
            rows += [base, plus]
    verdict = "yes" if one_process_per_program(rows) else "NO (see the rows above)"
    print(f"every program ran all its tests in one process: {verdict}")
    print(f"load average at the end: {load_average()}")
    return 0 if one_process_per_program(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
