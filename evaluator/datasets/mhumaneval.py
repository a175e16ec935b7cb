"""mHumanEval (mraihan-gmu/mHumanEval-Benchmark), Python files only.

- `Human_Expert_<nl>.json`: expert translations. JSON Lines despite the name, no
  `task_id`: the records are in HumanEval order, so record i is `HumanEval/i`.
- `mHumanEval-<nl>-python.json`: machine translations. A JSON array with ids
  `HumanEval/N` and the empty columns of a CSV export (`Unnamed: 6`, `""`), dropped.

Neither has `entry_point`; it comes from the original HumanEval problem, and the prompt
must define it, which also checks the positional alignment of the expert file. The
non-Python mHumanEval files are in MultiPL-E's format: load them with that layout.
"""

from __future__ import annotations

import re
from pathlib import Path

from evaluator.datasets.dataset import Dataset, DatasetError
from evaluator.datasets.humaneval import humaneval_number, reference_problem, task_id
from evaluator.datasets.naming import natural_language, programming_language
from evaluator.datasets.reading import SourceFile, SourceRecord, read_path
from evaluator.records import Problem

_FIELDS = frozenset({"task_id", "nl", "pl", "prompt", "canonical_solution", "test"})
_EXPERT_FILE = re.compile(r"Human_Expert_(?P<nl>[A-Za-z]+_[A-Za-z]+)\.jsonl?")
_MACHINE_FILE = re.compile(r"mHumanEval-(?P<nl>[A-Za-z]+_[A-Za-z]+)-(?P<pl>\w+)\.jsonl?")
INDENT_FIX = "canonical_solution was not indented; indented each line by 4 spaces"


def is_mhumaneval_file(path: Path) -> bool:
    return bool(_EXPERT_FILE.fullmatch(path.name) or _MACHINE_FILE.fullmatch(path.name))


def load_mhumaneval(path: Path, *, max_expanded_bytes: int | None = None) -> Dataset:
    source = read_path(path, max_expanded_bytes=max_expanded_bytes)
    first = source.records[0]
    expert = _EXPERT_FILE.fullmatch(path.name)
    machine = _MACHINE_FILE.fullmatch(path.name)
    named = expert or machine
    human_language = natural_language(named.group("nl") if named else first.text("nl"))
    language = programming_language(
        machine.group("pl") if machine else first.optional_text("pl") or "python"
    )
    if language != "python":
        raise DatasetError(
            f"{path}: only Python mHumanEval files are supported; the {language} ones are "
            "in MultiPL-E's format (layout='multipl-e')"
        )
    variant = "machine" if machine or (not expert and first.has("task_id")) else "expert"
    problems = tuple(_problem(record, source, human_language, variant) for record in source.records)
    return source.dataset(layout="mhumaneval", language=language,
                          natural_language=human_language, problems=problems, variant=variant)


def _problem(
    record: SourceRecord, source: SourceFile, human_language: str, variant: str
) -> Problem:
    number = humaneval_number(record) if record.has("task_id") else record.index
    reference = reference_problem(number)
    if reference is None:
        raise record.error(f"{task_id(number)} is not an original HumanEval problem")
    prompt = record.text("prompt")
    if f"def {reference.entry_point}(" not in prompt:
        raise record.error(
            f"prompt does not define {reference.entry_point}(), the entry point of "
            f"{reference.task_id}; are the records out of HumanEval order?"
        )
    canonical, fixes = indent_body(record.text("canonical_solution"))
    extra = record.leftovers(_FIELDS)
    extra["translation"] = variant
    if fixes:
        extra["fixes"] = fixes
    return Problem(
        dataset="mhumaneval",
        task_id=reference.task_id,
        language="python",
        natural_language=human_language,
        prompt=prompt,
        entry_point=reference.entry_point,
        canonical_solution=canonical,
        test=record.text("test"),
        source_id=record.optional_text("task_id") or reference.task_id,
        source=record.where,
        dataset_version=source.version,
        extra=extra,
    )


def indent_body(code: str) -> tuple[str, list[str]]:
    """Indent a function body stored at column 0 (mHumanEval's HumanEval/0).

    The prompt ends inside the function, so an unindented body would close it.
    """
    first = next((line for line in code.split("\n") if line.strip()), "")
    if not first or first[0] in " \t":
        return code, []
    lines = ["    " + line if line.strip() else line for line in code.split("\n")]
    return "\n".join(lines), [INDENT_FIX]
