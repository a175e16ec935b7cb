"""Reads behind the problem pages: the verdicts of the visible runs on one problem (the
grid of models by variants), and the pass rates of chosen runs on many problems (the
columns of the problem list). Each is one query, whatever the number of runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.urls import reverse
from django.utils.http import urlencode

from webapp.benchmarks.models import Dataset, Problem
from webapp.runs.models import ProblemResult, Run
from webapp.runs.reads.selectors import Viewer, visible_runs


@dataclass
class VerdictCell:
    run_id: int
    run_name: str
    n: int
    c: int
    url: str
    others: int = 0
    """Older runs of the same model on the same dataset, not shown."""

    @property
    def rate(self) -> float:
        return self.c / self.n if self.n else 0.0

    @property
    def verdict(self) -> str:
        if self.c == self.n:
            return "pass"
        return "fail" if self.c == 0 else "mixed"


@dataclass
class VerdictGrid:
    columns: list[Dataset]
    rows: list[tuple[str, list[VerdictCell | None]]] = field(default_factory=list)


def problem_verdict_grid(*, user: Viewer, problem: Problem,
                         datasets: list[Dataset]) -> VerdictGrid:
    """Every visible finished run's result on `problem`, as rows of models (newest run of
    the model per dataset) by columns of variants (datasets)."""
    column_of = {dataset.pk: i for i, dataset in enumerate(datasets)}
    rows: dict[str, list[VerdictCell | None]] = {}
    results = (
        ProblemResult.objects.filter(
            problem=problem,
            run__in=visible_runs(user=user).filter(status=Run.Status.FINISHED),
        )
        .order_by("-run__created_at", "-run_id")
        .values_list("run_id", "run__name", "run__model_name", "run__dataset_id", "n", "c")
    )
    for run_id, name, model, dataset_id, n, c in results:
        if dataset_id not in column_of:
            continue
        cells = rows.setdefault(model or name, [None] * len(datasets))
        column = column_of[dataset_id]
        taken = cells[column]
        if taken is not None:
            taken.others += 1
            continue
        url = reverse("runs:samples", args=[run_id]) + "?" + urlencode({"task": problem.task_id})
        cells[column] = VerdictCell(run_id=run_id, run_name=name, n=n, c=c, url=url)
    return VerdictGrid(columns=datasets, rows=sorted(rows.items(), key=lambda item: item[0]))


def problem_pass_rates(
    *, run_ids: list[int], problem_ids: list[int] | None = None
) -> dict[tuple[int, int], tuple[int, int]]:
    """(problem id, run id) -> (n, c) for the given runs, in one query."""
    results = ProblemResult.objects.filter(run_id__in=run_ids)
    if problem_ids is not None:
        results = results.filter(problem_id__in=problem_ids)
    return {(problem_id, run_id): (n, c) for problem_id, run_id, n, c in
            results.values_list("problem_id", "run_id", "n", "c")}
