"""MERA ruHumanEval: `instruction`, `inputs` {`function`, `tests`}, `outputs`, `meta`
{`id`, `canonical_solution`, `entry_point`}.

`inputs.tests` is a string holding a Python list of keyword-argument dicts, read with
`ast.literal_eval` (never `eval`: it is data). MERA passes a generation iff
`str(expected) == str(actual)` for every test, so each test becomes a `str_equal` call
case. The dataset card describes `outputs` as 2-D (n_samples × n_tests, identical rows)
while the data and the scorer use one row; both are accepted. The hidden test split has
empty `outputs`: its cases get `expected=None` and `extra["outputs_hidden"] = True`.

There is no raw harness, so `Problem.test` is empty; the raw `tests` string is kept in
`extra["tests"]`. `meta.id` indexes the public split, which is in HumanEval order.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from evaluator.datasets.dataset import Dataset
from evaluator.datasets.humaneval import task_id
from evaluator.datasets.reading import SourceFile, SourceRecord, read_path
from evaluator.records import CallCase, Problem

REQUIRED_FIELDS = frozenset({"instruction", "inputs", "outputs", "meta"})


def is_mera_file(path: Path) -> bool:
    return "ruhumaneval" in path.name.lower()


def load_mera(path: Path, *, max_expanded_bytes: int | None = None) -> Dataset:
    source = read_path(path, max_expanded_bytes=max_expanded_bytes)
    return source.dataset(layout="mera-ruhumaneval", language="python", natural_language="ru",
                          problems=tuple(_problem(record, source) for record in source.records))


def _problem(record: SourceRecord, source: SourceFile) -> Problem:
    inputs = _mapping(record, "inputs")
    meta = _mapping(record, "meta")
    number = _id(record, meta.get("id"))
    raw_tests = inputs.get("tests")
    arguments = _tests(record, raw_tests)
    outputs = _outputs(record, len(arguments))
    if outputs and len(outputs) != len(arguments):
        raise record.error(f"{len(arguments)} tests but {len(outputs)} outputs")
    cases = tuple(
        CallCase(
            index=index,
            kwargs=kwargs,
            expected=outputs[index] if outputs else None,
            comparison="str_equal",
        )
        for index, kwargs in enumerate(arguments)
    )
    extra: dict[str, Any] = {"instruction": record.optional_text("instruction")}
    extra["tests"] = raw_tests
    if not outputs:
        extra["outputs_hidden"] = True
    return Problem(
        dataset="mera-ruhumaneval",
        task_id=task_id(number),
        language="python",
        natural_language="ru",
        prompt=_string(record, inputs, "inputs.function"),
        entry_point=_string(record, meta, "meta.entry_point"),
        canonical_solution=_string(record, meta, "meta.canonical_solution", required=False),
        test="",
        call_cases=cases,
        source_id=str(number),
        source=record.where,
        dataset_version=source.version,
        extra=extra,
    )


def _mapping(record: SourceRecord, key: str) -> dict[str, Any]:
    value = record.value(key)
    if not isinstance(value, dict):
        raise record.error(f"field {key!r} must be an object, got {type(value).__name__}")
    return value


def _string(
    record: SourceRecord, holder: dict[str, Any], dotted: str, *, required: bool = True
) -> str:
    value = holder.get(dotted.rsplit(".", 1)[1])
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise record.error(f"field {dotted!r} must be a string, got {type(value).__name__}")
    return value


def _id(record: SourceRecord, value: Any) -> int:
    # Some exports write the id as a string of digits.
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise record.error(f"field 'meta.id' must be a non-negative integer, got {value!r}")
    return value


def _tests(record: SourceRecord, raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, str):
        try:
            parsed = ast.literal_eval(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise record.error(f"field 'inputs.tests' is not a Python literal: {exc}") from None
    else:
        parsed = raw
    if not isinstance(parsed, list) or not all(
        isinstance(case, dict) and all(isinstance(k, str) for k in case) for case in parsed
    ):
        raise record.error("field 'inputs.tests' must be a list of keyword-argument dicts")
    return parsed


def _outputs(record: SourceRecord, n_tests: int) -> list[Any]:
    outputs = record.value("outputs")
    if not isinstance(outputs, list):
        raise record.error(f"field 'outputs' must be a list, got {type(outputs).__name__}")
    if outputs and all(isinstance(row, list) and len(row) == n_tests for row in outputs):
        # The card's 2-D form repeats one row per sample; the first row is the answers.
        return list(outputs[0])
    return outputs
