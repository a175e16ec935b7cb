"""`manage.py suite_canonical`: the canonical solutions as a suite, whose known answer is that
every variant passes every problem."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluator.datasets import load_dataset
from webapp.benchmarks.services import dataset_import
from webapp.runs.models import Run
from webapp.suites.models import Suite
from webapp.suites.selectors import suite_grid, suite_runs

pytestmark = pytest.mark.django_db


def test_canonical_suite_passes_everywhere_and_skips_variants_without_solutions(
        personas, suite_variants, fixtures_dir: Path, django_capture_on_commit_callbacks):
    path = fixtures_dir / "datasets" / "multipl_e" / "humaneval-cpp.jsonl"
    cpp = dataset_import(loaded=load_dataset(path=path), source=str(path)).dataset
    out, err = StringIO(), StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("suite_canonical", "olivia", suite_variants["ar"].key,
                     suite_variants["ru"].key, cpp.key, "--team", "lab", stdout=out, stderr=err)
    assert f"{cpp.key}: no canonical solutions" in err.getvalue()
    suite = Suite.objects.get()
    runs = suite_runs(user=personas.owner, suite=suite)
    assert [run.dataset.key for run in runs] == [suite_variants["ru"].key,
                                                 suite_variants["ar"].key]
    assert all(Run.objects.get(pk=run.pk).status == Run.Status.FINISHED for run in runs)
    grid = suite_grid(runs=runs)
    cells = [cell for row in grid.rows for cell in row.cells if cell is not None]
    assert len(cells) == 5
    assert all(cell.c == cell.n for cell in cells)
    assert f"suite {suite.pk}" in out.getvalue()


def test_unknown_user_or_dataset_is_a_clear_error(personas, suite_variants):
    with pytest.raises(CommandError, match="No user"):
        call_command("suite_canonical", "nobody", "humaneval/python/en")
    with pytest.raises(CommandError, match="No dataset 'nope/python/xx'"):
        call_command("suite_canonical", "olivia", "nope/python/xx")
    assert not Suite.objects.exists()
