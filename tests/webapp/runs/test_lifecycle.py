"""A run after upload: edit, retract and put back, delete and restore, the purge, the
history of changes, the duplicate upload's offer, and the confirmation before a cancel.

Roles: the run's owner (`tom`, a member of the team `lab`), an owner of its team
(`olivia`), another member of the team (`mia`), an outsider (`oscar`) and an anonymous
visitor. The owner and the team owner may act; the member may see the run but is refused
with 403; the outsider gets the 404 of a run that does not exist; the anonymous visitor is
sent to sign in (pages) or told to authenticate (API).
"""

from __future__ import annotations

import html
import json
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from django.test import Client
from django.utils import timezone

from tests.webapp.support import WebsocketClient, client_for
from webapp.runs.models import CachedResult, Run, RunChange, Sample
from webapp.runs.routing import websocket_urlpatterns
from webapp.runs.services.intake import STAGING_MAX_AGE
from webapp.runs.services.lifecycle import deleted_runs_purge
from webapp.runs.worker.execution import chunk_evaluate, run_start
from webapp.runs.worker.tasks import sweep
from webapp.teams.models import Membership, Team
from webapp.teams.services import token_issue, user_sign_up

ROLES = ["owner", "team_owner", "member", "outsider", "anonymous"]
ALLOWED = {"owner", "team_owner"}
REFUSED_PAGE = {"member": 403, "outsider": 404, "anonymous": 302}
REFUSED_API = {"member": 403, "outsider": 404, "anonymous": 401}


@pytest.fixture
def people(personas) -> dict[str, Any]:
    """The run's owner is a plain member; `olivia` owns the team."""
    mia = user_sign_up(username="mia", password="correct-horse-battery")
    Membership.objects.create(team=personas.team, user=mia, role=Membership.Role.MEMBER)
    return {"owner": personas.teammate, "team_owner": personas.owner, "member": mia,
            "outsider": personas.outsider, "anonymous": None}


@pytest.fixture
def upload(token_client, samples_file, django_capture_on_commit_callbacks):
    """Uploads the small file through the API as `user`, evaluated at once (eager Celery)."""

    def make(user, *, team: str = "lab", visibility: str = "team", expect: int = 201):
        with samples_file.open("rb") as handle, django_capture_on_commit_callbacks(
                execute=True):
            response = token_client(user).post(
                "/api/runs", {"file": handle, "dataset": "humaneval/python/en", "team": team,
                              "visibility": visibility, "name": "lifecycle run",
                              "model_name": "m-1"})
        assert response.status_code == expect, response.content
        return response

    return make


@pytest.fixture
def run(people, humaneval, upload) -> Run:
    response = upload(people["owner"])
    made = Run.objects.get(pk=response.json()["id"])
    assert made.status == Run.Status.FINISHED
    return made


def _page(people, role: str) -> Client:
    return client_for(people[role])


def _api(people, role: str) -> Client:
    user = people[role]
    if user is None:
        return Client()
    return Client(HTTP_AUTHORIZATION=f"Bearer {token_issue(user=user, name='t').secret}")


def _patch(client: Client, run_id: int, body: Any) -> Any:
    return client.patch(f"/api/runs/{run_id}", json.dumps(body) if not isinstance(body, bytes)
                        else body, content_type="application/json")


def _unchanged(run: Run) -> None:
    before = Run.objects.get(pk=run.pk)
    assert (before.visibility, before.team_id, before.name, before.model_name,
            before.model_meta, before.retracted_at, before.deleted_at) == (
        run.visibility, run.team_id, run.name, run.model_name, run.model_meta, None, None)
    assert not RunChange.objects.filter(run_id=run.pk).exists()


# --- who may act -------------------------------------------------------------------------

@pytest.mark.parametrize("role", ROLES)
def test_edit_page_and_form_by_role(people, run, role):
    client = _page(people, role)
    got = client.get(f"/runs/{run.pk}/edit/")
    posted = client.post(f"/runs/{run.pk}/edit/", {
        "name": "renamed", "model_name": "m-2", "model_meta": '{"temperature": 0.2}',
        "team": "lab", "visibility": "public"})
    if role in ALLOWED:
        assert got.status_code == 200
        assert posted.status_code == 302
        run.refresh_from_db()
        assert (run.name, run.model_name, run.model_meta, run.visibility) == (
            "renamed", "m-2", {"temperature": 0.2}, "public")
    else:
        assert got.status_code == REFUSED_PAGE[role]
        assert posted.status_code == REFUSED_PAGE[role]
        _unchanged(run)


