"""What "verified" means (`webapp.runs.reads.verified`), shown on the leaderboard's mark with the
conditions a run fails; runs that mostly fail to compile or were uploaded in another
language stay off leaderboards until their owner confirms them; cancel and resume in the
run's history."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from evaluator.datasets import load_dataset
from tests.polyglot import generations, require_parser, write_dataset
from tests.webapp.support import client_for, write_jsonl
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import
from webapp.runs.models import Run, RunChange, Sample
from webapp.runs.reads.verified import COMPILE_ERROR_SHARE, DEFINITION, run_verification
from webapp.runs.worker.aggregation import _score
from webapp.teams.models import Membership
from webapp.teams.services import token_issue, user_sign_up


def _token(user) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token_issue(user=user, name='t').secret}")


@pytest.fixture
def datasets(db: None, tmp_path: Path) -> dict[str, Dataset]:
    """humaneval-x/python and /go, three problems each."""
    folder = tmp_path / "datasets"
    folder.mkdir()
    found = {}
    for language in ("python", "go"):
        path = write_dataset(folder, language)
        found[language] = dataset_import(loaded=load_dataset(path=path),
                                          source=str(path)).dataset
    return found


@pytest.fixture
def upload(personas, tmp_path, django_capture_on_commit_callbacks):
    """Upload records through the API as the team's member `tom`; evaluated at once."""

    def make(records: list[dict[str, Any]], dataset: Dataset, name: str, **extra: str) -> Run:
        path = write_jsonl(tmp_path / f"{name}.jsonl", records)
        with path.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
            response = _token(personas.teammate).post("/api/runs", {
                "file": handle, "dataset": dataset.key, "team": "lab", "visibility": "team",
                "name": name, "model_name": name, **extra})
        assert response.status_code == 201, response.content
        run = Run.objects.get(pk=response.json()["id"])
        assert run.status == Run.Status.FINISHED, run.error
        return run

    return make


def _board(user) -> str:
    response = client_for(user).get("/teams/lab/leaderboard/")
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_a_complete_run_under_the_reference_profile_is_verified(personas, datasets, upload):
    run = upload(generations("python", copies=1), datasets["python"], "complete")
    verification = run_verification(run=run)
    assert verification.verified, verification.failed
    assert not verification.held
    page = _board(personas.owner)
    assert f'id="cell-{run.pk}-1"' in page
    assert f'class="badge verified" tabindex="0" title="{DEFINITION}' in page
    body = _token(personas.teammate).get(f"/api/runs/{run.pk}").json()
    assert body["verified"]["verified"] is True
    assert body["verified"]["definition"] == DEFINITION


def test_each_failed_condition_is_named_in_the_marks_tooltip(personas, datasets, upload):
    partial = upload(generations("python", copies=1)[:2], datasets["python"], "partial",
                     profile="strict")
    sample = Sample.objects.filter(run=partial).first()
    assert sample is not None
    assert sample.result is not None
    sample.result = {**sample.result, "suspicious": ["no test assertion ran"]}
    sample.save(update_fields=["result"])
    # A result is recorded before its run is scored, and the check reads the counts
    # stored with the scores: score the run again, as its evaluation would have.
    _score(run_id=partial.pk)
    verification = run_verification(run=partial)
    assert set(verification.failed) == {"every_problem_covered", "reference_profile",
                                        "no_suspicious_samples"}
    page = _board(personas.owner)
    cell = page[page.index(f'id="cell-{partial.pk}-1"'):]
    cell = cell[:cell.index("</td>")]
    assert 'class="badge unverified"' in cell
    assert "Not verified: " in cell
    assert "1 problem(s) without samples" in cell
    assert "judged under profile strict, not the reference codegeex" in cell
    assert "1 suspicious sample(s)" in cell
    assert DEFINITION in cell


