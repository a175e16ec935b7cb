"""Confirming a staged upload: the file was stored as it was read, as a staged run, which
confirming only starts (nothing is read, parsed or inserted again), and cancelling
deletes at once. Nothing of the upload waits on the web host's disk, so the token is all
a web process needs. A held upload that is forged, expired, another user's or already
used is refused with a message that says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.core import signing
from django.test import Client

from tests.webapp.support import client_for, files_left_by_uploads
from webapp.runs.models import Chunk, Run, Sample


@pytest.fixture
def unsent(monkeypatch: pytest.MonkeyPatch) -> None:
    # The run is created; evaluating it is another test's business.
    monkeypatch.setattr("webapp.runs.services.writes._enqueue_start", lambda run_id: None)


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


def cancel(client: Client, token: str) -> tuple[Any, list[str]]:
    response = client.post("/runs/new/cancel/", {"token": token})
    return response, [str(message) for message in get_messages(response.wsgi_request)]


def started_runs() -> int:
    return Run.objects.exclude(status=Run.Status.STAGED).count()


def drop_staged_runs() -> None:
    """As the sweeper does to a staged run whose token expired."""
    Run.objects.filter(status=Run.Status.STAGED).delete()


def refuse_to_read(*_args: Any, **_kwargs: Any) -> Any:
    raise AssertionError("the staged file was read again")


def test_confirm_starts_the_run_stored_at_upload_and_reads_nothing_again(
        personas, humaneval, samples_file, unsent, monkeypatch):
    client = client_for(personas.owner)
    token = hold(client, samples_file, humaneval.pk)
    staged = Run.objects.get()
    assert (staged.status, Sample.objects.filter(run=staged).count()) == (Run.Status.STAGED, 4)
    for name in ("upload_checks.files.SampleReader", "upload_checks.files.check_language",
                 "services.writes._insert_samples"):
        monkeypatch.setattr(f"webapp.runs.{name}", refuse_to_read)

    response, messages = confirm(client, token)

    run = Run.objects.get()
    assert (response.status_code, response["Location"]) == (302, f"/runs/{staged.pk}/"), messages
    assert (run.pk, run.status) == (staged.pk, Run.Status.QUEUED)
    assert run.created_at >= staged.created_at, "created when it was started"
    assert (run.name, run.model_name, run.team) == ("held", "m", personas.team)
    assert files_left_by_uploads() == []


def test_a_second_confirmation_starts_nothing_more(personas, humaneval, samples_file, unsent):
    client = client_for(personas.owner)
    token = hold(client, samples_file, humaneval.pk)
    confirm(client, token)

    response, messages = confirm(client, token)

    assert response["Location"] == "/runs/new/"
    assert messages == ["That upload has expired or was already used; upload it again."]
    assert Run.objects.count() == 1


def test_the_upload_waits_in_the_database_not_on_the_web_hosts_disk(
        personas, humaneval, samples_file, unsent):
    token = hold(client_for(personas.owner), samples_file, humaneval.pk)

    assert files_left_by_uploads() == [], "no staged file, no check beside it"
    staged = Run.objects.get(status=Run.Status.STAGED)
    assert Sample.objects.filter(run=staged).count() == staged.samples_total == 4
    assert Chunk.objects.filter(run=staged).count() == staged.chunks_total
    assert staged.coverage["samples_total"] == 4
    # The token names the run, and nothing on any one machine.
    payload = signing.loads(token, salt="webapp.runs.staged-upload")
    assert payload["run"] == staged.pk
    assert not any(isinstance(value, str) and ("/" in value or ".jsonl" in value)
                   for value in payload.values())


def test_a_purged_staged_run_cannot_be_confirmed(personas, humaneval, samples_file, unsent):
    client = client_for(personas.owner)
    token = hold(client, samples_file, humaneval.pk)
    drop_staged_runs()

    response, messages = confirm(client, token)

    assert response["Location"] == "/runs/new/"
    assert messages == ["That upload has expired or was already used; upload it again."]
    assert Run.objects.count() == 0


def test_cancel_deletes_the_staged_run_at_once(personas, humaneval, samples_file, unsent):
    client = client_for(personas.owner)
    token = hold(client, samples_file, humaneval.pk)
    assert Sample.objects.count() == 4

    response, messages = cancel(client, token)

    assert (response.status_code, response["Location"]) == (302, "/runs/new/")
    assert messages == ["The upload was cancelled; nothing of it was kept."]
    assert (Run.objects.count(), Sample.objects.count(), Chunk.objects.count()) == (0, 0, 0)
    assert files_left_by_uploads() == []
    # Its token is spent.
    assert confirm(client, token)[1][-1] == (
        "That upload has expired or was already used; upload it again.")


def test_the_confirm_page_cancels_by_post_with_its_token(personas, humaneval, samples_file):
    with samples_file.open("rb") as handle:
        response = client_for(personas.owner).post(
            "/runs/new/", {"file": handle, "dataset": str(humaneval.pk), "visibility": "team"})
    page = response.content.decode()
    token = response.context["confirm"].initial["token"]
    form = page[page.index('<form method="post" action="/runs/new/confirm/">'):]
    form = form[:form.index("</form>")]
    assert 'formaction="/runs/new/cancel/"' in form, "Cancel posts the same form elsewhere"
    assert f'value="{token}"' in form
    assert 'href="/runs/new/"' not in form, "no longer a link that leaves the run behind"


def test_another_user_cannot_cancel_an_upload(personas, humaneval, samples_file, unsent):
    token = hold(client_for(personas.owner), samples_file, humaneval.pk)

    _, messages = cancel(client_for(personas.teammate), token)

    assert messages == ["That upload has expired or was already used; upload it again."]
    assert Run.objects.filter(status=Run.Status.STAGED).count() == 1
    assert confirm(client_for(personas.owner), token)[0]["Location"].startswith("/runs/")


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
    monkeypatch.setattr("webapp.runs.services.intake.STAGING_MAX_AGE", -1)

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
    assert Run.objects.filter(status=Run.Status.STAGED).exists(), "the owner may still confirm"
    assert confirm(client_for(personas.owner), token)[0]["Location"].startswith("/runs/")
