"""Finished runs for the exploration pages, made the real way: a checked file, `run_create`,
and evaluation by eager Celery in the `none` sandbox.

Run A and run B each have one sample per task on HumanEval/0, /1 and /2:

    task          A                 B
    HumanEval/0   right             wrong (returns False)
    HumanEval/1   crashes           crashes
    HumanEval/2   right             right

so the paired table has both = {2}, only A = {0}, only B = {}, neither = {1}. Run C has
two samples per task (pass@2 exists). The Arabic, Russian and Go variants come from the
small fixture datasets under tests/fixtures/datasets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evaluator.datasets import load_dataset
from tests.webapp.support import CRASH_1, RIGHT_0, WRONG_0, write_jsonl
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import
from webapp.runs.models import Run
from webapp.runs.services.writes import run_create
from webapp.runs.upload_checks.files import EvaluationOptions, upload_check

RIGHT_2 = "    return number % 1.0\n"
WRONG_2 = "    return number\n"
FIXTURE_DATASETS = ("mhumaneval/Human_Expert_arb_Arab.json", "ruhumaneval.jsonl",
                    "humaneval_x/humaneval_go.jsonl")

MakeRun = Callable[..., Run]


@pytest.fixture
def variants(humaneval: Dataset, fixtures_dir: Path) -> dict[str, Dataset]:
    """HumanEval plus an Arabic, a Russian and a Go variant of a few of its problems."""
    found = {"en": humaneval}
    for relative, code in zip(FIXTURE_DATASETS, ("ar", "ru", "go"), strict=True):
        path = fixtures_dir / "datasets" / relative
        found[code] = dataset_import(loaded=load_dataset(path=path), source=str(path)).dataset
    return found


@pytest.fixture
def make_run(personas, humaneval, tmp_path, django_capture_on_commit_callbacks) -> MakeRun:
    counter = iter(range(1, 1000))

    def make(records: list[dict[str, Any]], *, name: str, model: str = "",
             visibility: str = Run.Visibility.TEAM, owner: Any = None,
             dataset: Dataset | None = None, sanitize: bool = False) -> Run:
        number = next(counter)
        path = write_jsonl(tmp_path / f"run-{number}.jsonl", records)
        check = upload_check(path=path, file_name=f"{name}.jsonl", sha256=f"{number:064x}",
                             size=path.stat().st_size, dataset=dataset or humaneval,
                             options=EvaluationOptions(sanitize=sanitize))
        assert check.ok, check.issues
        with django_capture_on_commit_callbacks(execute=True):
            run = run_create(owner=owner or personas.owner, team=personas.team, check=check,
                             name=name, model_name=model or name, visibility=visibility)
        run.refresh_from_db()
        assert run.status == Run.Status.FINISHED, run.error
        return run

    return make


@dataclass
class ComparedRuns:
    a: Run
    b: Run
    c: Run


@pytest.fixture
def runs(make_run: MakeRun) -> ComparedRuns:
    a = make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0},
                  {"task_id": "HumanEval/1", "completion": CRASH_1},
                  {"task_id": "HumanEval/2", "completion": RIGHT_2}], name="alpha")
    b = make_run([{"task_id": "HumanEval/0", "completion": WRONG_0},
                  {"task_id": "HumanEval/1", "completion": CRASH_1},
                  {"task_id": "HumanEval/2", "completion": RIGHT_2}], name="beta")
    c = make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0},
                  {"task_id": "HumanEval/0", "completion": WRONG_0},
                  {"task_id": "HumanEval/2", "completion": WRONG_2},
                  {"task_id": "HumanEval/2", "completion": RIGHT_2}], name="gamma",
                 visibility=Run.Visibility.PUBLIC)
    return ComparedRuns(a=a, b=b, c=c)
