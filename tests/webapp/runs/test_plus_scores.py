"""Base beside plus (issue 25): a finished run scored again on HumanEval+ through the whole
evaluation path (eager Celery: the same tasks, services and engine a worker runs, in this
process), then its base and plus pass@k shown side by side on the run page and in the API."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from evaluator.datasets import load_dataset
from tests.evaluator.test_base_plus import LONG_LISTS_WRONG_0, build_js_plus, js_samples
from tests.webapp.support import CRASH_1, RIGHT_0, WRONG_0, client_for, write_jsonl
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import
from webapp.runs.models import Run
from webapp.runs.services.plus import plus_datasets
from webapp.suites.services import suite_attach_runs, suite_create


@pytest.fixture
def humanevalplus(db: None, fixtures_dir: Path) -> Dataset:
    """Two problems in HumanEval+'s layout, our own (tests/fixtures/plus/README.md)."""
    path = fixtures_dir / "plus" / "HumanEvalPlus-Mini.jsonl"
    return dataset_import(loaded=load_dataset(path=path), source=str(path)).dataset


@pytest.fixture
def base_run(personas, humaneval, humanevalplus, tmp_path, token_client,
             django_capture_on_commit_callbacks) -> Run:
    """Three samples per task; HumanEval/2 has no plus tests in the fixture."""
    path = write_jsonl(tmp_path / "samples.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0},
        {"task_id": "HumanEval/0", "completion": LONG_LISTS_WRONG_0},
        {"task_id": "HumanEval/0", "completion": WRONG_0},
        *[{"task_id": "HumanEval/1", "completion": CRASH_1}] * 3,
        *[{"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"}] * 3,
    ])
    with path.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = token_client(personas.owner).post(
            "/api/runs", {"file": handle, "dataset": "humaneval/python/en", "team": "lab",
                          "visibility": "team"})
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Run.Status.FINISHED, run.error
    return run


def _score_on_plus(client: Client, run: Run, capture, **data: object) -> Run:
    with capture(execute=True):
        response = client.post(f"/runs/{run.pk}/plus/", data)
    assert response.status_code == 302, response.content
    assert response["Location"] == f"/runs/{run.pk}/#plus-scores"
    return Run.objects.get(plus_of=run)


def test_plus_run_evaluates_the_same_samples_on_the_plus_set(
        personas, base_run, humanevalplus, django_capture_on_commit_callbacks):
    # A teammate asks; the plus run is the owner's, with the run's team and visibility.
    plus = _score_on_plus(client_for(personas.teammate), base_run,
                          django_capture_on_commit_callbacks)
    assert plus.status == Run.Status.FINISHED, plus.error
    assert (plus.owner, plus.team, plus.visibility) == (personas.owner, personas.team, "team")
    assert plus.dataset == humanevalplus
    # HumanEval/2 has no plus tests here: its samples are left out, not failed.
    assert plus.samples_total == 6
    assert plus.passed_count == 1
    assert plus.coverage["missing_tasks"] == []
    assert plus.fingerprint != base_run.fingerprint


def test_api_shows_base_beside_plus_with_intervals(
        personas, base_run, django_capture_on_commit_callbacks, token_client):
    client = token_client(personas.owner)
    before = client.get(f"/api/runs/{base_run.pk}/plus").json()
    assert before["pairs"] == []
    assert [d["key"] for d in before["plus_datasets"]] == ["humanevalplus/python/en/mini"]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/runs/{base_run.pk}/plus")
    assert response.status_code == 201, response.content
    # The answer is made before the commit sends the plus run to the workers.
    assert [p["plus_status"] for p in response.json()["pairs"]] == ["queued"]
    (pair,) = client.get(f"/api/runs/{base_run.pk}/plus").json()["pairs"]
    assert pair["plus_status"] == "finished"
    assert pair["problems"] == 2
    assert pair["problems_without_plus_tests"] == 1
    by_k = {score["k"]: score for score in pair["scores"]}
    assert sorted(by_k) == [1, 3]
    # HumanEval/0: two of three pass the base tests, one the plus tests; HumanEval/1: none.
    one = by_k[1]
    assert one["base"]["value"] == pytest.approx((2 / 3) / 2)
    assert one["plus"]["value"] == pytest.approx((1 / 3) / 2)
    assert one["drop"] == pytest.approx(1 / 6, abs=1e-6)
    for side in ("base", "plus"):
        assert one[side]["low"] <= one[side]["value"] <= one[side]["high"]
    # Asking again gives the plus run that stands.
    again = client.post(f"/api/runs/{base_run.pk}/plus")
    assert again.status_code == 200
    assert Run.objects.filter(plus_of=base_run).count() == 1
    # The plus run answers with its pair too.
    from_plus = client.get(f"/api/runs/{pair['plus_run']}/plus").json()
    assert from_plus["pairs"][0]["scores"] == pair["scores"]


