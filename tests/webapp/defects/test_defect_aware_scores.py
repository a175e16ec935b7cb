"""Defect-aware scores: a tiny run whose verdicts and registry entries are known, scored on
the original data, with the registry's patches (run again for real, in the `none` sandbox,
by the eager task) and without the defective problems; the permalinks and their bad
values; who may compute; and the leaderboard ranked each way.

The registry is a test registry written here (the bundled HumanEval has no patch):

- HumanEval/1 has a vacuous-test patch: `check` returns at once, so every sample passes;
- HumanEval/2 has a wrong test, no patch: left out of "excluding" only;
- HumanEval/3 has a `not_a_defect` entry: it counts everywhere;
- HumanEval/0 has an entry whose `detect` text is not in this copy: not a defect here;
- the whole dataset has one entry (`*`): shown, never left out.

Model A answers 0: one right, one wrong (c=1 of 2); 1: two crashes (0/2); 2: two right
(2/2); 3: two wrong (0/2). By hand, pass@1:
  original  (1/2 + 0 + 1 + 0) / 4 = 0.375
  patched   (1/2 + 1 + 1 + 0) / 4 = 0.625   (HumanEval/1: 2/2 once patched)
  excluding (1/2 + 0) / 2         = 0.25    (HumanEval/1 and /2 left out)
and pass@2: 0.5, 0.75, 0.5.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from evaluator.metrics import curve_with_ci
from tests.webapp.support import CRASH_1, RIGHT_0, WRONG_0, client_for, write_jsonl
from webapp.defects.models import QUEUED_PATIENCE, PatchedScoring
from webapp.defects.scores import run_three_way
from webapp.defects.services import patched_scoring_run
from webapp.runs.models import Run, RunMetric
from webapp.runs.services.writes import run_create
from webapp.runs.upload_checks.files import EvaluationOptions, upload_check

RIGHT_2 = "    return number % 1.0\n"
WRONG_3 = "    return False\n"
RIGHT_3 = ("    balance = 0\n    for op in operations:\n        balance += op\n"
           "        if balance < 0:\n            return True\n    return False\n")


def _entry(defect_id: str, task_id: str, kind: str, **more) -> dict[str, Any]:
    return {"id": defect_id, "dataset": "humaneval", "language": "python", "task_id": task_id,
            "kind": kind, "defect": f"{kind} in {task_id}", "evidence": "written for a test",
            "effect": "known", **more}


@pytest.fixture
def test_registry(install_registry):
    return install_registry("test-7", [
        _entry("t-1-vacuous", "HumanEval/1", "vacuous_test", patch={
            "description": "Check nothing.",
            "edits": [{"field": "test", "old": "def check(candidate):\n",
                       "new": "def check(candidate):\n    return\n"}]}),
        _entry("t-2-wrong", "HumanEval/2", "wrong_test"),
        _entry("t-3-fine", "HumanEval/3", "not_a_defect"),
        _entry("t-0-elsewhere", "HumanEval/0", "wrong_test",
               detect={"field": "test", "contains": "text that is not in this copy"}),
        _entry("t-star", "*", "harness_behaviour"),
    ])


def _run(personas, dataset, tmp_path, capture, *, name: str, answers: dict[int, list[str]],
         visibility: str = Run.Visibility.TEAM) -> Run:
    records = [{"task_id": f"HumanEval/{number}", "completion": completion}
               for number, completions in answers.items() for completion in completions]
    path = write_jsonl(tmp_path / f"{name}.jsonl", records)
    check = upload_check(path=path, file_name=path.name,
                         sha256=hashlib.sha256(name.encode()).hexdigest(),
                         size=path.stat().st_size, dataset=dataset, options=EvaluationOptions())
    with capture(execute=True):
        run = run_create(owner=personas.owner, team=personas.team, check=check, name=name,
                         model_name=name, visibility=visibility)
    run.refresh_from_db()
    assert run.status == Run.Status.FINISHED, run.error
    return run


A = {0: [RIGHT_0, WRONG_0], 1: [CRASH_1, CRASH_1], 2: [RIGHT_2, RIGHT_2], 3: [WRONG_3, WRONG_3]}
B = {0: [RIGHT_0, WRONG_0], 1: [CRASH_1, CRASH_1], 2: [WRONG_3, WRONG_3], 3: [RIGHT_3, WRONG_3]}
"""B: original (1/2 + 0 + 0 + 1/2) / 4 = 0.25, below A; excluding (1/2 + 1/2) / 2 = 0.5,
above A."""


@pytest.fixture
def run_a(personas, humaneval, tmp_path, test_registry, django_capture_on_commit_callbacks):
    return _run(personas, humaneval, tmp_path, django_capture_on_commit_callbacks,
                name="model-a", answers=A)


def _values(three, k: int) -> dict[str, float | None]:
    return {way.key: (way.at(k).value if way.at(k) else None) for way in three.ways}


def test_three_numbers_on_a_hand_checked_run(run_a, personas, django_capture_on_commit_callbacks):
    three = run_three_way(run=run_a, ks=(1, 2))
    assert _values(three, 1) == {"original": pytest.approx(0.375), "patched": None,
                                 "excluding": pytest.approx(0.25)}
    assert three.way("patched").state == "not_computed"
    assert [item.task_id for item in three.way("patched").listed] == ["HumanEval/1"]
    assert [item.task_id for item in three.way("excluding").listed] == [
        "HumanEval/1", "HumanEval/2"]
    assert three.way("excluding").problems == 2
    assert [d.id for d in three.dataset_wide] == ["t-star"]
    # "original" is the run's own stored score, interval and all.
    stored = RunMetric.objects.get(run=run_a, k=1)
    original = three.way("original").at(1)
    assert original is not None
    assert (original.value, original.low, original.high) == pytest.approx(
        (stored.value, stored.low, stored.high))
    # "excluding" is the same bootstrap over the problems left.
    (expected,) = curve_with_ci([2, 2], [1, 0], [1], task_ids=["HumanEval/0", "HumanEval/3"])
    excluding = three.way("excluding").at(1)
    assert excluding is not None
    assert (excluding.low, excluding.high) == pytest.approx((expected.low, expected.high))

    client = client_for(personas.owner)
    page = client.get(f"/runs/{run_a.pk}/").content.decode()
    assert "not computed yet" in page
    assert f'id="compute-patched-{run_a.pk}"' in page
    assert '/problems/1/#defect-t-1-vacuous' in page
    assert '/problems/2/#defect-t-2-wrong' in page
    assert "t-3-fine" not in page
    assert "t-0-elsewhere" not in page

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/runs/{run_a.pk}/defect-scores/patched/",
                               {"scores": "patched"})
    assert response.status_code == 302
    assert response["Location"] == f"/runs/{run_a.pk}/?scores=patched#defect-aware"
    scoring = PatchedScoring.objects.get(run=run_a)
    assert scoring.status == PatchedScoring.Status.DONE, scoring.error
    assert scoring.counts == {"HumanEval/1": [2, 2]}
    assert scoring.samples_done == scoring.samples_total == 2

    three = run_three_way(run=run_a, ks=(1, 2))
    assert _values(three, 1) == {"original": pytest.approx(0.375),
                                 "patched": pytest.approx(0.625),
                                 "excluding": pytest.approx(0.25)}
    assert _values(three, 2) == {"original": pytest.approx(0.5), "patched": pytest.approx(0.75),
                                 "excluding": pytest.approx(0.5)}
    assert three.way("patched").listed[0].patched_c == 2
    page = client.get(f"/runs/{run_a.pk}/?scores=patched").content.decode()
    assert "62.5%" in page
    assert "37.5%" in page
    assert "25.0%" in page
    assert "2/2 once patched" in page


def test_a_changed_registry_asks_for_the_patched_scores_again(
    run_a, personas, django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True):
        client_for(personas.owner).post(f"/runs/{run_a.pk}/defect-scores/patched/")
    PatchedScoring.objects.filter(run=run_a).update(registry_version="test-6")
    patched = run_three_way(run=run_a, ks=(1,)).way("patched")
    assert patched.state == "not_computed"
    assert "test-6" in patched.note
    assert patched.at(1) is None


def test_without_a_patch_the_patched_score_is_the_original(
    personas, humaneval, tmp_path, test_registry, django_capture_on_commit_callbacks,
):
    run = _run(personas, humaneval, tmp_path, django_capture_on_commit_callbacks, name="few",
               answers={0: [RIGHT_0], 2: [RIGHT_2], 3: [WRONG_3]})
    three = run_three_way(run=run, ks=(1,))
    assert three.way("patched").ready
    assert _values(three, 1)["patched"] == _values(three, 1)["original"] == pytest.approx(2 / 3)
    assert _values(three, 1)["excluding"] == pytest.approx(1 / 2)
    response = client_for(personas.owner).post(f"/runs/{run.pk}/defect-scores/patched/")
    assert response.status_code == 302
    assert not PatchedScoring.objects.filter(run=run).exists()


@pytest.mark.parametrize("path", ["/runs/{pk}/", "/runs/{pk}/scores/pass-at-1/",
                                  "/runs/{pk}/defect-scores/", "/teams/lab/leaderboard/"])
@pytest.mark.parametrize("value", ["bogus", "ORIGINAL", "patched;drop", "é" * 3, "=1+1"])
def test_unknown_scores_values_are_a_400_naming_the_parameter(run_a, personas, path, value):
    response = client_for(personas.owner).get(path.format(pk=run_a.pk), {"scores": value})
    assert response.status_code == 400
    body = response.content.decode()
    assert "scores" in body
    assert "original, patched, excluding" in body


@pytest.mark.parametrize("value", ["original", "patched", "excluding"])
def test_every_choice_is_a_permalink(run_a, personas, value):
    client = client_for(personas.owner)
    page = client.get(f"/runs/{run_a.pk}/", {"scores": value}).content.decode()
    assert f'aria-current="true" class="chosen" data-way="{value}"' in page
    # The choice follows the links to the score page and the status answers.
    assert f"/defect-scores/?scores={value}" in page or value == "original"
    score = client.get(f"/runs/{run_a.pk}/scores/pass-at-1/", {"scores": value})
    assert score.status_code == 200
    board = client.get("/teams/lab/leaderboard/", {"scores": value}).content.decode()
    assert f'<option value="{value}" selected>' in board
    if value == "excluding":
        assert f"/runs/{run_a.pk}/scores/pass-at-1/?scores=excluding" in board
    if value == "patched":  # not computed yet: the cell leads to the run page that can
        assert f"/runs/{run_a.pk}/?scores=patched#defect-aware" in board


def test_outsiders_see_nothing_and_only_managers_compute(run_a, personas):
    outsider = client_for(personas.outsider)
    assert outsider.get(f"/runs/{run_a.pk}/defect-scores/").status_code == 404
    assert outsider.post(f"/runs/{run_a.pk}/defect-scores/patched/").status_code == 404
    teammate = client_for(personas.teammate)
    status = teammate.get(f"/runs/{run_a.pk}/defect-scores/")
    assert status.status_code == 200
    assert status.json()["patched"] == "not_computed"
    assert f"compute-patched-{run_a.pk}" not in status.json()["html"]
    assert teammate.post(f"/runs/{run_a.pk}/defect-scores/patched/").status_code == 403
    assert client_for(None).post(f"/runs/{run_a.pk}/defect-scores/patched/").status_code == 302
    assert not PatchedScoring.objects.exists()


def test_the_block_kept_for_every_viewer_follows_the_patched_scores(
    run_a, personas, django_capture_on_commit_callbacks,
):
    """The block is drawn once for all who may not compute (the shared page cache), never
    with a form another viewer's session could not post, and a computation gives it anew."""
    teammate, owner = client_for(personas.teammate), client_for(personas.owner)
    path = f"/runs/{run_a.pk}/?scores=patched"
    before = teammate.get(path).content.decode()
    assert "not computed yet" in before
    assert f'id="compute-patched-{run_a.pk}"' not in before
    mine = owner.get(path).content.decode()
    assert f'id="compute-patched-{run_a.pk}"' in mine
    with django_capture_on_commit_callbacks(execute=True):
        owner.post(f"/runs/{run_a.pk}/defect-scores/patched/", {"scores": "patched"})
    after = teammate.get(path).content.decode()
    assert "not computed yet" not in after
    assert "62.5%" in after


