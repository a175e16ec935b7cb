"""Comparison pages: pick runs, two runs paired, one problem side by side, a baseline
against several runs, and many runs ranked. Every run goes through `get_run_for_user`."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode

from evaluator.records import STATUSES
from webapp.benchmarks.highlight import highlight
from webapp.benchmarks.selectors import problem_by_number
from webapp.explore.compare_selectors import (
    CELL_NAMES,
    CELLS,
    PairFilters,
    baseline_comparison,
    filter_pair_rows,
    pair_comparison,
    side_by_side,
)
from webapp.explore.many_runs import MAX_RUNS, CannotCompare, many_runs_comparison
from webapp.query_params import (
    BadQuery,
    handles_bad_query,
    query_choice,
    query_flag,
    query_ids,
    query_int,
)
from webapp.runs.reads.reports import finished_runs, run_curves, visible_runs_by_id
from webapp.runs.reads.selectors import get_run_for_user

MAX_OTHERS = 8


@handles_bad_query
def compare_index(request: HttpRequest) -> HttpResponse:
    """A form that sends to the stable URL of what it picked."""
    params = request.GET
    a = query_int(params, "a", default=None, minimum=1)
    b = query_int(params, "b", default=None, minimum=1)
    others = query_ids(params, "with", limit=MAX_OTHERS)
    if a is not None and b is not None:
        visible_runs_by_id(user=request.user, ids=[a], parameter="a")
        visible_runs_by_id(user=request.user, ids=[b], parameter="b")
        return redirect("compare:pair", a=a, b=b)
    if a is not None and others:
        visible_runs_by_id(user=request.user, ids=[a], parameter="a")
        visible_runs_by_id(user=request.user, ids=others, parameter="with")
        return redirect(reverse("compare:baseline", args=[a]) + "?" + urlencode(
            {"with": ",".join(str(pk) for pk in others)}))
    return render(request, "explore/compare_index.html", {
        "runs": finished_runs(user=request.user, limit=200), "a": a,
    })


@handles_bad_query
def compare_pair(request: HttpRequest, a: int, b: int) -> HttpResponse:
    run_a = get_run_for_user(user=request.user, run_id=a)
    run_b = get_run_for_user(user=request.user, run_id=b)
    params = request.GET
    filters: PairFilters = {
        "cell": query_choice(params, "cell", CELLS),
        "differ": query_flag(params, "differ"),
        "failures": query_flag(params, "failures"),
        "status": query_choice(params, "status", STATUSES),
    }
    pair = pair_comparison(a=run_a, b=run_b)
    rows = filter_pair_rows(pair.rows, **filters)
    return render(request, "explore/compare_pair.html", {
        "pair": pair, "a": run_a, "b": run_b, "rows": rows, "filters": filters,
        "pair_heads": [("A", run_a), ("B", run_b)],
        "cells": [(cell, CELL_NAMES[cell]) for cell in CELLS], "cell_names": CELL_NAMES,
        "statuses": STATUSES,
        "chart_data": {"curves": run_curves(runs=[run_a, run_b])},
    })


@handles_bad_query
def compare_problem(request: HttpRequest, a: int, b: int, number: int) -> HttpResponse:
    run_a = get_run_for_user(user=request.user, run_id=a)
    run_b = get_run_for_user(user=request.user, run_id=b)
    problem = problem_by_number(number=number)
    if problem is None:
        raise Http404("No such problem")
    params = request.GET
    a_index = query_int(params, "sa", default=None, minimum=0, maximum=10**6)
    b_index = query_int(params, "sb", default=None, minimum=0, maximum=10**6)
    options = {
        "ignore_whitespace": query_flag(params, "ws"),
        "ignore_comments": query_flag(params, "comments"),
        "canonical": query_flag(params, "canonical"),
        "only_differing_tests": query_choice(params, "tests", ("all", "differ"),
                                             default="all") == "differ",
    }
    view = side_by_side(a=run_a, b=run_b, task_id=problem.task_id, a_index=a_index,
                        b_index=b_index, **options)
    if a_index is not None and view.a_sample is None:
        raise BadQuery("sa", f"run A has no sample {a_index} of {problem.task_id}")
    if b_index is not None and view.b_sample is None:
        raise BadQuery("sb", f"run B has no sample {b_index} of {problem.task_id}")
    panes = []
    for label, run, sample, diffed in (("A", run_a, view.a_sample,
                                        view.diff.a_html if view.diff else None),
                                       ("B", run_b, view.b_sample,
                                        view.diff.b_html if view.diff else None)):
        html = diffed if diffed is not None else (
            highlight(sample.completion, run.dataset.language) if sample else "")
        panes.append((label, run, sample, html))
    return render(request, "explore/compare_problem.html", {
        "panes": panes,
        "a": run_a, "b": run_b, "problem": problem, "view": view, "options": options,
        "pair_heads": [("A", run_a), ("B", run_b)],
    })


@handles_bad_query
def compare_baseline(request: HttpRequest, base: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=base)
    ids = [pk for pk in query_ids(request.GET, "with", limit=MAX_OTHERS) if pk != run.pk]
    others = visible_runs_by_id(user=request.user, ids=ids, parameter="with")
    return render(request, "explore/compare_baseline.html", {
        "base": run, "rows": baseline_comparison(base=run, others=others),
        "runs": finished_runs(user=request.user, limit=200),
        "chosen": ids,
        "chart_data": {"curves": run_curves(runs=[run, *others])},
    })


@handles_bad_query
def compare_many(request: HttpRequest) -> HttpResponse:
    """Up to `MAX_RUNS` runs named in `?runs=`: the matrix, the ranking, the separating
    problems. Runs the user may not see are refused like unknown ids (a 400 naming the
    first); runs that exist but cannot be compared as a set get the page with the reason."""
    ids = query_ids(request.GET, "runs", limit=MAX_RUNS)
    chosen = visible_runs_by_id(user=request.user, ids=ids, parameter="runs")
    context = {"chosen": ids, "runs": finished_runs(user=request.user, limit=200),
               "max_runs": MAX_RUNS, "comparison": None, "error": ""}
    if not ids:
        return render(request, "explore/compare_many.html", context)
    try:
        context["comparison"] = many_runs_comparison(runs=chosen)
    except CannotCompare as exc:
        context["error"] = str(exc)
        return render(request, "explore/compare_many.html", context, status=400)
    return render(request, "explore/compare_many.html", context)
