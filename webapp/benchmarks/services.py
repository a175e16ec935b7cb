"""Writes for datasets: importing a loaded evaluator `Dataset`."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from evaluator.datasets import Dataset as LoadedDataset
from webapp.benchmarks.models import Dataset, Problem, ProblemVariant
from webapp.benchmarks.problem_json import problem_to_json


@dataclass(frozen=True)
class ImportOutcome:
    dataset: Dataset
    created: bool


def dataset_import(*, loaded: LoadedDataset, source: str) -> ImportOutcome:
    """Store `loaded` and its problems; importing the same version again changes nothing.

    A new version of the same variant is stored beside the old one, so runs keep pointing
    at the exact problems they were evaluated on.
    """
    identity = {
        "name": loaded.name,
        "variant": loaded.variant,
        "language": loaded.language,
        "natural_language": loaded.natural_language,
        "version": loaded.version,
    }
    existing = Dataset.objects.filter(**identity).first()
    if existing is not None:
        return ImportOutcome(dataset=existing, created=False)
    with transaction.atomic():
        dataset = Dataset.objects.create(
            **identity,
            layout=loaded.layout,
            key=loaded.key,
            source=source[:500],
            problem_count=len(loaded.problems),
        )
        numbers = {problem.number: problem.task_id for problem in loaded.problems}
        known = set(Problem.objects.filter(number__in=numbers).values_list("number", flat=True))
        Problem.objects.bulk_create(
            [Problem(number=n, task_id=t) for n, t in numbers.items() if n not in known],
            ignore_conflicts=True,
        )
        groups = dict(Problem.objects.filter(number__in=numbers).values_list("number", "pk"))
        ProblemVariant.objects.bulk_create(
            [
                ProblemVariant(
                    problem_id=groups[problem.number],
                    dataset=dataset,
                    source_id=problem.source_id[:200],
                    entry_point=problem.entry_point[:200],
                    prompt=problem.prompt,
                    canonical_solution=problem.canonical_solution,
                    test=problem.test,
                    record=problem_to_json(problem),
                )
                for problem in loaded.problems
            ],
            batch_size=500,
        )
    return ImportOutcome(dataset=dataset, created=True)