def test_the_leaderboard_ranks_by_the_chosen_way(
    run_a, personas, humaneval, tmp_path, django_capture_on_commit_callbacks,
):
    run_b = _run(personas, humaneval, tmp_path, django_capture_on_commit_callbacks,
                 name="model-b", answers=B)
    client = client_for(personas.owner)

    def order(scores: str) -> list[str]:
        page = client.get("/teams/lab/leaderboard/", {"scores": scores}).content.decode()
        return sorted(("model-a", "model-b"), key=page.index)

    assert order("original") == ["model-a", "model-b"]
    assert order("excluding") == ["model-b", "model-a"]
    page = client.get("/teams/lab/leaderboard/", {"scores": "excluding"}).content.decode()
    cell_b = page[page.index(f'id="cell-{run_b.pk}-1"'):]
    assert cell_b.index("50.0%") < cell_b.index("orig. 25.0%")
    # Patched: run A's needs computing; run B has the same patched problem.
    page = client.get("/teams/lab/leaderboard/", {"scores": "patched"}).content.decode()
    assert page.count("not computed yet — compute") == 2
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/runs/{run_a.pk}/defect-scores/patched/")
        client.post(f"/runs/{run_b.pk}/defect-scores/patched/")
    assert order("patched") == ["model-a", "model-b"]
    page = client.get("/teams/lab/leaderboard/", {"scores": "patched"}).content.decode()
    assert "not computed yet" not in page
    assert "62.5%" in page
    assert "50.0%" in page


