"""HumanEval-XL (FloatAI/humaneval-xl): `<pl>/<Language>.jsonl`, 80 problems per file.

Ids are `python/N`, `java/N`, ..., where N indexes an 80-problem subset, so the aligned
`HumanEval/M` has to be found:

- Python records carry HumanEval's own `test`, matched exactly (entry points are not
  unique in HumanEval: `solve`, `add`, `sum_squares`, `correct_bracketing`).
- In every other language index N is the same problem as `python/N`, so the mapping is
  taken from the sibling `python/<Language>.jsonl`, else `python/English.jsonl`.
- With no sibling, records are matched by entry point, ignoring case and underscores,
  walking HumanEval in order: the subset keeps HumanEval's order, which settles the
  repeated names. `Problem.extra["alignment"]` says which of the three was used.

Only the Python files have canonical solutions; the others store NaN or null, read as "".
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from evaluator.datasets.dataset import Dataset
from evaluator.datasets.humaneval import reference_humaneval, task_id
from evaluator.datasets.naming import natural_language, programming_language
from evaluator.datasets.reading import SourceFile, SourceRecord, read_path
from evaluator.datasets.signatures import comparable_name
from evaluator.records import Problem

_FIELDS = frozenset(
    {
        "task_id", "prompt", "entry_point", "test", "language", "canonical_solution",
        "natural_language",
    }
)  # fmt: skip
_SOURCE_ID = re.compile(r"(?P<language>\w+)/(?P<number>\d+)")
_FILE_NAME = re.compile(r"[A-Z][a-z]+\.jsonl")
PROGRAMMING_DIRECTORIES = frozenset(
    {"python", "java", "javascript", "go", "csharp", "kotlin", "perl", "php", "ruby",
     "scala", "swift", "typescript"}
)  # fmt: skip


def is_humaneval_xl_file(path: Path) -> bool:
    return _FILE_NAME.fullmatch(path.name) is not None and (
        path.parent.name in PROGRAMMING_DIRECTORIES
    )


def load_humaneval_xl(path: Path, *, max_expanded_bytes: int | None = None) -> Dataset:
    source = read_path(path, max_expanded_bytes=max_expanded_bytes)
    records = source.records
    language = programming_language(_first(records, "language") or path.parent.name)
    human_language = natural_language(_first(records, "natural_language") or path.stem)
    numbers = [_source_number(record) for record in records]
    if language == "python":
        aligned, how = [_number_by_test(record) for record in records], "test"
    else:
        aligned, how = _align_without_tests(path, records, numbers)
    problems = tuple(
        _problem(record, source, language, human_language, number, how)
        for record, number in zip(records, aligned, strict=True)
    )
    return source.dataset(layout="humaneval-xl", language=language,
                          natural_language=human_language, problems=problems)


def _first(records: tuple[SourceRecord, ...], key: str) -> str:
    return records[0].optional_text(key)


def _source_number(record: SourceRecord) -> int:
    source_id = record.text("task_id")
    match = _SOURCE_ID.fullmatch(source_id)
    if match is None:
        raise record.error(f"task_id {source_id!r} is not '<language>/<number>'")
    return int(match.group("number"))


@functools.cache
def _reference_tests() -> dict[str, int]:
    return {p.test.strip(): p.number for p in reference_humaneval().problems}


def _number_by_test(record: SourceRecord) -> int:
    number = _reference_tests().get(record.text("test").strip())
    if number is None:
        raise record.error("its 'test' matches no original HumanEval test")
    return number


def _align_without_tests(
    path: Path, records: tuple[SourceRecord, ...], numbers: list[int]
) -> tuple[list[int], str]:
    python_dir = path.parent.parent / "python"
    for sibling in (python_dir / path.name, python_dir / "English.jsonl"):
        if sibling.is_file():
            mapping = {p.source_id: p.number for p in load_humaneval_xl(sibling).problems}
            aligned: list[int] = []
            for record, number in zip(records, numbers, strict=True):
                if f"python/{number}" not in mapping:
                    raise record.error(f"{sibling} has no python/{number} to align it with")
                aligned.append(mapping[f"python/{number}"])
            return aligned, f"sibling:{sibling.parent.name}/{sibling.name}"
    return _align_by_entry_point(records), "entry_point_order"


def _align_by_entry_point(records: tuple[SourceRecord, ...]) -> list[int]:
    reference = reference_humaneval().problems
    aligned: list[int] = []
    position = 0
    for record in records:
        wanted = comparable_name(record.text("entry_point"))
        while (
            position < len(reference) and comparable_name(reference[position].entry_point) != wanted
        ):
            position += 1
        if position == len(reference):
            raise record.error(
                f"entry point {record.text('entry_point')!r} matches no HumanEval problem "
                "after the previous record's (and no sibling python/ file to align with)"
            )
        aligned.append(reference[position].number)
        position += 1
    return aligned


def _problem(
    record: SourceRecord,
    source: SourceFile,
    language: str,
    human_language: str,
    number: int,
    alignment: str,
) -> Problem:
    if record.has("language") and programming_language(record.text("language")) != language:
        raise record.error(
            f"language {record.text('language')!r} differs from the file's {language!r}"
        )
    extra = record.leftovers(_FIELDS)
    extra["alignment"] = alignment
    return Problem(
        dataset="humaneval-xl",
        task_id=task_id(number),
        language=language,
        natural_language=human_language,
        prompt=record.text("prompt"),
        entry_point=record.text("entry_point"),
        canonical_solution=record.optional_text("canonical_solution"),
        test=record.text("test"),
        source_id=record.text("task_id"),
        source=record.where,
        dataset_version=source.version,
        extra=extra,
    )
