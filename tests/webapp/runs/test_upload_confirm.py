"""Confirming a staged upload: a clean file was stored at upload as a staged run, which
confirming only starts (nothing is read, parsed or inserted again); where the run must be
made from the staged file instead (the staged run was purged, another variant was
chosen), the check made at upload is what it is made from (the file is not read or hashed
again). A held upload that is forged, expired, another user's or changed on disk is
refused with a message that says so."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from tests.webapp.support import client_for
from webapp.runs.intake import staging_dir
from webapp.runs.models import Run, Sample


@pytest.fixture
def unsent(monkeypatch: pytest.MonkeyPatch) -> None:
    # The run is created; evaluating it is another test's business.
    monkeypatch.setattr("webapp.runs.services._enqueue_start", lambda run_id: None)


def hold(client: Client, path: Path, dataset_id: int) -> str:
    with path.open("rb") as handle:
        response = client.post("/runs/new/", {"file": handle, "dataset": str(dataset_id),
                                              "name": "held", "model_name": "m",
                                              "team": "lab", "visibility": "team"})
    assert response.status_code == 200, response.content[:500]
    token: str = response.context["confirm"].initial["token"]
    return token


def confirm(client: Client, token: str, **extra: Any) -> tuple[Any, list[str]]:
    response = client.post("/runs/new/confirm/", {"token": token, **extra})
    return response, [str(message) for message in get_messages(response.wsgi_request)]


def staged_files() -> list[Path]:
    return sorted(staging_dir().iterdir())


def started_runs() -> int:
    return Run.objects.exclude(status=Run.Status.STAGED).count()


def drop_staged_runs() -> None:
    """As the sweeper does to a staged run whose token expired: the confirmation then
    has to make the run from the staged file."""
    Run.objects.filter(status=Run.Status.STAGED).delete()


def rewrite(path: Path, data: bytes) -> None:
    """Write `path` again; its time moves on by a millisecond at least, whatever the
    clock's resolution, as it would for any later write."""
    before = path.stat().st_mtime_ns
    path.write_bytes(data)
    os.utime(path, ns=(before, max(path.stat().st_mtime_ns, before + 1_000_000)))


def refuse_to_read(*_args: Any, **_kwargs: Any) -> Any:
    raise AssertionError("the staged file was read again")


def test_confirm_starts_the_run_stored_at_upload_and_reads_nothing_again(
        personas, humaneval, samples_file, unsent, monkeypatch):
    client = client_for(personas.owner)
    token = hold(client, samples_file, humaneval.pk)
    staged = Run.objects.get()
    assert (staged.status, Sample.objects.filter(run=staged).count()) == (Run.Status.STAGED, 4)
    for name in ("uploads.read_samples", "uploads.check_language", "uploads.check_from_json",
                 "services._insert_samples"):
        monkeypatch.setattr(f"webapp.runs.{name}", refuse_to_read)

    response, messages = confirm(client, token)

    run = Run.objects.get()
    assert (response.status_code, response["Location"]) == (302, f"/runs/{staged.pk}/"), messages
    assert (run.pk, run.status) == (staged.pk, Run.Status.QUEUED)
    assert run.created_at >= staged.created_at, "created when it was started"
    assert (run.name, run.model_name, run.team) == ("held", "m", personas.team)
    assert staged_files() == [], "the staged file and its check are gone once used"


def test_a_second_confirmation_starts_nothing_more(personas, humaneval, samples_file, unsent):
    client = client_for(personas.owner)
    token = hold(client, samples_file, humaneval.pk)
    confirm(client, token)

    response, messages = confirm(client, token)

    assert response["Location"] == "/runs/new/"
    assert messages == ["That upload has expired or was already used; upload it again."]
    assert Run.objects.count() == 1


