"""Comparing many runs: the page's ranking, matrix and separating problems, who may use
which runs, and the clear answers to input that cannot be compared."""

from __future__ import annotations

import re

import pytest

from tests.webapp.explore.conftest import RIGHT_2, WRONG_2
from tests.webapp.support import CRASH_1, RIGHT_0, WRONG_0, client_for
from webapp.runs.models import Run


def many_url(*runs: Run) -> str:
    return "/compare/many/?runs=" + ",".join(str(run.pk) for run in runs)


def test_page_ranks_three_runs_and_links_every_cell(personas, runs):
    response = client_for(personas.owner).get(many_url(runs.a, runs.b, runs.c))
    assert response.status_code == 200
    body = response.content.decode()
    ranking = body[body.index('id="ranking"'):body.index('id="matrix-title"')]
    order = re.findall(r'<tr data-run="(\d+)">', ranking)
    # On the shared HumanEval/0 and /2: alpha 1.0, beta 0.5, gamma (1/2 + 1/2) / 2 = 0.5.
    assert order[0] == str(runs.a.pk)
    assert sorted(order) == sorted(str(run.pk) for run in (runs.a, runs.b, runs.c))
    assert set(re.findall(r'data-rank="(\d+)"', ranking)) == {"1"}, "2 problems separate nothing"
    matrix = body[body.index('id="matrix"'):body.index('id="separating-title"')]
    links = re.findall(r'<a href="/compare/(\d+)/(\d+)/" data-cell>', matrix)
    assert len(links) == 6
    assert (str(runs.a.pk), str(runs.b.pk)) in links
    assert (str(runs.b.pk), str(runs.a.pk)) in links
    assert "many-chart-data" in body
    assert "explore/many.js" in body


def test_runs_are_compared_on_the_problems_they_all_have(personas, runs):
    body = client_for(personas.owner).get(
        many_url(runs.a, runs.b, runs.c)).content.decode()
    summary = body[body.index('id="many-summary"'):]
    assert "<strong>2</strong> problems they all have" in summary, "gamma has no HumanEval/1"
    assert "left out" in summary
    assert "sign-flip" in summary, "gamma has two samples per problem"


def test_separating_problems_open_the_problem_comparison(personas, runs):
    body = client_for(personas.owner).get(many_url(runs.a, runs.b)).content.decode()
    table = body[body.index('id="separating"'):]
    assert re.findall(r'href="/compare/(\d+)/(\d+)/problems/(\d+)/">HumanEval/0<', table) == [
        (str(runs.a.pk), str(runs.b.pk), "0")]
    assert "McNemar" in body, "one sample per problem in both runs"


def test_teammate_sees_the_team_runs(personas, runs):
    assert client_for(personas.teammate).get(many_url(runs.a, runs.b)).status_code == 200


@pytest.mark.parametrize("persona", ["outsider", None])
def test_outsider_and_anonymous_cannot_use_team_runs(personas, runs, persona):
    user = getattr(personas, persona) if persona else None
    response = client_for(user).get(many_url(runs.c, runs.a))
    assert response.status_code == 400
    body = response.content.decode()
    assert f"no run {runs.a.pk}" in body
    assert runs.a.name not in body


def test_someone_elses_private_run_is_never_usable(personas, runs, make_run):
    hidden = make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0}], name="secret",
                      owner=personas.teammate, visibility=Run.Visibility.PRIVATE)
    response = client_for(personas.owner).get(many_url(runs.a, hidden))
    assert response.status_code == 400
    assert "secret" not in response.content.decode()
    picker = client_for(personas.owner).get("/compare/many/").content.decode()
    assert "secret" not in picker
    assert client_for(personas.teammate).get(many_url(runs.a, hidden)).status_code == 200


def test_outsider_may_compare_public_runs_with_their_own(personas, runs, make_run):
    own = make_run([{"task_id": "HumanEval/0", "completion": WRONG_0},
                    {"task_id": "HumanEval/0", "completion": WRONG_0 + "    # 2\n"},
                    {"task_id": "HumanEval/2", "completion": RIGHT_2},
                    {"task_id": "HumanEval/2", "completion": WRONG_2}],
                   name="outsiders")
    # make_run files runs under the lab team; hand this one to the outsider, privately.
    Run.objects.filter(pk=own.pk).update(owner=personas.outsider,
                                         visibility=Run.Visibility.PRIVATE)
    assert client_for(personas.outsider).get(many_url(runs.c, own)).status_code == 200


@pytest.mark.parametrize(("query", "message"), [
    ("runs=999999,999998", "no run 999999"),
    ("runs=abc", "expected run ids"),
    ("runs=" + ",".join(str(i) for i in range(1, 14)), "at most 12 ids"),
])
def test_bad_ids_get_a_clear_400(personas, runs, query, message):
    response = client_for(personas.owner).get(f"/compare/many/?{query}")
    assert response.status_code == 400
    assert message in response.content.decode()


def test_one_run_is_not_a_comparison(personas, runs):
    response = client_for(personas.owner).get(many_url(runs.a))
    assert response.status_code == 400
    assert "at least two runs" in response.content.decode()
    assert 'id="many-form"' in response.content.decode()


def test_runs_on_different_datasets_are_refused(personas, runs, make_run, variants):
    other = make_run([{"task_id": "HumanEval/6", "completion": "    return []\n"}],
                     name="elsewhere", dataset=variants["ru"])
    response = client_for(personas.owner).get(many_url(runs.a, runs.b, other))
    assert response.status_code == 400
    assert "different datasets" in response.content.decode()


def test_runs_without_scores_are_explained(personas, runs, unstarted_run):
    queued = unstarted_run(name="waiting")
    response = client_for(personas.owner).get(many_url(runs.a, queued))
    assert response.status_code == 400
    assert "No scores yet for waiting" in response.content.decode()


def test_seeds_of_one_model_get_the_variance_split(personas, runs, make_run):
    records = [{"task_id": "HumanEval/0", "completion": RIGHT_0},
               {"task_id": "HumanEval/1", "completion": CRASH_1},
               {"task_id": "HumanEval/2", "completion": WRONG_2}]
    third = make_run(records, name="alpha seed 3")
    for seed, run in enumerate((runs.a, runs.b, third)):
        Run.objects.filter(pk=run.pk).update(model_name="alpha-7b", model_meta={"seed": seed})
    body = client_for(personas.owner).get(many_url(runs.a, runs.b, third)).content.decode()
    table = body[body.index('id="seed-variance"'):]
    assert "alpha-7b" in table
    assert re.search(r'<td>alpha-7b</td><td class="num">3</td>', table)


def test_no_seed_section_without_seeds(personas, runs):
    body = client_for(personas.owner).get(many_url(runs.a, runs.b)).content.decode()
    assert 'id="seed-variance"' not in body


def test_empty_page_offers_the_picker(personas, runs):
    body = client_for(personas.owner).get("/compare/many/").content.decode()
    assert 'id="many-form"' in body
    assert f'value="{runs.a.pk}"' in body


def test_hidden_run_is_refused_exactly_like_a_missing_one(personas, runs):
    outsider = client_for(personas.outsider)
    hidden = outsider.get(f"/compare/many/?runs={runs.c.pk},{runs.a.pk}")
    missing = outsider.get(f"/compare/many/?runs={runs.c.pk},999999")
    assert hidden.status_code == missing.status_code == 400
    alert = re.compile(r'<p class="error" role="alert">(.*?)</p>')
    assert alert.findall(hidden.content.decode()) == [
        message.replace("999999", str(runs.a.pk))
        for message in alert.findall(missing.content.decode())]