def test_the_pair_comparison_shows_and_keeps_the_choice(
    run_a, personas, humaneval, tmp_path, django_capture_on_commit_callbacks,
):
    run_b = _run(personas, humaneval, tmp_path, django_capture_on_commit_callbacks,
                 name="model-b", answers=B)
    client = client_for(personas.owner)
    response = client.get(f"/compare/{run_a.pk}/{run_b.pk}/", {"scores": "excluding"})
    assert response.status_code == 200
    page = response.content.decode()
    assert f'href="/runs/{run_a.pk}/?scores=excluding"' in page
    assert f'id="defect-aware-table-{run_a.pk}"' in page
    assert f'id="defect-aware-table-{run_b.pk}"' in page
    bad = client.get(f"/compare/{run_a.pk}/{run_b.pk}/", {"scores": "best"})
    assert bad.status_code == 400


def test_a_second_delivery_changes_nothing(run_a, personas, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        client_for(personas.owner).post(f"/runs/{run_a.pk}/defect-scores/patched/")
    scoring = PatchedScoring.objects.get(run=run_a)
    assert patched_scoring_run(scoring_id=scoring.pk) == "skipped"
    again = PatchedScoring.objects.get(pk=scoring.pk)
    assert (again.status, again.counts, again.finished_at) == (
        scoring.status, scoring.counts, scoring.finished_at)


def test_a_request_no_worker_took_can_be_made_again(
    run_a, personas, django_capture_on_commit_callbacks,
):
    client = client_for(personas.owner)
    with django_capture_on_commit_callbacks(execute=False):  # the message never arrives
        client.post(f"/runs/{run_a.pk}/defect-scores/patched/")
    scoring = PatchedScoring.objects.get(run=run_a)
    PatchedScoring.objects.filter(pk=scoring.pk).update(
        dispatched_at=timezone.now() - QUEUED_PATIENCE + timedelta(minutes=1))
    status = client.get(f"/runs/{run_a.pk}/defect-scores/").json()
    assert status["patched"] == "queued"
    assert status["in_progress"] is True
    assert client.post(f"/runs/{run_a.pk}/defect-scores/patched/").status_code == 302
    assert PatchedScoring.objects.get(run=run_a).pk == scoring.pk  # refused: still waiting
    PatchedScoring.objects.filter(pk=scoring.pk).update(
        dispatched_at=timezone.now() - QUEUED_PATIENCE - timedelta(minutes=1))
    status = client.get(f"/runs/{run_a.pk}/defect-scores/").json()
    assert status["patched"] == "failed"
    assert "No worker took it" in status["html"]
    assert f"compute-patched-{run_a.pk}" in status["html"]
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/runs/{run_a.pk}/defect-scores/patched/")
    replaced = PatchedScoring.objects.get(run=run_a)
    assert replaced.pk != scoring.pk
    assert replaced.status == PatchedScoring.Status.DONE
    # The old message, delivered late, finds nothing to claim.
    assert patched_scoring_run(scoring_id=scoring.pk) == "skipped"
