"""The shared page cache behind the run page and the leaderboards (`webapp.runs.reads.page_cache`):
whatever changes what a page shows shows at once, and nothing one viewer was drawn reaches
another who may not see it.

Every test reads a page once first, so that the second read would come from the cache
if its key did not change."""

from __future__ import annotations

import re

from tests.webapp.support import RIGHT_0, client_for
from webapp.runs.models import Run
from webapp.runs.services.lifecycle import RunEdit, run_set_on_leaderboards, run_update


def _models(body: str) -> list[str]:
    return re.findall(r'<th scope="row" class="model">([^<]+)</th>', body)


def _page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def test_an_edit_shows_at_once_on_the_run_page_and_the_leaderboard(personas, runs):
    client = client_for(personas.owner)
    url = runs.a.get_absolute_url()
    assert "alpha" in _page(client, url)
    assert "alpha" in _models(_page(client, "/teams/lab/leaderboard/"))
    run_update(user=personas.owner, run=runs.a, edit=RunEdit(model_name="alpha-2"))
    details = _page(client, url).split('id="run-summary"', 1)[1]
    assert "alpha-2" in details.split("</dl>", 1)[0], "the cached details part"
    assert "alpha-2" in _models(_page(client, "/teams/lab/leaderboard/"))


def test_a_visibility_change_shows_at_once(personas, runs):
    anonymous = client_for(None)
    assert _models(_page(anonymous, "/leaderboard/")) == ["gamma"]
    assert anonymous.get(runs.c.get_absolute_url()).status_code == 200
    run_update(user=personas.owner, run=runs.c, edit=RunEdit(visibility=Run.Visibility.TEAM))
    assert _models(_page(anonymous, "/leaderboard/")) == []
    assert anonymous.get(runs.c.get_absolute_url()).status_code == 404


def test_a_retracted_run_leaves_the_board_at_once(personas, runs):
    client = client_for(personas.owner)
    assert "beta" in _models(_page(client, "/teams/lab/leaderboard/"))
    run_set_on_leaderboards(user=personas.owner, run=runs.b, listed=False)
    assert "beta" not in _models(_page(client, "/teams/lab/leaderboard/"))


def test_a_run_that_finishes_is_on_the_board_at_once(personas, runs, make_run):
    anonymous = client_for(None)
    assert _models(_page(anonymous, "/leaderboard/")) == ["gamma"]
    make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0}], name="delta",
             visibility=Run.Visibility.PUBLIC)
    assert sorted(_models(_page(anonymous, "/leaderboard/"))) == ["delta", "gamma"]


def test_a_private_run_never_reaches_another_viewer_through_the_board(
    personas, runs, make_run,
):
    make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0}], name="secret",
             visibility=Run.Visibility.PRIVATE, owner=personas.teammate)
    # The teammate's board is drawn first, with the private run on it, and kept.
    assert "secret" in _models(_page(client_for(personas.teammate), "/teams/lab/leaderboard/"))
    for viewer in (personas.owner, personas.teammate):
        board = _models(_page(client_for(viewer), "/teams/lab/leaderboard/"))
        assert ("secret" in board) == (viewer == personas.teammate)
    assert client_for(personas.outsider).get("/teams/lab/leaderboard/").status_code == 404


def test_a_managers_run_page_is_not_served_to_a_reader(personas, runs):
    url = runs.c.get_absolute_url()
    as_owner = _page(client_for(personas.owner), url)
    assert 'href="#run-manage">Manage' in as_owner
    assert 'id="run-actions"' in as_owner
    for reader in (personas.teammate, personas.outsider, None):
        body = _page(client_for(reader), url)
        assert 'href="#run-manage">Manage' not in body
        assert 'id="run-actions"' not in body
        assert "csrfmiddlewaretoken" not in body or reader is not None


def test_an_overlay_of_a_private_run_is_not_served_to_who_may_not_see_it(
    personas, runs, make_run,
):
    secret = make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0}], name="secret",
                      visibility=Run.Visibility.PRIVATE)
    url = f"{runs.c.get_absolute_url()}?overlay={secret.pk}"
    assert f"secret (#{secret.pk})" in _page(client_for(personas.owner), url)
    for reader in (personas.teammate, personas.outsider, None):
        response = client_for(reader).get(url)
        assert response.status_code == 400
        assert "secret" not in response.content.decode()
        assert f"secret (#{secret.pk})" not in _page(client_for(reader),
                                                      runs.c.get_absolute_url())
