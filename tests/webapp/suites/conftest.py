"""Suites made the real way: datasets imported from the fixtures, files checked and evaluated
by eager Celery in the `none` sandbox.

The canonical solutions of each variant give a suite with a known answer: every variant
passes every problem it has, so every cell is c = n and every disagreement is 0.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluator.datasets import load_dataset
from tests.webapp.support import write_jsonl
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import
from webapp.suites.models import Suite
from webapp.suites.services import SuiteFile, suite_create

VARIANT_FILES = {"ar": "mhumaneval/Human_Expert_arb_Arab.json",
                 "ru": "mhumaneval/mHumanEval-rus_Cyrl-python.json"}
EN_TASKS = ("HumanEval/0", "HumanEval/1", "HumanEval/2")


@pytest.fixture
def suite_variants(humaneval: Dataset, fixtures_dir: Path) -> dict[str, Dataset]:
    """English HumanEval, the Arabic (expert) and Russian (machine) mHumanEval fixtures."""
    found = {"en": humaneval}
    for code, relative in VARIANT_FILES.items():
        path = fixtures_dir / "datasets" / relative
        found[code] = dataset_import(loaded=load_dataset(path=path), source=str(path)).dataset
    return found


def canonical_records(dataset: Dataset, *, tasks: tuple[str, ...] | None = None
                      ) -> list[dict[str, Any]]:
    """One sample per problem: the variant's own canonical solution."""
    records = []
    for variant in dataset.variants.select_related("problem").order_by("problem__number"):
        if tasks is None or variant.problem.task_id in tasks:
            records.append({"task_id": variant.problem.task_id,
                            "completion": variant.canonical_solution})
    return records


def as_upload(path: Path) -> SimpleUploadedFile:
    return SimpleUploadedFile(path.name, path.read_bytes(), content_type="application/jsonl")


@pytest.fixture
def canonical_files(suite_variants: dict[str, Dataset], tmp_path: Path
                    ) -> Callable[[], list[SuiteFile]]:
    """Fresh upload objects (a file can be read once) of each variant's canonical solutions,
    English cut to the three problems the other variants have."""

    def make() -> list[SuiteFile]:
        files = []
        for code, dataset in suite_variants.items():
            records = canonical_records(dataset, tasks=EN_TASKS if code == "en" else None)
            path = write_jsonl(tmp_path / f"canonical-{code}.jsonl", records)
            files.append(SuiteFile(uploaded=as_upload(path), dataset=dataset))
        return files

    return make


@pytest.fixture
def suite(personas) -> Suite:
    return suite_create(owner=personas.owner, team=personas.team, name="alpha suite",
                        model_name="alpha-7b", revision="v1.2",
                        decoding={"temperature": 0.0})