@pytest.mark.parametrize("role", ROLES)
def test_api_edit_by_role(people, run, role):
    response = _patch(_api(people, role), run.pk, {"visibility": "private", "name": "api name"})
    if role in ALLOWED:
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["run"]["visibility"] == "private"
        assert {c["field"] for c in body["changes"]} == {"visibility", "name"}
    else:
        assert response.status_code == REFUSED_API[role]
        _unchanged(run)


@pytest.mark.parametrize("role", ROLES)
def test_retract_and_put_back_by_role(people, run, role):
    client = _page(people, role)
    retract = client.post(f"/runs/{run.pk}/leaderboards/", {"listed": "0"})
    if role in ALLOWED:
        assert retract.status_code == 302
        assert Run.objects.get(pk=run.pk).retracted_at is not None
        assert client.post(f"/runs/{run.pk}/leaderboards/", {"listed": "1"}).status_code == 302
        assert Run.objects.get(pk=run.pk).retracted_at is None
    else:
        assert retract.status_code == REFUSED_PAGE[role]
        _unchanged(run)
    api = _api(people, role).post(f"/api/runs/{run.pk}/leaderboards",
                                  json.dumps({"listed": False}), content_type="application/json")
    assert api.status_code == (200 if role in ALLOWED else REFUSED_API[role])


@pytest.mark.parametrize("role", ROLES)
def test_delete_by_role(people, run, role):
    client = _page(people, role)
    confirm = client.get(f"/runs/{run.pk}/delete/")
    assert Run.objects.get(pk=run.pk).deleted_at is None, "a GET deletes nothing"
    deleted = client.post(f"/runs/{run.pk}/delete/")
    if role in ALLOWED:
        assert confirm.status_code == 200
        assert b"confirm-delete" in confirm.content
        assert deleted.status_code == 302
        assert deleted["Location"] == "/runs/deleted/"
        assert Run.objects.get(pk=run.pk).deleted_at is not None
    else:
        assert confirm.status_code == REFUSED_PAGE[role]
        assert deleted.status_code == REFUSED_PAGE[role]
        _unchanged(run)


@pytest.mark.parametrize("role", ROLES)
def test_api_delete_by_role(people, run, role):
    response = _api(people, role).delete(f"/api/runs/{run.pk}")
    if role in ALLOWED:
        assert response.status_code == 200
        assert response.json()["restore_url"] == f"/api/runs/{run.pk}/restore"
        assert Run.objects.get(pk=run.pk).deleted_at is not None
    else:
        assert response.status_code == REFUSED_API[role]
        _unchanged(run)


@pytest.mark.parametrize("role", ROLES)
def test_restore_by_role(people, run, role):
    _api(people, "owner").delete(f"/api/runs/{run.pk}")
    client = _page(people, role)
    listed = client.get("/runs/deleted/")
    restored = client.post(f"/runs/{run.pk}/restore/")
    if role in ALLOWED:
        assert f"deleted-run-{run.pk}" in listed.content.decode()
        assert restored.status_code == 302
        assert Run.objects.get(pk=run.pk).deleted_at is None
        assert client.get(f"/runs/{run.pk}/").status_code == 200
    else:
        # A deleted run is seen by no one but those who may restore it: a 404 for the rest.
        expected = 302 if role == "anonymous" else 404
        assert restored.status_code == expected
        if role != "anonymous":
            assert f"deleted-run-{run.pk}" not in listed.content.decode()
        assert Run.objects.get(pk=run.pk).deleted_at is not None
        api = _api(people, role).post(f"/api/runs/{run.pk}/restore")
        assert api.status_code == (401 if role == "anonymous" else 404)
        assert Run.objects.get(pk=run.pk).deleted_at is not None


