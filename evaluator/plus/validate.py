"""Run each language's canonical HumanEval-X solution against its built plus tests.

The programs run through the real engine (default sandbox, per-test outcomes). Test
outcome i of a problem is its kept input i. Each failing input gets a cause where one
can be read off the values (`classify`), a heuristic, and the defect registry's entries
that explain it (`explains_input`): an input no entry explains is counted `unexplained`.
The problems the registry patches run a second time, patched, for the rate after them.

A translated Python variant's plus set (`evaluator.plus.python`) has no `kept` list: its
inputs are its call cases, all kept, and the solution to check is the variant's own,
given as `solutions` (the record's canonical solution is HumanEval+'s, the oracle).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evaluator.datasets import load_dataset
from evaluator.defects import DefectError, apply_patches, explains, explains_input
from evaluator.engine import Engine, EngineConfig
from evaluator.plus.programs import root_text
from evaluator.plus.types import SignatureError, ValueType, read_signature
from evaluator.profiles import default_profile, run_time_limit
from evaluator.records import Problem, RunOptions, Sample, SampleResult, TestOutcome
from evaluator.sandbox.base import SandboxLimits

CAUSES = {
    "overflow": "the actual value looks wrapped: an integer overflow in the solution",
    "float_precision": "close to the expected float, but outside the tolerance",
    "float32_input": "the signature takes 32-bit floats: the input itself was rounded "
                     "before the solution saw it",
    "negative_operand": "an input is negative: integer division or modulo rounds "
                        "differently from Python's",
    "program_failed": "the program as a whole did not run (compile error, timeout, crash)",
    "timeout": "the solution did not finish in time (an exponential recursion, say), or "
               "stopped before reaching the check",
    "non_ascii_semantics": "the input holds non-ASCII text, which the solution treats "
                           "by ASCII ranges where Python's str methods are Unicode-aware",
    "integral_float": "a float with an integral value (3.0) in the input: the variant's "
                      "types (JavaScript's numbers, a float-only signature) lose Python's "
                      "int/float distinction, which the problem tests",
    "variant_interface": "fails an input of HumanEval's own tests, which the variant's "
                         "tests check with their own expected value: the variant asks for "
                         "another output than Python's (C++ rounded_avg without '0b')",
    "broken_oracle": "HumanEval+'s canonical solution, which gives the expected value, "
                     "fails this input under the variant's prompt too: the translated "
                     "prompt breaks it (a helper it defines differently, say)",
    "humaneval_canonical": "HumanEval's own canonical solution fails this input too: the "
                           "variant ships HumanEval's solution, which HumanEval+ corrected",
    "not_a_root": "a root check (HumanEval/32's find_zero) got an x at which the "
                  "polynomial is not within the task's atol of zero: the solution's "
                  "precision or range, judged as EvalPlus judges it",
    "unexplained": "no cause read off the values: a bug in the solution or the translation",
}

ROOT_EXPECTED = root_text(0.0).split(",")[0] + ","
"""How a root check's expected text begins (`programs.root_text`), whatever its atol."""
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def classify(outcome: TestOutcome, *, arguments: str = "", given: str = "",
             float32: bool = False) -> str:
    """The likely cause of one failing plus test, from its shown values: `arguments`, the
    check's text, and `given`, the `repr` of HumanEval+'s argument list where known."""
    if outcome.status in ("timeout", "not_run"):
        return "timeout"
    if "overflow" in (outcome.message or "").lower():
        return "overflow"  # Rust's debug build checks its arithmetic
    # JavaScript's and Go's harnesses show the expected text quoted ('...', "...").
    if (outcome.expected or "").lstrip("'\"").startswith(ROOT_EXPECTED):
        return "not_a_root"
    if not arguments.isascii() or re.search(r"\\u00[89a-f]|\\u0[1-9a-f]|\\u[1-9a-f]",
                                            arguments):
        return "non_ascii_semantics"
    expected = _numbers(outcome.expected or "")
    actual = _numbers(outcome.actual or "")
    if expected and len(expected) == len(actual):
        pairs = list(zip(actual, expected, strict=True))
        if any(abs(a) >= 2 ** 31 - 1 or (abs(e) > 2 ** 20 and a * e < 0)
               or (abs(e) >= 2 ** 31) for a, e in pairs):
            return "overflow"
        if any(a != e and abs(a - e) <= 1e-3 * max(1.0, abs(e)) for a, e in pairs):
            return "float_precision"
    if _holds_integral_float(given, arguments):
        return "integral_float"
    if float32:
        return "float32_input"
    if re.search(r"(?<![\w.])-\d", arguments):
        return "negative_operand"
    return "unexplained"


