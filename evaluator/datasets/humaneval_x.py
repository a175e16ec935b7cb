"""HumanEval-X (THUDM/CodeGeeX): `humaneval_<lang>.jsonl.gz`, ids `CPP/N`, `Go/N`, ...

Records have no `entry_point`; it is read from the signature that `declaration` leaves
open. Fields not mapped onto `Problem` stay in `extra`: Go's `import`, `docstring` and
`test_setup`, Java's and Python's `text`.
"""

from __future__ import annotations

import re
from pathlib import Path

from evaluator.datasets.dataset import Dataset, DatasetError
from evaluator.datasets.humaneval import reference_problem, task_id
from evaluator.datasets.naming import programming_language
from evaluator.datasets.reading import SourceFile, SourceRecord, read_path
from evaluator.datasets.signatures import entry_point_in
from evaluator.records import Problem

_FIELDS = frozenset(
    {"task_id", "prompt", "declaration", "canonical_solution", "test", "example_test"}
)
_SOURCE_ID = re.compile(r"(?P<language>[A-Za-z+]+)/(?P<number>\d+)")
_FILE_NAME = re.compile(r"humaneval_(?P<language>[a-z+]+)\.jsonl(?:\.gz)?")


def is_humaneval_x_file(path: Path) -> bool:
    return _FILE_NAME.fullmatch(path.name) is not None


def load_humaneval_x(path: Path, *, max_expanded_bytes: int | None = None) -> Dataset:
    source = read_path(path, max_expanded_bytes=max_expanded_bytes)
    problems = tuple(_problem(record, source) for record in source.records)
    languages = {p.language for p in problems}
    if len(languages) != 1:
        raise DatasetError(f"{path}: records mix programming languages {sorted(languages)}")
    return source.dataset(layout="humaneval-x", language=languages.pop(), natural_language="en",
                          problems=problems, variant=_plus_variant(problems))


def _plus_variant(problems: tuple[Problem, ...]) -> str:
    """`plus-mini` or `plus-full` for a file `evaluator.plus` built: its tests are
    HumanEval+'s inputs, so it must not pass for the base set."""
    sets = {str(p.extra.get("plus", {}).get("set", "")) for p in problems}
    return f"plus-{sets.pop()}" if len(sets) == 1 and "" not in sets else ""


def _problem(record: SourceRecord, source: SourceFile) -> Problem:
    source_id = record.text("task_id")
    match = _SOURCE_ID.fullmatch(source_id)
    if match is None:
        raise record.error(f"task_id {source_id!r} is not '<Language>/<number>'")
    language = programming_language(match.group("language"))
    number = int(match.group("number"))
    declaration = record.text("declaration")
    canonical = record.text("canonical_solution")
    example_test = record.optional_text("example_test")
    fixes: list[str] = []
    if example_test.strip() == "None":
        # HumanEval-X Rust ships the string "None" where it has no example test.
        example_test = ""
        fixes.append("example_test was the string 'None'; treated as no example test")
    extra = record.leftovers(_FIELDS)
    if fixes:
        extra["fixes"] = fixes
    return Problem(
        dataset="humaneval-x",
        task_id=task_id(number),
        language=language,
        natural_language="en",
        prompt=record.text("prompt"),
        entry_point=_entry_point(record, language, number, declaration, canonical),
        canonical_solution=canonical,
        test=record.text("test"),
        declaration=declaration,
        example_test=example_test,
        source_id=source_id,
        source=record.where,
        dataset_version=source.version,
        extra=extra,
    )


def _entry_point(
    record: SourceRecord, language: str, number: int, declaration: str, canonical: str
) -> str:
    reference = reference_problem(number)
    wanted = reference.entry_point if reference else ""
    # Rust/10 and /50 declare a helper and define the target inside the solution; CPP/27
    # keeps its misspelt `filp_case`, which is what the tests call.
    name = entry_point_in(language, declaration, wanted, canonical)
    if name is None:
        raise record.error(f"cannot find a {language} function signature in 'declaration'")
    return name