def test_run_page_shows_the_pair_and_the_button(
        personas, base_run, django_capture_on_commit_callbacks):
    client = client_for(personas.owner)
    page = client.get(f"/runs/{base_run.pk}/").content.decode()
    assert 'id="plus-form"' in page
    assert "humanevalplus/python/en/mini" in page
    plus = _score_on_plus(client, base_run, django_capture_on_commit_callbacks)
    page = client.get(f"/runs/{base_run.pk}/").content.decode()
    assert f'data-plus-run="{plus.pk}"' in page
    assert '<td class="num" data-cell="base">0.333' in page
    assert '<td class="num" data-cell="plus">0.167' in page
    assert '<td class="num" data-cell="drop">0.167</td>' in page
    plus_page = client.get(f"/runs/{plus.pk}/").content.decode()
    assert 'id="plus-of-note"' in plus_page
    assert 'id="plus-form"' not in plus_page


def test_outsider_gets_404(personas, base_run, token_client):
    assert client_for(personas.outsider).post(f"/runs/{base_run.pk}/plus/").status_code == 404
    client = token_client(personas.outsider)
    assert client.get(f"/api/runs/{base_run.pk}/plus").status_code == 404
    assert client.post(f"/api/runs/{base_run.pk}/plus").status_code == 404
    assert not Run.objects.filter(plus_of=base_run).exists()


def test_unknown_dataset_is_refused_naming_the_field(personas, base_run, humaneval,
                                                     token_client):
    client = token_client(personas.owner)
    for given in (str(humaneval.pk), "x1"):
        response = client.post(f"/api/runs/{base_run.pk}/plus?dataset={given}")
        assert response.status_code == 400, response.content
        assert "dataset" in response.json()["fields"]
    assert not Run.objects.filter(plus_of=base_run).exists()


def test_unfinished_run_and_run_without_plus_set_are_refused(
        personas, unstarted_run, token_client):
    run = unstarted_run()
    response = token_client(personas.owner).post(f"/api/runs/{run.pk}/plus")
    assert response.status_code == 400
    assert "finished" in str(response.json()["fields"])
    Run.objects.filter(pk=run.pk).update(status=Run.Status.FINISHED)
    response = token_client(personas.owner).post(f"/api/runs/{run.pk}/plus")
    assert response.status_code == 400
    assert "No plus test set" in str(response.json()["fields"])


def test_leaderboard_shows_plus_beside_base_when_chosen(
        personas, base_run, django_capture_on_commit_callbacks):
    client = client_for(personas.owner)
    _score_on_plus(client, base_run, django_capture_on_commit_callbacks)
    plain = client.get("/teams/lab/leaderboard/").content.decode()
    assert "plus-score" not in plain
    assert 'id="tests-select"' in plain
    both = client.get("/teams/lab/leaderboard/?tests=both").content.decode()
    # Over HumanEval/0 and /1, the problems both runs scored.
    assert (f'data-plus="{base_run.pk}-1"><span title="pass@1 on the plus tests, beside the '
            'base pass@1 over the same problems">plus 16.7%') in both
    assert "base 33.3%" in both
    # The outsider sees neither run, on the team's board or on the public one.
    public = client_for(None).get("/leaderboard/?tests=both").content.decode()
    assert f'data-plus="{base_run.pk}-1"' not in public


def test_leaderboard_refuses_an_unknown_tests_choice(personas, base_run):
    response = client_for(personas.owner).get("/teams/lab/leaderboard/?tests=plusplus")
    assert response.status_code == 400
    assert "tests" in response.content.decode()


def test_plus_sets_are_offered_by_language(humaneval, humanevalplus, fixtures_dir):
    def imported(path: Path) -> Dataset:
        return dataset_import(loaded=load_dataset(path=path), source=str(path)).dataset

    datasets = fixtures_dir / "datasets"
    russian = imported(datasets / "mhumaneval" / "mHumanEval-rus_Cyrl-python.json")
    go = imported(datasets / "humaneval_x" / "humaneval_go.jsonl")
    # HumanEval+ tests the same Python functions whatever the prompt's language.
    assert plus_datasets(dataset=humaneval) == [humanevalplus]
    assert russian.variant == "machine"
    assert plus_datasets(dataset=russian) == [humanevalplus]
    # A translated variant's own plus set comes first, if it is of the same translation.
    def plus_of_russian(variant: str) -> Dataset:
        return Dataset.objects.create(
            name="mhumaneval", variant=variant, language="python", natural_language="ru",
            version=variant, layout="humanevalplus", source="test",
            key=f"mhumaneval/python/ru/{variant}")

    own = plus_of_russian("plus-mini-machine")
    plus_of_russian("plus-mini-human")
    assert plus_datasets(dataset=russian) == [own, humanevalplus]
    assert plus_datasets(dataset=own) == []
    # Go has none imported; a plus set has no plus set of its own.
    assert plus_datasets(dataset=go) == []
    assert plus_datasets(dataset=humanevalplus) == []


