"""A program that stops early reports only the tests it reached; the result still lists
every test that exists, the rest as `not_run`, so a page says "1 of 3 tests passed" and
not "1 of 1". A program that finishes is left as it reported."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from evaluator.engine import Engine, EngineConfig
from evaluator.languages.base import never_ran
from evaluator.records import CallCase, Problem, RunOptions, Sample, SampleResult
from evaluator.records import TestOutcome as Outcome
from evaluator.sandbox.base import SandboxLimits

PROMPT = 'def add(a, b):\n    """Add two numbers."""\n'
TEST = ("\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n"
        "    assert candidate(2, 2) == 4\n    assert candidate(-1, 1) == 0\n")
# Right on the first input, then never returns.
STALLS_ON_2 = ("    if a == 2:\n        while True:\n            pass\n    return a + b\n")


def _problem(**fields: Any) -> Problem:
    return Problem(dataset="fixture", task_id="HumanEval/0", language="python",
                   natural_language="en", prompt=PROMPT, entry_point="add",
                   canonical_solution="    return a + b\n", test=TEST,
                   **fields)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    limits = SandboxLimits(wall_seconds=30, cpu_seconds=1, memory_mb=512)
    with Engine(EngineConfig(backend="none", workers=1, options=RunOptions(limits=limits),
                             retry_limits=False)) as eng:
        yield eng


def _run(engine: Engine, completion: str, problem: Problem) -> SampleResult:
    sample = Sample(task_id=problem.task_id, index=0, raw=completion, completion=completion)
    (result,) = [e["result"] for e in engine.evaluate({problem.task_id: problem}, [sample])
                 if e["type"] == "sample_finished"]
    return result


def test_assertions_after_a_timeout_are_listed_as_not_run(engine: Engine) -> None:
    result = _run(engine, STALLS_ON_2, _problem())
    assert result.status == "timeout"
    assert [t.status for t in result.tests] == ["passed", "not_run", "not_run"]
    assert [t.source for t in result.tests[1:]] == ["assert candidate(2, 2) == 4",
                                                    "assert candidate(-1, 1) == 0"]
    assert [t.line for t in result.tests] == [4, 5, 6]
    assert "never ran" in (result.tests[1].message or "")


def test_inputs_after_a_timeout_are_listed_as_not_run(engine: Engine) -> None:
    cases = tuple(CallCase(index=i, args=(i + 1, 1), expected=i + 2) for i in range(3))
    result = _run(engine, STALLS_ON_2, _problem(call_cases=cases))
    assert result.status == "timeout"
    assert [(t.index, t.status) for t in result.tests] == [
        (0, "passed"), (1, "not_run"), (2, "not_run")]


def test_a_finished_program_keeps_exactly_what_it_reported(engine: Engine) -> None:
    result = _run(engine, "    return a + b\n", _problem())
    assert [t.status for t in result.tests] == ["passed"] * 3


def test_without_a_plan_nothing_is_invented() -> None:
    records = [{"kind": "test", "site": 0, "status": "passed"}]
    assert never_ran(records, [Outcome(index=0, source="x", status="passed")]) == []
