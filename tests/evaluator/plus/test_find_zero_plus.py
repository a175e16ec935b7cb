"""HumanEval/32 (find_zero) in the typed languages' plus tests: any root passes.

Each input becomes a check, in the language itself, that the returned x is a root of the
input's polynomial (|sum of c * pow(x, i)| <= atol, EvalPlus's oracle), shown per test
as expected "a root, |poly(x)| <= 0.0001" and actual "x = ..., poly(x) = ...". The
HumanEval+ record is our own: a cubic, (x - 1)(x - 2)(x - 3), its negation and a line; the
HumanEval-X records are the real ones. The programs run through the engine in the
default sandbox, under the dataset's own profile, as a user's run of the built file does.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evaluator.datasets import load_dataset
from evaluator.engine import Engine, EngineConfig
from evaluator.plus.build import PlusSource, build_plus, build_problem, load_sources
from evaluator.plus.literals import literal
from evaluator.plus.oracle import Answer
from evaluator.plus.programs import ROOT_ORACLE, root_text
from evaluator.plus.types import read_signature
from evaluator.profiles import default_profile, run_time_limit
from evaluator.records import RunOptions, Sample, SampleResult
from evaluator.sandbox.base import SandboxLimits

CUBIC = [-6, 11, -6, 1]
"""-6 + 11x - 6x^2 + x^3 = (x - 1)(x - 2)(x - 3): 3 is a root, the canonical
solutions find 1, and 2.5 is none (poly(2.5) = -0.375)."""
INPUTS = (CUBIC, [-c for c in CUBIC], [-60, 20])
"""3 is a root of each; 2.5 of none (poly(2.5) = -0.375, 0.375, -10)."""

RECORD = {
    "task_id": "HumanEval/32", "entry_point": "find_zero", "contract": "", "atol": 0.0001,
    "prompt": "import math\n\n\ndef poly(xs: list, x: float):\n"
              "    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])\n\n\n"
              "def find_zero(xs: list):\n    \"\"\"A zero of the polynomial xs.\"\"\"\n",
    "canonical_solution": "    begin, end = -1.0, 1.0\n"
                          "    while poly(xs, begin) * poly(xs, end) > 0:\n"
                          "        begin *= 2.0\n        end *= 2.0\n"
                          "    while end - begin > 1e-10:\n"
                          "        center = (begin + end) / 2.0\n"
                          "        if poly(xs, center) * poly(xs, begin) > 0:\n"
                          "            begin = center\n        else:\n            end = center\n"
                          "    return begin\n",
    "base_input": [[INPUTS[0]]], "plus_input": [[INPUTS[1]], [INPUTS[2]]],
}
ROOT = root_text(0.0001)

RUST_POLY = ("    let mut sum = 0.0;\n    for i in 0..xs.len() {\n"
             "        sum += xs[i] * x.powi(i as i32);\n    }\n    sum\n}\n"
             "fn find_zero(xs: &Vec<f64>) -> f64 {\n")
"""Rust's prompt stops inside `poly` (its declaration), so a completion finishes it."""

ANSWERS = {
    "cpp": lambda body: f"    {body};\n}}\n",
    "go": lambda body: f"    {body}\n}}\n",
    "js": lambda body: f"  {body};\n}};\n",
    "rust": lambda body: RUST_POLY + f"    {body.replace('return ', '')}\n}}\n",
}
"""A completion whose find_zero runs `body` (`return 3.0`, say)."""

needs = {
    "cpp": pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed"),
    "go": pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed"),
    "js": pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    "rust": pytest.mark.skipif(shutil.which("rustc") is None, reason="rustc is not installed"),
}