@pytest.mark.parametrize("role", ROLES)
def test_cancel_asks_for_confirmation_by_role(people, unstarted_run, role):
    queued = unstarted_run()  # owned by the team owner, `olivia`
    Run.objects.filter(pk=queued.pk).update(owner=people["owner"])
    client = _page(people, role)
    confirm = client.get(f"/runs/{queued.pk}/cancel/")
    if role in ALLOWED:
        assert confirm.status_code == 200
        assert b"confirm-cancel" in confirm.content
        assert Run.objects.get(pk=queued.pk).status == Run.Status.QUEUED, "a GET cancels nothing"
        assert client.post(f"/runs/{queued.pk}/cancel/").status_code == 302
        assert Run.objects.get(pk=queued.pk).status == Run.Status.CANCELLED
    else:
        assert confirm.status_code == REFUSED_PAGE[role]
        assert client.post(f"/runs/{queued.pk}/cancel/").status_code == REFUSED_PAGE[role]
        assert Run.objects.get(pk=queued.pk).status == Run.Status.QUEUED


def test_run_page_shows_manage_controls_only_to_managers(people, run):
    for role in ROLES:
        page = _page(people, role).get(f"/runs/{run.pk}/")
        if role in ("outsider", "anonymous"):
            assert page.status_code == 404
            continue
        html = page.content.decode()
        assert ('id="lifecycle-actions"' in html) == (role in ALLOWED), role
        assert ('id="visibility-form"' in html) == (role in ALLOWED), role


# --- the history ---------------------------------------------------------------------------

def test_every_change_is_recorded_with_who_when_and_from_to(people, run):
    owner, team_owner = _api(people, "owner"), _api(people, "team_owner")
    other = Team.objects.create(name="Other", slug="other")
    Membership.objects.create(team=other, user=people["owner"], role=Membership.Role.MEMBER)
    assert _patch(owner, run.pk, {"visibility": "public", "team": "other", "name": "n2",
                                  "model": "m-2", "model_meta": {"t": 1}}).status_code == 200
    # Moved out of her team: olivia still sees the public run, but may no longer change it.
    assert _patch(team_owner, run.pk, {"name": "n3"}).status_code == 403
    owner.post(f"/api/runs/{run.pk}/leaderboards", json.dumps({"listed": False}),
               content_type="application/json")
    owner.delete(f"/api/runs/{run.pk}")
    owner.post(f"/api/runs/{run.pk}/restore")
    changes = [(c.field, c.before, c.after, c.actor_name) for c in
               RunChange.objects.filter(run=run).order_by("pk")]
    assert changes[:5] == [
        ("visibility", "team", "public", "tom"), ("team", "lab", "other", "tom"),
        ("name", "lifecycle run", "n2", "tom"), ("model_name", "m-1", "m-2", "tom"),
        ("model_meta", "", '{"t": 1}', "tom")]
    assert changes[-3:] == [("leaderboard", "listed", "retracted", "tom"),
                            ("deleted", "no", "yes", "tom"), ("deleted", "yes", "no", "tom")]
    assert all(c.created_at <= timezone.now() for c in RunChange.objects.filter(run=run))
    history = _api(people, "owner").get(f"/api/runs/{run.pk}/changes").json()["changes"]
    assert len(history) == len(changes)
    assert history[0]["field"] == "deleted"


def test_history_is_shown_to_whoever_may_see_the_run(people, run):
    _patch(_api(people, "team_owner"), run.pk, {"name": "renamed by olivia"})
    for role in ROLES:
        page = _page(people, role).get(f"/runs/{run.pk}/")
        if role in ("outsider", "anonymous"):
            assert page.status_code == 404
            assert _page(people, role).get(f"/api/runs/{run.pk}/changes").status_code in (
                401, 404)
            continue
        html = page.content.decode()
        assert 'id="run-history"' in html, role
        assert "renamed by olivia" in html
        assert "<td>olivia</td>" in html, "who made the change"


def test_nothing_changed_records_nothing(people, run):
    response = _patch(_api(people, "owner"), run.pk, {"visibility": "team", "name": run.name})
    assert response.status_code == 200
    assert response.json()["changes"] == []
    _unchanged(run)


