"""The end-to-end scenario, run against the embedded stack and against PostgreSQL + Redis:
upload through the API, a real worker evaluates, the websocket sees every event in order,
outsiders are refused, and the stored results equal `python -m evaluator evaluate`."""

from __future__ import annotations

from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus

from tests.webapp.services.live_stack import (
    Browser,
    add_user,
    api,
    evaluate_with_cli,
    receive_until_finished,
    verdict,
)
from webapp.stack import Stack

PASSWORD = "a-long-test-password"


def run_scenario(stack: Stack, samples: Path, tmp_path: Path, *, sandbox: str) -> None:
    owner_token = add_user(stack, "owner", PASSWORD)
    outsider_token = add_user(stack, "outsider", PASSWORD)
    # The worker starts after the browser has joined, so it sees the run from its first event.
    stack.start_web()
    stack.wait_ready(timeout=60)

    status, created = api(stack.url, owner_token, "/api/runs", file=samples,
                          fields={"dataset": "humaneval/python/en", "name": "e2e",
                                  "model_name": "test"})
    assert status == 201, created
    run_id = created["id"]
    total = created["coverage"]["samples_total"]

    owner = Browser(stack.url)
    owner.sign_in("owner", PASSWORD)
    outsider = Browser(stack.url)
    outsider.sign_in("outsider", PASSWORD)
    with pytest.raises(InvalidStatus) as refused:
        outsider.websocket(run_id).close()
    assert refused.value.response.status_code == 403
    assert outsider.get(f"/runs/{run_id}/")[0] == 404
    assert api(stack.url, outsider_token, f"/api/runs/{run_id}")[0] == 404

    with owner.websocket(run_id) as socket:
        first = socket.recv(timeout=10)
        stack.start_worker()
        events = [*([__import__("json").loads(first)]),
                  *receive_until_finished(socket, timeout=120)]
    kinds = [event["type"] for event in events]
    assert kinds[0] == "snapshot"
    assert events[0]["status"] == "queued"
    assert kinds[1] == "run_status"
    assert events[1]["status"] == "running"
    assert kinds[-1] == "run_finished"
    assert events[-1]["status"] == "finished"
    finished = [event for event in events if event["type"] == "sample_finished"]
    # One worker process running one program at a time: strictly in order, none missed.
    assert [event["progress"]["done"] for event in finished] == list(range(1, total + 1))
    position = {e["sample_id"]: i for i, e in enumerate(events) if e["type"] == "sample_started"}
    for index, event in enumerate(events):
        if event["type"] == "sample_finished" and event["entry"]["sample_id"] in position:
            assert position[event["entry"]["sample_id"]] < index

    status, summary = api(stack.url, owner_token, f"/api/runs/{run_id}")
    assert status == 200
    assert summary["status"] == "finished"
    assert summary["progress"]["done"] == total
    assert summary["pass_at_k"][0]["k"] == 1
    assert summary["pass_at_k"][0]["value"] == events[-1]["pass_at_k"][0]["value"]

    status, stored = api(stack.url, owner_token, f"/api/runs/{run_id}/results")
    assert status == 200
    reference = evaluate_with_cli(samples, tmp_path / "cli_results.jsonl", sandbox=sandbox)
    assert len(stored) == len(reference) == total
    for line in stored:
        key = (line["task_id"], line["completion_id"])
        ours, theirs = verdict(line), verdict(reference[key])
        differences = {k: (ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]}
        assert not differences, (key, differences)
