"""Who may see a run: `get_run_for_user` behind every page and API endpoint.

An outsider gets a 404 from every endpoint, exactly as for a run that does not exist.
"""

from __future__ import annotations

import pytest
from django.test import Client

from tests.webapp.factories import RunFactory
from tests.webapp.support import client_for
from webapp.runs.models import Run

GET_ENDPOINTS = [
    "/runs/{run}/",
    "/runs/{run}/samples/{sample}/",
    "/api/runs/{run}",
    "/api/runs/{run}/results",
]
POST_ENDPOINTS = ["/runs/{run}/cancel/", "/runs/{run}/rerun/"]


@pytest.fixture
def finished_run(personas, humaneval, samples_file, token_client,
                 django_capture_on_commit_callbacks) -> Run:
    client = token_client(personas.owner)
    with samples_file.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/runs", {"file": handle, "dataset": "humaneval/python/en",
                                             "team": "lab", "visibility": "team"})
    assert response.status_code == 201, response.content
    return Run.objects.get(pk=response.json()["id"])


def _urls(run: Run, templates: list[str]) -> list[str]:
    sample = run.samples.first()
    return [t.format(run=run.pk, sample=sample.pk if sample else 0) for t in templates]


def test_outsider_gets_404_from_every_run_endpoint(personas, finished_run):
    outsider = client_for(personas.outsider)
    for url in _urls(finished_run, GET_ENDPOINTS):
        assert outsider.get(url).status_code == 404, url
    for url in _urls(finished_run, POST_ENDPOINTS):
        assert outsider.post(url).status_code == 404, url
    finished_run.refresh_from_db()
    assert finished_run.status == Run.Status.FINISHED
    assert Run.objects.count() == 1, "the outsider's re-run created nothing"


def test_outsider_with_a_token_gets_404_from_the_api(personas, finished_run, token_client):
    client = token_client(personas.outsider)
    assert client.get(f"/api/runs/{finished_run.pk}").status_code == 404
    assert client.get(f"/api/runs/{finished_run.pk}/results").status_code == 404


def test_404_for_an_outsider_looks_like_a_missing_run(personas, finished_run, token_client):
    client = token_client(personas.outsider)
    hidden = client.get(f"/api/runs/{finished_run.pk}")
    missing = client.get("/api/runs/999999")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()


def test_teammate_sees_a_team_run_on_every_endpoint(personas, finished_run):
    teammate = client_for(personas.teammate)
    for url in _urls(finished_run, GET_ENDPOINTS):
        assert teammate.get(url).status_code == 200, url


def test_teammate_cannot_cancel_or_rerun_but_team_owner_can(personas, humaneval):
    run = RunFactory.create(owner=personas.teammate, team=personas.team, dataset=humaneval,
                            status=Run.Status.RUNNING)
    other = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                              status=Run.Status.RUNNING)
    assert client_for(personas.teammate).post(f"/runs/{other.pk}/cancel/").status_code == 403
    response = client_for(personas.owner).post(f"/runs/{run.pk}/cancel/")
    assert response.status_code == 302
    run.refresh_from_db()
    other.refresh_from_db()
    assert run.status == Run.Status.CANCELLED
    assert other.status == Run.Status.RUNNING


VISIBILITY_RULES = [
    ("private", "owner", 200),
    ("private", "teammate", 404),
    ("private", "outsider", 404),
    ("private", "anonymous", 404),
    ("team", "teammate", 200),
    ("team", "outsider", 404),
    ("team", "anonymous", 404),
    ("public", "outsider", 200),
    ("public", "anonymous", 200),
]
"""(visibility, viewer, status of the run page): what every page of a run answers too."""


@pytest.mark.parametrize(("visibility", "viewer", "expected"), VISIBILITY_RULES)
def test_visibility_rules(visibility, viewer, expected, personas, humaneval):
    run = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                            visibility=visibility)
    client = Client() if viewer == "anonymous" else client_for(getattr(personas, viewer))
    assert client.get(f"/runs/{run.pk}/").status_code == expected