@pytest.fixture(scope="module")
def built(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    plus_dir = tmp_path_factory.mktemp("plus")
    with gzip.open(plus_dir / "HumanEvalPlus-Mini.jsonl.gz", "wt", encoding="utf-8") as out:
        out.write(json.dumps(RECORD) + "\n")
    out_dir = tmp_path_factory.mktemp("built")
    build_plus(plus_dir, shared_dir / "datasets" / "humaneval-x", out_dir, "mini",
               ["cpp", "java", "js", "go", "rust"], workers=1)
    return out_dir


def _test_text(built: Path, language: str) -> tuple[str, dict[str, Any]]:
    with gzip.open(built / f"humaneval_{language}.jsonl.gz", "rt", encoding="utf-8") as lines:
        (record,) = [json.loads(line) for line in lines if line.strip()]
    return str(record["test"]), record


@pytest.mark.parametrize("language", ["cpp", "java", "js", "go", "rust"])
def test_every_typed_language_checks_each_input_for_a_root(built: Path, language: str) -> None:
    report = json.loads((built / "report.json").read_text())
    (problem,) = next(b for b in report["languages"]
                      if b["language"] == language)["per_problem"]
    assert (problem["kept"], problem["dropped"]) == (3, {})
    test, record = _test_text(built, language)
    assert record["plus"]["kept"] == [0, 1, 2]
    assert record["plus"]["omitted"] == {}
    (typed,) = load_dataset(path=built / f"humaneval_{language}.jsonl.gz").problems
    signature = read_signature(language, typed.declaration + "\n" + typed.canonical_solution,
                               typed.entry_point)
    checks = [line for line in test.splitlines() if f"{signature.name}(" in line]
    assert len(checks) == 3, test
    for check, coefficients in zip(checks, INPUTS, strict=True):
        assert ROOT in check
        # The judge gets a literal of its own besides the call's: whatever the solution
        # does to the list it is given, the polynomial is the input's.
        assert check.count(literal(language, coefficients, signature.params[0])) == 2


def test_go_imports_what_its_root_check_calls(built: Path) -> None:
    _, record = _test_text(built, "go")
    setup = str(record["test_setup"])
    for path in ("testing", "math", "strconv", "github.com/stretchr/testify/assert"):
        assert f'"{path}"' in setup
    assert '"math/rand"' not in setup  # the base test's, which the plus test does not call


def test_another_property_oracle_is_still_left_out(shared_dir: Path) -> None:
    dataset = load_dataset(path=shared_dir / "datasets" / "humaneval-x" / "humaneval_cpp.jsonl.gz")
    problem = dataset.get("HumanEval/32")
    assert problem is not None
    signature = read_signature("cpp", problem.declaration, problem.entry_point)
    for oracle, dropped in ((ROOT_ORACLE, {}), ("convex_hull", {"property_oracle": 1})):
        answer = Answer(oracle == ROOT_ORACLE, error="" if oracle == ROOT_ORACLE
                        else "property_oracle")
        source = PlusSource(problem, ((INPUTS[0],),), ("base",), (answer,), 1e-4, oracle)
        assert dict(build_problem("cpp", signature, source).dropped) == dropped


def test_the_canonical_solution_is_not_run_for_a_root_problem(
        tmp_path: Path) -> None:
    broken = {**RECORD, "canonical_solution": "    raise ValueError('never called')\n"}
    with gzip.open(tmp_path / "HumanEvalPlus-Mini.jsonl.gz", "wt", encoding="utf-8") as out:
        out.write(json.dumps(broken) + "\n")
    (source,) = load_sources(tmp_path, "mini", workers=1)
    assert source.oracle == ROOT_ORACLE
    assert all(answer.ok for answer in source.answers)


def _run(path: Path, completions: list[str]) -> list[SampleResult]:
    """Each completion run as a user's run of the built file runs it by default."""
    dataset = load_dataset(path=path)
    (problem,) = dataset.problems
    profile = default_profile(dataset.name)
    timeout, source = run_time_limit(profile, dataset.language, override=None)
    options = RunOptions(limits=SandboxLimits.for_timeout(timeout), profile=profile.name,
                         limit_source=source)
    samples = [Sample(task_id=problem.task_id, index=i, raw=text, completion=text)
               for i, text in enumerate(completions)]
    results: dict[int, SampleResult] = {}
    config = EngineConfig(workers=1, cache=None, dedup=False, options=options)
    with Engine(config) as engine:
        for event in engine.evaluate({problem.task_id: problem}, samples):
            if event["type"] == "sample_finished":
                results[event["result"].completion_id] = event["result"]
    return [results[i] for i in range(len(completions))]


def _verdicts(result: SampleResult) -> list[tuple[str, str | None, str | None]]:
    return [(t.status, t.expected, t.actual) for t in result.tests]


MUTATES = {
    "go": "xs[0] = 0; return 0",
    "js": "xs[0] = 0; return 0",
}
"""Sets the constant term to 0, of which 0 is then a root: of the mutated list, not of
the input (Go's slice and JavaScript's array are the caller's)."""


@pytest.mark.parametrize("language", [pytest.param(name, marks=needs[name])
                                      for name in ("cpp", "go", "js", "rust")])
def test_any_root_passes_and_anything_else_fails_with_x_and_poly_x(
        built: Path, language: str) -> None:
    path = built / f"humaneval_{language}.jsonl.gz"
    (problem,) = load_dataset(path=path).problems
    answer = ANSWERS[language]
    completions = [problem.canonical_solution, answer("return 3.0"), answer("return 2.5")]
    if language in MUTATES:
        completions.append(answer(MUTATES[language]))
    canonical, other_root, none, *mutated = _run(path, completions)
    shown = (f'"{ROOT}"', f"'{ROOT}'")  # JavaScript's harness quotes with '
    assert canonical.status == "passed", _verdicts(canonical)
    # 3 is a root of each, though not the one the canonical solution finds.
    assert other_root.status == "passed", _verdicts(other_root)
    assert [t.status for t in other_root.tests] == ["passed"] * 3
    assert none.status == "failed"
    # Each value as the language's shortest repr: -10, not C's %.1g "-1e+01".
    for outcome, value in zip(none.tests, ("-0.375", "0.375", "-10"), strict=True):
        assert outcome.status == "failed"
        assert outcome.expected in shown, outcome
        actual = (outcome.actual or "").strip("\"'")
        # Java and Rust write a float with an integral value as -10.0.
        assert actual in (f"x = 2.5, poly(x) = {value}", f"x = 2.5, poly(x) = {value}.0"), \
            outcome
    for result in mutated:
        assert [t.status for t in result.tests] == ["failed"] * 3, _verdicts(result)
