"""Base beside plus for the translated Python variants (issue 25): a HumanEval-XL Russian
and an mHumanEval expert Arabic run are scored on their own plus sets (HumanEval+'s
inputs under the variant's prompt), through the page, the API, the leaderboard and the
command line, with fixtures of our own (tests/webapp/translated_plus.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evaluator.test_cli import run_cli
from tests.webapp.support import client_for, write_jsonl
from tests.webapp.translated_plus import (
    SAMPLES,
    SOLUTION_1,
    Translated,
    finished_run,
    import_translated,
    imported,
)
from webapp.runs.models import Run
from webapp.runs.services.plus import plus_datasets


@pytest.fixture
def translated(db: None, fixtures_dir: Path, tmp_path: Path) -> Translated:
    return import_translated(fixtures_dir, tmp_path)


def test_each_variant_is_offered_its_own_plus_set_first(translated: Translated) -> None:
    assert translated.russian_plus.key == "humaneval-xl/python/ru/plus-mini"
    assert translated.arabic_plus.key == "mhumaneval/python/ar/plus-mini-expert"
    assert plus_datasets(dataset=translated.russian) == [translated.russian_plus,
                                                         translated.humanevalplus]
    assert plus_datasets(dataset=translated.arabic) == [translated.arabic_plus,
                                                        translated.humanevalplus]
    # Neither plus set is another's, and a plus set has none of its own.
    assert plus_datasets(dataset=translated.russian_plus) == []
    assert plus_datasets(dataset=translated.arabic_plus) == []


def test_machine_translation_does_not_take_the_expert_plus_set(
        translated: Translated, fixtures_dir: Path) -> None:
    machine = imported(fixtures_dir / "datasets" / "mhumaneval"
                        / "mHumanEval-rus_Cyrl-python.json")
    assert machine.key == "mhumaneval/python/ru/machine"
    assert translated.arabic_plus not in plus_datasets(dataset=machine)
    assert plus_datasets(dataset=machine) == [translated.humanevalplus]


def test_russian_run_scored_on_its_plus_set_through_the_api(
        personas, translated, tmp_path, token_client,
        django_capture_on_commit_callbacks) -> None:
    client = token_client(personas.owner)
    run = finished_run(client, django_capture_on_commit_callbacks, tmp_path,
                       "humaneval-xl/python/ru", SAMPLES)
    offered = client.get(f"/api/runs/{run.pk}/plus").json()["plus_datasets"]
    assert [d["key"] for d in offered] == ["humaneval-xl/python/ru/plus-mini",
                                           "humanevalplus/python/en/mini"]
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"/api/runs/{run.pk}/plus").status_code == 201
    plus = Run.objects.get(plus_of=run)
    assert plus.status == Run.Status.FINISHED, plus.error
    assert plus.dataset == translated.russian_plus
    # The samples are judged under the Russian prompt, on HumanEval+'s inputs.
    sample = plus.samples.select_related("variant").get(task_id="HumanEval/0", index=0)
    assert sample.variant.dataset == translated.russian_plus
    assert "Есть ли в списке" in sample.variant.prompt
    assert sample.tests_total == 7
    (pair,) = client.get(f"/api/runs/{run.pk}/plus").json()["pairs"]
    assert (pair["plus_dataset"], pair["problems"], pair["problems_without_plus_tests"]) == (
        "humaneval-xl/python/ru/plus-mini", 2, 0)
    one = next(score for score in pair["scores"] if score["k"] == 1)
    assert one["base"]["value"] == pytest.approx((2 / 3) / 2)
    assert one["plus"]["value"] == pytest.approx((1 / 3) / 2)
    assert one["drop"] == pytest.approx(1 / 6, abs=1e-6)


def test_arabic_run_on_the_page_and_the_leaderboard(
        personas, translated, tmp_path, token_client,
        django_capture_on_commit_callbacks) -> None:
    samples = [*SAMPLES[:3], *[{"task_id": "HumanEval/1", "completion": SOLUTION_1}] * 3]
    run = finished_run(token_client(personas.owner), django_capture_on_commit_callbacks,
                       tmp_path, "mhumaneval/python/ar/expert", samples)
    client = client_for(personas.owner)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "mhumaneval/python/ar/plus-mini-expert" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/runs/{run.pk}/plus/",
                               {"dataset": translated.arabic_plus.pk})
    assert response.status_code == 302
    plus = Run.objects.get(plus_of=run)
    assert (plus.status, plus.dataset) == (Run.Status.FINISHED, translated.arabic_plus)
    # HumanEval/1 has no plus tests in Arabic (a renamed parameter): left out of the pair.
    assert plus.samples_total == 3
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert f'data-plus-run="{plus.pk}"' in page
    # Over HumanEval/0 alone: base 2/3, plus 1/3.
    assert '<td class="num" data-cell="base">0.667' in page
    assert '<td class="num" data-cell="plus">0.333' in page
    board = client.get("/teams/lab/leaderboard/?tests=both").content.decode()
    assert f'data-plus="{run.pk}-1"' in board
    assert "plus 33.3%" in board
    assert "base 66.7%" in board


def test_command_line_reports_base_and_plus_on_a_translated_plus_set(
        translated, tmp_path) -> None:
    samples = write_jsonl(tmp_path / "samples.jsonl", SAMPLES[:3])
    args = ("evaluate", "--dataset-file", str(translated.files["mhumaneval/python/ar/expert"]),
            "--samples", str(samples), "--sandbox", "none", "--no-cache", "--k", "1",
            "--results", str(tmp_path / "r.jsonl"), "--json")
    proc = run_cli(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)["base_plus"]
    assert summary["problems"] == 1
    assert summary["base"]["pass@1"]["value"] == pytest.approx(2 / 3)
    assert summary["plus"]["pass@1"]["value"] == pytest.approx(1 / 3)
