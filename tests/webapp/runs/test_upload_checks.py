"""The checks an upload goes through before it may become a run: generations in another
language than the dataset's (found by parsing them), and precise messages for broken
files, on the page and through `POST /api/runs` alike."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from evaluator.datasets import load_dataset
from evaluator.languages.registry import display_name
from tests.polyglot import LANGUAGES, generations, require_parser, write_dataset
from tests.webapp.support import RIGHT_0, client_for, files_left_by_uploads, write_jsonl
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import
from webapp.runs.models import Run, Sample
from webapp.runs.upload_checks.files import MAX_LINE_BYTES


def assert_nothing_stored() -> None:
    assert Run.objects.count() == 0
    assert Sample.objects.count() == 0
    assert files_left_by_uploads() == []


@pytest.fixture
def polyglot(db: None, tmp_path: Path) -> dict[str, Dataset]:
    """humaneval-x/<language>/en for all six languages, three problems each."""
    folder = tmp_path / "datasets"
    folder.mkdir()
    datasets = {}
    for language in LANGUAGES:
        path = write_dataset(folder, language)
        datasets[language] = dataset_import(loaded=load_dataset(path=path),
                                            source=str(path)).dataset
    return datasets


def generations_file(tmp_path: Path, language: str) -> Path:
    return write_jsonl(tmp_path / f"{language}.jsonl", generations(language))


def page_upload(client: Client, path: Path, dataset: Dataset, **extra: Any) -> Any:
    with path.open("rb") as handle:
        return client.post("/runs/new/", {"file": handle, "dataset": str(dataset.pk),
                                          "name": "my run", "visibility": "team", **extra})


def api_upload(client: Client, path: Path, dataset: Dataset, **extra: Any) -> Any:
    with path.open("rb") as handle:
        return client.post("/api/runs", {"file": handle, "dataset": dataset.key,
                                         "name": "api run", **extra})


def _other(language: str) -> str:
    """Each language against the next one's dataset: every language is refused once and
    every dataset refuses once."""
    return LANGUAGES[(LANGUAGES.index(language) + 1) % len(LANGUAGES)]


# -- the language check -----------------------------------------------------------------------
@pytest.mark.parametrize("written", LANGUAGES)
def test_api_refuses_generations_in_another_language_and_names_it(
    written, polyglot, personas, token_client, tmp_path
):
    target = _other(written)
    for language in (written, target):
        require_parser(language)
    response = api_upload(token_client(personas.owner), generations_file(tmp_path, written),
                          polyglot[target])
    assert response.status_code == 400
    issues = [i for i in response.json()["issues"] if i["code"] == "wrong_language"]
    assert len(issues) == 1, response.json()
    name = display_name(written)
    want = display_name(target)
    assert f"These generations look like {name}, not {want}" in issues[0]["message"]
    # The matching variant is offered by its key and id.
    assert f"Evaluate against {polyglot[written].key} (dataset {polyglot[written].pk})" \
        in issues[0]["message"]
    assert_nothing_stored()


@pytest.mark.parametrize("language", LANGUAGES)
def test_generations_in_the_datasets_language_pass_the_check(
    language, polyglot, personas, token_client, tmp_path
):
    require_parser(language)
    response = api_upload(token_client(personas.owner), generations_file(tmp_path, language),
                          polyglot[language], dry_run="1")
    assert response.status_code == 200, response.json()
    assert response.json()["warnings"] == []


def test_python_against_cpp_on_the_page_asks_before_going_on(
    polyglot, personas, tmp_path, django_capture_on_commit_callbacks, monkeypatch
):
    """Issue 13's report: Python generations against humaneval-x/cpp were "Ready to
    evaluate". Now the page says what they look like and offers the Python variant."""
    require_parser("cpp")
    monkeypatch.setattr("webapp.runs.services.writes._enqueue_start", lambda run_id: None)
    client = client_for(personas.owner)
    response = page_upload(client, generations_file(tmp_path, "python"), polyglot["cpp"])
    assert response.status_code == 200
    assert response.templates[0].name == "runs/upload_confirm.html"
    page = response.content.decode()
    assert "Ready to evaluate" not in page
    assert "These generations look like Python, not C++" in page
    assert f"Evaluate against {polyglot['python'].key} instead" in page
    assert 'name="allow_language_mismatch"' in page
    assert "required" in page
    # Held in the database, as a staged run nobody sees, for whichever web process the
    # confirmation reaches.
    assert Run.objects.get().status == Run.Status.STAGED
    assert files_left_by_uploads() == []
    token = response.context["confirm"].initial["token"]

    # Without the tick, nothing is created.
    refused = client.post("/runs/new/confirm/", {"token": token})
    assert refused.status_code == 302
    assert refused["Location"] == "/runs/new/"
    assert_nothing_stored()


