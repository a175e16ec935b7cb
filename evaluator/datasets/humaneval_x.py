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
from evaluator.records import Problem

_FIELDS = frozenset(
    {"task_id", "prompt", "declaration", "canonical_solution", "test", "example_test"}
)
_SOURCE_ID = re.compile(r"(?P<language>[A-Za-z+]+)/(?P<number>\d+)")
_FILE_NAME = re.compile(r"humaneval_(?P<language>[a-z+]+)\.jsonl(?:\.gz)?")

# A function definition at the start of a line; group 1 is its name. C++ and Java need the
# return type before the name, which also keeps `if (` and `while (` out.
_FUNCTION_PATTERNS: dict[str, re.Pattern[str]] = {
    "python": re.compile(r"^\s*def\s+(\w+)\s*\(", re.MULTILINE),
    "cpp": re.compile(r"^[A-Za-z_][\w:<>,*& ]*[\s*&>](\w+)\s*\([^;]*$", re.MULTILINE),
    "java": re.compile(
        r"^\s*(?:public|private|protected)\s+(?:static\s+)?[\w<>\[\],.? ]+\s(\w+)\s*\(",
        re.MULTILINE,
    ),
    "js": re.compile(r"^\s*(?:const\s+(\w+)\s*=\s*(?:\(|function)|function\s+(\w+)\s*\()", re.M),
    "go": re.compile(r"^func\s+(?:\([^)]*\)\s*)?(\w+)\s*\(", re.MULTILINE),
    "rust": re.compile(r"^\s*(?:pub\s+)?fn\s+(\w+)\s*[<(]", re.MULTILINE),
}


def is_humaneval_x_file(path: Path) -> bool:
    return _FILE_NAME.fullmatch(path.name) is not None


def load_humaneval_x(path: Path) -> Dataset:
    source = read_path(path)
    problems = tuple(_problem(record, source) for record in source.records)
    languages = {p.language for p in problems}
    if len(languages) != 1:
        raise DatasetError(f"{path}: records mix programming languages {sorted(languages)}")
    return Dataset(
        name="humaneval-x",
        version=source.version,
        language=languages.pop(),
        natural_language="en",
        layout="humaneval-x",
        source=str(path),
        problems=problems,
    )


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


def function_names(language: str, code: str) -> list[str]:
    """Names of the functions defined in `code`, in order of appearance."""
    pattern = _FUNCTION_PATTERNS.get(language)
    if pattern is None:
        return []
    names: list[str] = []
    for match in pattern.finditer(code):
        name = next((group for group in match.groups() if group), "")
        if name and name not in ("if", "for", "while", "switch", "return"):
            names.append(name)
    return names


def comparable_name(name: str) -> str:
    """`has_close_elements`, `hasCloseElements` and `HasCloseElements` compare equal."""
    return name.replace("_", "").lower()


def _entry_point(
    record: SourceRecord, language: str, number: int, declaration: str, canonical: str
) -> str:
    declared = function_names(language, declaration)
    reference = reference_problem(number)
    if reference is not None:
        wanted = comparable_name(reference.entry_point)
        # Rust/10 and /50 declare a helper and define the target inside the solution.
        for name in declared + function_names(language, canonical):
            if comparable_name(name) == wanted:
                return name
    if not declared:
        raise record.error(f"cannot find a {language} function signature in 'declaration'")
    # The signature left open for the model is the last one (CPP/27's misspelt `filp_case`).
    return declared[-1]
