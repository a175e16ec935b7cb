"""`python -m evaluator evaluate`: results in input order, a summary, clear errors."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
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
    assert "pass^2" in proc.stdout
    assert "WARNING" in proc.stderr  # the none backend says so every time


def test_json_summary_reports_pass_at_k_and_statuses(samples_file: Path, tmp_path: Path) -> None:
    proc = run_cli("evaluate", "--samples", str(samples_file), "--sandbox", "none",
                   "--no-cache", "--json", "--k", "1,2,10", "--results",
                   str(tmp_path / "r.jsonl"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["pass_at_k"]["pass@1"]["value"] == pytest.approx(0.5)
    assert summary["pass_at_k"]["pass@2"]["value"] == pytest.approx(1.0)
    # One pass and one failure per problem: a draw of 1 passes half the time, a draw of
    # both never passes whole.
    assert summary["pass_hat_k"]["pass^1"]["value"] == pytest.approx(0.5)
    assert summary["pass_hat_k"]["pass^2"]["value"] == pytest.approx(0.0)
    assert summary["k_not_reportable"] == [10]
    assert summary["statuses"]["passed"] == 3
    assert summary["samples"] == 6


def test_bad_file_is_refused_with_its_line_number(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "HumanEval/0", "completion": "    pass\\n"}\n{not json\n')
    proc = run_cli("evaluate", "--samples", str(bad), "--sandbox", "none", "--no-cache",
                   cwd=tmp_path)
    assert proc.returncode == 2
    assert "Line 2" in proc.stderr
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


# -- hostile files ----------------------------------------------------------------------------
def _gzip_bomb(path: Path, expanded_bytes: int) -> Path:
    """Valid sample lines, compressed about a thousand to one."""
    line = json.dumps({"task_id": "HumanEval/0", "completion": "    return False\n"}) + "\n"
    path.write_bytes(gzip.compress(line.encode() * (expanded_bytes // len(line) + 1)))
    return path


def test_gzip_bomb_samples_are_refused_quickly_and_nothing_is_written(tmp_path: Path) -> None:
    bomb = _gzip_bomb(tmp_path / "bomb.jsonl.gz", 64 * 1024 * 1024)
    assert bomb.stat().st_size < 1024 * 1024
    results = tmp_path / "out.jsonl"
    started = time.monotonic()
    proc = run_cli("evaluate", "--samples", str(bomb), "--sandbox", "none", "--no-cache",
                   "--results", str(results), "--max-expanded-bytes", str(1024 * 1024),
                   cwd=tmp_path)
    assert time.monotonic() - started < 60
    assert proc.returncode == 2
    assert f"{bomb}: error: The file expands to more than 1,048,576 bytes" in proc.stderr
    assert "--max-expanded-bytes" in proc.stderr
    assert "nothing was evaluated" in proc.stderr
    assert list(tmp_path.iterdir()) == [bomb]


def test_gzip_bomb_dataset_file_is_refused(tmp_path: Path) -> None:
    problem = json.dumps({"task_id": "HumanEval/0", "prompt": "def f():\n", "entry_point": "f",
                          "canonical_solution": "    pass\n", "test": ""}) + "\n"
    bomb = tmp_path / "HumanEval.jsonl.gz"
    bomb.write_bytes(gzip.compress(problem.encode() * 20_000))
    for command in (["selfcheck"], ["evaluate", "--samples", str(bomb)]):
        proc = run_cli(*command, "--dataset-file", str(bomb), "--sandbox", "none",
                       "--no-cache", "--max-expanded-bytes", "4096", cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert f"error: {bomb}: inflates to more than 4096 bytes" in proc.stderr


def test_expansion_limit_defaults_to_one_gibibyte_and_must_be_positive(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from evaluator.__main__ import build_parser

    parser = build_parser()
    for command in (["evaluate", "--samples", "s.jsonl"], ["selfcheck"]):
        assert parser.parse_args(command).max_expanded_bytes == 1024 ** 3
    with pytest.raises(SystemExit):
        parser.parse_args(["selfcheck", "--max-expanded-bytes", "0"])
    assert "expected at least 1 byte" in capsys.readouterr().err


def test_lone_surrogate_is_refused_before_anything_is_evaluated(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "HumanEval/0", "completion": "    return False\\n"}\n'
                   '{"task_id": "HumanEval/0", "completion": "    return True  # \\ud800\\n"}\n')
    proc = run_cli("evaluate", "--samples", str(bad), "--sandbox", "none", "--no-cache",
                   cwd=tmp_path)
    assert proc.returncode == 2
    assert ": error: Line 2, field `completion`: holds \\ud800, a lone surrogate" in proc.stderr
    assert "line 2: Line 2" not in proc.stderr  # the place is said once
    assert "nothing was evaluated" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "WARNING" not in proc.stderr, "refused before a sandbox was started"
    assert list(tmp_path.iterdir()) == [bad]


def test_lone_surrogate_made_by_the_program_is_written_escaped(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0",
                                   "completion": "    raise ValueError('\\ud800')\n"}) + "\n")
    results = tmp_path / "out.jsonl"
    proc = run_cli("evaluate", "--samples", str(samples), "--sandbox", "none", "--no-cache",
                   "--results", str(results), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (row,) = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert row["result"] == "failed: \\ud800"
    assert row["tests"][0]["message"] == "\\ud800"


@pytest.mark.parametrize(("completion", "status"), [
    ("    return\u0000 False\n", "compile_error"),
    ("    return False  # \u202e\u2066 ')eslaF nruter' \u2069\u202c\n", "failed"),
    ("    return False  # \u2028\n", "failed"),
])
def test_odd_characters_in_a_completion_are_evaluated(tmp_path: Path, completion: str,
                                                      status: str) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "completion": completion},
                                  ensure_ascii=False) + "\n", encoding="utf-8")
    results = tmp_path / "out.jsonl"
    proc = run_cli("evaluate", "--samples", str(samples), "--sandbox", "none", "--no-cache",
                   "--results", str(results), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # Split on "\n" only: str.splitlines would also split at U+2028.
    (row,) = [json.loads(line) for line in results.read_text(encoding="utf-8").split("\n")
              if line]
    assert row["status"] == status
    assert row["completion"] == completion


@pytest.mark.parametrize(("content", "expected"), [
    (b'{"task_id": "HumanEval/0", "completion": "' + b"#" * 1_100_000 + b'"}\n',
     ": error: Line 1 is 1,100,0"),
    (b'{"task_id": "HumanEval/0", "completion": "    return False  # caf\xe9\\n"}\n',
     ": error: Line 1, column 66: byte 0xe9 (byte offset 65) is not valid UTF-8"),
])
def test_huge_line_and_non_utf8_are_clear_errors(tmp_path: Path, content: bytes,
                                                 expected: str) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_bytes(content)
    proc = run_cli("evaluate", "--samples", str(samples), "--sandbox", "none", "--no-cache",
                   cwd=tmp_path)
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr
