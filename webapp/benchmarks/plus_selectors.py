"""What a plus test set (HumanEval-X+, built by `evaluator.plus`) kept, dropped and
flagged, per language, read from the `plus` field its records carry: no silent drops.

Each stored record says which of its HumanEval+ inputs became tests and how many were
dropped under which reason; every record also names the problems the file left out (none
of their inputs translated) with their reasons; and a validated build records the inputs
the canonical solution fails with the registry entries that explain them.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from evaluator.defects import Defect, DefectError, load_registry
from webapp.benchmarks.models import Dataset

PLUS_VARIANT = "plus-"


@dataclass(frozen=True)
class FlaggedProblem:
    task_id: str
    number: int
    inputs: int
    causes: tuple[str, ...]
    defects: tuple[Defect, ...]
    unexplained: int


@dataclass
class PlusLanguage:
    """One language's plus set: what became tests, what did not and why, what fails."""

    dataset: Dataset
    problems: int = 0
    """Problems with plus tests; `omitted` has those without."""
    inputs: int = 0
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    omitted: dict[str, dict[str, int]] = field(default_factory=dict)
    """Problems left out of the file (no input translated): task id -> drops by reason."""
    validated: bool = False
    flagged: list[FlaggedProblem] = field(default_factory=list)

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    @property
    def dropped_reasons(self) -> list[tuple[str, int]]:
        return self.dropped.most_common()

    @property
    def flagged_inputs(self) -> int:
        return sum(problem.inputs for problem in self.flagged)

    @property
    def unexplained(self) -> int:
        return sum(problem.unexplained for problem in self.flagged)


def is_plus_set(dataset: Dataset) -> bool:
    return dataset.variant.startswith(PLUS_VARIANT)


def plus_languages(*, dataset: Dataset) -> list[PlusLanguage]:
    """For a plus set, one row per language of the same benchmark and set (the newest
    import of each), this dataset's language among them; [] for any other dataset."""
    if not is_plus_set(dataset):
        return []
    newest: dict[str, Dataset] = {}
    for candidate in Dataset.objects.filter(
            name=dataset.name, variant=dataset.variant,
            natural_language=dataset.natural_language).order_by("-imported_at", "-pk"):
        newest.setdefault(candidate.language, candidate)
    newest[dataset.language] = dataset
    return [_language(newest[name]) for name in sorted(newest)]


def _language(dataset: Dataset) -> PlusLanguage:
    row = PlusLanguage(dataset=dataset)
    defects = _defects_by_id()
    for record_text, number in dataset.variants.values_list("record", "problem__number"):
        plus = _plus_field(record_text)
        if not plus:
            continue
        row.problems += 1
        row.inputs += int(plus.get("inputs", 0))
        row.kept += len(plus.get("kept", []))
        row.dropped.update({str(k): int(v) for k, v in plus.get("dropped", {}).items()})
        row.omitted = plus.get("omitted", row.omitted)
        if "flagged" in plus:
            row.validated = True
            if plus["flagged"]:
                row.flagged.append(_flagged(f"HumanEval/{number}", number, plus["flagged"],
                                            defects))
    for drops in row.omitted.values():
        row.inputs += sum(drops.values())
        row.dropped.update(drops)
    return row


def _plus_field(record_text: str) -> dict[str, Any]:
    try:
        plus = json.loads(record_text).get("extra", {}).get("plus", {})
    except (ValueError, AttributeError):
        return {}
    return plus if isinstance(plus, dict) else {}


def _flagged(task_id: str, number: int, failures: list[dict[str, Any]],
             defects: dict[str, Defect]) -> FlaggedProblem:
    ids = sorted({str(i) for failure in failures for i in failure.get("defects", [])})
    return FlaggedProblem(
        task_id=task_id, number=number,
        inputs=sum(int(failure.get("inputs", 1)) for failure in failures),
        causes=tuple(sorted({str(failure.get("cause", "")) for failure in failures})),
        defects=tuple(defects[i] for i in ids if i in defects),
        unexplained=sum(int(failure.get("inputs", 1)) for failure in failures
                        if not failure.get("defects")))


def _defects_by_id() -> dict[str, Defect]:
    try:
        return {defect.id: defect for defect in load_registry().defects}
    except DefectError:
        return {}  # A registry being edited must not take the dataset page down.