def test_confirmed_mismatch_creates_the_run(polyglot, personas, tmp_path,
                                            django_capture_on_commit_callbacks, monkeypatch):
    require_parser("cpp")
    monkeypatch.setattr("webapp.runs.services.writes._enqueue_start", lambda run_id: None)
    client = client_for(personas.owner)
    response = page_upload(client, generations_file(tmp_path, "python"), polyglot["cpp"])
    token = response.context["confirm"].initial["token"]
    staged = Run.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        confirmed = client.post("/runs/new/confirm/",
                                {"token": token, "allow_language_mismatch": "on"})
    run = Run.objects.get()
    assert confirmed.status_code == 302
    assert confirmed["Location"] == f"/runs/{run.pk}/"
    assert (run.pk, run.status) == (staged.pk, Run.Status.QUEUED), "the staged run, started"
    assert run.dataset == polyglot["cpp"]
    assert run.samples_total == Sample.objects.filter(run=run).count() == 6
    assert run.coverage["language_mismatch"] == "python"
    assert files_left_by_uploads() == []


def test_suggested_variant_creates_the_run_against_it(polyglot, personas, tmp_path,
                                                      django_capture_on_commit_callbacks,
                                                      monkeypatch):
    require_parser("cpp")
    monkeypatch.setattr("webapp.runs.services.writes._enqueue_start", lambda run_id: None)
    client = client_for(personas.owner)
    response = page_upload(client, generations_file(tmp_path, "python"), polyglot["cpp"])
    token = response.context["confirm"].initial["token"]
    # Only the suggested variant may be switched to.
    client.post("/runs/new/confirm/", {"token": token, "use_dataset": polyglot["go"].pk})
    assert Run.objects.count() == 0
    response = page_upload(client, generations_file(tmp_path, "python"), polyglot["cpp"])
    token = response.context["confirm"].initial["token"]
    staged = Run.objects.get()

    def refuse_to_read(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the file was read again")

    # The staged samples are checked again against the variant: there is no file to read.
    monkeypatch.setattr("webapp.runs.upload_checks.files.SampleReader.read", refuse_to_read)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/runs/new/confirm/", {"token": token,
                                           "use_dataset": str(polyglot["python"].pk)})
    run = Run.objects.get()
    assert run.pk != staged.pk, "the staged run on the C++ variant is gone"
    assert run.dataset == polyglot["python"]
    assert (run.name, run.team, run.file_sha256) == (staged.name, staged.team,
                                                     staged.file_sha256)
    assert run.samples_total == Sample.objects.filter(run=run).count() == 6
    assert "language_mismatch" not in run.coverage
    assert files_left_by_uploads() == []


def test_a_mismatch_allowed_before_is_asked_again_then_leads_to_that_run(
        polyglot, personas, token_client, tmp_path, monkeypatch):
    require_parser("cpp")
    monkeypatch.setattr("webapp.runs.services.writes._enqueue_start", lambda run_id: None)
    path = generations_file(tmp_path, "python")
    first = api_upload(token_client(personas.owner), path, polyglot["cpp"],
                       allow_language_mismatch="true")
    assert first.status_code == 201, first.json()
    client = client_for(personas.owner)
    response = page_upload(client, path, polyglot["cpp"])
    assert response.status_code == 200
    assert "These generations look like Python, not C++" in response.content.decode()
    assert Run.objects.filter(status=Run.Status.STAGED).count() == 1
    token = response.context["confirm"].initial["token"]

    confirmed = client.post("/runs/new/confirm/",
                            {"token": token, "allow_language_mismatch": "on"})

    assert confirmed["Location"] == f"/runs/{first.json()['id']}/"
    assert Run.objects.count() == 1


def test_api_field_confirms_a_mismatch(polyglot, personas, token_client, tmp_path,
                                       monkeypatch):
    require_parser("cpp")
    monkeypatch.setattr("webapp.runs.services.writes._enqueue_start", lambda run_id: None)
    response = api_upload(token_client(personas.owner), generations_file(tmp_path, "python"),
                          polyglot["cpp"], allow_language_mismatch="true")
    assert response.status_code == 201, response.json()
    warning = response.json()["warnings"][0]
    assert warning["code"] == "wrong_language"
    assert "anyway, as asked" in warning["message"]
    assert Run.objects.get().dataset == polyglot["cpp"]


def test_without_a_stored_variant_the_message_says_so(polyglot, personas, token_client,
                                                      tmp_path):
    require_parser("cpp")
    polyglot["python"].delete()
    response = api_upload(token_client(personas.owner), generations_file(tmp_path, "python"),
                          polyglot["cpp"])
    message = response.json()["issues"][0]["message"]
    assert "No Python variant of humaneval-x is stored here" in message
    assert "allow_language_mismatch" in message


# -- precise messages -------------------------------------------------------------------------
BROKEN_AT_41 = '{"task_id": "HumanEval/0","completion": \'x\'}\n'


def _random_bytes(path: Path) -> Path:
    # 92 lines of bytes that are neither UTF-8 nor JSON, as in the report.
    lines = (bytes([0xff, 0xfe, 0x80 + i % 64, 0x80]) * 5 + b"\n" for i in range(92))
    path.write_bytes(b"".join(lines))
    return path


