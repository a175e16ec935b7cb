"""Reads for datasets and problems."""

from __future__ import annotations

import threading

from django.db.models import QuerySet

from evaluator.records import Problem as EvaluatorProblem
from webapp.benchmarks.models import Dataset, Problem, ProblemVariant
from webapp.benchmarks.records import problem_from_json

_problem_cache: dict[tuple[int, str], dict[str, EvaluatorProblem]] = {}
_problem_cache_lock = threading.Lock()


def dataset_list() -> QuerySet[Dataset]:
    return Dataset.objects.all()


def dataset_lookup(*, reference: str) -> Dataset | None:
    """A dataset by id, or by key (`humaneval/python/en`, newest version) or `key@version`."""
    reference = reference.strip()
    if reference.isdigit():
        return Dataset.objects.filter(pk=int(reference)).first()
    key, _, version = reference.partition("@")
    found = Dataset.objects.filter(key=key)
    if version:
        found = found.filter(version=version)
    return found.order_by("-imported_at", "-pk").first()


def dataset_problems(*, dataset: Dataset) -> dict[str, EvaluatorProblem]:
    """The evaluator's problems of a dataset, by task id.

    Cached per process by id and version: a stored version never changes, and a worker
    evaluating many chunks of a run should not decode the same problems for each.
    """
    key = (dataset.pk, dataset.version)
    with _problem_cache_lock:
        cached = _problem_cache.get(key)
    if cached is not None:
        return cached
    problems = {}
    for record in ProblemVariant.objects.filter(dataset_id=dataset.pk).values_list(
        "record", flat=True
    ):
        problem = problem_from_json(record)
        problems[problem.task_id] = problem
    with _problem_cache_lock:
        _problem_cache[key] = problems
    return problems


def problem_variant_ids(*, dataset_id: int) -> dict[str, int]:
    """`HumanEval/N` -> ProblemVariant id, for one dataset."""
    return dict(
        ProblemVariant.objects.filter(dataset_id=dataset_id).values_list(
            "problem__task_id", "pk"
        )
    )


def problem_by_number(*, number: int) -> Problem | None:
    return Problem.objects.filter(number=number).first()


def problem_variants(*, problem: Problem) -> QuerySet[ProblemVariant]:
    return problem.variants.select_related("dataset").order_by(
        "dataset__language", "dataset__natural_language", "dataset__name", "-dataset__imported_at"
    )
