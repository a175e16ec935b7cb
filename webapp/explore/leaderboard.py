"""Leaderboards: the public one, and one per team (its runs the viewer may see).

A row is a model (its runs' model name, or the run's name); a column is a dataset key
(benchmark, programming language, natural language and variant). A cell is the model's
newest finished run on that dataset, with pass@1, pass@10 and pass@100 where n allows
and each one's bootstrap interval over problems.

In each column and k the best value leads. Another cell is marked *tied* with the leader
when the data cannot tell them apart: with the paired bootstrap of the per-problem
difference in pass@k when both runs cover the same problems (they do on the same dataset),
the interval of the difference contains 0; otherwise (no shared problems) their
intervals overlap.

Which runs stand here (`leaderboard_runs`): finished, not retracted, and not held for review
(`webapp.runs.reads.verified`: mostly compile errors, or another language, until the owner
confirms). Each cell carries its run's verification (`mark_verification`), which the page's
verified mark and its tooltip show: the definition, and the conditions the run fails.

Each cell carries its run's three defect-aware scores (`webapp.defects.scores`); `scores`
chooses which of them the board ranks by, leads with and tests ties on.

`metric` chooses pass@k (at least one of k samples passes) or pass^k (all k pass). pass^k
is derived from the chosen way's per-problem counts with the same bootstrap as pass@k
(`webapp.runs.domain.scoring`), and its ties are tested the same way, on per-problem pass^k.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from django.db.models import Max, QuerySet

from evaluator import defects
from evaluator.metrics import (
    ALL_OF_K,
    ANY_OF_K,
    MetricError,
    bootstrap_ci,
    pass_at_k_array,
    statistically_tied,
)
from webapp.defects.scores import Point, ThreeWay, Way, runs_three_way, task_number
from webapp.query_params import BadQuery
from webapp.runs.domain.scoring import curve_points
from webapp.runs.models import Run, RunChange
from webapp.runs.reads.page_cache import FINISHED_SECONDS, key_of, shared
from webapp.runs.reads.selectors import REPORTED_KS
from webapp.runs.reads.verified import Verification, runs_held, runs_verification

RESAMPLES = 2000
LEADERBOARD_RUNS = 500
"""The newest finished runs in scope that a leaderboard considers."""


@dataclass
class Cell:
    run: Run
    k: int
    value: float
    low: float
    high: float
    leader: bool = False
    tied: bool = False
    method: str = ""
    """How `tied` was decided: "paired" (bootstrap of the per-problem difference) or
    "intervals" (overlap of the two intervals)."""
    diff_low: float | None = None
    diff_high: float | None = None
    verification: Verification | None = None
    three: ThreeWay | None = None
    """The run's score three ways: the cell shows them side by side."""
    waiting: str = ""
    """The chosen way's state when it has no number yet ("not_computed", "running"...)."""


@dataclass
class Column:
    key: str
    name: str
    language: str
    natural_language: str
    variant: str
    ks: list[int] = field(default_factory=list)
    versions: set[str] = field(default_factory=set)


    @property
    def sort_keys(self) -> list[tuple[int, str]]:
        return [(k, f"{self.key}:{k}") for k in self.ks]


@dataclass
class Row:
    label: str
    runs: dict[str, Run] = field(default_factory=dict)
    cells: dict[tuple[str, int], Cell] = field(default_factory=dict)
    waiting: dict[tuple[str, int], Cell] = field(default_factory=dict)
    """Cells whose chosen way has no number yet: shown, never ranked."""
    aligned: list[Cell | None] = field(default_factory=list)
    """The cells in the order of the table's columns, for the template."""


@dataclass
class Leaderboard:
    columns: list[Column]
    rows: list[Row]
    sort: str
    descending: bool
    harness_versions: list[str]
    sandboxes: list[str]
    held: list[tuple[Run, Verification]] = field(default_factory=list)
    """Runs in scope kept off this board until their owner confirms them."""
    scores: str = "original"
    metric: str = ANY_OF_K
    """pass@k or pass^k: what every number of the board is."""

    @property
    def metric_prefix(self) -> str:
        """"pass@" or "pass^", for the headings (pass@10, pass^10)."""
        return self.metric[:-1]

    def sort_keys(self) -> list[str]:
        return ["model"] + [f"{column.key}:{k}" for column in self.columns for k in column.ks]


@dataclass(frozen=True)
class LeaderboardRuns:
    listed: list[Run]
    """Newest first: the runs that stand on the board."""
    held: list[tuple[Run, Verification]]


