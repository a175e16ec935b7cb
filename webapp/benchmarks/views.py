"""The list of datasets. A dataset's page and the problem pages read runs and suites too,
so they live in `webapp.explore`."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.benchmarks.selectors import dataset_list


def datasets(request: HttpRequest) -> HttpResponse:
    return render(request, "benchmarks/dataset_list.html", {"datasets": dataset_list()})
