"""The pair's Base column as EvalPlus reports it (issue 25): the plus run's samples on the
plus set's base inputs, counted when the plus run is scored, beside the base run's own
score on HumanEval's tests ("original tests"); and a plus run scored before those counts
were kept, whose Base falls back to the original score and says so.

HumanEval's `check` for HumanEval/0 calls only lists of five or six numbers; our plus
fixture's base inputs include shorter ones. So a sample that gives up on short lists passes
the original tests and fails a base input, as deepseek-coder's HumanEval/95 does on the
real sets (an int key where the base input has a string)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from evaluator.datasets import load_dataset
from tests.evaluator.test_base_plus import LONG_LISTS_WRONG_0
from tests.webapp.support import CRASH_1, RIGHT_0, WRONG_0, client_for, write_jsonl
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import
from webapp.runs.models import ProblemResult, Run
from webapp.suites.services import suite_attach_runs, suite_create

SHORT_LISTS_WRONG_0 = "    if len(numbers) < 4:\n        return False\n" + RIGHT_0
"""Right on HumanEval's check (no list shorter than five), wrong on the base input
`[5.0, 1.0, 4.95]`, 0.1."""
RIGHT_1 = (
    "    groups, depth, current = [], 0, ''\n"
    "    for ch in paren_string.replace(' ', ''):\n"
    "        current += ch\n"
    "        depth += 1 if ch == '(' else -1\n"
    "        if depth == 0:\n"
    "            groups.append(current)\n"
    "            current = ''\n"
    "    return groups\n"
)
# HumanEval/0: original tests pass 3 of 4, base inputs 2 of 4, plus 1 of 4;
# HumanEval/1: 1 of 4 on all three. pass@1 is the mean over the two problems.
ORIGINAL, BASE, PLUS = (3 / 4 + 1 / 4) / 2, (2 / 4 + 1 / 4) / 2, (1 / 4 + 1 / 4) / 2


@pytest.fixture
def plus_set(db: None, fixtures_dir: Path) -> Dataset:
    """Two problems in HumanEval+'s layout, our own (tests/fixtures/plus/README.md)."""
    path = fixtures_dir / "plus" / "HumanEvalPlus-Mini.jsonl"
    return dataset_import(loaded=load_dataset(path=path), source=str(path)).dataset


@pytest.fixture
def client(personas, token_client) -> Client:
    made: Client = token_client(personas.owner)
    return made


@pytest.fixture
def base_run(personas, humaneval, plus_set, tmp_path, client,
             django_capture_on_commit_callbacks) -> Run:
    path = write_jsonl(tmp_path / "samples.jsonl", [
        {"task_id": "HumanEval/0", "completion": completion}
        for completion in (RIGHT_0, LONG_LISTS_WRONG_0, SHORT_LISTS_WRONG_0, WRONG_0)
    ] + [{"task_id": "HumanEval/1", "completion": completion}
         for completion in (RIGHT_1, CRASH_1, CRASH_1, CRASH_1)])
    with path.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/runs", {"file": handle, "dataset": "humaneval/python/en",
                                             "team": "lab", "visibility": "team"})
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Run.Status.FINISHED, run.error
    return run


@pytest.fixture
def plus_run(base_run, client, django_capture_on_commit_callbacks) -> Run:
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/runs/{base_run.pk}/plus")
    assert response.status_code == 201, response.content
    plus = Run.objects.get(plus_of=base_run)
    assert plus.status == Run.Status.FINISHED, plus.error
    return plus


def _pass_at_1(client: Client, run: Run) -> dict[str, Any]:
    """The run's one pair as the API answers it, with its pass@1 scores as `one`."""
    (pair,) = client.get(f"/api/runs/{run.pk}/plus").json()["pairs"]
    pair["one"] = next(score for score in pair["scores"] if score["k"] == 1)
    return dict(pair)


def _forget_base_counts(plus: Run) -> None:
    """The plus run as one scored before base counts were kept."""
    ProblemResult.objects.filter(run=plus).update(base_c=None)


