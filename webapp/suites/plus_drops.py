"""A suite's base → plus drop (issue 25): for each of its runs scored on a plus test set
(`webapp.runs.services.plus`), pass@1 on the base tests beside pass@1 on the plus tests, and the
drop per programming language and per natural language. Base is EvalPlus's (the plus run's
samples on the plus set's base inputs) except for a plus run scored before base counts were
kept, whose row takes its run's own score and is marked (`PlusDropRow.base_is_original`).

A group's figures are the mean over its variants of each variant's pass@1, each taken
over the problems its base and plus runs both scored: the variants weigh the same, as
the suite's other per-variant figures do, whatever their number of problems.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean

from webapp.runs.models import Run
from webapp.runs.reads.selectors import Viewer, visible_runs
from webapp.runs.services.plus import BASE_FROM_ORIGINAL, PlusScore, runs_plus_scores
from webapp.suites.selectors import language_label


@dataclass(frozen=True)
class PlusDropRow:
    run: Run
    plus: Run
    problems: int
    score: PlusScore
    """pass@1 on the base and the plus tests, with intervals."""
    base_is_original: bool = False
    """Base is the run's score on its own tests: its plus run has no base counts."""


@dataclass(frozen=True)
class PlusDropGroup:
    label: str
    variants: int
    base: float
    plus: float
    base_is_original: int = 0
    """Of `variants`, those whose base is their run's own score (`PlusDropRow`)."""

    @property
    def drop(self) -> float:
        return self.base - self.plus


@dataclass(frozen=True)
class SuitePlusDrops:
    rows: list[PlusDropRow]
    by_language: list[PlusDropGroup]
    by_natural_language: list[PlusDropGroup]

    @property
    def any_base_is_original(self) -> bool:
        return any(row.base_is_original for row in self.rows)


def _groups(rows: list[PlusDropRow], *, natural: bool) -> list[PlusDropGroup]:
    members: dict[str, list[PlusDropRow]] = {}
    for row in rows:
        dataset = row.run.dataset
        members.setdefault(dataset.natural_language if natural else dataset.language,
                           []).append(row)
    return [PlusDropGroup(label=language_label(code, natural=natural), variants=len(group),
                          base=fmean(r.score.base["value"] for r in group),
                          plus=fmean(r.score.plus["value"] for r in group),
                          base_is_original=sum(r.base_is_original for r in group))
            for code, group in sorted(members.items())]


def suite_plus_drops(*, user: Viewer, runs: list[Run]) -> SuitePlusDrops:
    """The suite's runs (those `user` sees) with a finished plus run `user` sees too."""
    finished = [run for run in runs if run.status == Run.Status.FINISHED]
    pairs = runs_plus_scores(runs=finished, scope=visible_runs(user=user))
    rows = [PlusDropRow(run=run, plus=pairs[run.pk].plus, problems=pairs[run.pk].problems,
                        score=score,
                        base_is_original=pairs[run.pk].base_source == BASE_FROM_ORIGINAL)
            for run in finished if run.pk in pairs
            for score in pairs[run.pk].scores[:1] if score.k == 1]
    return SuitePlusDrops(rows=rows, by_language=_groups(rows, natural=False),
                          by_natural_language=_groups(rows, natural=True))