MESSAGES: dict[str, tuple[Any, str, int | None, int | None, str | None, list[str]]] = {
    # name: (writer, code, line, column, field, words the message must hold)
    "json_error_column": (
        lambda p: (p.write_text(json.dumps({"task_id": "HumanEval/0", "completion": RIGHT_0})
                                + "\n" + BROKEN_AT_41), p)[1],
        "bad_json", 2, 41, None, ["Line 2, column 41", "not valid JSON at \"'x'}\"",
                                  "in double quotes"]),
    "unclosed_string": (
        lambda p: (p.write_text('{"task_id": "HumanEval/0", "completion": "    return 1\n'), p)[1],
        "bad_json", 1, 42, None, ["Line 1, column 42", "is not closed on this line"]),
    "unknown_task_id": (
        lambda p: write_jsonl(p, [{"task_id": "HumanEval/999", "completion": RIGHT_0}]),
        "unknown_task", 1, None, "task_id",
        ["Line 1, field `task_id`", '"HumanEval/999" is not a task of humaneval/python',
         "there is no problem number 999 (they run 0–163)", 'look like "HumanEval/0"']),
}


@pytest.mark.parametrize("case", sorted(MESSAGES))
def test_page_and_api_give_the_same_precise_message(case, personas, humaneval, tmp_path,
                                                    token_client):
    writer, code, line, column, field, words = MESSAGES[case]
    path = writer(tmp_path / "samples.jsonl")
    body = api_upload(token_client(personas.owner), path, humaneval).json()
    issue = next(i for i in body["issues"] if i["code"] == code)
    assert (issue["line"], issue["column"], issue["field"]) == (line, column, field)
    for word in words:
        assert word in issue["message"]
    page = page_upload(client_for(personas.owner), path, humaneval)
    assert page.status_code == 400
    shown = next(i for i in page.context["issues"] if i.code == code)
    assert shown.message == issue["message"]
    if column is not None:
        assert f"<td>{line}:{column}</td>" in page.content.decode()
    assert_nothing_stored()


def test_random_bytes_get_one_summary_not_a_row_per_line(personas, humaneval, tmp_path,
                                                        token_client):
    path = _random_bytes(tmp_path / "samples.jsonl")
    body = api_upload(token_client(personas.owner), path, humaneval).json()
    codes = [i["code"] for i in body["issues"]]
    assert codes == ["not_jsonl", "not_utf8", "not_utf8", "not_utf8"]
    assert "This is not a JSON Lines file: 92 of 92 lines are unreadable" in \
        body["issues"][0]["message"]
    page = page_upload(client_for(personas.owner), path, humaneval)
    assert page.content.decode().count("<tr class=\"error\">") == 4
    assert_nothing_stored()


def test_odd_task_id_form_is_named_with_the_valid_one(personas, humaneval, tmp_path,
                                                      token_client):
    path = write_jsonl(tmp_path / "samples.jsonl",
                       [{"task_id": "humaneval_0", "completion": RIGHT_0},
                        {"task_id": "humaneval_1", "completion": "    return []\n"}])
    body = api_upload(token_client(personas.owner), path, humaneval, dry_run="1").json()
    assert [w["code"] for w in body["warnings"]] == ["nonstandard_task_id"]
    message = body["warnings"][0]["message"]
    assert message.startswith('Line 1, field `task_id`: "humaneval_0" is not a task id of '
                              'humaneval/python, whose ids look like "HumanEval/0"')
    assert "read as HumanEval/0. 1 more lines" in message


# -- hostile input ----------------------------------------------------------------------------
HOSTILE = {
    "huge_line": (lambda p: write_jsonl(p, [{"task_id": "HumanEval/0",
                                             "completion": "x" * (MAX_LINE_BYTES + 10)}]),
                  "line_too_long"),
    "binary_gzip_magic": (lambda p: (p.write_bytes(b"\x1f\x8b" + os.urandom(4096)), p)[1],
                          "corrupt_gzip"),
    "binary": (lambda p: (p.write_bytes(bytes(range(256)) * 64), p)[1], "not_jsonl"),
    "odd_unicode_task_id": (lambda p: write_jsonl(p, [{"task_id": "Human\u202eEval/0\u0301",
                                                       "completion": RIGHT_0}]),
                            "unknown_task"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_files_get_a_clear_error_and_nothing_is_created(case, personas, humaneval,
                                                                tmp_path, token_client):
    writer, code = HOSTILE[case]
    path = writer(tmp_path / ("samples.jsonl.gz" if "gzip" in case else "samples.jsonl"))
    response = api_upload(token_client(personas.owner), path, humaneval)
    assert response.status_code == 400
    issues = response.json()["issues"]
    assert code in [i["code"] for i in issues], issues
    assert len(issues) <= 5
    assert all(len(i["message"]) < 600 for i in issues)
    assert_nothing_stored()


def test_odd_unicode_in_completions_passes_the_language_check(personas, humaneval, tmp_path,
                                                              token_client):
    odd = "    return True  # \u202e\u0644\u0627 \U0001f600 \ufeff\u200b\n"
    path = write_jsonl(tmp_path / "samples.jsonl", [{"task_id": "HumanEval/0", "completion": odd}])
    response = api_upload(token_client(personas.owner), path, humaneval, dry_run="1")
    assert response.status_code == 200, response.json()
