"""A program stopped by its time limit lists every assertion of its tests: the ones it
finished with their outcome, and the rest as `not_run`, in every language that splits its
tests (Python's own tests are in `tests/evaluator/test_tests_not_run.py`). The verdict
stays the timeout; only the per-test list is complete. A program that never compiled
lists none. Real compilers, the default sandbox."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from language_support import evaluate_one

from evaluator.engine import Engine, EngineConfig
from evaluator.languages.base import NOT_RUN, PreparedJob
from evaluator.languages.go import Go, normalise_records
from evaluator.languages.js import JavaScript
from evaluator.languages.rust import Rust
from evaluator.records import Problem, RunOptions, Sample, SampleResult
from evaluator.sandbox.base import SandboxLimits

INPUTS = ((1, 2), (2, 2), (3, 4), (4, 5), (5, 6))
"""Five assertions; the solution loops forever on the third."""


@dataclass(frozen=True)
class Case:
    language: str
    prompt: str
    test: str
    completion: str
    broken: str
    """A completion that does not compile."""
    sources: tuple[str, ...]
    """The source text each assertion is listed with, in order."""
    missing: str | None
    """Why the toolchain cannot run here, or None."""
    setup: str = ""
    """What HumanEval-X's Go harness puts before the program (`test_setup`)."""


def _go() -> Case:
    checks = "".join(f"    assert.Equal({a + b}, Add({a}, {b}))\n" for a, b in INPUTS)
    return Case(
        "go",
        "import (\n    \"fmt\"\n)\n\n// Add two numbers.\nfunc Add(a int, b int) int {\n",
        "func TestAdd(t *testing.T) {\n    assert := assert.New(t)\n" + checks + "}\n",
        "    if a == 3 {\n        for {\n        }\n    }\n    return a + b\n}\n",
        "    return a +\n}\n",
        tuple(line.strip() for line in checks.splitlines()), Go().available(),
        setup='package main\n\nimport (\n    "testing"\n'
              '    "github.com/stretchr/testify/assert"\n)\n')


def _rust() -> Case:
    checks = "".join(f"        assert_eq!(add({a}, {b}), {a + b});\n" for a, b in INPUTS)
    return Case(
        "rust", "\n/*\n Add two numbers.\n*/\nfn add(a: i32, b: i32) -> i32 {\n",
        "\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn test_add() {\n"
        + checks + "    }\n}\n",
        "    if a == 3 { loop {} }\n    return a + b;\n}\n", "    return a + ;\n}\n",
        tuple(line.strip().rstrip(";") for line in checks.splitlines()), Rust().available())


def _cpp() -> Case:
    checks = "".join(f"    assert (add({a}, {b}) == {a + b});\n" for a, b in INPUTS)
    return Case(
        "cpp", "#include<stdio.h>\nusing namespace std;\nint add(int a, int b){\n",
        "#undef NDEBUG\n#include<assert.h>\nint main(){\n" + checks + "}\n",
        "    if (a == 3) { volatile int spin = 0; while (true) { spin++; } }\n"
        "    return a + b;\n}\n", "    return a + ;\n}\n",
        tuple(line.strip().rstrip(";") for line in checks.splitlines()),
        None if shutil.which("g++") else "g++ is not installed")


def _java() -> Case:
    checks = ",\n".join(f"                s.add({a}, {b}) == {a + b}" for a, b in INPUTS)
    return Case(
        "java",
        "import java.util.*;\nimport java.lang.*;\n\nclass Solution {\n"
        "    public int add(int a, int b) {\n",
        "public class Main {\n    public static void main(String[] args) {\n"
        "        Solution s = new Solution();\n"
        "        List<Boolean> correct = Arrays.asList(\n" + checks + "\n        );\n"
        "        if (correct.contains(false)) {\n            throw new AssertionError();\n"
        "        }\n    }\n}\n",
        "        if (a == 3) { while (true) { } }\n        return a + b;\n    }\n}\n",
        "        return a + ;\n    }\n}\n",
        tuple(line.strip().rstrip(",") for line in checks.splitlines()),
        None if shutil.which("javac") else "javac is not installed")


def _js() -> Case:
    checks = "".join(f"  console.assert(add({a}, {b}) === {a + b})\n" for a, b in INPUTS)
    return Case(
        "js", "/* Add two numbers. */\nconst add = (a, b) => {\n",
        "const testAdd = () => {\n" + checks + "}\n\ntestAdd()\n",
        "  if (a === 3) { while (true) {} }\n  return a + b;\n}\n", "  return a + \n}\n}\n",
        tuple(line.strip() for line in checks.splitlines()), JavaScript().available())


