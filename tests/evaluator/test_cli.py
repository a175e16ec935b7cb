"""`python -m evaluator evaluate`: results in input order, a summary, clear errors."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.datasets import load_dataset

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaluator", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )


@pytest.fixture
def samples_file(tmp_path: Path) -> Path:
    """Three tasks, two samples each: the canonical solution and a wrong `pass`."""
    problems = load_dataset().problems[:3]
    path = tmp_path / "samples.jsonl"
    with path.open("w") as out:
        for problem in problems:
            for completion in (problem.canonical_solution, "    pass\n"):
                out.write(json.dumps({"task_id": problem.task_id, "completion": completion}) + "\n")
    return path


def test_writes_one_result_per_sample_in_input_order(samples_file: Path, tmp_path: Path) -> None:
    results = tmp_path / "out.jsonl"
    proc = run_cli("evaluate", "--samples", str(samples_file), "--sandbox", "none",
                   "--workers", "2", "--no-cache", "--results", str(results), "--k", "1,2",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in results.open()]
    assert [r["task_id"] for r in rows] == ["HumanEval/0"] * 2 + ["HumanEval/1"] * 2 + [
        "HumanEval/2"] * 2
    assert [r["completion_id"] for r in rows] == [0, 1] * 3
    assert [r["passed"] for r in rows] == [True, False] * 3
    for row in rows:
        assert {"task_id", "completion_id", "passed", "status", "result", "tests"} <= set(row)
    assert rows[0]["result"] == "passed"
    assert rows[1]["result"].startswith("failed: ")
    assert rows[0]["tests"]
    assert all(t["status"] == "passed" for t in rows[0]["tests"])
    assert "pass@1" in proc.stdout
    assert "pass@2" in proc.stdout
    assert "WARNING" in proc.stderr  # the none backend says so every time


def test_json_summary_reports_pass_at_k_and_statuses(samples_file: Path, tmp_path: Path) -> None:
    proc = run_cli("evaluate", "--samples", str(samples_file), "--sandbox", "none",
                   "--no-cache", "--json", "--k", "1,2,10", "--results",
                   str(tmp_path / "r.jsonl"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["pass_at_k"]["pass@1"]["value"] == pytest.approx(0.5)
    assert summary["pass_at_k"]["pass@2"]["value"] == pytest.approx(1.0)
    assert summary["k_not_reportable"] == [10]
    assert summary["statuses"]["passed"] == 3
    assert summary["samples"] == 6


def test_bad_file_is_refused_with_its_line_number(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "HumanEval/0", "completion": "    pass\\n"}\n{not json\n')
    proc = run_cli("evaluate", "--samples", str(bad), "--sandbox", "none", "--no-cache",
                   cwd=tmp_path)
    assert proc.returncode == 2
    assert "line 2" in proc.stderr
    assert "nothing was evaluated" in proc.stderr
    assert not list(tmp_path.glob("*_results.jsonl"))


def test_truncated_gzip_is_refused(tmp_path: Path) -> None:
    data = gzip.compress(b'{"task_id": "HumanEval/0", "completion": "    pass\\n"}\n' * 50)
    bad = tmp_path / "cut.jsonl.gz"
    bad.write_bytes(data[: len(data) // 2])
    proc = run_cli("evaluate", "--samples", str(bad), "--sandbox", "none", "--no-cache",
                   cwd=tmp_path)
    assert proc.returncode == 2
    assert "gzip" in proc.stderr.lower()


def test_unknown_sandbox_backend_is_a_clear_error(samples_file: Path, tmp_path: Path) -> None:
    proc = run_cli("evaluate", "--samples", str(samples_file), "--sandbox", "docker",
                   "--no-cache", cwd=tmp_path)
    assert proc.returncode == 2
    assert "unknown sandbox backend 'docker'" in proc.stderr


def test_warm_compilers_are_on_unless_switched_off() -> None:
    from evaluator.__main__ import _engine, build_parser

    parser = build_parser()
    common = ["--sandbox", "none", "--no-cache"]
    warm = _engine(parser.parse_args(["evaluate", "--samples", "s.jsonl", *common]))
    cold = _engine(parser.parse_args(["evaluate", "--samples", "s.jsonl", *common,
                                      "--no-warm-compilers"]))
    assert warm.config.warm_compilers is True
    assert cold.config.warm_compilers is False
