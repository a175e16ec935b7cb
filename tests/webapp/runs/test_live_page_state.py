"""The state a live run page starts from: per-problem counts up to the event number the page
resumes from (so that the events after it, applied by the page, count each sample once),
in the snapshot, the page's table and its live config. The page's own updates are in
tests/browser/test_live_page.py."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from tests.webapp.support import client_for
from webapp.runs.models import Run
from webapp.runs.reads.selectors import run_events_after, run_problem_counts, run_snapshot
from webapp.runs.worker.tasks import evaluate_run

pytestmark = pytest.mark.django_db(transaction=True)


def _live_config(page: bytes) -> dict[str, Any]:
    match = re.search(rb'<script id="run-live-config" type="application/json">(.*?)</script>',
                      page, re.S)
    assert match, "the run page has no live config"
    return json.loads(match.group(1))


def test_counts_up_to_each_event_number_match_the_events_so_far(unstarted_run):
    run = unstarted_run("counts")
    evaluate_run.delay(run.pk)
    run.refresh_from_db()
    events = run_events_after(run=run, after=0, limit=1000)
    assert events is not None
    finished = [event for event in events if event["type"] == "sample_finished"]
    assert finished, "the run evaluated samples"
    for seq in range(run.event_seq + 1):
        so_far = [event["entry"] for event in finished if event["seq"] <= seq]
        n = Counter(entry["task_id"] for entry in so_far)
        c = Counter(entry["task_id"] for entry in so_far if entry["status"] == "passed")
        counts = run_problem_counts(run=run, up_to_seq=seq)
        # Every problem of the run, even one with nothing finished yet.
        assert {row["task_id"] for row in counts} == {entry["task_id"] for entry in
                                                      (e["entry"] for e in finished)}
        assert {row["task_id"]: (row["n"], row["c"]) for row in counts} == {
            row["task_id"]: (n[row["task_id"]], c[row["task_id"]]) for row in counts}, seq
    assert run_snapshot(run=run)["problems"] == run_problem_counts(run=run,
                                                                   up_to_seq=run.event_seq)


def test_a_finished_sample_says_which_sandbox_ran_it(unstarted_run):
    run = unstarted_run("sandbox")
    evaluate_run.delay(run.pk)
    run.refresh_from_db()
    events = run_events_after(run=run, after=0, limit=1000) or []
    entries = [event["entry"] for event in events if event["type"] == "sample_finished"]
    assert entries
    for entry in entries:
        assert entry["sandbox"] == {"level": "none", "backend": "none", "chosen": "requested"}
        assert isinstance(entry["error_type"], str)


def test_a_queued_run_page_has_a_row_for_every_problem_and_the_state_to_follow(
        personas, unstarted_run):
    run = unstarted_run("queued")
    assert run.status == Run.Status.QUEUED
    page = client_for(personas.owner).get(run.get_absolute_url()).content
    config = _live_config(page)
    assert config["live"] is True
    assert config["seq"] == 0
    tasks = sorted({sample.task_id for sample in run.samples.all()})
    assert sorted(task for task, _, _ in config["problems"]) == tasks
    assert all((n, c) == (0, 0) for _, n, c in config["problems"])
    assert config["running_seconds"] is None, "not started: Duration does not count"
    for task in tasks:
        assert f'<tr data-task="{task}">'.encode() in page
    assert b'id="pass-at-k-chart"' in page, "the curve is drawn as samples finish"
    assert b"Latest failure" in page
    assert b"running pass@1" in page


def test_a_finished_run_page_draws_nothing_live(personas, unstarted_run):
    run = unstarted_run("done")
    evaluate_run.delay(run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.FINISHED
    page = client_for(personas.owner).get(run.get_absolute_url()).content
    config = _live_config(page)
    assert config["live"] is False
    assert "problems" not in config
    assert b"running pass@1" not in page
    assert b"Most common failure" in page
    # An anonymous viewer of someone else's run gets no live state either (and no 200 for
    # a private run).
    assert client_for(None).get(run.get_absolute_url()).status_code in (302, 404)


def _row_tags(page: bytes) -> dict[str, str]:
    return {match.group(1).decode(): match.group(0).decode()
            for match in re.finditer(rb'<tr data-task="([^"]+)"[^>]*>', page)}


def test_a_live_table_keeps_the_rows_its_filters_hide_for_now(personas, unstarted_run):
    client = client_for(personas.owner)
    run = unstarted_run("filtered")
    # Queued, nothing finished: every row is there, hidden, and the page says none matches.
    page = client.get(run.get_absolute_url() + "?status=failed").content
    rows = _row_tags(page)
    assert set(rows) == {"HumanEval/0", "HumanEval/1"}
    assert all(tag.endswith(" hidden>") for tag in rows.values()), rows
    assert re.search(rb'<tr id="problems-none">', page), "no problem matches yet"
    assert b'Problems <span class="hint">(0 of 2)</span>' in page
    assert _live_config(page)["table_filter"] == {"show": "all", "status": "failed"}

    # Evaluated (HumanEval/0: one pass, one failure; HumanEval/1: two crashes), then seen
    # as if still going: the rows that match show, the others stay, hidden, with the
    # statuses the page adds to as samples arrive.
    evaluate_run.delay(run.pk)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    page = client.get(run.get_absolute_url() + "?status=failed").content
    rows = _row_tags(page)
    assert not rows["HumanEval/0"].endswith(" hidden>"), rows
    assert rows["HumanEval/1"].endswith(" hidden>"), rows
    assert 'data-statuses="' in rows["HumanEval/0"]
    assert "failed" in rows["HumanEval/0"]
    assert b'<tr id="problems-none" hidden>' in page
    page = client.get(run.get_absolute_url() + "?show=solved").content
    assert all(tag.endswith(" hidden>") for tag in _row_tags(page).values())

    # Finished, the same filter leaves the rows out, as before.
    Run.objects.filter(pk=run.pk).update(status=Run.Status.FINISHED)
    page = client.get(run.get_absolute_url() + "?status=failed").content
    assert set(_row_tags(page)) == {"HumanEval/0"}
    assert not _row_tags(page)["HumanEval/0"].endswith(" hidden>")


def test_an_unknown_table_filter_is_refused(personas, unstarted_run):
    run = unstarted_run("refused")
    client = client_for(personas.owner)
    assert client.get(run.get_absolute_url() + "?status=exploded").status_code == 400
    assert client.get(run.get_absolute_url() + "?show=sometimes").status_code == 400
