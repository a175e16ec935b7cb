"""Leaderboards: who is on which board, columns where n allows, ties with the leader,
sorting, permalinks and provenance."""

from __future__ import annotations

import re

import pytest

from evaluator.records import HARNESS_VERSION
from tests.webapp.support import RIGHT_0, WRONG_0, client_for
from webapp.explore.leaderboard import build_leaderboard
from webapp.runs.models import Run


def _models(body: str) -> list[str]:
    return re.findall(r'<th scope="row" class="model">([^<]+)</th>', body)


def test_team_board_lists_the_teams_runs_the_viewer_may_see(personas, runs, make_run):
    private = make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0}], name="secret",
                       visibility=Run.Visibility.PRIVATE, owner=personas.teammate)
    as_owner = client_for(personas.owner).get("/teams/lab/leaderboard/").content.decode()
    assert sorted(_models(as_owner)) == ["alpha", "beta", "gamma"]
    as_teammate = client_for(personas.teammate).get("/teams/lab/leaderboard/").content.decode()
    assert "secret" in _models(as_teammate), "the teammate's own private run"
    assert private.pk


def test_columns_show_pass_at_k_only_where_n_allows(personas, runs):
    body = client_for(personas.owner).get("/teams/lab/leaderboard/").content.decode()
    assert re.findall(r'data-sort="([^"]+)"', body) == ["humaneval/python/en:1"]
    public = client_for(None).get("/leaderboard/").content.decode()
    assert _models(public) == ["gamma"]


def test_cells_are_permalinks_marked_verified_with_versions(personas, runs):
    body = client_for(personas.owner).get("/teams/lab/leaderboard/").content.decode()
    assert f'href="/runs/{runs.a.pk}/scores/pass-at-1/"' in body
    assert f'id="cell-{runs.a.pk}-1"' in body
    assert "verified" in body
    assert runs.a.dataset.version in body
    assert f"harness {HARNESS_VERSION}" in body


def test_leader_and_paired_ties(personas, runs):
    board = build_leaderboard(runs=[runs.c, runs.b, runs.a])
    cells = {row.label: row.cells[("humaneval/python/en", 1)] for row in board.rows}
    assert cells["alpha"].leader
    # alpha passes HumanEval/0 and /2 and fails /1; beta passes only /2: one discordant
    # problem in three, which a paired bootstrap cannot tell from chance.
    assert cells["beta"].tied
    assert cells["beta"].method == "paired"
    beta = cells["beta"]
    assert beta.diff_low is not None
    assert beta.diff_high is not None
    assert beta.diff_low <= 0 <= beta.diff_high
    # gamma shares /0 and /2 with alpha and is half a sample worse on both: the paired
    # test separates them, although gamma's interval overlaps alpha's.
    assert not cells["gamma"].tied
    assert cells["gamma"].method == "paired"
    assert cells["gamma"].low <= cells["alpha"].high


def test_runs_without_shared_problems_are_compared_by_their_intervals(personas, make_run):
    first = make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0}], name="x", model="m1")
    second = make_run([{"task_id": "HumanEval/2", "completion": "    return number\n"}],
                      name="y", model="m2")
    board = build_leaderboard(runs=[first, second])
    cells = {row.label: row.cells[("humaneval/python/en", 1)] for row in board.rows}
    assert cells["m1"].leader
    assert cells["m2"].method == "intervals"
    assert not cells["m2"].tied, "[0, 0] does not overlap [1, 1]"


def test_a_clear_gap_is_not_a_tie(personas, make_run):
    strong = make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0},
                       {"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"}],
                      name="strong")
    weak = make_run([{"task_id": "HumanEval/0", "completion": WRONG_0},
                     {"task_id": "HumanEval/2", "completion": "    return number\n"}], name="weak")
    board = build_leaderboard(runs=[strong, weak])
    cells = {row.label: row.cells[("humaneval/python/en", 1)] for row in board.rows}
    assert cells["strong"].leader
    assert not cells["weak"].tied, "worse on every shared problem"


def test_sorting_by_model_and_by_score(personas, runs):
    client = client_for(personas.owner)
    default = _models(client.get("/teams/lab/leaderboard/").content.decode())
    assert default[0] == "alpha", "best pass@1 first"
    ascending = _models(client.get(
        "/teams/lab/leaderboard/?sort=humaneval/python/en:1&order=asc").content.decode())
    assert ascending[-1] == "alpha"
    by_name = _models(client.get("/teams/lab/leaderboard/?sort=model&order=asc").content.decode())
    assert by_name == ["alpha", "beta", "gamma"]


@pytest.mark.parametrize("query", ["sort=humaneval/python/en:7", "sort=<x>", "order=up"])
def test_bad_sort_is_a_400(personas, runs, query):
    assert client_for(personas.owner).get(f"/teams/lab/leaderboard/?{query}").status_code == 400


def test_leaderboard_of_nothing(personas, humaneval):
    body = client_for(None).get("/leaderboard/").content.decode()
    assert "No finished public run yet" in body