def test_suite_page_shows_the_drop_per_language(
        personas, base_run, django_capture_on_commit_callbacks):
    suite = suite_create(owner=personas.owner, team=personas.team, name="s", model_name="m")
    suite_attach_runs(user=personas.owner, suite=suite, runs=[base_run])
    client = client_for(personas.owner)
    before = client.get(f"/suites/{suite.pk}/").content.decode()
    assert 'id="plus-drops"' not in before
    _score_on_plus(client, base_run, django_capture_on_commit_callbacks)
    page = client.get(f"/suites/{suite.pk}/").content.decode()
    assert (f'<tr data-run="{base_run.pk}"><th scope="row">'
            f'<a href="/runs/{base_run.pk}/#plus-scores">') in page
    assert page.count('<td class="num" data-cell="drop">0.1667</td>') == 3
    assert 'id="plus-drop-languages"' in page
    assert 'id="plus-drop-natural"' in page


def test_humaneval_x_plus_run_through_the_pipeline(
        personas, shared_dir, tmp_path, token_client, django_capture_on_commit_callbacks):
    """JavaScript: the base run on HumanEval-X, its plus run on a HumanEval-X+ build."""
    base_path = shared_dir / "datasets" / "humaneval-x" / "humaneval_js.jsonl.gz"
    dataset_import(loaded=load_dataset(path=base_path), source=str(base_path))
    plus_path = build_js_plus(shared_dir, tmp_path / "plus")
    plus_set = dataset_import(loaded=load_dataset(path=plus_path), source=str(plus_path)).dataset
    assert plus_set.key == "humaneval-x/js/en/plus-mini"
    path = write_jsonl(tmp_path / "js.jsonl", js_samples(plus_path))
    client = token_client(personas.owner)
    with path.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/runs", {"file": handle, "dataset": "humaneval-x/js/en",
                                             "team": "lab"})
    assert response.status_code == 201, response.content
    run_id = response.json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"/api/runs/{run_id}/plus").status_code == 201
    (pair,) = client.get(f"/api/runs/{run_id}/plus").json()["pairs"]
    assert (pair["plus_dataset"], pair["plus_status"]) == (plus_set.key, "finished")
    one = next(score for score in pair["scores"] if score["k"] == 1)
    # HumanEval-X's own tests for HumanEval/0 pass both the right and the short-sighted one.
    assert one["base"]["value"] == pytest.approx(2 / 3)
    assert one["plus"]["value"] == pytest.approx(1 / 3)


def test_plus_run_follows_the_base_runs_visibility(
        personas, base_run, django_capture_on_commit_callbacks, token_client):
    plus = _score_on_plus(client_for(personas.owner), base_run,
                          django_capture_on_commit_callbacks)
    client = token_client(personas.owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.patch(f"/api/runs/{base_run.pk}", '{"visibility": "private"}',
                                content_type="application/json")
    assert response.status_code == 200, response.content
    plus.refresh_from_db()
    assert plus.visibility == "private"
    assert client_for(personas.teammate).get(f"/runs/{plus.pk}/").status_code == 404


def test_a_pair_shows_only_to_who_may_see_both_runs(personas, humaneval, humanevalplus):
    """The pairs are read plainly and each run's permission decided on its row
    (`may_see_run`): a plus run its viewer may not see is no pair, from either side."""
    from tests.webapp.factories import RunFactory
    from webapp.runs.services.plus import run_plus_pairs

    base = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                             visibility=Run.Visibility.PUBLIC)
    plus = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humanevalplus,
                             visibility=Run.Visibility.TEAM, plus_of=base)
    RunFactory.create(owner=personas.owner, team=personas.team, dataset=humanevalplus,
                      visibility=Run.Visibility.PUBLIC, plus_of=base,
                      status=Run.Status.STAGED)
    assert [p.plus.pk for p in run_plus_pairs(user=personas.teammate, run=base)] == [plus.pk]
    assert run_plus_pairs(user=personas.outsider, run=base) == []
    assert [p.base.pk for p in run_plus_pairs(user=personas.teammate, run=plus)] == [base.pk]
    base.visibility = Run.Visibility.PRIVATE
    base.save()
    assert run_plus_pairs(user=personas.teammate, run=plus) == []
    assert [p.base.pk for p in run_plus_pairs(user=personas.owner, run=plus)] == [base.pk]
