"""The registry's patches for the plus tests, on the real data: the HumanEval-X solutions
of Java and Rust that the registry patches fail HumanEval+'s Mini inputs as shipped (or
never finish them), each failure explained by its own plus entry, and pass every input
patched; and Rust/65's own hidden test, which agrees with the shipped solution against
the prompt, takes the prompt's answer once patched (issue 25). Skipped without
../shared."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evaluator.datasets import load_dataset
from tests.evaluator.registry_checks import validated_mini, verdicts

needs_java = pytest.mark.skipif(shutil.which("javac") is None, reason="javac is not installed")

JAVA_PATCHED = (32, 55, 63, 76, 86, 91, 95, 101, 111, 117, 123, 124, 125, 127, 141, 144, 150,
                161, 163)
"""Java problems whose plus entries got patches for the full set's failures."""

FAILING_IN_MINI = (76, 86, 91, 95, 101, 111, 117, 124, 150, 163)
"""Those whose shipped solution already fails an input of the Mini set."""


@needs_java
def test_java_canonical_solutions_pass_every_plus_input_patched(
        shared_dir: Path, tmp_path: Path) -> None:
    validation = validated_mini(shared_dir, tmp_path / "out", "java", JAVA_PATCHED)
    assert sorted(validation["patched_problems"]) == sorted(
        f"HumanEval/{n}" for n in JAVA_PATCHED)
    assert validation["passed_patched"] == validation["tests"], validation["tests"]
    # As shipped: isSimplePower(-2, -2) is false, isBored("I") throws, a leading comma
    # gives an empty word, "06-04-202" is a date, xOrY(-101, ...) takes -101 for a prime,
    # split(" ") drops trailing spaces...; each failure is explained by its own plus entry.
    # The others fail only inputs of the full set.
    failing = {f["task_id"]: f["explained_by"] for f in validation["failures"]}
    assert set(failing) == {f"HumanEval/{n}" for n in FAILING_IN_MINI}
    for task_id, explained_by in failing.items():
        assert f"hx-java-{task_id.rsplit('/', 1)[1]}-plus" in explained_by, task_id
    assert validation["unexplained"] == 0


needs_rustc = pytest.mark.skipif(shutil.which("rustc") is None,
                                 reason="rustc is not installed")

RUST_PATCHED = (50, 65, 72, 76, 80, 86, 90, 117, 134, 145, 154)
"""Rust problems that fail Mini inputs as shipped and that their entries patch."""


@needs_rustc
def test_rust_canonical_solutions_pass_every_plus_input_patched(
        shared_dir: Path, tmp_path: Path) -> None:
    validation = validated_mini(shared_dir, tmp_path / "out", "rust", RUST_PATCHED)
    failing = {f["task_id"]: f for f in validation["failures"]}
    # decode_shift panics on the space, order_by_points sums -777's digits as -77 + 7,
    # circular_shift(97, 8) rotates where the prompt says reverse, will_it_fly(vec![])
    # underflows, cycpattern_check(a, "") is false...
    assert set(failing) == {f"HumanEval/{n}" for n in RUST_PATCHED}
    for task_id, failure in failing.items():
        assert f"hx-rust-{task_id.rsplit('/', 1)[1]}-plus" in failure["explained_by"]
    assert validation["unexplained"] == 0
    assert validation["passed"] < validation["tests"]
    assert validation["passed_patched"] == validation["tests"]


@needs_rustc
def test_rust_65_test_takes_the_prompts_answer_only_patched(shared_dir: Path) -> None:
    rust = load_dataset(path=shared_dir / "datasets/humaneval-x/humaneval_rust.jsonl.gz")
    problem = rust.get("HumanEval/65")
    assert problem is not None
    # What the prompt asks: the digits reversed when shift is past their number.
    reverse = ("    let s = x.to_string();\n"
               "    if shift as usize > s.len() { return s.chars().rev().collect(); }\n"
               "    let k = shift as usize % s.len();\n"
               "    format!(\"{}{}\", &s[s.len() - k..], &s[..s.len() - k])\n}\n")
    assert verdicts(problem, [problem.canonical_solution, reverse], patched=False) == [
        "passed", "failed"]
    # Patched, the test expects the prompt's answers, which the shipped solution misses.
    assert verdicts(problem, [problem.canonical_solution, reverse], patched=True) == [
        "failed", "passed"]