CASES = {case.language: case for case in (_go(), _rust(), _cpp(), _java(), _js())}


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    # The default sandbox; a short CPU limit with the wall clock as a backstop.
    limits = SandboxLimits(wall_seconds=4, cpu_seconds=1, memory_mb=1024)
    with Engine(EngineConfig(workers=1, options=RunOptions(limits=limits))) as eng:
        yield eng


def _run(engine: Engine, case: Case, completion: str) -> SampleResult:
    problem = Problem(dataset="fixture", task_id="HumanEval/53", language=case.language,
                      natural_language="en", prompt=case.prompt, entry_point="add",
                      canonical_solution="", test=case.test, source_id="53",
                      extra={"test_setup": case.setup} if case.setup else {})
    sample = Sample(task_id=problem.task_id, index=0, raw=completion, completion=completion)
    return evaluate_one(engine, problem, sample)


@pytest.mark.parametrize("language", sorted(CASES))
def test_the_assertions_after_a_timeout_are_listed_as_not_run(engine: Engine,
                                                              language: str) -> None:
    case = CASES[language]
    if case.missing:
        pytest.skip(case.missing)
    result = _run(engine, case, case.completion)
    assert result.status == "timeout", (result.message, result.stderr)
    assert result.error_type == "Timeout"
    # The third never reported (it was running when the limit struck); it and the two
    # after it are listed, not dropped.
    assert [t.status for t in result.tests] == ["passed", "passed",
                                                "not_run", "not_run", "not_run"]
    assert tuple(t.source for t in result.tests) == case.sources
    assert [t.index for t in result.tests] == [0, 1, 2, 3, 4]
    assert all(t.message == NOT_RUN for t in result.tests[2:])
    # The five assertions are on consecutive lines of the tests.
    first = result.tests[0].line
    assert first is not None
    assert [t.line for t in result.tests] == list(range(first, first + 5))


@pytest.mark.parametrize("language", sorted(CASES))
def test_a_program_that_does_not_compile_lists_no_tests(engine: Engine, language: str) -> None:
    case = CASES[language]
    if case.missing:
        pytest.skip(case.missing)
    result = _run(engine, case, case.broken)
    assert result.status == "compile_error", (result.message, result.stderr)
    # No program ran, so none of its tests was left unreached.
    assert result.tests == ()


# -- reading the records (no compiler) ---------------------------------------------------


def _prepared(**context: object) -> PreparedJob:
    program = "package main\nfunc TestAdd() {\n    assert.Equal(\n        3,\n" \
              "        Add(1, 2),\n    )\n    assert.Equal(4, Add(2, 2))\n}\n"
    return PreparedJob(job={}, program=program, program_hash="x", context={
        "test_first_line": 2, "mode": "testing",
        "sites": {"3": "assert.Equal(\n        3,\n        Add(1, 2),\n    )",
                  "7": "assert.Equal(4, Add(2, 2))"}, **context})


def _answer(*records: dict[str, object], stderr: str = "") -> dict[str, object]:
    return {"steps": [{"name": "compile", "exit_code": 0, "stderr": stderr},
                      {"name": "run", "exit_code": 0, "timed_out": True}],
            "records": list(records)}


def test_a_record_on_any_line_of_a_multi_line_assertion_names_that_assertion() -> None:
    answer = normalise_records(_prepared(), _answer(
        {"kind": "test", "index": 0, "status": "passed", "line": 5}))
    plan, test = answer["records"]
    assert plan == {"kind": "plan", "sites": [
        {"source": "assert.Equal(\n        3,\n        Add(1, 2),\n    )", "line": 2},
        {"source": "assert.Equal(4, Add(2, 2))", "line": 6}]}
    assert (test["site"], test["line"]) == (0, 4)
    assert test["source"].startswith("assert.Equal(\n        3,")


def test_a_run_judged_as_a_whole_gets_no_plan() -> None:
    record = {"kind": "test", "index": 0, "status": "passed", "line": 3}
    whole = normalise_records(_prepared(mode="whole", note="no tests"), _answer(record))
    rebuilt = normalise_records(_prepared(fallback_marker="REBUILT"),
                                _answer(record, stderr="REBUILT unchanged"))
    # A whole program stopped by its limit has no per-assertion list to complete.
    assert whole["records"] == []
    assert rebuilt["records"] == []
