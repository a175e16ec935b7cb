"""The problem list with the pass rates of chosen runs, the problem page that aligns one
`HumanEval/N` across its translations and programming languages with the verdicts of
every visible model, and a dataset's page with its problems and fidelity candidates."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import (
    ProblemFilters,
    newest_variants,
    problem_by_number,
    problem_defects,
    problem_filter_choices,
    problem_language_tabs,
    problem_search,
    problem_translations,
    problem_variant_index,
)
from webapp.explore.problem_selectors import problem_pass_rates, problem_verdict_grid
from webapp.query_params import handles_bad_query, query_choice, query_ids, query_text
from webapp.runs.reads.reports import finished_runs, visible_runs_by_id
from webapp.suites.fidelity.selectors import dataset_defect_candidates

DEFAULT_RATE_COLUMNS = 6
MAX_RATE_COLUMNS = 12


def dataset_detail(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    variants = dataset.variants.select_related("problem").order_by("problem__number")
    return render(request, "explore/dataset_detail.html", {
        "dataset": dataset, "variants": variants,
        "fidelity": dataset_defect_candidates(user=request.user, dataset=dataset),
    })


@handles_bad_query
def problem_list(request: HttpRequest) -> HttpResponse:
    params = request.GET
    choices = problem_filter_choices()
    filters = ProblemFilters(
        query=query_text(params, "q"),
        dataset=query_choice(params, "dataset", choices.datasets),
        language=query_choice(params, "language", choices.languages),
        natural_language=query_choice(params, "nl", choices.natural_languages),
    )
    problems = list(problem_search(filters=filters))
    chosen = query_ids(params, "runs", limit=MAX_RATE_COLUMNS)
    runs = (visible_runs_by_id(user=request.user, ids=chosen, parameter="runs") if chosen
            else finished_runs(user=request.user, limit=DEFAULT_RATE_COLUMNS))
    ids = [problem.pk for problem in problems]
    rates = problem_pass_rates(run_ids=[run.pk for run in runs], problem_ids=ids)
    index = problem_variant_index(problem_ids=ids)
    rows = [
        {"problem": problem, "variants": index.get(problem.pk),
         "rates": [_rate(rates.get((problem.pk, run.pk))) for run in runs]}
        for problem in problems
    ]
    return render(request, "explore/problem_list.html", {
        "rows": rows, "runs": runs, "filters": filters, "choices": choices,
        "more_runs": finished_runs(user=request.user, limit=50),
        "chosen_runs": chosen,
    })


def _rate(counts: tuple[int, int] | None) -> tuple[int, int, float] | None:
    if counts is None:
        return None
    n, c = counts
    return n, c, c / n if n else 0.0


def problem_detail(request: HttpRequest, number: int) -> HttpResponse:
    problem = problem_by_number(number=number)
    if problem is None:
        raise Http404("No such problem")
    variants = newest_variants(problem=problem)
    grid = problem_verdict_grid(user=request.user, problem=problem,
                                datasets=[variant.dataset for variant in variants])
    used = [i for i in range(len(grid.columns)) if any(cells[i] for _, cells in grid.rows)]
    return render(request, "explore/problem_detail.html", {
        "problem": problem,
        "variants": variants,
        "translations": problem_translations(variants=variants),
        "tabs": problem_language_tabs(variants=variants),
        "defects": problem_defects(variants=variants),
        "grid_columns": [grid.columns[i] for i in used],
        "grid_rows": [(label, [cells[i] for i in used]) for label, cells in grid.rows],
        "previous": problem_by_number(number=number - 1) if number > 0 else None,
        "following": problem_by_number(number=number + 1),
    })