# --- bad input ---------------------------------------------------------------------------

def test_unknown_run_ids_are_404_everywhere(people, run):
    page, api = _page(people, "owner"), _api(people, "owner")
    missing = run.pk + 1000
    for url in (f"/runs/{missing}/edit/", f"/runs/{missing}/delete/",
                f"/runs/{missing}/cancel/"):
        assert page.get(url).status_code == 404, url
    for url in (f"/runs/{missing}/edit/", f"/runs/{missing}/leaderboards/",
                f"/runs/{missing}/delete/", f"/runs/{missing}/restore/"):
        assert page.post(url, {"listed": "0"}).status_code == 404, url
    assert _patch(api, missing, {"name": "x"}).json()["error"] == "not_found"
    assert api.delete(f"/api/runs/{missing}").status_code == 404
    assert api.post(f"/api/runs/{missing}/restore").status_code == 404
    assert api.post(f"/api/runs/{missing}/leaderboards", "{}",
                    content_type="application/json").status_code == 404
    _unchanged(run)


def test_moving_to_a_team_one_is_not_in_is_refused(people, run):
    Team.objects.create(name="Elsewhere", slug="elsewhere")
    page = _page(people, "owner").post(f"/runs/{run.pk}/edit/", {
        "name": "changed too", "team": "elsewhere", "visibility": "team"})
    assert page.status_code == 400
    assert "not a member of that team" in page.content.decode()
    response = _patch(_api(people, "owner"), run.pk, {"team": "elsewhere", "name": "changed"})
    assert response.status_code == 400
    assert response.json()["fields"] == {"team": ["You are not a member of that team."]}
    assert _patch(_api(people, "owner"), run.pk, {"team": "no-such-team"}).status_code == 400
    _unchanged(run)


def test_an_invalid_visibility_is_refused(people, run):
    page = _page(people, "owner").post(f"/runs/{run.pk}/edit/", {
        "name": "x", "team": "lab", "visibility": "everyone"})
    assert page.status_code == 400
    response = _patch(_api(people, "owner"), run.pk, {"visibility": "everyone", "name": "x"})
    assert response.status_code == 400
    assert "visibility" in response.json()["fields"]
    _unchanged(run)


@pytest.mark.parametrize("body", [
    b"not json", b"[1, 2]", {"status": "finished"}, {"name": 5}, {"model_meta": [1]},
    {"name": "   "}, {"name": "x" * 201}, {"owner": "oscar"}, {"name": "a\u0000b"},
    {"model_meta": {"k": "\u0000"}}, {"team": ["lab"]},
])
def test_hostile_api_edits_are_refused(people, run, body):
    response = _patch(_api(people, "owner"), run.pk, body)
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "invalid_request"
    _unchanged(run)


def test_bad_leaderboard_values_are_refused(people, run):
    assert _page(people, "owner").post(f"/runs/{run.pk}/leaderboards/",
                                       {"listed": "maybe"}).status_code == 302
    response = _api(people, "owner").post(f"/api/runs/{run.pk}/leaderboards",
                                          json.dumps({"listed": "no"}),
                                          content_type="application/json")
    assert response.status_code == 400
    _unchanged(run)


def test_edit_endpoints_refuse_a_session_for_writes(people, run):
    # Writes to the API take a token, never a browser's cookie (no CSRF for the API).
    response = _patch(_page(people, "owner"), run.pk, {"name": "by cookie"})
    assert response.status_code == 401
    _unchanged(run)


# --- a run that may not be seen appears nowhere ----------------------------------------------

def _everywhere(run: Run) -> list[str]:
    sample = Sample.objects.filter(run=run).first()
    assert sample is not None
    return [
        "/", "/leaderboard/", "/teams/lab/", "/teams/lab/leaderboard/",
        f"/runs/{run.pk}/", f"/runs/{run.pk}/samples/", f"/runs/{run.pk}/samples/{sample.pk}/",
        f"/runs/{run.pk}/scores/pass-at-1/", f"/runs/{run.pk}/export/matrix.csv",
        f"/runs/{run.pk}/export/matrix.json", f"/runs/{run.pk}/export/results.jsonl",
        f"/api/runs/{run.pk}", f"/api/runs/{run.pk}/results", f"/api/runs/{run.pk}/changes",
        f"/compare/{run.pk}/{run.pk}/", f"/compare/baseline/{run.pk}/", "/compare/",
        "/problems/1/", f"/runs/{run.pk}/profiles/",
        f"/api/runs/{run.pk}/manifest", f"/runs/{run.pk}/manifest.json", "/suites/",
    ]