def test_plus_run_counts_samples_passing_every_base_input(base_run, plus_run):
    counted = {row.task_id: (row.c, row.base_c)
               for row in ProblemResult.objects.filter(run=plus_run)}
    # The short-list sample passed HumanEval's check but fails a base input.
    assert counted == {"HumanEval/0": (1, 2), "HumanEval/1": (1, 1)}
    original = dict(ProblemResult.objects.filter(run=base_run).values_list("task_id", "c"))
    assert original["HumanEval/0"] == 3
    # Only a plus run counts them.
    assert not ProblemResult.objects.filter(run=base_run, base_c__isnull=False).exists()


def test_plus_never_exceeds_base_on_any_problem(plus_run):
    rows = list(ProblemResult.objects.filter(run=plus_run))
    assert rows
    for row in rows:
        assert row.base_c is not None
        assert row.c <= row.base_c <= row.n, row.task_id


def test_base_is_below_the_original_score_when_a_base_input_fails(client, base_run, plus_run):
    pair = _pass_at_1(client, base_run)
    one = pair["one"]
    assert pair["base_source"] == "plus_base_inputs"
    assert one["original"]["value"] == pytest.approx(ORIGINAL)
    assert one["base"]["value"] == pytest.approx(BASE)
    assert one["plus"]["value"] == pytest.approx(PLUS)
    assert one["base"]["value"] < one["original"]["value"]
    assert one["drop"] == pytest.approx(BASE - PLUS, abs=1e-6)


def test_api_carries_base_plus_and_original_with_intervals(client, base_run, plus_run):
    pair = _pass_at_1(client, base_run)
    for score in pair["scores"]:
        for side in ("base", "plus", "original"):
            figure = score[side]
            assert figure["k"] == score["k"]
            assert figure["low"] <= figure["value"] <= figure["high"], (side, score["k"])
    # The plus run answers with the same pair.
    assert _pass_at_1(client, plus_run)["scores"] == pair["scores"]


def test_run_page_shows_evalplus_base_beside_the_original_tests(personas, base_run, plus_run):
    page = client_for(personas.owner).get(f"/runs/{base_run.pk}/").content.decode()
    assert 'data-base-source="plus_base_inputs"' in page
    assert '<th scope="col" class="num">Original tests</th>' in page
    assert '<td class="num" data-cell="base">0.375' in page
    assert '<td class="num" data-cell="original">0.500' in page
    assert '<td class="num" data-cell="plus">0.250' in page


def test_plus_run_without_base_counts_falls_back_to_the_original_score(
        personas, client, base_run, plus_run):
    _forget_base_counts(plus_run)
    pair = _pass_at_1(client, base_run)
    one = pair["one"]
    assert pair["base_source"] == "original_tests"
    assert one["base"] == one["original"]
    assert one["base"]["value"] == pytest.approx(ORIGINAL)
    assert one["plus"]["value"] == pytest.approx(PLUS)
    page = client_for(personas.owner).get(f"/runs/{base_run.pk}/").content.decode()
    assert 'data-base-source="original_tests"' in page
    assert "Base (original tests)" in page
    assert 'data-cell="original"' not in page
    assert '<td class="num" data-cell="base">0.500' in page


def test_one_problem_without_a_count_makes_the_whole_pair_fall_back(client, base_run,
                                                                     plus_run):
    ProblemResult.objects.filter(run=plus_run, task_id="HumanEval/1").update(base_c=None)
    pair = _pass_at_1(client, base_run)
    assert pair["base_source"] == "original_tests"
    assert pair["one"]["base"]["value"] == pytest.approx(ORIGINAL)


def test_suite_drop_takes_base_from_the_plus_run_and_marks_a_fallback(
        personas, base_run, plus_run):
    suite = suite_create(owner=personas.owner, team=personas.team, name="s", model_name="m")
    suite_attach_runs(user=personas.owner, suite=suite, runs=[base_run])
    client = client_for(personas.owner)
    page = client.get(f"/suites/{suite.pk}/").content.decode()
    assert '<td class="num" data-cell="base">0.3750 ' in page
    assert '<td class="num" data-cell="drop">0.1250</td>' in page
    assert "†" not in page
    _forget_base_counts(plus_run)
    page = client.get(f"/suites/{suite.pk}/").content.decode()
    assert 'data-base-source="original_tests"' in page
    assert ">0.5000† " in page
    assert page.count('<td class="num" data-cell="drop">0.2500</td>') == 3
