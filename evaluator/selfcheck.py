"""Selfcheck: run every canonical solution of a dataset and explain each failure.

A benchmark whose reference solutions fail its own tests cannot score models fairly.
`selfcheck` runs each problem's canonical solution through the engine (the same
programs, sandbox and harness as any sample) and returns the problems that did not
pass, each cross-referenced with the defect registry. A failure the registry explains
is expected; any other is a bug in the evaluator, its environment, or an unrecorded
defect.

Datasets without canonical solutions (MultiPL-E) get a harness check instead: a stub
body that throws is compiled against the prompt and the test, which must compile and
report one failing test per assertion. That proves the prompt, the test and our
per-test split fit together, though not that the tests are right.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from evaluator.datasets import Dataset
from evaluator.defects import apply_patches, defects_for, explains, flaky_defects
from evaluator.engine import Engine, EngineConfig
from evaluator.languages import get_language
from evaluator.records import Problem, RunOptions, Sample, SampleResult, Task, TestSet
from evaluator.sandbox.base import SandboxLimits


@dataclass(frozen=True)
class ProblemFailure:
    task_id: str
    source_id: str
    status: str
    """The result's status, or `not_run` when the problem cannot be run this way."""
    message: str
    explained_by: tuple[str, ...] = ()
    """Ids of the registry's defects that account for the failure."""
    flaky: bool = False
    """The verdict changed when the problem was run again."""
    stub: bool = False
    """The problem has no canonical solution; a harness check with a stub failed."""
    result: SampleResult | None = field(default=None, compare=False, repr=False)

    @property
    def explained(self) -> bool:
        return bool(self.explained_by)


@dataclass(frozen=True)
class SelfcheckSummary:
    problems: int
    passed: int
    explained: int
    unexplained: int
    stubbed: int
    """Problems checked with a stub (no canonical solution)."""


@dataclass
class SelfcheckReport:
    """The failures of one selfcheck run; iterating it gives the `ProblemFailure`s."""

    dataset: str
    tests: str
    task: str
    patched: bool
    problems: int
    stubbed: int
    failures: list[ProblemFailure] = field(default_factory=list)

    def __iter__(self) -> Iterator[ProblemFailure]:
        return iter(self.failures)

    def __len__(self) -> int:
        return len(self.failures)

    @property
    def unexplained(self) -> list[ProblemFailure]:
        return [f for f in self.failures if not f.explained]

    @property
    def ok(self) -> bool:
        """True when every failure is a registered defect."""
        return not self.unexplained

    def summary(self) -> SelfcheckSummary:
        explained = len(self.failures) - len(self.unexplained)
        return SelfcheckSummary(problems=self.problems,
                                passed=self.problems - len(self.failures),
                                explained=explained, unexplained=len(self.unexplained),
                                stubbed=self.stubbed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset, "tests": self.tests, "task": self.task,
            "patched": self.patched, **asdict(self.summary()), "ok": self.ok,
            "failures": [{"task_id": f.task_id, "source_id": f.source_id, "status": f.status,
                          "message": f.message, "explained_by": list(f.explained_by),
                          "flaky": f.flaky, "stub": f.stub} for f in self.failures],
        }

    def text(self) -> str:
        summary = self.summary()
        check = "harness check with a stub" if summary.stubbed else "canonical solutions"
        lines = [f"{self.dataset} ({self.task}, {self.tests} tests"
                 f"{', patched' if self.patched else ''}): {check}",
                 f"  {summary.passed}/{summary.problems} passed, {summary.explained} failures "
                 f"explained by the defect registry, {summary.unexplained} unexplained"]
        for failure in self.failures:
            mark = "explained" if failure.explained else "UNEXPLAINED"
            reason = ", ".join(failure.explained_by) or failure.message[:200]
            flaky = " (flaky)" if failure.flaky else ""
            lines.append(f"  {failure.task_id:15} {failure.source_id:28} {failure.status:14}"
                         f" {mark}{flaky}: {reason}")
        return "\n".join(lines) + "\n"