def test_without_its_staged_run_confirm_uses_the_check_made_at_upload(
        personas, humaneval, samples_file, unsent, monkeypatch):
    client = client_for(personas.owner)
    token = hold(client, samples_file, humaneval.pk)
    drop_staged_runs()
    staged = [path for path in staged_files() if path.name.endswith(".check.json")]
    assert len(staged) == 1, "the check is kept beside the staged file"
    # From here on, parsing the file or checking its language would fail.
    monkeypatch.setattr("webapp.runs.uploads.read_samples", refuse_to_read)
    monkeypatch.setattr("webapp.runs.uploads.check_language", refuse_to_read)

    response, messages = confirm(client, token)

    run = Run.objects.get()
    assert (response.status_code, response["Location"]) == (302, f"/runs/{run.pk}/"), messages
    assert run.file_sha256 == hashlib.sha256(samples_file.read_bytes()).hexdigest()
    assert run.file_size == samples_file.stat().st_size
    assert (run.name, run.model_name, run.team) == ("held", "m", personas.team)
    assert run.samples_total == Sample.objects.filter(run=run).count() == 4
    assert run.coverage["samples_total"] == 4
    assert staged_files() == [], "the staged file and its check are gone once used"


def test_a_staged_file_changed_after_its_check_is_refused(personas, humaneval, samples_file,
                                                          unsent):
    client = client_for(personas.owner)
    token = hold(client, samples_file, humaneval.pk)
    drop_staged_runs()  # what matters only when the run is made from the file
    (staged,) = [path for path in staged_files() if path.name.endswith(".jsonl")]
    # Same size, other bytes: what an edit in place looks like.
    data = bytearray(staged.read_bytes())
    data[-2:] = b"  "
    rewrite(staged, bytes(data))

    response, messages = confirm(client, token)

    assert (response.status_code, response["Location"]) == (302, "/runs/new/")
    assert messages == ["The staged file changed after it was checked, so it cannot be "
                        "trusted; upload it again."]
    assert Run.objects.count() == 0
    assert staged_files() == []


def test_a_changed_check_beside_the_file_is_refused(personas, humaneval, samples_file, unsent):
    client = client_for(personas.owner)
    token = hold(client, samples_file, humaneval.pk)
    drop_staged_runs()  # what matters only when the run is made from the file
    (check,) = [path for path in staged_files() if path.name.endswith(".check.json")]
    rewrite(check, check.read_bytes().replace(b'"HumanEval/0"', b'"HumanEval/9"'))

    response, messages = confirm(client, token)

    assert response["Location"] == "/runs/new/"
    assert "changed after it was checked" in messages[0]
    assert Run.objects.count() == 0


def test_an_altered_token_is_refused(personas, humaneval, samples_file, unsent):
    client = client_for(personas.owner)
    token = hold(client, samples_file, humaneval.pk)
    altered = token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB")

    response, messages = confirm(client, altered)

    assert response["Location"] == "/runs/new/"
    assert messages == ["That upload link is not valid (it was altered); upload the file again."]
    assert started_runs() == 0
    # The genuine token still works: a forgery does not spoil the upload.
    assert confirm(client, token)[0]["Location"].startswith("/runs/")
    assert started_runs() == Run.objects.count() == 1


def test_an_expired_token_is_refused(personas, humaneval, samples_file, unsent, monkeypatch):
    client = client_for(personas.owner)
    token = hold(client, samples_file, humaneval.pk)
    monkeypatch.setattr("webapp.runs.intake.STAGING_MAX_AGE", -1)

    response, messages = confirm(client, token)

    assert response["Location"] == "/runs/new/"
    assert messages == ["That upload waited more than an hour and has expired; upload it again."]
    assert started_runs() == 0


def test_another_users_token_is_refused(personas, humaneval, samples_file, unsent):
    token = hold(client_for(personas.owner), samples_file, humaneval.pk)

    response, messages = confirm(client_for(personas.teammate), token)

    assert response["Location"] == "/runs/new/"
    assert messages == ["That upload has expired or was already used; upload it again."]
    assert started_runs() == 0
    assert staged_files(), "the owner may still confirm it"
    assert confirm(client_for(personas.owner), token)[0]["Location"].startswith("/runs/")
