"""Canary problems: a few tiny problems of our own per language, as data.

Each `<language>.toml` beside this module holds problems in the shape of that language's
HumanEval variant (prompt, declaration, canonical solution, tests as its harness reads
them), so a canary runs the same build and harness code as real work. A problem may add a
`wrong_solution`, which must fail: a harness that passes everything would otherwise pass
the canary too. `evaluator.doctor` runs them.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.records import Problem, content_hash

DATA_DIR = Path(__file__).resolve().parent


class CanaryDataError(ValueError):
    """A canary file is missing or malformed."""


@dataclass(frozen=True)
class CanaryProblem:
    problem: Problem
    wrong_solution: str = ""
    """A completion that compiles and runs but answers wrong; "" when the problem has none."""


def canary_languages() -> tuple[str, ...]:
    """The languages that have canary problems, by file name."""
    return tuple(sorted(path.stem for path in DATA_DIR.glob("*.toml")))


def canary_problems(language: str) -> tuple[CanaryProblem, ...]:
    """The canary problems of `language` (its registry name: `cpp`, not `C++`)."""
    path = DATA_DIR / f"{language}.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CanaryDataError(f"{language} has no canary problems ({path} is missing)") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CanaryDataError(f"{path}: {exc}") from exc
    version = content_hash(text)
    problems = tuple(_problem(entry, language, str(data.get("dataset", "")), version, path)
                     for entry in data.get("problems", ()))
    if not problems:
        raise CanaryDataError(f"{path} holds no problems")
    return problems


def _problem(entry: dict[str, Any], language: str, dataset: str, version: str,
             path: Path) -> CanaryProblem:
    try:
        problem = Problem(
            dataset=dataset, task_id=entry["task_id"], language=language,
            natural_language="en", prompt=entry["prompt"], entry_point=entry["entry_point"],
            canonical_solution=entry["canonical_solution"], test=entry["test"],
            declaration=entry.get("declaration", ""), example_test=entry.get("example_test", ""),
            source_id=entry["task_id"], source=str(path), dataset_version=version,
            extra=dict(entry.get("extra", {})),
        )
    except KeyError as exc:
        raise CanaryDataError(f"{path}: a problem lacks the field {exc.args[0]!r}") from None
    return CanaryProblem(problem=problem, wrong_solution=entry.get("wrong_solution", ""))