def selfcheck(
    dataset: Dataset,
    engine: Engine | None = None,
    *,
    tests: TestSet | None = None,
    task: Task | None = None,
    patched: bool | None = None,
    backend: str = "auto",
    workers: int = 2,
    limits: SandboxLimits | None = None,
    retry: bool = True,
) -> SelfcheckReport:
    """Run every canonical solution of `dataset`; the report lists those that failed.

    With an `engine`, its sandbox, workers and run options are used (`tests`, `task` and
    `patched` override them); without one, an engine is made from the arguments.
    Failures are run a second time to tell flaky verdicts apart.
    """
    if engine is not None:
        base = engine.config
    else:
        base = EngineConfig(backend=backend, workers=workers,
                            options=RunOptions(limits=limits or RunOptions().limits))
    options = base.options
    options = dataclasses.replace(
        options, tests=tests or options.tests, task=task or options.task,
        patched=options.patched if patched is None else patched,
        limits=limits or options.limits)
    config = dataclasses.replace(base, options=options, cache=None, dedup=False)
    problems = {p.task_id: p for p in dataset.problems}
    if engine is not None and engine.config.options == options:
        results = _run(engine, problems, dataset.problems)
    else:
        with Engine(config) as own:
            results = _run(own, problems, dataset.problems)
    suspects = [tid for tid, result in results.items() if not _ok(problems[tid], result)]
    flaky: set[str] = set()
    if retry and suspects:
        # A failure under load (a timeout, say) or a nondeterministic solution shows up
        # as a verdict that changes on a second run.
        with Engine(config) as again_engine:
            again = _run(again_engine, problems, [problems[t] for t in suspects])
        flaky = {tid for tid in suspects if again[tid].status != results[tid].status}
    report = SelfcheckReport(
        dataset=dataset.key, tests=options.tests, task=options.task, patched=options.patched,
        problems=len(dataset.problems),
        stubbed=sum(1 for p in dataset.problems if not p.canonical_solution.strip()))
    for task_id, result in results.items():
        problem = problems[task_id]
        if _ok(problem, result) and task_id not in flaky:
            continue
        report.failures.append(_failure(problem, result, options.tests, options.task,
                                        flaky=task_id in flaky))
    report.failures.sort(key=lambda f: _number(f.task_id))
    return report


def summarize(dataset: Dataset, failures: Iterable[ProblemFailure]) -> SelfcheckSummary:
    failures = list(failures)
    explained = sum(1 for f in failures if f.explained)
    return SelfcheckSummary(
        problems=len(dataset.problems), passed=len(dataset.problems) - len(failures),
        explained=explained, unexplained=len(failures) - explained,
        stubbed=sum(1 for p in dataset.problems if not p.canonical_solution.strip()))


def _run(engine: Engine, problems: dict[str, Problem],
         chosen: Iterable[Problem]) -> dict[str, SampleResult]:
    # Patched runs judge the patched canonical solution (a registry patch may fix it).
    patched = engine.config.options.patched
    samples = [_sample(apply_patches(problem) if patched else problem) for problem in chosen]
    results: dict[str, SampleResult] = {}
    for event in engine.evaluate(problems, samples):
        if event["type"] == "sample_finished":
            result = event["result"]
            results[result.task_id] = result
    return results


def _sample(problem: Problem) -> Sample:
    body = problem.canonical_solution
    if not body.strip():
        # A body that compiles and fails every test; a language may add what its compiler
        # needs beyond it (Go: uses of the prompt's imports, which it rejects unused).
        language = get_language(problem.language)
        body = language.selfcheck_stub(problem, language.selfcheck_body)
    return Sample(task_id=problem.task_id, index=0, raw=body, completion=body)


def _ok(problem: Problem, result: SampleResult) -> bool:
    if problem.canonical_solution.strip():
        return result.status == "passed"
    # The stub must compile, and every test must run and fail on its own.
    return (result.status in ("failed", "error") and bool(result.tests)
            and not any(t.status == "passed" for t in result.tests)
            and result.error_type not in ("IncompleteRun", "CompileError"))


def _failure(problem: Problem, result: SampleResult, tests: str, task: str, *,
             flaky: bool) -> ProblemFailure:
    not_run = result.error_type == "NotRunnable"
    if not_run:
        reasons = [d.id for d in defects_for(problem)
                   if d.kind == "missing_example_test" and tests == "example"]
    else:
        reasons = [d.id for d in explains(problem, tests, task)]
        if flaky:
            reasons += [d.id for d in flaky_defects(problem) if d.id not in reasons]
    message = result.message
    if not problem.canonical_solution.strip() and result.status == "passed":
        message = "the stub passed: the tests check nothing"
    return ProblemFailure(
        task_id=problem.task_id, source_id=problem.source_id,
        status="not_run" if not_run else result.status, message=message,
        explained_by=tuple(reasons), flaky=flaky,
        stub=not problem.canonical_solution.strip(), result=replace(result))


def _number(task_id: str) -> int:
    try:
        return int(task_id.rsplit("/", 1)[1])
    except (IndexError, ValueError):
        return 0