def _shows(client: Client, url: str, marker: str) -> bool:
    response = client.get(url)
    if response.status_code in (301, 302, 400, 401, 404):
        return False
    assert response.status_code == 200, (url, response.status_code)
    body = response.getvalue()  # the content, or the streamed content joined
    return marker in body.decode()


@pytest.mark.parametrize("viewer", ["owner", "team_owner", "member", "outsider", "anonymous"])
def test_a_deleted_run_appears_nowhere(people, run, viewer):
    _patch(_api(people, "owner"), run.pk, {"visibility": "public", "name": "Zanzibar-run"})
    client = _page(people, viewer)
    assert _shows(client, "/leaderboard/", "Zanzibar-run") or _shows(
        client, "/", "Zanzibar-run"), "the check can fail: the public run shows first"
    _api(people, "owner").delete(f"/api/runs/{run.pk}")
    for url in _everywhere(run):
        assert not _shows(client, url, "Zanzibar-run"), url
    api = _api(people, viewer)
    assert api.get(f"/api/runs/{run.pk}").status_code in (401, 404)


@pytest.mark.parametrize("viewer", ["member", "outsider", "anonymous"])
def test_a_private_run_appears_nowhere_to_others(people, run, viewer):
    _patch(_api(people, "owner"), run.pk, {"visibility": "private", "name": "Zanzibar-run"})
    assert _shows(_page(people, "owner"), "/", "Zanzibar-run")
    assert _shows(_page(people, "owner"), "/teams/lab/leaderboard/", "Zanzibar-run")
    client = _page(people, viewer)
    for url in _everywhere(run):
        assert not _shows(client, url, "Zanzibar-run"), url


def _stage(people, samples_file, humaneval, *, name: str) -> tuple[Run, str]:
    """A clean public upload on its confirmation page: stored as a staged run; its token."""
    with samples_file.open("rb") as handle:
        response = _page(people, "owner").post("/runs/new/", {
            "file": handle, "dataset": str(humaneval.pk), "name": name, "model_name": "m",
            "team": "lab", "visibility": "public"})
    assert response.status_code == 200, response.content[:300]
    return Run.objects.get(status=Run.Status.STAGED), response.context["confirm"].initial["token"]


@pytest.mark.parametrize("viewer", ["owner", "team_owner", "member", "outsider", "anonymous"])
def test_a_staged_upload_appears_nowhere_until_it_is_started(
        people, humaneval, samples_file, viewer, django_capture_on_commit_callbacks):
    staged, token = _stage(people, samples_file, humaneval, name="Zanzibar-run")
    client = _page(people, viewer)
    for url in _everywhere(staged):
        assert not _shows(client, url, "Zanzibar-run"), url
    assert _api(people, viewer).get(f"/api/runs/{staged.pk}").status_code in (401, 404)
    # Started, the same public run shows: the checks above could fail.
    with django_capture_on_commit_callbacks(execute=True):
        _page(people, "owner").post("/runs/new/confirm/", {"token": token})
    assert _shows(client, f"/runs/{staged.pk}/", "Zanzibar-run")


def test_sweeper_purges_staged_runs_whose_confirmation_can_no_longer_come(
        people, humaneval, samples_file, run, tmp_path):
    other = tmp_path / "other.jsonl"  # another file than the run's, so no duplicate
    other.write_bytes(samples_file.read_bytes() + b"\n")
    staged, _token = _stage(people, other, humaneval, name="never confirmed")
    sweep()
    assert Run.objects.filter(pk=staged.pk).exists(), "its token is still good"
    long_ago = timezone.now() - timedelta(seconds=STAGING_MAX_AGE + 120)
    Run.objects.filter(pk__in=[staged.pk, run.pk]).update(created_at=long_ago)
    sweep()
    assert not Run.objects.filter(pk=staged.pk).exists()
    assert not Sample.objects.filter(run_id=staged.pk).exists()
    assert Run.objects.filter(pk=run.pk).exists(), "a started run of that age stays"