def _holds_integral_float(given: str, check: str) -> bool:
    """Whether the input holds a float with an integral value. Read off HumanEval+'s own
    arguments where they are known: a float parameter's check shows every int as one
    (`any_int(1000000000.0f, ...)` for Python's `[1000000000, ...]`)."""
    try:
        values = ast.literal_eval(given) if given else None
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        values = None
    if values is None:
        return re.search(r"(?<![\w.])-?\d+\.0(?![\d.e])", given or check) is not None
    stack = [values]
    while stack:
        value = stack.pop()
        if isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, list | tuple | set):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value)
            stack.extend(value.values())
    return False


def _numbers(text: str) -> list[float]:
    try:
        return [float(match) for match in _NUMBER.findall(text)]
    except ValueError:
        return []


@dataclass(frozen=True)
class Progress:
    """One problem's program has finished in `validate`: the `done`-th of `total` in
    its `stage` ("shipped", then "patched" for the problems the registry patches), with
    `passed` of its `tests` inputs passing."""

    stage: str
    done: int
    total: int
    task_id: str
    passed: int
    tests: int


def validate(dataset_path: Path, *, task_ids: Iterable[str] | None = None,
             arguments: Mapping[str, Sequence[str]] | None = None,
             solutions: Mapping[str, str] | None = None,
             backend: str = "auto", workers: int = 2,
             cpu_seconds: float | None = None,
             progress: Callable[[Progress], None] | None = None) -> dict[str, Any]:
    """Run the canonical solutions of the built dataset at `dataset_path`, as shipped
    and, where the defect registry patches them, patched.

    They run as a user's run of the dataset does with no options: under its reference
    harness's profile (`evaluator.profiles.default_profile`: its rules, and how a program
    is put together) and that profile's time limit (`cpu_seconds` overrides it), with the
    default memory limit. A check under rules of its own would vouch for programs
    a user's run never builds.

    `arguments[task_id][i]` is the `repr` of kept input i's argument list, by which the
    registry names the inputs a defect explains (by default, read off the problem's call
    cases). `solutions[task_id]` is the solution to run in place of the problem's
    canonical one, patched as that would be. `progress` is called as each program
    finishes. Returns {"problems", "tests", "passed", "passed_patched", "explained",
    "unexplained", "causes": {cause: n}, "failures", "by_problem": {task_id: {"tests",
    "passed", "passed_patched"}}}.
    """
    dataset = load_dataset(path=dataset_path)
    wanted = set(task_ids) if task_ids is not None else None
    problems = {p.task_id: p for p in dataset.problems
                if wanted is None or p.task_id in wanted}
    profile = default_profile(dataset.name)
    timeout, source = run_time_limit(profile, dataset.language, override=cpu_seconds)
    options = RunOptions(limits=SandboxLimits.for_timeout(timeout),
                         profile=profile.name, limit_source=source)
    checked = {task_id: problem if solutions is None or task_id not in solutions
               else replace(problem, canonical_solution=solutions[task_id])
               for task_id, problem in problems.items()}
    results = _run_canonical(problems, {t: p.canonical_solution for t, p in checked.items()},
                             options, backend, workers, _reporter("shipped", problems, progress))
    fixed, patch_errors = _patched(checked)
    patched = {task_id: problems[task_id] for task_id, problem in fixed.items()
               if problem is not checked[task_id]}
    if solutions is None:
        # The engine patches the problem; the patched canonical solution is the sample.
        patched_options = replace(options, patched=True)
    else:
        # The problem's own canonical solution is the oracle of the expected values: it
        # stays as shipped, under the patched prompt, and the engine patches nothing more.
        patched = {t: replace(fixed[t], canonical_solution=problems[t].canonical_solution)
                   for t in patched}
        patched_options = options
    patched_results = _run_canonical(
        patched, {t: fixed[t].canonical_solution for t in patched},
        patched_options, backend, workers,
        _reporter("patched", patched, progress)) if patched else {}
    by_problem: dict[str, dict[str, int]] = {}
    failures: list[dict[str, Any]] = []
    for task_id, result in sorted(results.items(), key=lambda item: _number(item[0])):
        problem = problems[task_id]
        kept, _ = _plus_inputs(problem)
        given = (arguments or {}).get(task_id)
        after = None if task_id not in patched_results else _failures(
            problem, patched_results[task_id], [])
        found = _failures(problem, result, list(given) if given is not None
                          else [repr(list(case.args)) for case in problem.call_cases],
                          fixed=_fixed_inputs(kept, after))
        by_problem[task_id] = {
            "tests": len(kept), "passed": len(kept) - failed_inputs(found),
            "passed_patched": len(kept) - failed_inputs(found if after is None else after)}
        failures.extend(found)
    return _summary(len(problems), by_problem, failures, sorted(patched), patch_errors)


