"""The run page's defect-aware block, kept in the shared page cache under a key read without
computing a score: a kept block is served as it is, every change of what it shows (the
patched job moving on, the registry, a rescore, an edit) gives a new one, and the viewer's
own part (the "compute" form and its token) is never in what the viewers share.

The run and the registry are those of `test_defect_aware_scores` (model A; HumanEval/1
patched, HumanEval/2 left out): pass@1 original 37.5%, patched 62.5% once computed.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.webapp.defects.test_defect_aware_scores import A, _entry, _run
from tests.webapp.support import client_for
from webapp.defects import views as defect_views
from webapp.defects.models import PatchedScoring
from webapp.defects.templatetags import defect_scores
from webapp.runs.models import Run, Sample
from webapp.runs.reads.page_cache import shared
from webapp.runs.services.lifecycle import RunEdit, run_update
from webapp.runs.worker.aggregation import _score as score_run
from webapp.runs.worker.execution import run_finish

ENTRIES = [
    _entry("t-1-vacuous", "HumanEval/1", "vacuous_test", patch={
        "description": "Check nothing.",
        "edits": [{"field": "test", "old": "def check(candidate):\n",
                   "new": "def check(candidate):\n    return\n"}]}),
    _entry("t-2-wrong", "HumanEval/2", "wrong_test"),
]


@pytest.fixture
def run_a(personas, humaneval, tmp_path, install_registry, django_capture_on_commit_callbacks):
    install_registry("test-7", ENTRIES)
    return _run(personas, humaneval, tmp_path, django_capture_on_commit_callbacks,
                name="model-a", answers=A)


@pytest.fixture
def kept(monkeypatch) -> list[tuple[str, str]]:
    """Every (key, block) the tag takes from or puts into the shared page cache."""
    seen: list[tuple[str, str]] = []
    def spy(key: str, draw: Any, *, timeout: int) -> str:
        block = shared(key, draw, timeout=timeout)
        seen.append((key, block))
        return block

    monkeypatch.setattr(defect_scores, "shared", spy)
    return seen


def _block(client, run: Run, query: str = "") -> str:
    response = client.get(f"/runs/{run.pk}/{query}")
    assert response.status_code == 200
    page = response.content.decode()
    return page[page.index('id="defect-aware"'):page.index("</section>",
                                                           page.index('id="defect-aware"'))]


def _cell(block: str, way: str, k: int = 1) -> str:
    found = re.search(rf'data-way="{way}" data-k="{k}">(.*?)</td>', block, re.S)
    assert found is not None, block
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split())


def _compute_form(run: Run) -> str:
    return f'id="compute-patched-{run.pk}"'


def test_a_kept_block_is_served_without_computing_the_scores(run_a, personas, monkeypatch,
                                                             kept):
    teammate, owner = client_for(personas.teammate), client_for(personas.owner)
    first = _block(teammate, run_a)
    assert "37.5%" in _cell(first, "original")

    def refuse(**_: Any) -> None:
        raise AssertionError("the scores were computed for a kept block")

    monkeypatch.setattr(defect_views, "run_three_way", refuse)
    assert _block(teammate, run_a) == first
    # The owner shares it too, with a form of their own put in.
    mine = _block(owner, run_a)
    assert _compute_form(run_a) in mine
    assert "can compute them" in first
    assert "can compute them" not in mine
    assert len({key for key, _ in kept}) == 1


def test_the_patched_job_moving_on_gives_a_new_block(run_a, personas, kept):
    teammate = client_for(personas.teammate)
    assert _cell(_block(teammate, run_a), "patched") == "not computed yet"
    scoring = PatchedScoring.objects.create(
        run=run_a, registry_version="test-7", patched_tasks=["HumanEval/1"],
        status=PatchedScoring.Status.RUNNING, samples_total=2, samples_done=0,
        dispatched_at=timezone.now(), lease_until=timezone.now() + timedelta(minutes=5))
    assert _cell(_block(teammate, run_a), "patched") == "computing… 0 / 2"
    PatchedScoring.objects.filter(pk=scoring.pk).update(samples_done=1)
    assert _cell(_block(teammate, run_a), "patched") == "computing… 1 / 2"
    # Its worker died: the lease passes, and nothing but the time has changed.
    PatchedScoring.objects.filter(pk=scoring.pk).update(
        lease_until=timezone.now() - timedelta(seconds=1))
    stalled = _block(teammate, run_a)
    assert _cell(stalled, "patched") == "failed"
    assert "The worker computing it stopped" in stalled
    PatchedScoring.objects.filter(pk=scoring.pk).update(
        status=PatchedScoring.Status.DONE, samples_done=2, lease_until=None,
        finished_at=timezone.now(), counts={"HumanEval/1": [2, 2]})
    assert "62.5%" in _cell(_block(teammate, run_a), "patched")
    assert len({key for key, _ in kept}) == 5


def test_a_new_registry_gives_a_new_block(run_a, personas, install_registry, kept):
    teammate = client_for(personas.teammate)
    PatchedScoring.objects.create(
        run=run_a, registry_version="test-7", patched_tasks=["HumanEval/1"],
        status=PatchedScoring.Status.DONE, samples_total=2, samples_done=2,
        finished_at=timezone.now(), counts={"HumanEval/1": [2, 2]})
    before = _block(teammate, run_a)
    assert "62.5%" in _cell(before, "patched")
    assert "defect registry test-7" in before
    install_registry("test-8", ENTRIES)  # the same entries, a new version
    after = _block(teammate, run_a)
    assert _cell(after, "patched") == "not computed yet"
    assert "Computed under registry test-7; the registry is now test-8" in after
    # Another entry: HumanEval/3 is left out too.
    install_registry("test-9", [*ENTRIES, _entry("t-3-wrong", "HumanEval/3", "wrong_test")])
    assert "/problems/3/#defect-t-3-wrong" in _block(teammate, run_a)


def test_a_rescored_run_gives_a_new_block(run_a, personas, kept):
    teammate = client_for(personas.teammate)
    assert "37.5%" in _cell(_block(teammate, run_a), "original")
    # Scored and finished again, as a run's aggregation step does: HumanEval/3 now 2/2.
    Run.objects.filter(pk=run_a.pk).update(status=Run.Status.AGGREGATING)
    Sample.objects.filter(run=run_a, task_id="HumanEval/3").update(status="passed")
    score_run(run_id=run_a.pk)
    assert run_finish(run_id=run_a.pk)
    assert "62.5%" in _cell(_block(teammate, run_a), "original")


def test_an_edit_gives_a_new_key(run_a, personas, humaneval, kept):
    teammate = client_for(personas.teammate)
    _block(teammate, run_a)
    _block(teammate, run_a)
    assert len({key for key, _ in kept}) == 1
    run_update(user=personas.owner, run=run_a, edit=RunEdit(name="model-a, renamed"))
    _block(teammate, run_a)
    assert len({key for key, _ in kept}) == 2
    type(humaneval).objects.filter(pk=humaneval.pk).update(version="another copy")
    _block(teammate, run_a)
    assert len({key for key, _ in kept}) == 3


@pytest.mark.parametrize("first", ["owner", "teammate"])
def test_no_viewer_gets_another_viewers_form(run_a, personas, kept, first):
    clients = {"owner": client_for(personas.owner), "teammate": client_for(personas.teammate)}
    order = [first, *(name for name in clients if name != first)]
    blocks = {name: _block(clients[name], run_a, "?scores=patched") for name in order}
    assert len({key for key, _ in kept}) == 1  # one block shared by both
    assert _compute_form(run_a) in blocks["owner"]
    assert 'name="csrfmiddlewaretoken"' in blocks["owner"]
    assert 'value="patched"' in blocks["owner"]
    assert _compute_form(run_a) not in blocks["teammate"]
    assert "csrfmiddlewaretoken" not in blocks["teammate"]
    assert "The run's owner or a team owner can compute them." in blocks["teammate"]
    for _, common in kept:
        assert "csrfmiddlewaretoken" not in common
        assert _compute_form(run_a) not in common
    for block in blocks.values():
        assert str(defect_scores.COMPUTE_SLOT) not in block


def test_registry_text_cannot_forge_the_viewers_part(
    personas, humaneval, tmp_path, install_registry, django_capture_on_commit_callbacks,
):
    """A registry entry whose text is the slot the viewer's part goes in is drawn escaped,
    so no viewer's part is put in its place."""
    slot = str(defect_scores.COMPUTE_SLOT)
    install_registry("test-7", [{**entry, "defect": slot} for entry in ENTRIES])
    run = _run(personas, humaneval, tmp_path, django_capture_on_commit_callbacks,
               name="model-a", answers=A)
    block = _block(client_for(personas.owner), run)
    assert block.count(_compute_form(run)) == 1
    assert slot not in block
    assert "&lt;!--defect-aware:compute--&gt;" in block
