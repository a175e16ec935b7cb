"""`python -m evaluator doctor`: can this machine evaluate each language, and if not, why?

For each language and sandbox level it runs the canary problems (`evaluator.canary`)
through the real engine, in the real sandbox, with no result cache: every canonical
solution must pass, and every deliberately wrong solution must fail by its tests. A
language that does not is reported with the cause in plain words and a hint to fix it.
Workers run the same check before they take a language's work (`webapp.health`), in a
fresh process each time, so a toolchain fixed since is seen as fixed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from evaluator.calibration import resolve_backend
from evaluator.canary import CanaryDataError, CanaryProblem, canary_problems
from evaluator.engine import Engine, EngineConfig
from evaluator.languages.base import LanguageError
from evaluator.languages.registry import canonical_name, display_name, get_language, language_names
from evaluator.languages.toolchains import ToolchainError
from evaluator.records import RunOptions, Sample, SampleResult
from evaluator.sandbox.base import SandboxError, SandboxLimits
from evaluator.sandbox.levels import AUTO, SANDBOX_CHOICES, get_level

LIMITS = SandboxLimits.for_timeout(10.0, memory_mb=1024)
"""Generous for programs this small: a canary must not fail because the machine is busy."""
CANONICAL = 0
WRONG = 1
"""The sample index of each problem's canonical and wrong solution."""
EXIT_FAILED = 1
EXIT_USAGE = 2

_MISSING_FILE = re.compile(
    r"Cannot find module '([^']+)'|Can't find source path (\S+)"
    r"|No such file or directory: '([^']+)'|(/\S+): No such file or directory")


@dataclass(frozen=True)
class LanguageCheck:
    """The canary of one language under one sandbox level."""

    language: str
    sandbox: str
    """The level (`standard`); for `auto` the level it chose, or `auto` if it chose none."""
    backend: str
    ok: bool
    seconds: float
    checked_at: str
    """ISO 8601, UTC, when the check started."""
    cause: str = ""
    """What went wrong, in plain words; "" when ok."""
    hint: str = ""
    """What to do about it; "" when ok."""
    programs: int = 0
    """Programs run (canonical and wrong solutions)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LanguageCheck:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__ if name in data})


@dataclass(frozen=True)
class DoctorReport:
    checks: tuple[LanguageCheck, ...]

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [check.to_dict() for check in self.checks]}

    def text(self) -> str:
        lines = [f"{'language':<12}{'sandbox':<10}{'result':<8}{'time':>8}  cause"]
        for check in self.checks:
            result = "ok" if check.ok else "FAILED"
            lines.append(f"{display_name(check.language):<12}{check.sandbox:<10}{result:<8}"
                         f"{check.seconds:>7.1f}s  {check.cause}".rstrip())
            if check.hint:
                lines.append(f"{'':<40}hint: {check.hint}")
        failed = [display_name(c.language) for c in self.checks if not c.ok]
        lines.append("every language is ready" if not failed else
                     f"not ready: {', '.join(dict.fromkeys(failed))}")
        return "\n".join(lines) + "\n"


class _Failure(Exception):
    """Ends a check early with its cause and hint."""

    def __init__(self, cause: str, hint: str) -> None:
        super().__init__(cause)
        self.cause = cause
        self.hint = hint


def doctor(*, languages: Sequence[str] | None = None,
           sandboxes: Sequence[str] = (AUTO,)) -> DoctorReport:
    """Check each language (default: every registered one) under each sandbox level."""
    chosen = list(languages) if languages else list(language_names())
    return DoctorReport(tuple(check_language(language, sandbox)
                              for sandbox in sandboxes for language in chosen))


def check_language(language: str, sandbox: str = AUTO) -> LanguageCheck:
    """Run `language`'s canaries under `sandbox` (a level, a backend name or `auto`)."""
    checked_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    started = time.monotonic()
    level, backend, programs = _requested_level(sandbox), "", 0
    try:
        try:
            resolved = resolve_backend(sandbox)
        except SandboxError as exc:
            raise _Failure(f"the {level} sandbox does not work here: {exc}",
                           "`python -m evaluator sandbox` shows which levels work and why; "
                           "install what is missing (bubblewrap, runsc) or choose another "
                           "level with EVALUATOR_SANDBOX") from exc
        level, backend = resolved.level or level, resolved.name
        _require_toolchain(language)
        problems = _problems(language)
        results = _run(problems, sandbox)
        programs = len(results)
        _judge(language, problems, results)
    except _Failure as failure:
        return LanguageCheck(language=language, sandbox=level, backend=backend, ok=False,
                             seconds=_since(started), checked_at=checked_at,
                             cause=failure.cause, hint=failure.hint, programs=programs)
    except Exception as exc:
        # Whatever else broke is the machine's or the evaluator's; say what it was.
        cause, hint = _explain_exception(exc)
        return LanguageCheck(language=language, sandbox=level, backend=backend, ok=False,
                             seconds=_since(started), checked_at=checked_at, cause=cause,
                             hint=hint, programs=programs)
    return LanguageCheck(language=language, sandbox=level, backend=backend, ok=True,
                         seconds=_since(started), checked_at=checked_at, programs=programs)