def _summary(problems: int, by_problem: Mapping[str, Mapping[str, int]],
             failures: list[dict[str, Any]], patched: Sequence[str],
             patch_errors: Mapping[str, str]) -> dict[str, Any]:
    tests = sum(figures["tests"] for figures in by_problem.values())
    passed = sum(figures["passed"] for figures in by_problem.values())
    explained = failed_inputs(f for f in failures if f["explained_by"])
    return {"problems": problems, "tests": tests, "passed": passed,
            "passed_patched": sum(figures["passed_patched"] for figures in by_problem.values()),
            "patched_problems": list(patched), "explained": explained,
            "unexplained": tests - passed - explained, "patch_errors": dict(patch_errors),
            "causes": count_causes(failures), "failures": failures,
            "by_problem": {task_id: dict(figures) for task_id, figures in by_problem.items()}}


def without_problems(validation: Mapping[str, Any] | None,
                     task_ids: Iterable[str]) -> dict[str, Any] | None:
    """`validation` with the figures and failures of `task_ids` taken out (those problems
    are built again). None for no validation, or one without per-problem figures (a
    report written before them), from which they cannot be taken out."""
    if not validation or "by_problem" not in validation:
        return None
    gone = set(task_ids)
    return _summary(
        len([t for t in validation["by_problem"] if t not in gone]),
        {t: f for t, f in validation["by_problem"].items() if t not in gone},
        [f for f in validation["failures"] if f["task_id"] not in gone],
        [t for t in validation["patched_problems"] if t not in gone],
        {t: e for t, e in validation["patch_errors"].items() if t not in gone})


