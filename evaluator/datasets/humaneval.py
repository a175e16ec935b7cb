"""The original HumanEval (openai/human-eval): `task_id, prompt, entry_point,
canonical_solution, test`.

It is also the reference every other loader aligns to, so the copy inside the installed
`human-eval` package is loaded once and kept (`reference_humaneval`).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from evaluator.datasets.dataset import Dataset, DatasetError
from evaluator.datasets.reading import SourceFile, SourceRecord, read_path, read_resource
from evaluator.records import Problem

PACKAGE = "human_eval"
PACKAGE_RESOURCE = "data/HumanEval.jsonl.gz"
HUMANEVAL_FIELDS = frozenset({"task_id", "prompt", "entry_point", "canonical_solution", "test"})

_TASK_ID = re.compile(r"HumanEval/(\d+)")


def task_id(number: int) -> str:
    return f"HumanEval/{number}"


def humaneval_number(record: SourceRecord, key: str = "task_id") -> int:
    """N from a `HumanEval/N` field, or a clear error."""
    raw = record.text(key)
    match = _TASK_ID.fullmatch(raw)
    if match is None:
        raise record.error(f"field {key!r} is {raw!r}, expected 'HumanEval/<number>'")
    return int(match.group(1))


def humaneval_problem(
    record: SourceRecord, source: SourceFile, *, dataset: str, require_test: bool = True
) -> Problem:
    """A Problem from a record in human-eval's own format (also EvalPlus's)."""
    return Problem(
        dataset=dataset,
        task_id=task_id(humaneval_number(record)),
        language="python",
        natural_language="en",
        prompt=record.text("prompt"),
        entry_point=record.text("entry_point"),
        canonical_solution=record.text("canonical_solution"),
        test=record.text("test") if require_test else record.optional_text("test"),
        source_id=record.text("task_id"),
        source=record.where,
        dataset_version=source.version,
        extra=record.leftovers(HUMANEVAL_FIELDS),
    )


def _dataset(source: SourceFile, display: str) -> Dataset:
    return Dataset(
        name="humaneval",
        version=source.version,
        language="python",
        natural_language="en",
        layout="humaneval",
        source=display,
        problems=tuple(humaneval_problem(r, source, dataset="humaneval") for r in source.records),
    )


def load_humaneval(path: Path, *, max_expanded_bytes: int | None = None) -> Dataset:
    return _dataset(read_path(path, max_expanded_bytes=max_expanded_bytes), str(path))


def load_package_humaneval() -> Dataset:
    """The 164 problems shipped in the `human-eval` package; no file needed."""
    return reference_humaneval()


@functools.cache
def reference_humaneval() -> Dataset:
    dataset = _dataset(read_resource(PACKAGE, PACKAGE_RESOURCE), f"package:{PACKAGE}")
    if len(dataset.problems) != 164:
        raise DatasetError(
            f"package:{PACKAGE}: expected 164 problems, found {len(dataset.problems)}"
        )
    return dataset


def reference_problem(number: int) -> Problem | None:
    return reference_humaneval().get(task_id(number))
