"""Reads for suites: who may see which suite, its runs as the viewer may see them, and the
grid of problems by variants.

A suite's page issues a fixed number of queries whatever its size: the cells come from
`ProblemResult` (stored when each run finished), one query for all the suite's runs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from django.db.models import Case, Q, QuerySet, When
from django.http import Http404

from evaluator.languages.registry import display_name, language_rank
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import (
    DATASET_PREFERENCE,
    NATURAL_LANGUAGE_NAMES,
    NATURAL_LANGUAGE_ORDER,
)
from webapp.runs.models import ProblemResult, Run, RunMetric
from webapp.runs.reads.reports import samples_url
from webapp.runs.reads.selectors import Viewer, run_can_manage, visible_runs
from webapp.suites.models import Suite, SuiteRun
from webapp.teams.models import Membership

GROUPINGS = ("natural", "programming")
"""Which language groups the columns first: natural (en, ru, ar) or programming."""
GRID_SORTS = ("disagreement", "task", "mean")
COLOUR_STEPS = 5
"""The legend's steps; cells are coloured continuously along the same scale."""

# Viridis at 0, 0.25, 0.5, 0.75 and 1 (matplotlib's colour map, designed to be read by
# people with the common forms of colour blindness and in greyscale): dark purple for no
# sample passing, yellow for all of them. Text is light on the dark half, dark on the other.
_VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))


def visible_suites(*, user: Viewer) -> QuerySet[Suite]:
    """Public suites, the user's own, and team suites of the user's teams: the same rule as
    `visible_runs`."""
    rule = Q(visibility=Run.Visibility.PUBLIC)
    if user.is_authenticated:
        teams = Membership.objects.filter(user_id=user.pk).values("team_id")
        rule |= Q(owner_id=user.pk) | Q(visibility=Run.Visibility.TEAM, team_id__in=teams)
    return Suite.objects.filter(rule)


def get_suite_for_user(*, user: Viewer, suite_id: int) -> Suite:
    """The suite if `user` may see it, else a 404 that does not tell whether it exists."""
    suite = visible_suites(user=user).select_related("team", "owner").filter(
        pk=suite_id).first()
    if suite is None:
        raise Http404("No such suite")
    return suite


def suite_can_manage(*, user: Viewer, suite: Suite) -> bool:
    """Adding runs to a suite and uploading into it: its owner, or an owner of its team.
    The same rule as `run_can_manage`, which takes anything with an owner and a team."""
    return run_can_manage(user=user, run=suite)


def suite_runs(*, user: Viewer, suite: Suite) -> list[Run]:
    """The suite's runs that `user` may see, in column order. A run someone else made
    private (or deleted) is left out, as if it had never been added."""
    runs = list(
        visible_runs(user=user).filter(suite_members__suite=suite)
        .select_related("dataset")
    )
    return sorted(runs, key=lambda run: variant_order(run.dataset, grouping="natural")
                  + (run.pk,))


def _rank(value: str, order: tuple[str, ...]) -> tuple[Any, ...]:
    return (order.index(value) if value in order else len(order), value)


def variant_order(dataset: Dataset, *, grouping: str) -> tuple[Any, ...]:
    """Sort key of a column: by natural then programming language, or the other way round,
    then by dataset in the order the problem pages prefer."""
    natural = _rank(dataset.natural_language, NATURAL_LANGUAGE_ORDER)
    programming = language_rank(dataset.language)
    first, second = (natural, programming) if grouping == "natural" else (programming, natural)
    return (first, second, _rank(dataset.name, DATASET_PREFERENCE), dataset.variant)


def language_label(code: str, *, natural: bool) -> str:
    return NATURAL_LANGUAGE_NAMES.get(code, code) if natural else display_name(code)


# -- the grid ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Colour:
    background: str
    text: str