def leaderboard_runs(*, runs: QuerySet[Run]) -> LeaderboardRuns:
    """Of `runs` (those the viewer may see, in the board's scope), the newest finished runs
    not retracted: those that stand on the board, and those held for review."""
    finished = list(runs.filter(status=Run.Status.FINISHED, retracted_at__isnull=True)
                    .select_related("dataset")
                    .order_by("-finished_at", "-pk")[:LEADERBOARD_RUNS])
    held_ids = runs_held(runs=finished)
    held = [run for run in finished if run.pk in held_ids]
    why = runs_verification(runs=held) if held else {}
    return LeaderboardRuns(listed=[run for run in finished if run.pk not in held_ids],
                           held=[(run, why[run.pk]) for run in held])


def leaderboard_state(*, runs: QuerySet[Run]) -> str:
    """A digest of everything a board of `runs` is drawn from: which runs stand in scope
    (a run that finishes, is retracted, deleted, hidden or edited changes it), their
    datasets' versions, the state of their patched scores, the latest confirmation of a
    held run and the defect registry's version. Two queries."""
    in_scope = list(runs.filter(status=Run.Status.FINISHED, retracted_at__isnull=True)
                    .order_by("-finished_at", "-pk")
                    .values_list("pk", "name", "model_name", "dataset_id", "dataset__version",
                                 "harness_version", "sandbox_backend", "finished_at",
                                 "event_seq", "patched_scoring__status",
                                 "patched_scoring__samples_done",
                                 "patched_scoring__registry_version")[:LEADERBOARD_RUNS])
    changed = RunChange.objects.filter(run_id__in=[row[0] for row in in_scope]).aggregate(
        last=Max("pk"))["last"]
    return key_of("leaderboard-state", in_scope, changed, defects.load_registry().version)


def leaderboard_drawn(*, runs: QuerySet[Run], sort: str = "", descending: bool = True,
                      scores: str = "original", metric: str = ANY_OF_K, state: str = ""
                      ) -> tuple[Leaderboard, LeaderboardRuns]:
    """The board of `runs` (those the viewer may see, in the board's scope) and the runs
    behind it, from the shared page cache: its key holds exactly the runs in scope, so
    viewers share a board only when they may see the same runs. `state`: the runs'
    `leaderboard_state`, when the caller has read it already."""

    def draw() -> tuple[Leaderboard, LeaderboardRuns]:
        chosen = leaderboard_runs(runs=runs)
        board = build_leaderboard(runs=chosen.listed, sort=sort, descending=descending,
                                  scores=scores, metric=metric)
        mark_verification(board, chosen)
        return board, chosen

    key = key_of("leaderboard", state or leaderboard_state(runs=runs), sort, descending,
                 scores, metric)
    return shared(key, draw, timeout=FINISHED_SECONDS)


def mark_verification(board: Leaderboard, runs: LeaderboardRuns) -> None:
    """Give each cell its run's verification (of the runs shown only: it reads their
    samples' results), and the board the runs held back."""
    cells = [cell for row in board.rows for cell in row.cells.values()]
    shown = {cell.run.pk: cell.run for cell in cells}
    verification = runs_verification(runs=shown.values())
    for cell in cells:
        cell.verification = verification[cell.run.pk]
    board.held = runs.held


def _paired_interval(a: dict[str, tuple[int, int]], b: dict[str, tuple[int, int]],
                     k: int, metric: str = ANY_OF_K) -> tuple[float, float] | None:
    """Bootstrap interval of mean over shared problems of pass@k(a) - pass@k(b) (or pass^k),
    resampling the problems with the same draws for both; None when they share no problem
    that has k samples in both."""
    shared = sorted(task for task in a.keys() & b.keys() if a[task][0] >= k and b[task][0] >= k)
    if not shared:
        return None
    a_n, a_c = zip(*(a[task] for task in shared), strict=True)
    b_n, b_c = zip(*(b[task] for task in shared), strict=True)
    differences = (pass_at_k_array(np.array(a_n), np.array(a_c), k, metric=metric)
                   - pass_at_k_array(np.array(b_n), np.array(b_c), k, metric=metric))
    return bootstrap_ci(differences, resamples=RESAMPLES)


@lru_cache(maxsize=2 * LEADERBOARD_RUNS)
def _pass_hat_points(counts: tuple[tuple[str, int, int], ...],
                     ks: tuple[int, ...]) -> dict[int, Point]:
    """pass^k at `ks` from per-problem (task id, n, c), ordered as the scores of a way are
    (so each run's bootstrap draws the same problems as its pass@k's)."""
    task_ids, ns, cs = (list(column) for column in zip(*counts, strict=True))
    return {point["k"]: Point(k=point["k"], value=point["value"], low=point["low"],
                              high=point["high"])
            for point in curve_points(ns, cs, task_ids=task_ids, metric=ALL_OF_K, ks=ks)}


