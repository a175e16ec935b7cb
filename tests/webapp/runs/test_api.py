"""`GET /api/runs/<id>`, its results, the dataset list, and token authentication."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.webapp.support import client_for
from webapp.runs.models import Run
from webapp.runs.services.writes import run_rerun
from webapp.teams.services import token_issue, token_revoke


def _create(client: Client, samples_file, capture) -> Run:
    with samples_file.open("rb") as handle, capture(execute=True):
        response = client.post("/api/runs", {"file": handle, "dataset": "humaneval/python/en"})
    assert response.status_code == 201, response.content
    return Run.objects.get(pk=response.json()["id"])


def test_run_json_has_status_progress_pass_at_k_and_problems(
    personas, humaneval, samples_file, token_client, django_capture_on_commit_callbacks
):
    client = token_client(personas.owner)
    run = _create(client, samples_file, django_capture_on_commit_callbacks)
    body = client.get(f"/api/runs/{run.pk}").json()
    assert body["status"] == "finished"
    assert body["progress"]["done"] == body["progress"]["total"] == 4
    assert body["progress"]["by_status"]["passed"] == 1
    assert [m["k"] for m in body["pass_at_k"]] == [1, 2]
    pass1 = body["pass_at_k"][0]
    assert pass1["value"] == 0.25  # HumanEval/0: 1 of 2; HumanEval/1: 0 of 2.
    assert pass1["low"] <= pass1["value"] <= pass1["high"]
    # pass^k beside it: one sample alike; both of HumanEval/0's never pass together.
    assert [m["k"] for m in body["pass_hat_k"]] == [1, 2]
    assert body["pass_hat_k"][0]["value"] == 0.25
    assert body["pass_hat_k"][1]["value"] == 0.0
    assert body["pass_hat_k"][1]["low"] <= 0.0 <= body["pass_hat_k"][1]["high"]
    problems = {p["task_id"]: p for p in body["problems"]}
    assert problems["HumanEval/0"]["n"] == 2
    assert problems["HumanEval/0"]["c"] == 1
    assert problems["HumanEval/0"]["pass_at_k"]["1"] == 0.5
    assert problems["HumanEval/1"]["top_failure"].startswith("ValueError")
    assert body["sandbox"] == "none"


def test_results_are_json_lines_in_file_order(personas, humaneval, samples_file, token_client,
                                              django_capture_on_commit_callbacks):
    client = token_client(personas.owner)
    run = _create(client, samples_file, django_capture_on_commit_callbacks)
    response = client.get(f"/api/runs/{run.pk}/results")
    lines = [json.loads(line) for line in response.getvalue().decode().splitlines()]
    assert [(x["task_id"], x["completion_id"]) for x in lines] == [
        ("HumanEval/0", 0), ("HumanEval/0", 1), ("HumanEval/1", 0), ("HumanEval/1", 1)]
    assert [x["passed"] for x in lines] == [True, False, False, False]
    assert lines[2]["status"] == "error"
    assert lines[0]["tests"], "per-test outcomes are kept"


def test_signed_in_browser_can_read_the_api(personas, humaneval, samples_file, token_client,
                                            django_capture_on_commit_callbacks):
    run = _create(token_client(personas.owner), samples_file, django_capture_on_commit_callbacks)
    assert client_for(personas.owner).get(f"/api/runs/{run.pk}").status_code == 200


def test_dataset_list(personas, humaneval, token_client):
    body = token_client(personas.owner).get("/api/datasets").json()
    assert body["datasets"][0]["key"] == "humaneval/python/en"
    assert body["datasets"][0]["problems"] == 164


def test_missing_token_is_401_and_stores_nothing(personas, humaneval, samples_file):
    with samples_file.open("rb") as handle:
        response = Client().post("/api/runs", {"file": handle, "dataset": "humaneval/python/en"})
    assert response.status_code == 401
    assert "token" in response.json()["message"]
    assert Run.objects.count() == 0


def test_session_cookie_cannot_create_runs(personas, humaneval, samples_file):
    # Writes take a token only, so a cross-site form riding on the cookie gets nowhere.
    with samples_file.open("rb") as handle:
        response = client_for(personas.owner).post(
            "/api/runs", {"file": handle, "dataset": "humaneval/python/en"})
    assert response.status_code == 401
    assert Run.objects.count() == 0


def test_revoked_token_is_401_and_stores_nothing(personas, humaneval, samples_file):
    issued = token_issue(user=personas.owner, name="ci")
    assert token_revoke(user=personas.owner, token_id=issued.token.pk)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    with samples_file.open("rb") as handle:
        response = client.post("/api/runs", {"file": handle, "dataset": "humaneval/python/en"})
    assert response.status_code == 401
    assert "revoked" in response.json()["message"]
    assert client.get("/api/datasets").status_code == 401
    assert Run.objects.count() == 0


def test_unknown_token_and_bad_scheme_are_401(personas, humaneval):
    assert Client(HTTP_AUTHORIZATION="Bearer wb_nope_nope").get(
        "/api/datasets").status_code == 401
    assert Client(HTTP_AUTHORIZATION="Basic abc").get("/api/datasets").status_code == 401


def test_token_of_an_inactive_user_is_refused(personas, humaneval):
    issued = token_issue(user=personas.owner, name="ci")
    personas.owner.is_active = False
    personas.owner.save()
    client = Client(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    assert client.get("/api/datasets").status_code == 401


def test_only_a_hash_of_the_token_is_stored(personas):
    issued = token_issue(user=personas.owner, name="ci")
    issued.token.refresh_from_db()
    assert issued.secret not in (issued.token.digest, issued.token.prefix)
    assert issued.secret.startswith(f"wb_{issued.token.prefix}_")


def test_run_page_queries_do_not_grow_with_problems(
    personas, humaneval, samples_file, token_client, django_capture_on_commit_callbacks,
    tmp_path,
):
    # The same page for a run of 2 problems and one of 12 makes the same queries: each
    # section of the page costs a fixed number, whatever the run holds.
    client = token_client(personas.owner)
    small = _create(client, samples_file, django_capture_on_commit_callbacks)
    wider = tmp_path / "wider.jsonl"
    wider.write_text("".join(
        json.dumps({"task_id": f"HumanEval/{n}", "completion": "    return None\n"}) + "\n"
        for n in range(12) for _ in range(2)))
    large = _create(client, wider, django_capture_on_commit_callbacks)
    viewer = client_for(personas.owner)
    counts = []
    for run in (small, large):
        viewer.get(f"/runs/{run.pk}/")  # anything cached per process is cached now
        with CaptureQueriesContext(connection) as queries:
            assert viewer.get(f"/runs/{run.pk}/").status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
    assert counts[0] <= 30, counts


# HumanEval-X's own ids, out of order and repeated, plus odd forms the reader accepts: the
# results carry each exactly as the file wrote it, the aligned id beside it.
SOURCE_IDS = ["Python/23", "Python/0", "Python/2", "Python/23", " python/0 ", "Python/002",
              "HumanEval_23_strlen", "Python/\u0662"]
ALIGNED_IDS = ["HumanEval/23", "HumanEval/0", "HumanEval/2", "HumanEval/23", "HumanEval/0",
               "HumanEval/2", "HumanEval/23", "HumanEval/2"]


def test_results_keep_the_files_task_ids_byte_for_byte(
    personas, humaneval_x_python, token_client, tmp_path, django_capture_on_commit_callbacks
):
    records = [{"task_id": raw, "generation": "    pass\n"} for raw in SOURCE_IDS]
    path = tmp_path / "python_generations.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    client = token_client(personas.owner)
    with path.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/runs", {"file": handle,
                                             "dataset": humaneval_x_python.key})
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])

    def result_lines(run_id: int) -> list[dict[str, Any]]:
        body = client.get(f"/api/runs/{run_id}/results").getvalue().decode()
        for raw in SOURCE_IDS:
            assert json.dumps(raw, ensure_ascii=False) in body
        return [json.loads(line) for line in body.split("\n")[:-1]]

    lines = result_lines(run.pk)
    assert [line["task_id"] for line in lines] == SOURCE_IDS
    assert [line["aligned_task_id"] for line in lines] == ALIGNED_IDS
    assert all(line["status"] == "failed" for line in lines)
    # Pages and per-problem scores stay keyed on the aligned id.
    problems = client.get(f"/api/runs/{run.pk}").json()["problems"]
    assert [p["task_id"] for p in problems] == ["HumanEval/0", "HumanEval/2", "HumanEval/23"]

    with django_capture_on_commit_callbacks(execute=True):
        again = run_rerun(user=personas.owner, run=run)
    assert [line["task_id"] for line in result_lines(again.pk)] == SOURCE_IDS



def test_a_run_that_finishes_during_the_request_is_read_whole(
    personas, unstarted_run, token_client, monkeypatch
):
    """The summary of a run still going is kept a moment (`page_cache.LIVE_SECONDS`), its
    status and progress read fresh. Should the run finish between the request's reading of
    its row and of its status, the answer is drawn anew: never a finished status without
    the scores that came with it."""
    from webapp.runs.api import endpoints as api
    from webapp.runs.models import RunMetric

    client = token_client(personas.owner)
    run = unstarted_run()
    before = client.get(f"/api/runs/{run.pk}").json()
    assert (before["status"], before["pass_at_k"]) == ("queued", [])
    stale = Run.objects.get(pk=run.pk)  # the row as the request read it, before the end
    Run.objects.filter(pk=run.pk).update(status=Run.Status.FINISHED)
    RunMetric.objects.create(run=run, k=1, value=0.5, low=0.25, high=0.75, problems=2)
    monkeypatch.setattr(api, "get_run_for_user", lambda **_: stale)
    body = client.get(f"/api/runs/{run.pk}").json()
    assert body["status"] == "finished"
    assert [(m["k"], m["value"]) for m in body["pass_at_k"]] == [(1, 0.5)]