def test_a_retracted_run_leaves_the_leaderboards_only(people, run):
    _patch(_api(people, "owner"), run.pk, {"visibility": "public", "name": "Zanzibar-run"})
    outsider = _page(people, "outsider")
    assert _shows(outsider, "/leaderboard/", "Zanzibar-run")
    _page(people, "owner").post(f"/runs/{run.pk}/leaderboards/", {"listed": "0"})
    assert not _shows(outsider, "/leaderboard/", "Zanzibar-run")
    assert not _shows(_page(people, "owner"), "/teams/lab/leaderboard/", "Zanzibar-run")
    assert not _shows(outsider, f"/runs/{run.pk}/", "Retract from the leaderboards")
    assert _shows(outsider, "/", "Zanzibar-run"), "still listed and linkable"
    assert _api(people, "outsider").get(f"/api/runs/{run.pk}").json()["on_leaderboards"] is False
    _page(people, "team_owner").post(f"/runs/{run.pk}/leaderboards/", {"listed": "1"})
    assert _shows(outsider, "/leaderboard/", "Zanzibar-run")


# --- duplicates ---------------------------------------------------------------------------

def test_duplicate_upload_offers_to_share_the_existing_run(people, run, upload, samples_file):
    answer = upload(people["owner"], visibility="public", expect=409).json()
    assert answer["run"]["id"] == run.pk
    assert answer["can_edit"] is True
    assert answer["requested"] == {"team": "lab", "visibility": "public"}
    assert answer["edit"]["api_url"] == f"/api/runs/{run.pk}"
    assert answer["edit"]["body"] == {"team": "lab", "visibility": "public"}
    assert answer["edit"]["page"] == f"/runs/{run.pk}/edit/?team=lab&visibility=public"
    # Following the offer shares the run; nothing new was evaluated.
    _patch(_api(people, "owner"), run.pk, answer["edit"]["body"])
    assert Run.objects.get(pk=run.pk).visibility == "public"
    assert Run.objects.count() == 1
    page = _page(people, "owner")
    with samples_file.open("rb") as handle:
        response = page.post("/runs/new/", {"file": handle, "dataset": "humaneval/python/en",
                                            "team": "lab", "visibility": "private"})
    assert response.status_code == 409
    html = response.content.decode()
    assert f"/runs/{run.pk}/edit/?team=lab&amp;visibility=private" in html
    form = page.get(f"/runs/{run.pk}/edit/?team=lab&visibility=private")
    assert form.context["form"].initial["visibility"] == "private"


def test_duplicate_upload_by_a_member_names_who_can_share(people, run, upload):
    answer = upload(people["member"], visibility="public", expect=409).json()
    assert answer["can_edit"] is False
    assert "edit" not in answer
    assert "tom" in answer["message"]
    assert Run.objects.count() == 1


def test_a_deleted_run_is_no_duplicate(people, run, upload):
    _api(people, "owner").delete(f"/api/runs/{run.pk}")
    again = upload(people["owner"]).json()
    assert again["id"] != run.pk


# --- purge and the cache -----------------------------------------------------------------

def test_sweeper_purges_only_runs_deleted_long_enough_ago(people, run, settings, upload):
    settings.DELETED_RUN_DAYS = 7
    _api(people, "owner").delete(f"/api/runs/{run.pk}")
    assert deleted_runs_purge() == 0
    Run.objects.filter(pk=run.pk).update(deleted_at=timezone.now() - timedelta(days=6))
    sweep()
    assert Run.objects.filter(pk=run.pk).exists(), "still restorable"
    Run.objects.filter(pk=run.pk).update(deleted_at=timezone.now() - timedelta(days=8))
    cached = CachedResult.objects.count()
    assert cached > 0
    sweep()
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not Sample.objects.filter(run_id=run.pk).exists()
    assert not RunChange.objects.filter(run_id=run.pk).exists()
    assert CachedResult.objects.count() == cached, "the result cache is shared: it stays"
    # Another run of the same programs is answered from the cache.
    again = Run.objects.get(pk=upload(people["owner"]).json()["id"])
    assert again.status == Run.Status.FINISHED
    assert again.cached_count == again.samples_total == 4


