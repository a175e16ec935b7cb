"""bench/plus_variants_check.py: which of a variant's canonical failures are the
translation's own, once `build-plus`'s validation has put the others down to HumanEval's
canonical solution or to a prompt that breaks the oracle."""

from __future__ import annotations

from typing import Any

from bench.plus_variants_check import not_humaneval_s, summary
from evaluator.plus.python import PythonBuild


def _failure(cause: str, **more: Any) -> dict[str, Any]:
    return {"task_id": "HumanEval/1", "cause": cause, "explained_by": [], **more}


def test_counts_the_inputs_no_known_cause_accounts_for() -> None:
    validation = {"failures": [
        _failure("humaneval_canonical", input=0),
        _failure("broken_oracle", input=1),
        _failure("unexplained", input=2),
        # A program that did not run stands for every input of its problem.
        _failure("timeout", inputs=5),
    ]}
    assert not_humaneval_s(validation) == 6


def test_summary_names_each_validated_variant_only() -> None:
    validated = PythonBuild(key="humaneval-xl/python/ru", problems=2, validation={
        "failures": [_failure("unexplained", input=0)]})
    unvalidated = PythonBuild(key="mhumaneval/python/ar/expert", problems=2)
    assert summary([validated, unvalidated]) == (
        "humaneval-xl/python/ru: 1 failing input(s) not HumanEval's own canonical "
        "solution's nor the oracle's\n")