def test_run_list_shows_only_visible_runs(personas, humaneval):
    RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                      name="secret-run", visibility="private")
    RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval, name="team-run")
    RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval, name="open-run",
                      visibility="public")
    page = client_for(personas.outsider).get("/").content.decode()
    assert "open-run" in page
    assert "team-run" not in page
    assert "secret-run" not in page
    teammate_page = client_for(personas.teammate).get("/").content.decode()
    assert "team-run" in teammate_page
    assert "secret-run" not in teammate_page


def test_sample_of_another_run_is_404(personas, finished_run, humaneval):
    mine = RunFactory.create(owner=personas.outsider, team=personas.outsider.teams.first(),
                             dataset=humaneval)
    sample = finished_run.samples.first()
    response = client_for(personas.outsider).get(f"/runs/{mine.pk}/samples/{sample.pk}/")
    assert response.status_code == 404


def test_staged_upload_token_is_bound_to_its_user(personas, humaneval, samples_file):
    owner = client_for(personas.owner)
    with samples_file.open("rb") as handle:
        response = owner.post("/runs/new/", {"file": handle, "dataset": str(humaneval.pk),
                                             "sanitize": "on", "visibility": "team"})
    token = response.context["confirm"].initial["token"]
    stolen = client_for(personas.outsider).post("/runs/new/confirm/", {"token": token})
    assert stolen.status_code == 302
    assert list(Run.objects.values_list("owner", "status")) == [
        (personas.owner.pk, Run.Status.STAGED)], "nothing started, nothing of the outsider's"


def test_one_runs_rule_in_python_agrees_with_the_query_for_every_kind_of_run(personas,
                                                                               humaneval):
    """`may_see_run` (what `get_run_for_user` asks) and `visible_runs` (every list) are one
    rule written twice: for each visibility, state, deletion and reproduction, and each
    viewer, both give the same answer."""
    from itertools import product

    from django.contrib.auth.models import AnonymousUser
    from django.utils import timezone

    from webapp.runs.reads.selectors import may_see_run, visible_runs

    original = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval)
    runs = []
    for visibility, status, deleted, reproduction in product(
            Run.Visibility.values, (Run.Status.FINISHED, Run.Status.STAGED, Run.Status.RUNNING),
            (False, True), (False, True)):
        runs.append(RunFactory.create(
            owner=personas.owner, team=personas.team, dataset=humaneval, visibility=visibility,
            status=status, deleted_at=timezone.now() if deleted else None,
            reproduction_of=original if reproduction else None))
    viewers = [AnonymousUser(), personas.owner, personas.teammate, personas.outsider]
    seen = 0
    for viewer, reproductions, run in product(viewers, (False, True), runs):
        expected = visible_runs(user=viewer, reproductions=reproductions).filter(
            pk=run.pk).exists()
        assert may_see_run(user=viewer, run=run, reproductions=reproductions) == expected, (
            viewer, reproductions, run.visibility, run.status, run.deleted_at,
            run.reproduction_of_id)
        seen += expected
    # Both answers occur, so the comparison is not of two constant functions.
    assert 0 < seen < len(viewers) * 2 * len(runs)


def _membership_queries(client: Client, url: str) -> tuple[int, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        status = client.get(url).status_code
    # Quoted by Django's queries, bare where the run's own query reads the role with it.
    return status, sum("teams_membership" in query["sql"]
                       for query in queries.captured_queries)


def test_the_run_page_asks_the_viewers_team_role_once(personas, finished_run):
    """May the viewer see the run, manage it, evaluate it: each section of the page asks,
    and one query answers them all for the request (the run's own: `run_facts_of`)."""
    status, asked = _membership_queries(client_for(personas.teammate),
                                        f"/runs/{finished_run.pk}/")
    assert (status, asked) == (200, 1)


def test_a_role_kept_by_one_request_is_not_kept_by_the_next(personas, finished_run):
    from webapp.teams.models import Membership

    teammate = client_for(personas.teammate)
    assert teammate.get(f"/runs/{finished_run.pk}/").status_code == 200
    Membership.objects.filter(user=personas.teammate, team=personas.team).delete()
    assert teammate.get(f"/runs/{finished_run.pk}/").status_code == 404