def test_a_restored_run_is_not_purged(people, run, settings):
    settings.DELETED_RUN_DAYS = 0
    owner = _api(people, "owner")
    owner.delete(f"/api/runs/{run.pk}")
    owner.post(f"/api/runs/{run.pk}/restore")
    assert deleted_runs_purge(now=timezone.now() + timedelta(days=365)) == 0
    assert Run.objects.filter(pk=run.pk, deleted_at__isnull=True).exists()


def test_deleting_an_active_run_cancels_it_first(people, unstarted_run):
    queued = unstarted_run()
    response = _api(people, "team_owner").delete(f"/api/runs/{queued.pk}")
    assert response.status_code == 200
    queued.refresh_from_db()
    assert (queued.status, queued.deleted_at is not None) == (Run.Status.CANCELLED, True)


# --- cancel shows what it evaluated, and resume --------------------------------------------

def test_a_cancelled_run_shows_what_it_evaluated_and_resumes(
        people, unstarted_run, settings, django_capture_on_commit_callbacks):
    settings.CHUNK_SAMPLES = 1  # one chunk per problem: HumanEval/0, then HumanEval/1
    queued = unstarted_run()
    chunks = run_start(run_id=queued.pk)
    assert len(chunks) == 2
    assert chunk_evaluate(chunk_id=chunks[0][0], worker="test").state == "done"
    page = _page(people, "team_owner")
    assert page.get(f"/runs/{queued.pk}/cancel/").status_code == 200
    assert page.post(f"/runs/{queued.pk}/cancel/").status_code == 302
    html = page.get(f"/runs/{queued.pk}/").content.decode()
    assert "Problems <span class=\"hint\">(1 of 1)</span>" in html
    assert 'id="partial-note"' in html
    assert "2 of 4 samples" in html
    assert "HumanEval/0" in html
    assert 'id="resume-button"' in html
    member = _page(people, "member")
    assert 'id="resume-button"' not in member.get(f"/runs/{queued.pk}/").content.decode()
    assert member.post(f"/runs/{queued.pk}/resume/").status_code == 403
    assert _page(people, "outsider").post(f"/runs/{queued.pk}/resume/").status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        assert page.post(f"/runs/{queued.pk}/resume/").status_code == 302
    queued.refresh_from_db()
    assert queued.status == Run.Status.FINISHED
    assert queued.done_count == 4
    assert Sample.objects.filter(run=queued, status="pending").count() == 0
    html = page.get(f"/runs/{queued.pk}/").content.decode()
    assert "Problems <span class=\"hint\">(2 of 2)</span>" in html
    assert 'id="partial-note"' not in html
    # A finished run cannot be resumed.
    page.post(f"/runs/{queued.pk}/resume/")
    assert Run.objects.get(pk=queued.pk).status == Run.Status.FINISHED


# --- websockets --------------------------------------------------------------------------

application = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))


def _cookie_for(user) -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    return [(b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()),
            (b"origin", b"http://localhost")]


