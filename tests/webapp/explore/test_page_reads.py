"""How the cached pages are read: the leaderboard's table kept whole, shared by the viewers
whose scope holds the same runs, with each viewer's own parts (name, CSRF token) drawn per
request; and a run page's cached entries read in one trip to the cache."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache

from tests.webapp.support import RIGHT_0, client_for
from webapp.explore import leaderboard
from webapp.runs.models import Run
from webapp.runs.reads import page_cache


def _page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def _csrf_tokens(body: str) -> set[str]:
    return set(re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', body))


@pytest.fixture
def boards_drawn(monkeypatch):
    """How many times a leaderboard's table was drawn, not read from the cache."""
    drawn = []
    real = leaderboard.build_leaderboard

    def counting(**kwargs):
        drawn.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(leaderboard, "build_leaderboard", counting)
    # The board itself is kept too: forget it, so that only the table's own entry counts.
    real_drawn = leaderboard.leaderboard_drawn

    def board_not_kept(**kwargs):
        # The in-memory cache's own keys are ":<version>:<key>".
        kept = [key.split(":", 2)[2] for key in getattr(cache, "_cache", {})]
        cache.delete_many([key for key in kept if key.startswith("page:leaderboard:")])
        return real_drawn(**kwargs)

    monkeypatch.setattr("webapp.explore.leaderboard_views.leaderboard_drawn", board_not_kept)
    return drawn


def test_the_table_is_shared_but_each_viewer_gets_their_own_name_and_token(
    personas, runs, boards_drawn,
):
    first = _page(client_for(personas.owner), "/teams/lab/leaderboard/")
    second = _page(client_for(personas.teammate), "/teams/lab/leaderboard/")
    assert len(boards_drawn) == 1, "the teammate's table came from the cache"
    assert "Sign out olivia" in first
    assert "Sign out tom" not in first
    assert "Sign out tom" in second
    assert "olivia" not in second.split('id="main"', 1)[0]
    assert _csrf_tokens(first)
    assert _csrf_tokens(second)
    assert not _csrf_tokens(first) & _csrf_tokens(second)
    table = second.split('id="main"', 1)[1]
    assert table == first.split('id="main"', 1)[1], "the same table, drawn once"


def test_a_team_private_board_is_never_served_to_a_non_member(personas, runs, boards_drawn):
    assert "beta" in _page(client_for(personas.teammate), "/teams/lab/leaderboard/")
    assert client_for(personas.outsider).get("/teams/lab/leaderboard/").status_code == 404
    public = _page(client_for(personas.outsider), "/leaderboard/")
    assert "beta" not in public
    assert "alpha" not in public
    assert len(boards_drawn) == 2, "the public board is a table of its own"


def test_a_viewer_with_a_private_run_gets_a_table_of_their_own(personas, runs, make_run,
                                                                 boards_drawn):
    make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0}], name="secret",
             visibility=Run.Visibility.PRIVATE, owner=personas.teammate)
    assert "secret" in _page(client_for(personas.teammate), "/teams/lab/leaderboard/")
    assert "secret" not in _page(client_for(personas.owner), "/teams/lab/leaderboard/")
    assert len(boards_drawn) == 2


def test_a_table_is_kept_per_query_and_a_bad_one_is_still_refused(personas, runs,
                                                                     boards_drawn):
    client = client_for(personas.owner)
    def table(query: str) -> str:
        return _page(client, f"/teams/lab/leaderboard/?{query}").split('id="main"', 1)[1]

    by_model = table("sort=model&order=asc")
    assert table("sort=model&order=asc") == by_model
    assert len(boards_drawn) == 1
    assert table("sort=model&order=desc") != by_model
    assert len(boards_drawn) == 2
    for _ in range(2):
        assert client.get("/teams/lab/leaderboard/?sort=nothing").status_code == 400


def test_a_run_page_reads_its_cached_entries_in_one_trip(personas, runs, monkeypatch):
    client = client_for(personas.owner)
    url = runs.a.get_absolute_url()
    _page(client, url)  # drawn, and kept
    one_by_one, together = [], []
    real_get, real_get_many = cache.get, cache.get_many
    in_many: list[bool] = []

    def get(key, *args, **kwargs):
        if not in_many:  # the in-memory cache reads `get_many` key by key
            one_by_one.append(key)
        return real_get(key, *args, **kwargs)

    def get_many(keys, *args, **kwargs):
        together.append(list(keys))
        in_many.append(True)
        try:
            return real_get_many(keys, *args, **kwargs)
        finally:
            in_many.pop()

    monkeypatch.setattr(cache, "get", get)
    monkeypatch.setattr(cache, "get_many", get_many)
    body = _page(client, url)
    assert 'id="run-summary"' in body
    read_ahead = [key for keys in together for key in keys]
    for name in ("run-snapshot", "run-facts", "run-unstable", "run-lifecycle", "run-charts"):
        assert any(key.startswith(f"page:{name}:") for key in read_ahead), name
    assert sum(key.startswith("page:fragment:") for key in read_ahead) == 3
    assert len(together) == 2
    # What was read ahead is not read again one by one: only what has a key of its own
    # (the defect-aware block) is.
    assert not set(one_by_one) & set(read_ahead), one_by_one


def test_what_was_read_ahead_does_not_outlive_its_request(personas, runs):
    client = client_for(personas.owner)
    _page(client, runs.a.get_absolute_url())
    assert page_cache._read_early.get() is None
    # Outside a request nothing is read ahead, and `shared` reads the cache itself.
    page_cache.read_ahead([page_cache.key_of("anything")])
    assert page_cache._read_early.get() is None