def _requested_level(sandbox: str) -> str:
    try:
        return sandbox if sandbox == AUTO else get_level(sandbox).name
    except ValueError:
        return sandbox


def _since(started: float) -> float:
    return round(time.monotonic() - started, 2)


def _require_toolchain(language: str) -> None:
    missing = get_language(language).available()
    if missing is None:
        return
    name = display_name(language)
    dangling = list(_dangling_variables(missing))
    if dangling:
        variable, value = dangling[0]
        raise _Failure(f"the {name} toolchain is missing: {variable} is set to {value}, which "
                       "does not exist",
                       f"point {variable} at an installed tool, or unset it to use the one "
                       "found on PATH")
    install = re.search(r"\((apt-get install [^)]+)\)", missing)
    raise _Failure(f"the {name} toolchain is missing: {missing}",
                   f"install it: {install.group(1)}" if install else
                   "install it, or point its EVALUATOR_* variable at it "
                   "(evaluator/languages/toolchains.py)")


def _dangling_variables(message: str) -> Iterator[tuple[str, str]]:
    """`EVALUATOR_*` variables that name a path that does not exist and that the
    toolchain's message is about (by the tool's name or the path itself)."""
    lowered = message.lower()
    for variable, value in sorted(os.environ.items()):
        if not variable.startswith("EVALUATOR_") or not value.startswith("/"):
            continue
        if Path(value).exists():
            continue
        if value.lower() in lowered or Path(value).name.lower().split(".")[0] in lowered:
            yield variable, value


def _problems(language: str) -> tuple[CanaryProblem, ...]:
    try:
        return canary_problems(language)
    except CanaryDataError as exc:
        raise _Failure(f"no canary for {display_name(language)}: {exc}",
                       "add evaluator/canary/<language>.toml with a problem whose canonical "
                       "solution passes and a wrong solution that fails") from exc


def _run(problems: Sequence[CanaryProblem], sandbox: str) -> dict[tuple[str, int], SampleResult]:
    by_id = {canary.problem.task_id: canary.problem for canary in problems}
    samples = []
    for canary in problems:
        text = canary.problem.canonical_solution
        samples.append(Sample(task_id=canary.problem.task_id, index=CANONICAL, raw=text,
                              completion=text))
        if canary.wrong_solution:
            samples.append(Sample(task_id=canary.problem.task_id, index=WRONG,
                                  raw=canary.wrong_solution, completion=canary.wrong_solution))
    # No cache and no dedup: every program runs, now, in this sandbox.
    config = EngineConfig(backend=sandbox, workers=2, options=RunOptions(limits=LIMITS),
                          cache=None, dedup=False)
    results: dict[tuple[str, int], SampleResult] = {}
    with Engine(config) as engine:
        for event in engine.evaluate(by_id, samples):
            if event["type"] == "sample_finished":
                result = event["result"]
                results[(result.task_id, result.completion_id)] = result
    return results


def _judge(language: str, problems: Sequence[CanaryProblem],
           results: dict[tuple[str, int], SampleResult]) -> None:
    # The machine's failures first: they explain a wrong solution's verdict as well.
    ordered = sorted(results.values(), key=lambda r: r.status != "sandbox_error")
    for result in ordered:
        if result.status == "sandbox_error":
            raise _Failure(*_explain_infrastructure(language, result))
    for canary in problems:
        task_id = canary.problem.task_id
        right = results[(task_id, CANONICAL)]
        if right.status != "passed":
            raise _Failure(*_explain_canonical(language, task_id, right))
        wrong = results.get((task_id, WRONG))
        if wrong is None:
            continue
        if wrong.status == "passed":
            raise _Failure(
                f"a deliberately wrong {display_name(language)} solution ({task_id}) passed "
                "its tests: the harness is not checking results",
                "the test harness cannot be trusted; compare "
                "evaluator/languages/runtime/ with the repository's copy")
        if wrong.status != "failed" or not any(t.status == "failed" for t in wrong.tests):
            raise _Failure(
                f"a deliberately wrong {display_name(language)} solution ({task_id}) did not "
                f"fail by its tests but with {wrong.status}: {_short(wrong.message)}",
                "the harness does not report failing tests one by one; check the language's "
                "runtime files and toolchain version")


