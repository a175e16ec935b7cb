"""Every exploration endpoint answers an outsider exactly as it answers for a run that does
not exist: 404. Run ids in query parameters are refused the same way for hidden and
missing runs, and hidden runs never leak into lists, grids or leaderboards."""

from __future__ import annotations

import pytest

from tests.webapp.support import client_for

RUN_ENDPOINTS = [
    "/runs/{a}/samples/",
    "/runs/{a}/samples/?status=failed",
    "/runs/{a}/scores/pass-at-1/",
    "/runs/{a}/export/matrix.csv",
    "/runs/{a}/export/matrix.json",
    "/runs/{a}/export/results.jsonl",
    "/compare/{a}/{b}/",
    "/compare/{a}/{b}/problems/0/",
    "/compare/{a}/{b}/problems/0/?ws=1&canonical=1&tests=differ",
    "/compare/baseline/{a}/",
    "/compare/baseline/{a}/?with={b}",
    # One visible (public) run and one hidden: still nothing.
    "/compare/{c}/{a}/",
    "/compare/{a}/{c}/problems/0/",
    "/teams/lab/leaderboard/",
]


def _urls(runs) -> list[str]:
    return [u.format(a=runs.a.pk, b=runs.b.pk, c=runs.c.pk) for u in RUN_ENDPOINTS]


def test_outsider_gets_404_from_every_exploration_endpoint(personas, runs):
    outsider = client_for(personas.outsider)
    for url in _urls(runs):
        assert outsider.get(url).status_code == 404, url


def test_teammate_gets_every_exploration_endpoint(personas, runs):
    teammate = client_for(personas.teammate)
    for url in _urls(runs):
        assert teammate.get(url).status_code == 200, url


def test_missing_run_looks_like_a_hidden_one(personas, runs):
    outsider = client_for(personas.outsider)
    hidden = outsider.get(f"/compare/{runs.a.pk}/{runs.c.pk}/")
    missing = outsider.get(f"/compare/999999/{runs.c.pk}/")
    assert hidden.status_code == missing.status_code == 404


@pytest.mark.parametrize("template", [
    "/runs/{c}/?overlay={a}",
    "/problems/?runs={a}",
    "/compare/?a={c}&b={a}",
    "/compare/baseline/{c}/?with={a}",
])
def test_hidden_run_in_a_query_parameter_is_refused_like_a_missing_one(personas, runs, template):
    outsider = client_for(personas.outsider)
    hidden = outsider.get(template.format(a=runs.a.pk, c=runs.c.pk))
    missing = outsider.get(template.format(a=999999, c=runs.c.pk))
    assert hidden.status_code == missing.status_code == 400
    assert runs.a.name.encode() not in hidden.content
    assert _alert(hidden).replace(str(runs.a.pk), "X") == _alert(missing).replace("999999", "X")


def _alert(response) -> str:
    body = response.content.decode()
    start = body.index('role="alert"')
    return body[start:body.index("</p>", start)]


def test_outsider_sees_only_public_runs_on_problem_pages(personas, runs):
    outsider = client_for(personas.outsider)
    listing = outsider.get("/problems/").content.decode()
    page = outsider.get("/problems/0/").content.decode()
    for hidden in (runs.a, runs.b):
        assert hidden.name not in listing
        assert hidden.name not in page
        assert f"/runs/{hidden.pk}/" not in page
    assert runs.c.name in page, "the public run's verdict is shown"


def test_global_leaderboard_lists_public_runs_only(personas, runs):
    for user in (personas.owner, personas.outsider, None):
        body = client_for(user).get("/leaderboard/").content.decode()
        assert runs.c.model_name in body
        assert runs.a.model_name not in body
        assert runs.b.model_name not in body