def _way_points(way: Way, metric: str) -> dict[int, Point]:
    """The way's numbers in `metric`, at the k its pass@k has (none until it is ready)."""
    if not way.ready or not way.points:
        return {}
    if metric == ANY_OF_K:
        return dict(way.points)
    counts = tuple((task, *way.counts[task])
                   for task in sorted(way.counts, key=lambda t: (task_number(t), t)))
    return _pass_hat_points(counts, tuple(sorted(way.points)))


def build_leaderboard(*, runs: list[Run], sort: str = "", descending: bool = True,
                      scores: str = "original", metric: str = ANY_OF_K) -> Leaderboard:
    """`runs`: the finished runs in scope, newest first (the newest run of a model on a
    dataset stands for it). `scores`: which defect-aware way ranks the board; `metric`:
    pass@k or pass^k."""
    rows: dict[str, Row] = {}
    columns: dict[str, Column] = {}
    chosen: list[Run] = []
    for run in runs:
        label = run.model_name or run.name
        row = rows.setdefault(label, Row(label=label))
        key = run.dataset.key
        if key in row.runs:
            continue
        row.runs[key] = run
        chosen.append(run)
        column = columns.setdefault(key, Column(
            key=key, name=run.dataset.name, language=run.dataset.language,
            natural_language=run.dataset.natural_language, variant=run.dataset.variant))
        column.versions.add(run.dataset.version)
    three = runs_three_way(runs=chosen, ks=REPORTED_KS)
    shown = {run.pk: _way_points(three[run.pk].way(scores), metric) for run in chosen}
    for row in rows.values():
        for key, run in row.runs.items():
            for k in REPORTED_KS:
                # The columns are the k the original scores have, whichever way is shown.
                if three[run.pk].way("original").at(k) is None:
                    continue
                if k not in columns[key].ks:
                    columns[key].ks.append(k)
                way = three[run.pk].way(scores)
                point = shown[run.pk].get(k)
                if point is None:
                    row.waiting[(key, k)] = Cell(run=run, k=k, value=0.0, low=0.0, high=0.0,
                                                 three=three[run.pk], waiting=way.state)
                    continue
                row.cells[(key, k)] = Cell(run=run, k=k, value=point.value, low=point.low,
                                           high=point.high, three=three[run.pk])
    for column in columns.values():
        column.ks.sort()
    _mark_ties(list(rows.values()), list(columns.values()),
               {run.pk: dict(three[run.pk].way(scores).counts) for run in chosen}, metric)
    ordered_columns = sorted(columns.values(), key=lambda c: (c.name, c.language,
                                                               c.natural_language, c.variant))
    board = Leaderboard(
        columns=ordered_columns, rows=list(rows.values()), sort="", descending=descending,
        harness_versions=sorted({run.harness_version for run in chosen}),
        sandboxes=sorted({run.sandbox_backend or "?" for run in chosen}), scores=scores,
        metric=metric,
    )
    if not sort:
        first = ordered_columns[0] if ordered_columns else None
        sort = f"{first.key}:{first.ks[0]}" if first and first.ks else "model"
    if sort not in board.sort_keys():
        raise BadQuery("sort", "not a column of this leaderboard")
    board.sort = sort
    _sort_rows(board)
    for row in board.rows:
        row.aligned = [row.cells.get((column.key, k)) or row.waiting.get((column.key, k))
                       for column in board.columns for k in column.ks]
    return board


def _mark_ties(rows: list[Row], columns: list[Column],
               counts: dict[int, dict[str, tuple[int, int]]], metric: str = ANY_OF_K) -> None:
    for column in columns:
        for k in column.ks:
            cells = [row.cells[(column.key, k)] for row in rows if (column.key, k) in row.cells]
            if not cells:
                continue
            leader = max(cells, key=lambda cell: (cell.value, cell.low))
            leader.leader = True
            for cell in cells:
                if cell is leader:
                    continue
                interval = None
                try:
                    interval = _paired_interval(counts[cell.run.pk], counts[leader.run.pk], k,
                                                metric)
                except MetricError:
                    interval = None
                if interval is not None:
                    cell.method = "paired"
                    cell.diff_low, cell.diff_high = interval
                    cell.tied = interval[0] <= 0.0 <= interval[1]
                else:
                    cell.method = "intervals"
                    cell.tied = statistically_tied(cell.low, cell.high, leader.low, leader.high)


def _sort_rows(board: Leaderboard) -> None:
    if board.sort == "model":
        board.rows.sort(key=lambda row: row.label.lower(), reverse=board.descending)
        return
    key, _, k_text = board.sort.rpartition(":")
    k = int(k_text)
    with_value = [row for row in board.rows if (key, k) in row.cells]
    without = [row for row in board.rows if (key, k) not in row.cells]
    with_value.sort(key=lambda row: (row.cells[(key, k)].value, row.label),
                    reverse=board.descending)
    # Rows without this score go last whichever way the column is sorted.
    board.rows = with_value + sorted(without, key=lambda row: row.label.lower())