@functools.lru_cache(maxsize=4096)
def rate_colour(rate: float) -> Colour:
    """A pass rate's colour on the viridis scale, interpolated between its stops."""
    rate = min(1.0, max(0.0, rate))
    position = rate * (len(_VIRIDIS) - 1)
    low = min(int(position), len(_VIRIDIS) - 2)
    fraction = position - low
    rgb = [round(a + (b - a) * fraction)
           for a, b in zip(_VIRIDIS[low], _VIRIDIS[low + 1], strict=True)]
    # Relative luminance, roughly: light text on the purple-blue half, dark on the rest.
    light = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2] < 128
    return Colour(background="#{:02x}{:02x}{:02x}".format(*rgb),
                  text="#ffffff" if light else "#111111")


def colour_legend() -> list[tuple[str, Colour]]:
    steps = COLOUR_STEPS - 1
    return [(f"{round(100 * i / steps)}%", rate_colour(i / steps)) for i in range(steps + 1)]


@dataclass(frozen=True)
class Column:
    run: Run
    dataset: Dataset
    natural: str
    programming: str
    pass1: RunMetric | None
    problems: int

    @property
    def label(self) -> str:
        variant = f" {self.dataset.variant}" if self.dataset.variant else ""
        return f"{self.dataset.name}{variant}"


@dataclass(frozen=True)
class ColumnGroup:
    label: str
    span: int
    code: str


@dataclass(frozen=True)
class Cell:
    n: int
    c: int
    url: str
    colour: Colour

    @property
    def rate(self) -> float:
        return self.c / self.n if self.n else 0.0


@dataclass(frozen=True)
class Row:
    task_id: str
    number: int
    cells: list[Cell | None]
    disagreement: float | None
    """max − min of the variants' pass rates on this problem; None with fewer than two."""
    mean: float | None


@dataclass(frozen=True)
class SuiteGrid:
    columns: list[Column]
    outer: list[ColumnGroup]
    inner: list[ColumnGroup]
    rows: list[Row]
    grouping: str
    sort: str
    descending: bool

    @property
    def disagreeing(self) -> int:
        return sum(1 for row in self.rows if row.disagreement)


def _groups(codes: list[str], *, natural: bool) -> list[ColumnGroup]:
    groups: list[ColumnGroup] = []
    for code in codes:
        if groups and groups[-1].code == code:
            last = groups[-1]
            groups[-1] = ColumnGroup(label=last.label, span=last.span + 1, code=code)
        else:
            groups.append(ColumnGroup(label=language_label(code, natural=natural), span=1,
                                      code=code))
    return groups


def _inner_groups(columns: list[Column], *, grouping: str) -> list[ColumnGroup]:
    # The inner header restarts under each outer group, even when two neighbouring outer
    # groups share an inner language.
    natural_inner = grouping != "natural"
    groups: list[ColumnGroup] = []
    outer_of = [c.natural if grouping == "natural" else c.programming for c in columns]
    start = 0
    for index in range(1, len(columns) + 1):
        if index == len(columns) or outer_of[index] != outer_of[start]:
            inner = [c.natural if natural_inner else c.programming
                     for c in columns[start:index]]
            groups.extend(_groups(inner, natural=natural_inner))
            start = index
    return groups


def _sort_rows(rows: list[Row], *, sort: str, descending: bool) -> list[Row]:
    if sort == "task":
        return sorted(rows, key=lambda row: row.number, reverse=descending)
    field = "disagreement" if sort == "disagreement" else "mean"
    known = [row for row in rows if getattr(row, field) is not None]
    unknown = [row for row in rows if getattr(row, field) is None]
    # Ties keep the problem order, whichever way the main key runs.
    known.sort(key=lambda row: row.number)
    known.sort(key=lambda row: getattr(row, field), reverse=descending)
    return known + sorted(unknown, key=lambda row: row.number)