def _explain_infrastructure(language: str, result: SampleResult) -> tuple[str, str]:
    name = display_name(language)
    text = f"{result.message}\n{result.stderr}"
    missing = _missing_file(text)
    if missing:
        if Path(missing).exists():
            # There on the host, not in the sandbox: bwrap and gVisor give programs a /tmp
            # of their own, which hides a checkout under the host's /tmp.
            return (f"a file the {name} programs need is not there inside the sandbox: "
                    f"{missing}",
                    "install the workbench where every user can read it and not under "
                    "/tmp (the sandbox has a /tmp of its own)")
        return (f"a runtime file of the evaluator is missing: {missing}",
                "restore it from the repository (`git status evaluator/` lists what is "
                "missing), or reinstall the workbench")
    if "toolchain" in text.lower() or "not installed" in text:
        return (f"the {name} toolchain failed: {_short(result.message)}",
                "check that the toolchain runs: `python -m evaluator doctor --sandbox none "
                f"--language {language}` tells the toolchain from the sandbox")
    return (f"the sandbox failed to run the {name} programs: {_short(result.message)}",
            "`python -m evaluator sandbox` shows which levels work; `--sandbox none` tells "
            "the toolchain from the sandbox")


def _explain_canonical(language: str, task_id: str, result: SampleResult) -> tuple[str, str]:
    name = display_name(language)
    if result.status == "compile_error":
        return (f"the {name} compiler rejected a correct program ({task_id}): "
                f"{_short(result.message)}",
                "check the compiler's version and its libraries and headers "
                "(the Dockerfile and deploy/apt list the ones the workbench is tested with)")
    if result.status in ("timeout", "memory"):
        return (f"a correct {name} program ({task_id}) ran out of "
                f"{'time' if result.status == 'timeout' else 'memory'}: "
                f"{_short(result.message)}",
                "the machine may be overloaded or the limits too small for the toolchain; "
                "check the load and run the doctor again")
    return (f"a correct {name} program ({task_id}) did not pass ({result.status}): "
            f"{_short(result.message or result.stderr)}",
            "the harness or the toolchain misreports results; check the runtime files "
            "(evaluator/languages/runtime/) and the toolchain's version")


def _explain_exception(exc: Exception) -> tuple[str, str]:
    if isinstance(exc, ToolchainError):
        return (f"a toolchain failed: {_short(str(exc))}",
                "run the command the message names by hand to see why")
    if isinstance(exc, FileNotFoundError):
        return (f"a file of the evaluator is missing: {exc.filename or exc}",
                "restore it from the repository (`git status evaluator/` lists what is "
                "missing), or reinstall the workbench")
    if isinstance(exc, SandboxError):
        return (f"the sandbox failed: {_short(str(exc))}",
                "`python -m evaluator sandbox` shows which levels work and why")
    if isinstance(exc, LanguageError):
        return (f"the canary could not be built: {_short(str(exc))}",
                "the canary data (evaluator/canary/) does not fit the language module")
    return (f"the evaluator failed: {type(exc).__name__}: {_short(str(exc))}",
            "this is a bug or a broken installation; the log has the traceback")


def _missing_file(text: str) -> str | None:
    match = _MISSING_FILE.search(text)
    if match is None:
        return None
    return next(group for group in match.groups() if group)


def _short(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit] + "…"


# -- the command ---------------------------------------------------------------------------
def add_doctor_parser(commands: Any) -> None:
    """Adds `doctor` to `python -m evaluator`'s subcommands."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "doctor", help="check that every language runs here: canaries under each sandbox")
    parser.add_argument("--language", action="append", default=[], metavar="NAME",
                        help="a language to check (repeat or comma-separate; default: all)")
    parser.add_argument("--sandbox", default=os.environ.get("EVALUATOR_SANDBOX") or AUTO,
                        help="sandbox levels to check, comma-separated (default: "
                             "$EVALUATOR_SANDBOX, else auto)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=command_doctor)


def command_doctor(args: argparse.Namespace) -> int:
    languages = [name for value in args.language for name in value.split(",") if name.strip()]
    sandboxes = [name.strip() for name in args.sandbox.split(",") if name.strip()]
    known: list[str] = []
    for name in languages:
        canonical = canonical_name(name)
        if canonical is None:
            return _usage(f"unknown language {name!r}; known: {', '.join(language_names())}")
        known.append(canonical)
    for name in sandboxes:
        if name not in SANDBOX_CHOICES:
            return _usage(f"unknown sandbox {name!r}; choose from {', '.join(SANDBOX_CHOICES)}")
    with _stopped_by_sigterm():
        report = doctor(languages=list(dict.fromkeys(known)) or None,
                        sandboxes=sandboxes or [AUTO])
    _write(report, args.json, sys.stdout)
    return 0 if report.ok else EXIT_FAILED


def _usage(message: str) -> int:
    sys.stderr.write(f"error: {message}\n")
    return EXIT_USAGE


def _write(report: DoctorReport, as_json: bool, out: IO[str]) -> None:
    if as_json:
        json.dump(report.to_dict(), out, indent=2)
        out.write("\n")
    else:
        out.write(report.text())


@contextlib.contextmanager
def _stopped_by_sigterm() -> Iterator[None]:
    """SIGTERM (a worker stopping its canary) ends the check as Ctrl-C would, so that the
    engine closes its sandboxes on the way out instead of the process dying around them."""
    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