def test_other_language_and_compile_errors_are_held_until_the_owner_confirms(
        personas, datasets, upload):
    require_parser("go")
    run = upload(generations("python", copies=1), datasets["go"], "python-as-go",
                 allow_language_mismatch="true")
    assert run.coverage["language_mismatch"] == "python"
    compile_errors = Sample.objects.filter(run=run, status="compile_error").count()
    assert compile_errors / run.samples_total > COMPILE_ERROR_SHARE
    verification = run_verification(run=run)
    assert verification.held
    assert set(verification.review) == {"compile_errors", "language_mismatch"}
    assert {"not_held", "language_check"} <= set(verification.failed)

    page = _board(personas.owner)
    assert f'id="cell-{run.pk}-1"' not in page
    held = page[page.index('id="held-runs"'):]
    assert "python-as-go" in held
    assert "samples failed to compile" in held
    assert "the generations look like python, the dataset is go" in held

    url = f"/api/runs/{run.pk}/leaderboards"
    refused = _token(personas.teammate).post(url, json.dumps({"listed": True}),
                                             content_type="application/json")
    assert refused.status_code == 400
    assert "held for review" in refused.json()["fields"]["confirm"][0]
    outsider = _token(personas.outsider).post(url, json.dumps({"listed": True, "confirm": True}),
                                              content_type="application/json")
    assert outsider.status_code == 404
    assert not RunChange.objects.filter(run=run).exists()

    confirmed = _token(personas.teammate).post(
        url, json.dumps({"listed": True, "confirm": True}), content_type="application/json")
    assert confirmed.status_code == 200, confirmed.content
    assert confirmed.json()["verified"]["confirmed"] is True
    assert confirmed.json()["verified"]["held"] is False
    change = RunChange.objects.get(run=run)
    assert (change.field, change.before, change.after, change.actor_name) == (
        "leaderboard", "held for review", "confirmed", "tom")
    page = _board(personas.owner)
    assert f'id="cell-{run.pk}-1"' in page
    assert "Confirmed by its owner although" in page


def test_a_member_who_does_not_manage_the_run_cannot_confirm(personas, datasets, upload):
    require_parser("go")
    run = upload(generations("python", copies=1), datasets["go"], "held",
                 allow_language_mismatch="true")
    mia = user_sign_up(username="mia", password="correct-horse-battery")
    Membership.objects.create(team=personas.team, user=mia, role=Membership.Role.MEMBER)
    answer = _token(mia).post(f"/api/runs/{run.pk}/leaderboards",
                              json.dumps({"listed": True, "confirm": True}),
                              content_type="application/json")
    assert answer.status_code == 403
    assert run_verification(run=run).held


def test_compile_errors_alone_hold_a_run_in_the_right_language(personas, datasets, upload):
    require_parser("go")
    # Go that parses but does not compile: a variable declared and never used.
    records = [{**record, "completion": "    unusedHere := 1\n" + record["completion"]}
               for record in generations("go", copies=1)]
    run = upload(records, datasets["go"], "broken-go")
    assert "language_mismatch" not in run.coverage
    verification = run_verification(run=run)
    assert set(verification.review) == {"compile_errors"}
    assert verification.held
    # Held is never verified, and the page says which condition fails.
    assert not verification.verified
    assert verification.failed["not_held"].startswith("held for review: ")
    page = client_for(personas.teammate).get(run.get_absolute_url())
    text = html.unescape(page.content.decode())
    assert "✗ not verified" in text
    assert "✓ verified" not in text
    assert "Held off the leaderboards for review" in text
    assert 'id="confirm-listing-button"' in text
    answer = client_for(personas.teammate).post(f"/runs/{run.pk}/leaderboards/",
                                                {"listed": "1", "confirm": "1"})
    assert answer.status_code == 302
    assert not run_verification(run=run).held


def test_cancel_and_resume_are_in_the_history(personas, unstarted_run):
    run = unstarted_run("to cancel")
    api = _token(personas.owner)
    cancelled = api.post(f"/api/runs/{run.pk}/cancel")
    assert cancelled.json() == {"id": run.pk, "status": "cancelled"}
    assert api.post(f"/api/runs/{run.pk}/cancel").status_code == 400  # already stopped
    resumed = api.post(f"/api/runs/{run.pk}/resume")
    assert resumed.json() == {"id": run.pk, "status": "queued"}
    # And through the page.
    assert client_for(personas.owner).post(f"/runs/{run.pk}/cancel/").status_code == 302
    history = api.get(f"/api/runs/{run.pk}/changes").json()["changes"]
    assert [(c["field"], c["before"], c["after"], c["by"]) for c in history] == [
        ("status", "queued", "cancelled", "olivia"),
        ("status", "cancelled", "queued", "olivia"),
        ("status", "queued", "cancelled", "olivia"),
    ]
    page = html.unescape(client_for(personas.owner).get(run.get_absolute_url()).content.decode())
    assert "Status (cancel, resume)" in page


@pytest.mark.parametrize("role", ["teammate", "outsider"])
def test_cancel_and_resume_refused_to_those_who_may_not_manage(personas, unstarted_run, role):
    run = unstarted_run("guarded")
    api = _token(getattr(personas, role))
    expected = 404 if role == "outsider" else 403
    assert api.post(f"/api/runs/{run.pk}/cancel").status_code == expected
    assert Client().post(f"/api/runs/{run.pk}/cancel").status_code == 401
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED
    assert not RunChange.objects.filter(run=run).exists()
