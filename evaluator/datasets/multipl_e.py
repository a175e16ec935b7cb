"""MultiPL-E HumanEval translations: `humaneval-<lang>.jsonl`, ids `HumanEval_<N>_<name>`.

The test harness is `tests`, which is appended to prompt + completion; the copies in
DeepSeek-Coder also have `test`, identical in every record. It is kept in `extra` only
when it differs. There are no canonical solutions, and untranslatable problems are
missing, so files hold fewer than 164 problems.
"""

from __future__ import annotations

import re
from pathlib import Path

from evaluator.datasets.dataset import Dataset, DatasetError
from evaluator.datasets.humaneval import task_id
from evaluator.datasets.naming import programming_language
from evaluator.datasets.reading import SourceFile, SourceRecord, read_path
from evaluator.datasets.signatures import entry_point_in
from evaluator.records import Problem

_FIELDS = frozenset({"name", "task_id", "language", "prompt", "tests", "test", "original"})
_NAME = re.compile(r"HumanEval_(?P<number>\d+)_(?P<entry>\w+)")
_FILE_NAME = re.compile(r"humaneval-(?P<language>[a-z+]+)(?:-[\w-]+)?\.jsonl(?:\.gz)?")


def is_multipl_e_file(path: Path) -> bool:
    return _FILE_NAME.fullmatch(path.name) is not None


def load_multipl_e(path: Path, *, max_expanded_bytes: int | None = None) -> Dataset:
    source = read_path(path, max_expanded_bytes=max_expanded_bytes)
    named = _FILE_NAME.fullmatch(path.name)
    # The file name wins: MultiPL-E's Go records say language "go_test.go".
    language = programming_language(
        named.group("language") if named else source.records[0].text("language")
    )
    problems = tuple(_problem(record, source, language) for record in source.records)
    return source.dataset(layout="multipl-e", language=language, natural_language="en",
                          problems=problems)


def _problem(record: SourceRecord, source: SourceFile, language: str) -> Problem:
    name = record.text("name") if record.has("name") else record.text("task_id")
    match = _NAME.fullmatch(name)
    if match is None:
        raise record.error(f"name {name!r} is not 'HumanEval_<number>_<entry point>'")
    if record.has("language"):
        own = programming_language(record.text("language"))
        if own != language:
            raise DatasetError(f"{record.where}: language {own!r} in a {language} file")
    tests = record.text("tests") if record.has("tests") else record.text("test")
    extra = record.leftovers(_FIELDS)
    if record.has("test") and record.text("test") != tests:
        extra["test_field"] = record.text("test")
    return Problem(
        dataset="multipl-e",
        task_id=task_id(int(match.group("number"))),
        language=language,
        natural_language="en",
        prompt=record.text("prompt"),
        entry_point=_entry_point(record, language, match.group("entry")),
        canonical_solution="",
        test=tests,
        source_id=name,
        source=record.where,
        dataset_version=source.version,
        extra=extra,
    )


def _entry_point(record: SourceRecord, language: str, python_name: str) -> str:
    # The id keeps HumanEval's Python name; the prompt may rename it (C++ `strlen` is
    # `string_length`, Java uses camelCase).
    return entry_point_in(language, record.text("prompt"), python_name) or python_name
