"""A broken machine never becomes a score: a harness that never started, a compiler the
sandbox could not start or a toolchain that is missing gives `sandbox_error`, which is not a
verdict; the command line then publishes no pass@k, exits non-zero and names the cause."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.__main__ import INFRASTRUCTURE_EXIT
from evaluator.languages.base import judge
from tests.polyglot import generations, write_dataset
from tests.webapp.support import write_jsonl

REPO_ROOT = Path(__file__).resolve().parents[2]
NODE_LOADER = ("node:internal/modules/cjs/loader:1143\n  throw err;\n  ^\n\n"
               "Error: Cannot find module '/tmp/x/evaluator/languages/runtime/js/harness.js'\n")


def _run(**step: object) -> dict[str, object]:
    return {"name": "run", "exit_code": 1, "stderr": "", "stdout": "", **step}


def test_a_harness_that_never_reported_its_plan_did_not_start():
    answer = {"steps": [_run(stderr=NODE_LOADER)], "records": []}
    verdict = judge(answer, harness_reports_first=True)
    assert (verdict.status, verdict.error_type) == ("sandbox_error", "HarnessDidNotStart")
    assert "Cannot find module" in verdict.message
    assert verdict.message.startswith("infrastructure failure")


def test_the_same_answer_is_a_verdict_for_a_language_whose_harness_reports_late():
    answer = {"steps": [_run(stderr=NODE_LOADER)], "records": []}
    assert judge(answer).status == "error"


def test_a_program_that_exits_after_the_plan_keeps_its_verdict():
    answer = {"steps": [_run()], "records": [{"kind": "plan", "sites": []}]}
    verdict = judge(answer, harness_reports_first=True)
    assert (verdict.status, verdict.error_type) == ("error", "IncompleteRun")


@pytest.mark.parametrize("stopped", [{"cpu_timed_out": True}, {"oom_killed": True},
                                     {"signal": 9}, {"output_exceeded": True}])
def test_a_program_stopped_by_a_limit_is_judged_by_the_limit(stopped):
    verdict = judge({"steps": [_run(**stopped)], "records": []}, harness_reports_first=True)
    assert verdict.status != "sandbox_error"


@pytest.mark.parametrize("code", [126, 127])
def test_a_compiler_the_sandbox_could_not_start_is_no_compile_error(code):
    answer = {"steps": [{"name": "compile", "exit_code": code,
                         "stderr": "sh: 1: g++: not found\n"}], "records": []}
    verdict = judge(answer)
    assert (verdict.status, verdict.error_type) == ("sandbox_error", "ToolchainDidNotStart")
    assert "g++: not found" in verdict.message


def test_a_compiler_that_rejects_the_program_is_a_compile_error():
    answer = {"steps": [{"name": "compile", "exit_code": 1,
                         "stderr": "program.cpp:3:1: error: expected ';'\n"}], "records": []}
    assert judge(answer).status == "compile_error"


def _cli(tmp_path: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    dataset = write_dataset(tmp_path, "js")
    samples = write_jsonl(tmp_path / "samples.jsonl", generations("js", copies=1))
    return subprocess.run(
        [sys.executable, "-m", "evaluator", "evaluate", "--dataset-file", str(dataset),
         "--samples", str(samples), "--results", str(tmp_path / "results.jsonl"),
         "--cache", str(tmp_path / "cache.sqlite"), "--json", *extra],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, **env})


def test_the_cli_gives_no_score_over_a_missing_toolchain_and_names_it(tmp_path):
    done = _cli(tmp_path, {"EVALUATOR_NODE": str(tmp_path / "no-such" / "node")})
    assert done.returncode == INFRASTRUCTURE_EXIT, done.stderr
    summary = json.loads(done.stdout)
    assert summary["pass_at_k"] == summary["pass_hat_k"] == {}
    failures = summary["infrastructure_failures"]
    assert failures["samples"] == summary["samples"] > 0
    assert "Node.js is not installed" in done.stderr
    assert "could not be judged" in done.stderr
    results = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert {r["status"] for r in results} == {"sandbox_error"}
    # Nothing the machine failed is kept for next time.
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        assert all(db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] == 0 for t in tables)


def test_the_cli_scores_the_same_file_once_the_toolchain_is_there(tmp_path):
    done = _cli(tmp_path, {}, "--sandbox", "standard")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert "infrastructure_failures" not in summary
    assert summary["pass_at_k"]["pass@1"]["value"] == 1.0


def test_a_program_that_exits_at_once_is_judged_not_taken_for_the_machine(tmp_path):
    # Its own code runs after the harness reported its plan, so it cannot pass for a
    # harness that never started, and pause a run.
    records = [{**record, "completion": "process.exit(1);\n" + record["completion"]}
               for record in generations("js", copies=1)]
    dataset = write_dataset(tmp_path, "js")
    samples = write_jsonl(tmp_path / "exits.jsonl", records)
    done = subprocess.run(
        [sys.executable, "-m", "evaluator", "evaluate", "--dataset-file", str(dataset),
         "--samples", str(samples), "--results", str(tmp_path / "r.jsonl"), "--no-cache",
         "--sandbox", "standard", "--json"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert results
    assert all(r["status"] == "error" for r in results), results
