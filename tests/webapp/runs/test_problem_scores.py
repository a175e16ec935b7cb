"""A problem's stored pass@k no longer grows with its samples (issue 26): a row keeps the
reported k, any other k is computed from (n, c), and what the API and the run page show is
what the whole stored curve gave, to the digit, for new rows and rows from before."""

from __future__ import annotations

import importlib
from fractions import Fraction
from math import comb
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import User

from evaluator.metrics import pass_at_k_curve
from tests.webapp.large_run import large_run_create
from tests.webapp.support import client_for
from webapp.benchmarks.models import Dataset
from webapp.runs.domain.problem_scores import problem_pass_at_k, problems_pass_at_k
from webapp.runs.models import ProblemResult, Run
from webapp.runs.reads.reports import problem_table_k, run_problem_table
from webapp.runs.reads.selectors import run_problem_counts, run_snapshot, scored_problem_counts

PER_TASK = 1_000


@pytest.fixture
def big_run(personas, humaneval_x_python: Dataset) -> Run:
    """A finished run of 1,000 samples on each of three problems, scored for real."""
    return large_run_create(owner=personas.owner, team=personas.team,
                            dataset=humaneval_x_python, per_task=PER_TASK, name="n1000 run")


def old_curve(n: int, c: int) -> dict[str, float]:
    """What a row stored before: pass@k for every k <= n, rounded to 6 digits."""
    return {str(k): round(v, 6) for k, v in pass_at_k_curve([n], [c]).items()}


def closed_form(n: int, c: int, k: int) -> float:
    return float(1 - Fraction(comb(n - c, k), comb(n, k)))


def api_problems(run: Run, user: User) -> list[dict[str, Any]]:
    response = client_for(user).get(f"/api/runs/{run.pk}")
    assert response.status_code == 200, response.content
    return response.json()["problems"]


def table_passk(run: Run) -> tuple[int | None, list[tuple[str, float | None]]]:
    table = run_problem_table(run=run)
    return problem_table_k(run), [(row.task_id, row.passk) for row in table.rows]


def test_a_row_of_1000_samples_stores_the_reported_ks_only(big_run):
    rows = list(ProblemResult.objects.filter(run=big_run))
    assert len(rows) == 3
    for row in rows:
        assert row.n == PER_TASK
        assert list(row.pass_at_k) == ["1", "10", "100"]
        curve = old_curve(row.n, row.c)
        assert row.pass_at_k == {k: curve[k] for k in ("1", "10", "100")}
    assert {row.c for row in rows} != {0}, "the run has passing samples to score"


def test_a_k_not_stored_is_computed_as_the_closed_form(big_run):
    for row in ProblemResult.objects.filter(run=big_run):
        curve = old_curve(row.n, row.c)
        for k in (2, 7, 99, 101, 500, PER_TASK):
            assert str(k) not in row.pass_at_k
            assert row.pass_at(k) == curve[str(k)], (row.c, k)
            assert row.pass_at(k) == pytest.approx(closed_form(row.n, row.c, k), abs=5e-7)
        assert row.pass_at(PER_TASK + 1) is None
        assert row.pass_at(0) is None


def test_problem_values_agree_for_many_counts():
    # Every (n, c) up to 60 and a few larger n, and every k: the computed value is the one
    # the old curve stored.
    for n in [*range(1, 61), 99, 100, 101, 160]:
        curves = [old_curve(n, c) for c in range(n + 1)]
        for k in range(1, n + 1):
            values = problems_pass_at_k(ns=[n] * (n + 1), cs=list(range(n + 1)), k=k)
            assert values == [curve[str(k)] for curve in curves], (n, k)
    assert problems_pass_at_k(ns=[5, 20], cs=[1, 3], k=10) == [
        None, problem_pass_at_k(n=20, c=3, k=10)]


def test_api_and_run_page_show_what_the_whole_curve_gave(personas, big_run):
    rows = {row.task_id: row for row in ProblemResult.objects.filter(run=big_run)}
    expected = {task_id: {k: old_curve(row.n, row.c)[k] for k in ("1", "10", "100")}
                for task_id, row in rows.items()}
    assert {p["task_id"]: p["pass_at_k"] for p in api_problems(big_run, personas.owner)} == expected
    k, shown = table_passk(big_run)
    assert k == 100
    assert sorted(shown) == sorted(
        (task_id, old_curve(row.n, row.c)["100"]) for task_id, row in rows.items())


def test_rows_from_before_read_the_same_and_the_migration_cuts_them(personas, big_run):
    api_now, table_now = api_problems(big_run, personas.owner), table_passk(big_run)
    for row in ProblemResult.objects.filter(run=big_run):
        row.pass_at_k = old_curve(row.n, row.c)  # a row as the old aggregation stored it
        row.save(update_fields=["pass_at_k"])
    assert api_problems(big_run, personas.owner) == api_now
    assert table_passk(big_run) == table_now
    first = ProblemResult.objects.filter(run=big_run).first()
    assert first is not None
    assert first.pass_at(37) == old_curve(first.n, first.c)["37"]

    migration = importlib.import_module("webapp.runs.migrations.0012_problemresult_reported_ks")
    migration.keep_reported_ks(django_apps, None)
    for row in ProblemResult.objects.filter(run=big_run):
        curve = old_curve(row.n, row.c)
        assert row.pass_at_k == {k: curve[k] for k in ("1", "10", "100")}
    assert api_problems(big_run, personas.owner) == api_now
    assert table_passk(big_run) == table_now


def test_a_small_run_shows_pass_at_n_computed(personas, humaneval_x_python):
    """Eight samples a problem: the table's k is 8, which no row stores."""
    run = large_run_create(owner=personas.owner, team=personas.team,
                           dataset=humaneval_x_python, per_task=8, name="n8 run")
    rows = {row.task_id: row for row in ProblemResult.objects.filter(run=run)}
    assert all(list(row.pass_at_k) == ["1"] for row in rows.values())
    k, shown = table_passk(run)
    assert k == 8
    assert sorted(shown) == sorted((task_id, old_curve(row.n, row.c)["8"])
                                   for task_id, row in rows.items())


def test_a_finished_runs_snapshot_counts_are_its_scored_rows(big_run):
    """The snapshot of a finished run reads a row a problem, not its 3,000 samples, and
    says what counting the samples says."""
    seq = Run.objects.filter(pk=big_run.pk).values_list("event_seq", flat=True).get()
    counted = run_problem_counts(run=big_run, up_to_seq=seq)
    assert [row["n"] for row in counted] == [PER_TASK] * 3
    assert scored_problem_counts(run=big_run) == counted
    assert run_snapshot(run=big_run)["problems"] == counted
    # Before it is scored (or once its rows are gone), the samples are counted.
    ProblemResult.objects.filter(run=big_run).delete()
    assert scored_problem_counts(run=big_run) == []
    assert run_snapshot(run=big_run)["problems"] == counted