def combine_validations(first: Mapping[str, Any] | None,
                        second: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """One validation of the problems of two (the second's figures win for a problem
    in both), each problem's failures in task order."""
    if not first or not second:
        either = second or first
        return dict(either) if either else None
    by_problem = {**first["by_problem"], **second["by_problem"]}
    failures = sorted([f for f in first["failures"] if f["task_id"] not in second["by_problem"]]
                      + list(second["failures"]), key=lambda f: _number(f["task_id"]))
    patched = sorted(set(first["patched_problems"]) - set(second["by_problem"])
                     | set(second["patched_problems"]), key=_number)
    patch_errors = {t: e for t, e in first["patch_errors"].items()
                    if t not in second["by_problem"]} | dict(second["patch_errors"])
    return _summary(len(by_problem), by_problem, failures, patched, patch_errors)


def _reporter(stage: str, problems: Mapping[str, Problem],
              progress: Callable[[Progress], None] | None,
              ) -> Callable[[SampleResult], None] | None:
    """What `_run_canonical` calls with each finished program: a `Progress` for it."""
    if progress is None:
        return None
    done = 0

    def report(result: SampleResult) -> None:
        nonlocal done
        done += 1
        kept, _ = _plus_inputs(problems[result.task_id])
        outcomes = [t for t in result.tests if t.source != "<whole program>"]
        if len(outcomes) == len(kept):
            passed = sum(1 for t in outcomes if t.status == "passed")
        else:
            passed = len(kept) if result.status == "passed" else 0
        progress(Progress(stage, done, len(problems), result.task_id, passed, len(kept)))

    return report


def failed_inputs(failures: Iterable[Mapping[str, Any]]) -> int:
    """How many inputs `failures` stand for: a program that did not run stands for all
    of its problem's."""
    return sum(int(failure.get("inputs", 1)) for failure in failures)


def count_causes(failures: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    causes: Counter[str] = Counter()
    for failure in failures:
        causes[str(failure["cause"])] += int(failure.get("inputs", 1))
    return dict(causes)


def _plus_inputs(problem: Problem) -> tuple[list[int], list[str]]:
    """The HumanEval+ inputs that are `problem`'s tests, in order, and the group (base,
    plus) of each: a typed build lists those it kept; a Python variant keeps all of its
    call cases."""
    plus = problem.extra.get("plus", {})
    if "kept" not in plus:
        return ([case.index for case in problem.call_cases],
                [case.group for case in problem.call_cases])
    kept = list(plus.get("kept", []))
    return kept, list(plus.get("groups", [])) or [""] * len(kept)


def validation_cells(validation: Mapping[str, Any] | None) -> tuple[str, str, str, str]:
    """The builder's table cells of one validation: the canonical pass rate as shipped
    and patched, and how many failing inputs the registry explains and does not ("-"
    each, not validated)."""
    if not validation:
        return "-", "-", "-", "-"
    tests = int(validation["tests"])
    return (pass_rate(int(validation["passed"]), tests),
            pass_rate(int(validation["passed_patched"]), tests),
            str(validation["explained"]), str(validation["unexplained"]))


def pass_rate(passed: int, tests: int) -> str:
    return f"{passed}/{tests} {100 * passed / max(1, tests):.2f}%"


def _patched(problems: Mapping[str, Problem]) -> tuple[dict[str, Problem], dict[str, str]]:
    """Each problem with the registry's patches applied, and why a patch did not apply
    (the data is not the copy the registry was written for): that problem stays as is."""
    fixed: dict[str, Problem] = {}
    errors: dict[str, str] = {}
    for task_id, problem in problems.items():
        try:
            fixed[task_id] = apply_patches(problem)
        except DefectError as exc:
            fixed[task_id], errors[task_id] = problem, str(exc)
    return fixed, errors


def _run_canonical(problems: Mapping[str, Problem], solutions: Mapping[str, str],
                   options: RunOptions, backend: str, workers: int,
                   finished: Callable[[SampleResult], None] | None = None,
                   ) -> dict[str, SampleResult]:
    samples = [Sample(task_id=task_id, index=0, raw=solutions[task_id],
                      completion=solutions[task_id]) for task_id in problems]
    config = EngineConfig(backend=backend, workers=workers, cache=None, dedup=False,
                          options=options)
    results: dict[str, SampleResult] = {}
    with Engine(config) as engine:
        for event in engine.evaluate(dict(problems), samples):
            if event["type"] == "sample_finished":
                result = event["result"]
                results[result.task_id] = result
                if finished is not None:
                    finished(result)
    return results


def _fixed_inputs(kept: Sequence[int],
                  patched: Sequence[Mapping[str, Any]] | None) -> frozenset[int]:
    """The kept inputs the patched solution passes (`patched`: its failures; None, not
    patched): a patched program that did not run passes none."""
    if patched is None or any("input" not in failure for failure in patched):
        return frozenset()
    return frozenset(kept) - {int(failure["input"]) for failure in patched}


def _failures(problem: Problem, result: SampleResult, arguments: list[str],
              fixed: frozenset[int] = frozenset()) -> list[dict[str, Any]]:
    """One entry per failing kept input (or one for a program that did not run at all,
    with `inputs` its count), each with its likely cause and the registry entries that
    explain it (`fixed`: the inputs the registry's patches make the solution pass)."""
    kept, groups = _plus_inputs(problem)
    outcomes = [t for t in result.tests if t.source != "<whole program>"]
    if len(outcomes) != len(kept):
        # Not split per test: every input of the problem failed, or passed.
        if result.status == "passed":
            return []
        return [{"task_id": problem.task_id, "status": result.status,
                 "cause": "timeout" if result.status == "timeout" else "program_failed",
                 "inputs": len(kept), "message": result.message[:300],
                 # Only an entry that says every plus input fails explains a program
                 # that never reached its tests: one naming some inputs, or a class of
                 # them, says nothing of a compile that ran out of time.
                 "explained_by": [d.id for d in explains(problem, "plus")
                                  if not d.inputs and d.rule is None]}]
    found: list[dict[str, Any]] = []
    float32 = _takes_float32(problem)
    for position, (index, group, outcome) in enumerate(zip(kept, groups, outcomes,
                                                            strict=True)):
        if outcome.status == "passed":
            continue
        given = arguments[position] if position < len(arguments) else ""
        cause = classify(outcome, arguments=outcome.source, given=given, float32=float32)
        # Only a typed variant ships tests of its own for HumanEval's inputs.
        # A root check judges HumanEval's inputs by the property, not the variant's value.
        if group == "base" and cause not in ("timeout", "not_a_root") \
                and problem.language != "python":
            cause = "variant_interface"
        found.append({"task_id": problem.task_id, "input": index, "group": group,
                      "cause": cause, "status": outcome.status, "arguments": given[:300],
                      "check": outcome.source[:300],
                      "expected": (outcome.expected or "")[:200],
                      "actual": (outcome.actual or "")[:200],
                      "message": (outcome.message or "")[:200],
                      "explained_by": [d.id for d in explains_input(
                          problem, given, cause, fixed=index in fixed)]})
    return found


def _takes_float32(problem: Problem) -> bool:
    try:
        signature = read_signature(problem.language, problem.declaration + "\n"
                                   + problem.canonical_solution, problem.entry_point)
    except SignatureError:
        return False

    def narrow(value_type: ValueType) -> bool:
        return (value_type.kind == "float" and value_type.bits == 32) \
            or any(narrow(arg) for arg in value_type.args)

    return any(narrow(param) for param in signature.params)


def _number(task_id: str) -> int:
    return int(task_id.rsplit("/", 1)[1])
