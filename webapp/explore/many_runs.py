"""Reads for comparing many runs at once: the matrix of paired differences, ranks with ties,
the problems that separate the leaders, and the seed split of models run with several seeds.

The statistics are `evaluator.metrics.compare_many`'s; this module loads the scores, checks
that the runs can be compared at all, and shapes the result for the page. A run is a seed
of its model when its metadata has a `seed` key: runs among those chosen that share a
model name and have a seed form one model's seed group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from evaluator.metrics import (
    ManyRuns,
    MetricError,
    SeedVariance,
    compare_many,
    seed_variance,
    separating_problems,
)
from webapp.runs.models import ProblemResult, Run
from webapp.runs.reads.reports import run_label

MAX_RUNS = 12
RESAMPLES = 2000
PERMUTATIONS = 10_000
SEPARATING_SHOWN = 25


class CannotCompare(ValueError):
    """The chosen runs exist and may be seen, but cannot be compared as a set."""


@dataclass(frozen=True)
class RankRow:
    run: Run
    rank: int
    pass1: float
    low: float
    high: float
    better_than: int
    """Runs this one is separated from and above."""
    left_out: int


@dataclass(frozen=True)
class SeparatingRow:
    task_id: str
    number: int
    spread: float
    rates: list[tuple[Run, float]]
    url: str


@dataclass(frozen=True)
class SeedRow:
    model_name: str
    runs: list[Run]
    split: SeedVariance

    @property
    def seed_sd(self) -> float:
        return math.sqrt(self.split.seed)

    @property
    def problem_sd(self) -> float:
        return math.sqrt(self.split.problem)


@dataclass(frozen=True)
class ManyComparison:
    runs: list[Run]
    stats: ManyRuns
    ranking: list[RankRow]
    separating: list[SeparatingRow]
    separating_total: int
    top: list[Run]
    seeds: list[SeedRow]
    seed_errors: list[str]
    chart: dict[str, Any]

    @property
    def pairs(self) -> int:
        return len(self.runs) * (len(self.runs) - 1) // 2

    @property
    def left_out_any(self) -> bool:
        return any(self.stats.left_out)

    @property
    def matrix(self) -> list[tuple[Run, list[dict[str, Any]]]]:
        """The heatmap's rows as a table: each run in ranking order with its cells."""
        return [(self.runs[i], cells)
                for i, cells in zip(self.stats.order, self.chart["cells"], strict=True)]


def _check_runs(runs: list[Run]) -> None:
    if len(runs) < 2:
        raise CannotCompare("Choose at least two runs to compare.")
    if len(runs) > MAX_RUNS:
        raise CannotCompare(f"Choose at most {MAX_RUNS} runs; {len(runs)} were chosen.")
    datasets = {run.dataset_id for run in runs}
    if len(datasets) > 1:
        keys = ", ".join(sorted({run.dataset.key for run in runs}))
        raise CannotCompare(
            f"These runs are on different datasets ({keys}); a ranking needs one dataset. "
            "Two runs on different variants can still be paired on their shared task ids "
            "in the two-run comparison.")


def _scores(runs: list[Run]) -> tuple[dict[int, dict[str, tuple[int, int]]], dict[str, int]]:
    scores: dict[int, dict[str, tuple[int, int]]] = {run.pk: {} for run in runs}
    numbers: dict[str, int] = {}
    for run_id, task_id, number, n, c in ProblemResult.objects.filter(
        run_id__in=[run.pk for run in runs]
    ).values_list("run_id", "task_id", "problem__number", "n", "c"):
        scores[run_id][task_id] = (n, c)
        numbers[task_id] = number
    return scores, numbers


def _seed_groups(runs: list[Run], scores: dict[int, dict[str, tuple[int, int]]]
                 ) -> tuple[list[SeedRow], list[str]]:
    groups: dict[str, list[Run]] = {}
    for run in runs:
        if run.model_name and isinstance(run.model_meta, dict) and "seed" in run.model_meta:
            groups.setdefault(run.model_name, []).append(run)
    rows, errors = [], []
    for model_name, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        try:
            split = seed_variance({str(run.pk): scores[run.pk] for run in members})
        except MetricError as exc:
            errors.append(f"{model_name}: {exc}")
            continue
        rows.append(SeedRow(model_name=model_name, runs=members, split=split))
    return rows, errors


def _chart(runs: list[Run], stats: ManyRuns) -> dict[str, Any]:
    """The heatmap, rows and columns in ranking order: cell (i, j) is row i minus column j."""
    order = list(stats.order)
    labels = [run_label(runs[i]) for i in order]
    cells: list[list[Any]] = []
    for i in order:
        row = []
        for j in order:
            url = "" if i == j else reverse("compare:pair", args=[runs[i].pk, runs[j].pk])
            row.append({
                "diff": round(float(stats.diff[i, j]), 6),
                "low": round(float(stats.diff_low[i, j]), 6),
                "high": round(float(stats.diff_high[i, j]), 6),
                "p": float(stats.p_holm[i, j]),
                "separated": bool(stats.separated[i, j]),
                "url": url,
            })
        cells.append(row)
    return {"labels": labels, "cells": cells, "alpha": stats.alpha}


def many_runs_comparison(*, runs: list[Run]) -> ManyComparison:
    """Raises `CannotCompare` with a message for the page when the runs cannot be compared."""
    _check_runs(runs)
    scores, numbers = _scores(runs)
    unfinished = [run.name for run in runs if not scores[run.pk]]
    if unfinished:
        raise CannotCompare(f"No scores yet for {', '.join(unfinished)}: a run can be "
                            "compared once it has finished.")
    try:
        stats = compare_many({str(run.pk): scores[run.pk] for run in runs},
                             resamples=RESAMPLES, permutations=PERMUTATIONS)
    except MetricError as exc:
        raise CannotCompare(f"These runs cannot be compared: {exc}.") from None
    ranking = [
        RankRow(run=runs[i], rank=stats.ranks[i], pass1=float(stats.pass1[i]),
                low=float(stats.low[i]), high=float(stats.high[i]),
                better_than=int((stats.separated[i] & (stats.diff[i] > 0)).sum()),
                left_out=stats.left_out[i])
        for i in stats.order
    ]
    found = separating_problems(stats)
    top_runs = [runs[i] for i in found[0].top] if found else [runs[i] for i in stats.order[:2]]
    first, second = top_runs[0], top_runs[1]
    separating = [
        SeparatingRow(
            task_id=row.task_id, number=numbers[row.task_id], spread=row.spread,
            rates=[(runs[i], rate) for i, rate in zip(row.top, row.rates, strict=True)],
            url=reverse("compare:problem", args=[first.pk, second.pk, numbers[row.task_id]]),
        )
        for row in found[:SEPARATING_SHOWN]
    ]
    seeds, seed_errors = _seed_groups(runs, scores)
    return ManyComparison(runs=runs, stats=stats, ranking=ranking, separating=separating,
                          separating_total=len(found), top=top_runs, seeds=seeds,
                          seed_errors=seed_errors, chart=_chart(runs, stats))
