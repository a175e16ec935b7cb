"""HumanEval+'s find_zero (HumanEval/32) is judged as EvalPlus judges it: any root passes.

The fixture is our own cubic, (x - 1)(x - 2)(x - 3): the canonical solution (Newton's
method from 0) finds 1, so an answer of 2 or 3 is right but not the canonical output.
The programs run through the engine with the `none` backend.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from evaluator.datasets import load_dataset
from evaluator.engine import Engine, EngineConfig
from evaluator.records import Problem, RunOptions, Sample, SampleResult
from evaluator.sandbox.base import SandboxLimits

CUBIC = [-6, 11, -6, 1]
"""-6 + 11x - 6x^2 + x^3 = (x - 1)(x - 2)(x - 3)."""

RECORD = {
    "task_id": "HumanEval/32",
    "prompt": "import math\n\n\ndef poly(xs: list, x: float):\n"
              "    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])\n\n\n"
              "def find_zero(xs: list):\n    \"\"\"A zero of the polynomial xs.\"\"\"\n",
    "entry_point": "find_zero",
    "canonical_solution": "    x = 0.0\n    for _ in range(100):\n"
                          "        slope = sum(i * c * x ** (i - 1) for i, c in enumerate(xs)"
                          " if i)\n        x -= poly(xs, x) / slope\n    return x\n",
    "contract": "",
    "base_input": [[CUBIC]],
    "plus_input": [[[-c for c in CUBIC]]],
    "atol": 0.0001,
}
OTHER_TASK = {**RECORD, "task_id": "HumanEval/2", "entry_point": "find_zero"}
"""The same function under another task id: judged by equality, as any other task."""


@pytest.fixture(scope="module")
def plus_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plus") / "HumanEvalPlus.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (OTHER_TASK, RECORD)) + "\n",
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def find_zero(plus_file: Path) -> Problem:
    problem = load_dataset(path=plus_file).get("HumanEval/32")
    assert problem is not None
    return problem


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    options = RunOptions(limits=SandboxLimits(wall_seconds=5, cpu_seconds=5, memory_mb=512))
    with Engine(EngineConfig(backend="none", workers=2, options=options)) as eng:
        yield eng


def run(engine: Engine, problem: Problem, body: str) -> SampleResult:
    sample = Sample(task_id=problem.task_id, index=0, raw=body, completion=body)
    results = [e["result"] for e in engine.evaluate({problem.task_id: problem}, [sample])
               if e["type"] == "sample_finished"]
    assert len(results) == 1
    return results[0]


def test_the_loader_judges_find_zero_by_its_root_and_the_rest_by_equality(
        plus_file: Path) -> None:
    dataset = load_dataset(path=plus_file)
    cases = {p.task_id: {c.comparison for c in p.call_cases} for p in dataset.problems}
    assert cases == {"HumanEval/32": {"poly_root"}, "HumanEval/2": {"allclose"}}


def test_the_canonical_solution_finds_another_root_than_the_answers_below(
        engine: Engine, find_zero: Problem) -> None:
    result = run(engine, find_zero, find_zero.canonical_solution)
    assert result.status == "passed"
    assert [float(t.actual or "nan") for t in result.tests] == pytest.approx([1.0, 1.0])


@pytest.mark.parametrize("root", ["3.0", "2", "2.00000001"])
def test_a_root_other_than_the_canonical_one_passes(
        engine: Engine, find_zero: Problem, root: str) -> None:
    result = run(engine, find_zero, f"    return {root}\n")
    assert result.status == "passed"
    assert [t.status for t in result.tests] == ["passed", "passed"]


def test_the_same_answer_fails_where_equality_with_the_canonical_output_judges(
        engine: Engine, plus_file: Path) -> None:
    problem = load_dataset(path=plus_file).get("HumanEval/2")
    assert problem is not None
    assert run(engine, problem, "    return 3.0\n").status == "failed"


@pytest.mark.parametrize("answer", ["2.5", "1.01", "float('nan')", "float('inf')", "1e200",
                                    "None", "'1.0'", "complex(1, 0)"])
def test_a_value_that_is_not_a_root_fails(
        engine: Engine, find_zero: Problem, answer: str) -> None:
    result = run(engine, find_zero, f"    return {answer}\n")
    assert result.status == "failed"
    assert [t.status for t in result.tests] == ["failed", "failed"]
    assert "not a root" in (result.tests[0].message or "")


def test_a_candidate_cannot_make_its_answer_a_root_by_emptying_the_list(
        engine: Engine, find_zero: Problem) -> None:
    result = run(engine, find_zero, "    xs[:] = [0] * len(xs)\n    return 7.0\n")
    assert [t.status for t in result.tests] == ["failed", "failed"]


def test_a_candidate_cannot_make_its_answer_a_root_by_replacing_math_pow(
        engine: Engine, find_zero: Problem) -> None:
    result = run(engine, find_zero, "    math.pow = lambda x, i: 0.0\n    return 7.0\n")
    assert [t.status for t in result.tests] == ["failed", "failed"]


def test_a_candidate_cannot_pass_a_float_check_by_replacing_math_isclose(
        plus_file: Path, engine: Engine) -> None:
    """Any task judged within a tolerance (here HumanEval/2, whose expected output is the
    canonical root 1.0): the harness compares with the `math.isclose` it loaded with."""
    other = load_dataset(path=plus_file).get("HumanEval/2")
    assert other is not None
    honest = run(engine, other, "    return 7.0\n")
    assert honest.status == "failed"
    result = run(engine, other, "    import math\n    math.isclose = lambda *a, **k: True\n"
                                "    math.isnan = lambda x: True\n    return 7.0\n")
    assert result.status == "failed"


def test_a_record_stored_before_its_cases_named_the_oracle_is_judged_by_it(
        engine: Engine, find_zero: Problem) -> None:
    # What the web app kept of an import made before the loader set each case's
    # comparison: the cases say allclose, the problem's oracle says poly_root.
    stored = replace(find_zero, call_cases=tuple(
        replace(case, comparison="allclose") for case in find_zero.call_cases))
    assert stored.extra["oracle"] == "poly_root"
    assert run(engine, stored, "    return 3.0\n").status == "passed"
    assert run(engine, stored, "    return 2.5\n").status == "failed"
