"""Dataset and problem pages (the problem page grows into the variant view of the next issue)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import dataset_list, problem_by_number, problem_variants


def datasets(request: HttpRequest) -> HttpResponse:
    return render(request, "benchmarks/dataset_list.html", {"datasets": dataset_list()})


def dataset_detail(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    variants = dataset.variants.select_related("problem").order_by("problem__number")
    return render(request, "benchmarks/dataset_detail.html",
                  {"dataset": dataset, "variants": variants})


def problem_detail(request: HttpRequest, number: int) -> HttpResponse:
    problem = problem_by_number(number=number)
    if problem is None:
        raise Http404("No such problem")
    return render(request, "benchmarks/problem_detail.html",
                  {"problem": problem, "variants": problem_variants(problem=problem)})
