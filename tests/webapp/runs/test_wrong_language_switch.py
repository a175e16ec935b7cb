"""Generations in another language than the chosen dataset's: the stored dataset with the
same problems in their language is offered (any family: a C++ file against `humaneval`
is offered `humaneval-x/cpp/en`), ids of another language get one summary, and a
language whose workers do not answer is reported as not checked, never as "no"."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from evaluator.datasets import load_dataset
from tests.polyglot import LANGUAGES, generations, require_parser, write_dataset
from tests.webapp.runs.test_upload_checks import api_upload, generations_file, page_upload
from tests.webapp.support import client_for, write_jsonl
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import
from webapp.celery import app as celery_app
from webapp.runs.models import LanguageCheckPart, Run


@pytest.fixture
def polyglot(db: None, tmp_path: Path) -> dict[str, Dataset]:
    """humaneval-x/<language>/en for all six languages, three problems each: the same
    problems as `humaneval`'s by their aligned ids."""
    folder = tmp_path / "datasets"
    folder.mkdir()
    return {language: dataset_import(loaded=load_dataset(path=write_dataset(folder, language)),
                                     source=language).dataset
            for language in LANGUAGES}


def test_the_api_names_the_stored_variant_of_another_family(polyglot, humaneval, personas,
                                                            token_client, tmp_path):
    require_parser("cpp")
    response = api_upload(token_client(personas.owner), generations_file(tmp_path, "cpp"),
                          humaneval)
    assert response.status_code == 400, response.json()
    (issue,) = response.json()["issues"]
    assert issue["code"] == "wrong_language"
    cpp = polyglot["cpp"]
    assert cpp.key == "humaneval-x/cpp/en"
    assert f"Evaluate against {cpp.key} (dataset {cpp.pk}) instead" in issue["message"]
    assert "No C++ variant" not in issue["message"]


def test_one_click_on_the_confirm_page_moves_the_upload_to_that_variant(
        polyglot, humaneval, personas, tmp_path, django_capture_on_commit_callbacks,
        monkeypatch):
    require_parser("cpp")
    monkeypatch.setattr("webapp.runs.services.writes._enqueue_start", lambda run_id: None)
    client = client_for(personas.owner)
    response = page_upload(client, generations_file(tmp_path, "cpp"), humaneval)
    page = response.content.decode()
    assert 'id="use-suggested"' in page
    assert f"Evaluate against {polyglot['cpp'].key} instead" in page
    token = response.context["confirm"].initial["token"]
    with django_capture_on_commit_callbacks(execute=True):
        moved = client.post("/runs/new/confirm/", {"token": token,
                                                   "use_dataset": str(polyglot["cpp"].pk)})
    run = Run.objects.get()
    assert moved["Location"] == f"/runs/{run.pk}/"
    assert run.dataset == polyglot["cpp"]
    assert run.status == Run.Status.QUEUED
    assert "language_mismatch" not in run.coverage


def test_another_natural_language_is_not_offered(polyglot, humaneval, personas,
                                                 token_client, tmp_path):
    require_parser("cpp")
    Dataset.objects.filter(pk=polyglot["cpp"].pk).update(natural_language="ru")
    response = api_upload(token_client(personas.owner), generations_file(tmp_path, "cpp"),
                          humaneval)
    (issue,) = response.json()["issues"]
    assert "No C++ variant of humaneval is stored here" in issue["message"]


def test_ids_of_another_language_get_one_summary_naming_the_variant(
        polyglot, humaneval, personas, token_client, tmp_path):
    path = write_jsonl(tmp_path / "cpp_ids.jsonl", [
        {"task_id": f"CPP/{n}", "generation": "    return 0;\n}\n"} for n in range(164)])
    response = api_upload(token_client(personas.owner), path, humaneval)
    assert response.status_code == 400
    (issue,) = response.json()["issues"]
    assert (issue["code"], issue["line"], issue["field"]) == ("language_mismatch", 1,
                                                             "task_id")
    assert "163 more lines (2–164)" in issue["message"]
    cpp = polyglot["cpp"]
    assert f"Upload the file against {cpp.key} (dataset {cpp.pk})" in issue["message"]


def test_ids_of_a_language_with_no_stored_variant_say_so(humaneval, personas, token_client,
                                                         tmp_path):
    path = write_jsonl(tmp_path / "rust_ids.jsonl", [
        {"task_id": f"Rust/{n}", "generation": "}\n"} for n in range(3)])
    (issue,) = api_upload(token_client(personas.owner), path, humaneval).json()["issues"]
    assert issue["code"] == "language_mismatch"
    assert "No Rust variant of these problems is stored here" in issue["message"]


@pytest.fixture
def celery_not_eager():
    """Celery read its settings when first used, perhaps by an earlier test: not eager here
    whatever it read, and as eager as the test settings say afterwards."""
    celery_app.conf.update(task_always_eager=False)
    yield
    celery_app.conf.update(task_always_eager=settings.CELERY_TASK_ALWAYS_EAGER)


@pytest.mark.django_db(transaction=True)
@override_settings(CELERY_TASK_ALWAYS_EAGER=False, LANGUAGE_CHECK_WAIT_SECONDS=1)
def test_a_language_no_worker_answers_is_reported_not_done(polyglot, personas, celery_not_eager,
                                                           token_client, tmp_path: Path):
    # The broker takes the part, but no worker serves `eval-js` here.
    # Texts of their own: an earlier test's answers for the same texts are cached.
    records = [{**record, "completion": record["completion"] + f"\n// {uuid.uuid4()}\n"}
               for record in generations("js")]
    path = write_jsonl(tmp_path / "js.jsonl", records)
    response = api_upload(token_client(personas.owner), path, polyglot["js"], dry_run="1")
    assert response.status_code == 200, response.json()
    (warning,) = [w for w in response.json()["warnings"]
                  if w["code"] == "language_check_not_done"]
    assert warning["message"] == ("No JavaScript worker answered within 1 s: the language "
                                  "check is not done.")
    assert LanguageCheckPart.objects.count() == 0, "the request cleans up after itself"


@pytest.mark.django_db(transaction=True)
@override_settings(CELERY_TASK_ALWAYS_EAGER=False, LANGUAGE_CHECK_WAIT_SECONDS=1)
def test_a_python_upload_needs_no_worker(humaneval, personas, token_client, tmp_path: Path):
    # Python is read by the web process's own parser: no part is sent, nothing waits.
    path = write_jsonl(tmp_path / "python.jsonl", generations("python"))
    response = api_upload(token_client(personas.owner), path, humaneval, dry_run="1")
    assert response.status_code == 200, response.json()
    assert response.json()["warnings"] == []
    assert LanguageCheckPart.objects.count() == 0
