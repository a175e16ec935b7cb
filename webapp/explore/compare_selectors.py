"""Reads for comparing runs: the paired table of two runs over their shared problems, one
problem side by side, and a baseline against several runs.

A problem counts as passed by a run when at least half of the run's samples on it passed
(`evaluator.metrics.paired_comparison`): for greedy runs (n = 1) that is the sample's own
verdict. The difference in pass@1 and its interval use the unthresholded c / n.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from evaluator.metrics import MetricError, PairedComparison, paired_comparison
from webapp.benchmarks.diffs import CodeDiff, code_diff
from webapp.benchmarks.models import ProblemVariant
from webapp.runs.models import ProblemResult, Run, Sample

CELLS = ("both", "only_a", "only_b", "neither")
CELL_NAMES = {"both": "both pass", "only_a": "only A passes", "only_b": "only B passes",
              "neither": "neither passes"}
RESAMPLES = 2000


@dataclass(frozen=True)
class PairRow:
    number: int
    task_id: str
    a_n: int
    a_c: int
    b_n: int
    b_c: int
    a_counts: dict[str, int]
    b_counts: dict[str, int]
    cell: str

    @property
    def a_rate(self) -> float:
        return self.a_c / self.a_n

    @property
    def b_rate(self) -> float:
        return self.b_c / self.b_n

    @property
    def diff(self) -> float:
        return self.a_rate - self.b_rate


@dataclass(frozen=True)
class Pair:
    a: Run
    b: Run
    stats: PairedComparison | None
    rows: list[PairRow]
    only_in_a: int
    """Problems A has and B does not: left out of every paired number."""
    only_in_b: int
    error: str = ""


def _results(run_ids: list[int]) -> dict[int, dict[str, tuple[int, str, int, int, dict[str, int]]]]:
    by_run: dict[int, dict[str, tuple[int, str, int, int, dict[str, int]]]] = {
        run_id: {} for run_id in run_ids
    }
    for run_id, number, task_id, n, c, counts in ProblemResult.objects.filter(
        run_id__in=run_ids
    ).values_list("run_id", "problem__number", "task_id", "n", "c", "counts"):
        by_run[run_id][task_id] = (number, task_id, n, c, counts)
    return by_run


def _paired(a: dict[str, Any], b: dict[str, Any]) -> PairedComparison:
    return paired_comparison({t: (v[2], v[3]) for t, v in a.items()},
                             {t: (v[2], v[3]) for t, v in b.items()}, resamples=RESAMPLES)


def pair_comparison(*, a: Run, b: Run) -> Pair:
    results = _results([a.pk, b.pk])
    a_results, b_results = results[a.pk], results[b.pk]
    only_in_a = len(a_results.keys() - b_results.keys())
    only_in_b = len(b_results.keys() - a_results.keys())
    if not a_results or not b_results:
        unfinished = [run.name for run in (a, b) if not results[run.pk]]
        return Pair(a=a, b=b, stats=None, rows=[], only_in_a=only_in_a, only_in_b=only_in_b,
                    error=f"No scores yet for {' and '.join(unfinished)}: a run can be "
                          "compared once it has finished.")
    try:
        stats = _paired(a_results, b_results)
    except MetricError as exc:
        return Pair(a=a, b=b, stats=None, rows=[], only_in_a=only_in_a, only_in_b=only_in_b,
                    error=f"These runs cannot be paired: {exc}.")
    cell_of = {task: cell for cell in CELLS for task in getattr(stats, f"{cell}_ids")}
    rows = []
    for task_id, cell in cell_of.items():
        number, _, a_n, a_c, a_counts = a_results[task_id]
        _, _, b_n, b_c, b_counts = b_results[task_id]
        rows.append(PairRow(number=number, task_id=task_id, a_n=a_n, a_c=a_c, b_n=b_n, b_c=b_c,
                            a_counts=a_counts, b_counts=b_counts, cell=cell))
    rows.sort(key=lambda row: row.number)
    return Pair(a=a, b=b, stats=stats, rows=rows, only_in_a=only_in_a, only_in_b=only_in_b)


class PairFilters(TypedDict):
    """The filters of the pair table, as read from the query (`filter_pair_rows`)."""

    cell: str
    differ: bool
    failures: bool
    status: str


def filter_pair_rows(rows: list[PairRow], *, cell: str = "", differ: bool = False,
                     failures: bool = False, status: str = "") -> list[PairRow]:
    """`cell`: one square of the 2×2 table; `differ`: pass rates differ; `failures`: at
    least one run has a failing sample; `status`: at least one run has a sample of it."""
    if cell:
        rows = [row for row in rows if row.cell == cell]
    if differ:
        rows = [row for row in rows if row.a_c * row.b_n != row.b_c * row.a_n]
    if failures:
        rows = [row for row in rows if row.a_c < row.a_n or row.b_c < row.b_n]
    if status:
        rows = [row for row in rows
                if row.a_counts.get(status, 0) or row.b_counts.get(status, 0)]
    return rows


# -- one problem side by side ---------------------------------------------------------------
@dataclass(frozen=True)
class SampleChoice:
    pk: int
    index: int
    status: str


@dataclass(frozen=True)
class TestPairRow:
    index: int
    source: str
    a: dict[str, Any] | None
    b: dict[str, Any] | None

    @property
    def differs(self) -> bool:
        if self.a is None or self.b is None:
            return True
        return (self.a.get("status"), self.a.get("actual")) != (
            self.b.get("status"), self.b.get("actual"))


@dataclass(frozen=True)
class SideBySide:
    task_id: str
    a_choices: list[SampleChoice]
    b_choices: list[SampleChoice]
    a_sample: Sample | None
    b_sample: Sample | None
    diff: CodeDiff | None
    canonical: ProblemVariant | None
    tests: list[TestPairRow]
    tests_total: int


def _choices(run: Run, task_id: str) -> list[SampleChoice]:
    return [SampleChoice(pk=pk, index=index, status=status) for pk, index, status in
            Sample.objects.filter(run=run, task_id=task_id).order_by("index")
            .values_list("pk", "index", "status")]


def _pick(choices: list[SampleChoice], wanted: int | None) -> SampleChoice | None:
    """The sample asked for; by default the first failing one, since failed generations
    are what this view is for, else the first."""
    if wanted is not None:
        return next((choice for choice in choices if choice.index == wanted), None)
    return next((c for c in choices if c.status != "passed"), choices[0] if choices else None)


def side_by_side(*, a: Run, b: Run, task_id: str, a_index: int | None, b_index: int | None,
                 ignore_whitespace: bool, ignore_comments: bool, canonical: bool,
                 only_differing_tests: bool) -> SideBySide:
    a_choices, b_choices = _choices(a, task_id), _choices(b, task_id)
    picked_a, picked_b = _pick(a_choices, a_index), _pick(b_choices, b_index)
    samples = {s.pk: s for s in Sample.objects.filter(
        pk__in=[c.pk for c in (picked_a, picked_b) if c is not None]).select_related("variant")}
    a_sample = samples.get(picked_a.pk) if picked_a else None
    b_sample = samples.get(picked_b.pk) if picked_b else None
    diff = None
    if a_sample is not None and b_sample is not None:
        diff = code_diff(a_sample.completion, a.dataset.language, b_sample.completion,
                         b.dataset.language, ignore_whitespace=ignore_whitespace,
                         ignore_comments=ignore_comments)
    variant = None
    if canonical:
        source = a_sample or b_sample
        variant = source.variant if source is not None else None
    a_tests = {t.get("index"): t for t in ((a_sample.result or {}).get("tests", [])
                                          if a_sample else [])}
    b_tests = {t.get("index"): t for t in ((b_sample.result or {}).get("tests", [])
                                          if b_sample else [])}
    rows = []
    for index in sorted(a_tests.keys() | b_tests.keys(), key=lambda i: (i is None, i)):
        first = a_tests.get(index) or b_tests.get(index) or {}
        rows.append(TestPairRow(index=index, source=first.get("source", ""),
                                a=a_tests.get(index), b=b_tests.get(index)))
    total = len(rows)
    if only_differing_tests:
        rows = [row for row in rows if row.differs]
    return SideBySide(task_id=task_id, a_choices=a_choices, b_choices=b_choices,
                      a_sample=a_sample, b_sample=b_sample, diff=diff, canonical=variant,
                      tests=rows, tests_total=total)


# -- a baseline against several runs --------------------------------------------------------
@dataclass(frozen=True)
class BaselineRow:
    run: Run
    stats: PairedComparison | None
    error: str = ""


def baseline_comparison(*, base: Run, others: list[Run]) -> list[BaselineRow]:
    results = _results([base.pk, *[run.pk for run in others]])
    rows = []
    for run in others:
        if not results[base.pk] or not results[run.pk]:
            rows.append(BaselineRow(run=run, stats=None, error="not finished"))
            continue
        try:
            rows.append(BaselineRow(run=run, stats=_paired(results[run.pk], results[base.pk])))
        except MetricError as exc:
            rows.append(BaselineRow(run=run, stats=None, error=str(exc)))
    return rows