def suite_grid(*, runs: list[Run], grouping: str = "natural", sort: str = "disagreement",
               descending: bool = True) -> SuiteGrid:
    """Problems by variants, one column per run. Rows are sorted by `sort`: the
    disagreement between variants (max − min pass rate), the mean pass rate, or the task
    number; problems only one variant has come last when sorting by a statistic."""
    ordered = sorted(runs, key=lambda run: variant_order(run.dataset, grouping=grouping)
                     + (run.pk,))
    run_ids = [run.pk for run in ordered]
    metrics = {m.run_id: m for m in RunMetric.objects.filter(run_id__in=run_ids, k=1)}
    results: dict[str, dict[int, tuple[int, int]]] = {}
    numbers: dict[str, int] = {}
    counts = dict.fromkeys(run_ids, 0)
    for run_id, task_id, number, n, c in ProblemResult.objects.filter(
        run_id__in=run_ids
    ).values_list("run_id", "task_id", "problem__number", "n", "c"):
        results.setdefault(task_id, {})[run_id] = (n, c)
        numbers[task_id] = number
        counts[run_id] += 1
    columns = [
        Column(run=run, dataset=run.dataset, natural=run.dataset.natural_language,
               programming=run.dataset.language, pass1=metrics.get(run.pk),
               problems=counts[run.pk])
        for run in ordered
    ]
    base_urls = {run.pk: samples_url(run) for run in ordered}
    rows = []
    for task_id, by_run in results.items():
        cells: list[Cell | None] = []
        rates = []
        for run_id in run_ids:
            found = by_run.get(run_id)
            if found is None or not found[0]:
                cells.append(None)
                continue
            n, c = found
            rates.append(c / n)
            cells.append(Cell(n=n, c=c, url=f"{base_urls[run_id]}?task={task_id}",
                              colour=rate_colour(c / n)))
        rows.append(Row(
            task_id=task_id, number=numbers[task_id], cells=cells,
            disagreement=max(rates) - min(rates) if len(rates) > 1 else None,
            mean=sum(rates) / len(rates) if rates else None,
        ))
    outer_natural = grouping == "natural"
    outer = _groups([c.natural if outer_natural else c.programming for c in columns],
                    natural=outer_natural)
    return SuiteGrid(columns=columns, outer=outer,
                     inner=_inner_groups(columns, grouping=grouping),
                     rows=_sort_rows(rows, sort=sort, descending=descending),
                     grouping=grouping, sort=sort, descending=descending)


def suite_attach_candidates(*, user: Viewer, suite: Suite, limit: int = 200) -> QuerySet[Run]:
    """Runs the user may see and could add: not in the suite yet, newest first, the suite's
    model first."""
    members = SuiteRun.objects.filter(suite=suite).values("run_id")
    same_model = Case(When(model_name=suite.model_name, then=0), default=1)
    return (
        visible_runs(user=user).exclude(pk__in=members).select_related("dataset")
        .annotate(same_model=same_model).order_by("same_model", "-created_at")[:limit]
    )


def suite_summary(*, user: Viewer, suite: Suite) -> dict[str, Any]:
    """The JSON of `GET /api/suites/<id>`: the suite and its runs the user may see."""
    runs = suite_runs(user=user, suite=suite)
    metrics = {m.run_id: m for m in RunMetric.objects.filter(
        run_id__in=[run.pk for run in runs], k=1)}
    return {
        "id": suite.pk,
        "url": suite.get_absolute_url(),
        "name": suite.name,
        "model": suite.model_name,
        "revision": suite.revision,
        "decoding": suite.decoding,
        "visibility": suite.visibility,
        "team": suite.team.slug,
        "owner": suite.owner.get_username(),
        "runs": [
            {"id": run.pk, "url": run.get_absolute_url(), "api_url": f"/api/runs/{run.pk}",
             "dataset": run.dataset.key, "status": run.status,
             "pass_at_1": _metric_json(metrics.get(run.pk))}
            for run in runs
        ],
    }


def _metric_json(metric: RunMetric | None) -> dict[str, float] | None:
    if metric is None:
        return None
    return {"value": metric.value, "low": metric.low, "high": metric.high}
