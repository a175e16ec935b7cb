"""Suites' writes and reads: the multi-file upload (all or nothing, each file checked like a
single upload), attaching existing runs, one run per variant, who may change a suite, and
the grid's cells and disagreement."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from tests.webapp.suites.conftest import EN_TASKS, as_upload, canonical_records
from tests.webapp.support import RIGHT_0, WRONG_0, files_left_by_uploads, write_jsonl
from webapp.runs.models import Run
from webapp.suites.models import SuiteRun
from webapp.suites.selectors import (
    get_suite_for_user,
    rate_colour,
    suite_grid,
    suite_runs,
    visible_suites,
)
from webapp.suites.services import SuiteFile, suite_attach_runs, suite_create, suite_upload

pytestmark = pytest.mark.django_db(transaction=False)


def _upload_all(suite, user, files, django_capture_on_commit_callbacks, **options):
    with django_capture_on_commit_callbacks(execute=True):
        return suite_upload(user=user, suite=suite, files=files, **options)


def test_canonical_solutions_give_a_suite_where_every_variant_passes(
        personas, suite, canonical_files, django_capture_on_commit_callbacks):
    outcome = _upload_all(suite, personas.owner, canonical_files(),
                          django_capture_on_commit_callbacks)
    assert outcome.ok, [f.to_dict() for f in outcome.files]
    assert outcome.created
    runs = suite_runs(user=personas.owner, suite=suite)
    assert [run.dataset.natural_language for run in runs] == ["en", "ru", "ar"]
    for run in runs:
        run.refresh_from_db()
        assert run.status == Run.Status.FINISHED, run.error
        assert run.model_name == "alpha-7b"
        assert run.model_meta == {"suite": suite.pk, "revision": "v1.2",
                                  "decoding": {"temperature": 0.0}}
        assert (run.team, run.visibility) == (suite.team, suite.visibility)
    grid = suite_grid(runs=runs)
    assert {row.task_id for row in grid.rows} == set(EN_TASKS)
    cells = [cell for row in grid.rows for cell in row.cells if cell is not None]
    # en has 3 problems, ru 2, ar 3: 8 cells, every one passing.
    assert len(cells) == 8
    assert all(cell.c == cell.n == 1 for cell in cells)
    assert all(row.disagreement == 0.0 for row in grid.rows)
    assert grid.disagreeing == 0
    assert not files_left_by_uploads(), "staged copies must be removed"


def test_one_invalid_file_creates_nothing_and_names_its_problems(
        personas, suite, suite_variants, canonical_files, tmp_path: Path,
        django_capture_on_commit_callbacks):
    files = canonical_files()
    bad = write_jsonl(tmp_path / "bad-ru.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0},
        {"task_id": "HumanEval/999", "completion": WRONG_0},
    ])
    files[2] = SuiteFile(uploaded=as_upload(bad), dataset=suite_variants["ru"])
    outcome = _upload_all(suite, personas.owner, files, django_capture_on_commit_callbacks)
    assert not outcome.ok
    assert not outcome.created
    assert Run.objects.count() == 0
    assert SuiteRun.objects.count() == 0
    by_name = {item.file_name: item for item in outcome.files}
    assert not by_name["canonical-en.jsonl"].errors
    assert not by_name["canonical-ar.jsonl"].errors
    errors = by_name["bad-ru.jsonl"].errors
    assert errors
    assert errors[0].line == 2
    assert "HumanEval/999" in errors[0].message
    assert not files_left_by_uploads(), "a refused set must leave no staged file"


def test_a_wrong_extension_is_checked_like_a_single_upload(
        personas, suite, suite_variants, tmp_path: Path, django_capture_on_commit_callbacks):
    path = write_jsonl(tmp_path / "samples.csv", canonical_records(suite_variants["ar"]))
    outcome = _upload_all(suite, personas.owner,
                          [SuiteFile(uploaded=as_upload(path), dataset=suite_variants["ar"])],
                          django_capture_on_commit_callbacks)
    assert [issue.code for issue in outcome.files[0].errors] == ["bad_extension"]
    assert Run.objects.count() == 0


def test_a_variant_twice_is_refused(personas, suite, suite_variants, canonical_files,
                                    django_capture_on_commit_callbacks):
    files = canonical_files()
    files[2] = SuiteFile(uploaded=files[2].uploaded, dataset=suite_variants["en"])
    outcome = _upload_all(suite, personas.owner, files, django_capture_on_commit_callbacks)
    assert not outcome.ok
    assert any("humaneval/python/en is given twice" in error for error in outcome.errors)
    assert Run.objects.count() == 0


def test_check_only_creates_nothing(personas, suite, canonical_files,
                                    django_capture_on_commit_callbacks):
    outcome = _upload_all(suite, personas.owner, canonical_files(),
                          django_capture_on_commit_callbacks, dry_run=True)
    assert outcome.ok
    assert not outcome.created
    assert Run.objects.count() == 0
    assert outcome.files[0].coverage["samples_total"] == 3


def test_a_file_already_evaluated_adds_the_existing_run(
        personas, suite, canonical_files, django_capture_on_commit_callbacks):
    first = _upload_all(suite, personas.owner, canonical_files()[:1],
                        django_capture_on_commit_callbacks)
    run = first.files[0].run
    assert run is not None
    other = suite_create(owner=personas.owner, team=personas.team, name="again",
                         model_name="alpha-7b")
    again = _upload_all(other, personas.owner, canonical_files()[:1],
                        django_capture_on_commit_callbacks)
    assert again.created
    assert again.files[0].duplicate == run
    assert Run.objects.count() == 1
    assert list(other.runs.all()) == [run]


def test_only_the_owner_or_a_team_owner_may_upload(personas, suite, canonical_files):
    for user in (personas.teammate, personas.outsider):
        with pytest.raises(PermissionDenied):
            suite_upload(user=user, suite=suite, files=canonical_files())
    assert Run.objects.count() == 0


def test_attach_adds_runs_and_refuses_a_second_run_on_a_variant(
        personas, suite, canonical_files, django_capture_on_commit_callbacks):
    other = suite_create(owner=personas.owner, team=personas.team, name="source",
                         model_name="alpha-7b")
    outcome = _upload_all(other, personas.owner, canonical_files(),
                          django_capture_on_commit_callbacks)
    en, ru, ar = (item.run for item in outcome.files)
    assert suite_attach_runs(user=personas.owner, suite=suite, runs=[en, ar]) == 2
    with pytest.raises(ValidationError, match="already has run"):
        suite_attach_runs(user=personas.owner, suite=suite, runs=[ru, en])
    assert set(suite.runs.all()) == {en, ar}, "a refused attach adds none of its runs"
    with pytest.raises(PermissionDenied):
        suite_attach_runs(user=personas.teammate, suite=suite, runs=[ru])


def test_private_runs_of_others_never_appear(personas, suite, canonical_files,
                                             django_capture_on_commit_callbacks):
    outcome = _upload_all(suite, personas.owner, canonical_files(),
                          django_capture_on_commit_callbacks)
    hidden = outcome.files[1].run
    Run.objects.filter(pk=hidden.pk).update(visibility=Run.Visibility.PRIVATE)
    seen = suite_runs(user=personas.teammate, suite=suite)
    assert hidden not in seen
    assert len(seen) == 2
    assert hidden in suite_runs(user=personas.owner, suite=suite)
    grid = suite_grid(runs=seen)
    assert [column.run for column in grid.columns] == seen


def test_suite_visibility_follows_the_rules_of_runs(personas, suite):
    assert get_suite_for_user(user=personas.teammate, suite_id=suite.pk) == suite
    assert not visible_suites(user=personas.outsider).exists()
    private = suite_create(owner=personas.owner, team=personas.team, name="mine",
                           model_name="m", visibility=Run.Visibility.PRIVATE)
    assert private not in visible_suites(user=personas.teammate)
    public = suite_create(owner=personas.teammate, team=personas.team, name="open",
                          model_name="m", visibility=Run.Visibility.PUBLIC)
    assert list(visible_suites(user=personas.outsider)) == [public]
    with pytest.raises(PermissionDenied):
        suite_create(owner=personas.outsider, team=personas.team, name="x", model_name="m")


def test_rows_sort_by_disagreement(personas, suite, suite_variants, tmp_path: Path,
                                   django_capture_on_commit_callbacks):
    # English solves HumanEval/0 and /2; Arabic fails /0 and solves /2; /1 only English has.
    en = write_jsonl(tmp_path / "en.jsonl", [
        *canonical_records(suite_variants["en"], tasks=("HumanEval/0", "HumanEval/2")),
        {"task_id": "HumanEval/1", "completion": "    return []\n"}])
    ar = write_jsonl(tmp_path / "ar.jsonl", [
        {"task_id": "HumanEval/0", "completion": WRONG_0},
        *canonical_records(suite_variants["ar"], tasks=("HumanEval/2",))])
    outcome = _upload_all(suite, personas.owner, [
        SuiteFile(uploaded=as_upload(en), dataset=suite_variants["en"]),
        SuiteFile(uploaded=as_upload(ar), dataset=suite_variants["ar"])],
        django_capture_on_commit_callbacks)
    assert outcome.created
    runs = suite_runs(user=personas.owner, suite=suite)
    grid = suite_grid(runs=runs)
    assert [(row.task_id, row.disagreement) for row in grid.rows] == [
        ("HumanEval/0", 1.0), ("HumanEval/2", 0.0), ("HumanEval/1", None)]
    ascending = suite_grid(runs=runs, descending=False)
    assert [row.task_id for row in ascending.rows] == ["HumanEval/2", "HumanEval/0",
                                                       "HumanEval/1"]
    by_task = suite_grid(runs=runs, sort="task", descending=False)
    assert [row.task_id for row in by_task.rows] == list(EN_TASKS)
    first = grid.rows[0]
    assert first.cells[0] is not None
    assert first.cells[1] is not None
    assert first.cells[0].url == f"/runs/{runs[0].pk}/samples/?task=HumanEval/0"
    assert first.cells[1].colour == rate_colour(0.0) != first.cells[0].colour


def test_columns_group_by_natural_or_programming_language(personas, suite, suite_variants,
                                                          canonical_files,
                                                          django_capture_on_commit_callbacks):
    _upload_all(suite, personas.owner, canonical_files(), django_capture_on_commit_callbacks)
    runs = suite_runs(user=personas.owner, suite=suite)
    grid = suite_grid(runs=runs, grouping="natural")
    assert [(g.label, g.span) for g in grid.outer] == [("English", 1), ("Russian", 1),
                                                      ("Arabic", 1)]
    assert [(g.label, g.span) for g in grid.inner] == [("Python", 1)] * 3
    by_programming = suite_grid(runs=runs, grouping="programming")
    assert [(g.label, g.span) for g in by_programming.outer] == [("Python", 3)]
    assert [g.label for g in by_programming.inner] == ["English", "Russian", "Arabic"]


def test_the_colour_scale_runs_from_dark_to_light():
    low, high = rate_colour(0.0), rate_colour(1.0)
    assert low.background == "#440154"
    assert low.text == "#ffffff"
    assert high.background == "#fde725"
    assert high.text == "#111111"
    assert rate_colour(0.5).background == "#21918c"