@pytest.mark.django_db(transaction=True)
def test_websockets_close_when_the_run_is_hidden_and_refuse_a_deleted_run(
        people, unstarted_run):
    queued = unstarted_run()  # owned by olivia, team run of `lab`
    member_headers = _cookie_for(people["member"])
    owner_headers = _cookie_for(people["team_owner"])

    async def watch(headers) -> WebsocketClient:
        client = WebsocketClient(application, f"/ws/runs/{queued.pk}/", headers)
        connected, _ = await client.connect()
        assert connected
        assert (await client.receive_json_from(timeout=5))["type"] == "snapshot"
        return client

    async def closed_with(client: WebsocketClient) -> int | None:
        message = await client.receive_output(5)
        if message["type"] == "websocket.send":
            # Deleting a run still queued cancels it first: its end arrives, then the close.
            assert json.loads(message["text"])["type"] == "run_finished"
            message = await client.receive_output(5)
        assert message["type"] == "websocket.close", message
        return message.get("code")

    async def scenario() -> None:
        member = await watch(member_headers)
        owner = await watch(owner_headers)
        await _apatch(queued.pk, {"visibility": "private"})
        assert await closed_with(member) == 4403, "made private: the member's socket closes"
        assert await owner.receive_nothing(timeout=0.5), "the owner may still watch"
        await _adelete(queued.pk)
        assert await closed_with(owner) == 4403, "deleted: even the owner's socket closes"
        again = WebsocketClient(application, f"/ws/runs/{queued.pk}/", owner_headers)
        assert (await again.connect()) == (False, 4403)

    from channels.db import database_sync_to_async
    token = token_issue(user=people["team_owner"], name="ws").secret
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    @database_sync_to_async
    def _apatch(run_id: int, body: dict[str, Any]) -> None:
        assert _patch(api, run_id, body).status_code == 200

    @database_sync_to_async
    def _adelete(run_id: int) -> None:
        assert api.delete(f"/api/runs/{run_id}").status_code == 200

    async_to_sync(scenario)()


# --- the migration -----------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_lifecycle_migration_keeps_runs_from_before(personas, humaneval):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("runs", "0004_profile_comparison")], [("runs", "0005_run_lifecycle")]
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        assert "runs_runchange" not in connection.introspection.table_names()
        old_apps = executor.loader.project_state(before).apps
        old = old_apps.get_model("runs", "Run").objects.create(
            owner_id=personas.owner.pk, team_id=personas.team.pk, name="from before",
            dataset_id=humaneval.pk, file_name="a.jsonl", file_sha256="0" * 64, file_size=1,
            file_layout="completion", options={}, fingerprint="0" * 64, harness_version="1",
            status="finished")
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        # Deferred: columns of later migrations are not there yet.
        run = Run.objects.defer("manifest", "reproduction_of", "canary_gaps",
                                "plus_of", "watched_until").get(pk=old.pk)
        assert (run.retracted_at, run.deleted_at) == (None, None)
        assert not RunChange.objects.filter(run=run).exists()
        executor = MigrationExecutor(connection)
        executor.migrate(before)
        assert "runs_runchange" not in connection.introspection.table_names()
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert Run.objects.filter(pk=old.pk).exists()


def test_a_team_owner_edits_a_run_of_her_team_she_cannot_move_it_out(people, run):
    # olivia owns `lab` but is not in `other`; tom's run stays put when she renames it.
    other = Team.objects.create(name="Other", slug="other")
    Membership.objects.create(team=other, user=people["owner"], role=Membership.Role.OWNER)
    olivia = _api(people, "team_owner")
    assert _patch(olivia, run.pk, {"team": "lab", "name": "kept in lab"}).status_code == 200
    assert _patch(olivia, run.pk, {"team": "other"}).status_code == 400
    assert Run.objects.get(pk=run.pk).team.slug == "lab"
    # tom moves it to `other`, then leaves `lab`... and can still rename it in place.
    assert _patch(_api(people, "owner"), run.pk, {"team": "other"}).status_code == 200
    Membership.objects.filter(team=other, user=people["owner"]).delete()
    page = _page(people, "owner").post(f"/runs/{run.pk}/edit/", {
        "name": "renamed after leaving", "team": "other", "visibility": "team"})
    assert page.status_code == 302
    assert Run.objects.get(pk=run.pk).name == "renamed after leaving"


@pytest.mark.parametrize(("url", "field"), [("leaderboards/", "confirm"), ("rerun/", "use_cache")])
def test_a_yes_or_no_field_with_another_value_is_refused_and_changes_nothing(people, run, url,
                                                                           field):
    client = _page(people, "owner")
    runs_before = Run.objects.count()
    response = client.post(f"/runs/{run.pk}/{url}", {"listed": "0", field: "maybe"},
                           follow=True)
    assert response.status_code == 200
    text = html.unescape(response.content.decode())
    assert f"{field}: expected 1 or 0, got 'maybe'" in text
    assert Run.objects.count() == runs_before
    assert Run.objects.get(pk=run.pk).retracted_at is None
