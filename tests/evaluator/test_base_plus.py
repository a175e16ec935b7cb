"""Base beside plus from one evaluation on a plus test set (`evaluator.metrics_plus`), and the
command line's report of both (issue 25)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator import records
from evaluator.datasets import load_dataset
from evaluator.metrics_plus import base_plus_scores, passed_base, run_base_plus
from evaluator.records import Problem, SampleResult
from tests.evaluator.test_cli import run_cli

RIGHT_0 = load_dataset().problems[0].canonical_solution
WRONG_0 = "    return False\n"
LONG_LISTS_WRONG_0 = "    if len(numbers) > 6:\n        return False\n" + RIGHT_0
"""Right on HumanEval's tests for HumanEval/0 (no list is longer than six), wrong on
HumanEval+'s longer ones: the sample EvalPlus was made to catch."""

CPP_PLUS = Problem(
    dataset="humaneval-x", task_id="HumanEval/0", language="cpp", natural_language="en",
    prompt="", entry_point="f", canonical_solution="", test="",
    extra={"plus": {"set": "mini", "kept": [0, 1, 4], "groups": ["base", "base", "plus"]}},
)
"""A HumanEval-X+ problem: its groups are in `extra`, not on its tests."""


def _result(*statuses: str, whole: str = "failed") -> SampleResult:
    tests = tuple(records.TestOutcome(index=i, source=f"assert {i}", status=s)  # type: ignore[arg-type]
                  for i, s in enumerate(statuses))
    return SampleResult(task_id="HumanEval/0", completion_id=0, status=whole,  # type: ignore[arg-type]
                        program_hash="h", tests=tests)


@pytest.mark.parametrize(("statuses", "base"), [
    (("passed", "passed", "failed"), True),
    (("passed", "failed", "passed"), False),
    (("passed",), False),  # the program stopped before its second base test
    ((), False),  # it never compiled
])
def test_base_verdict_reads_the_groups_humaneval_x_plus_records(statuses, base):
    assert passed_base(CPP_PLUS, _result(*statuses)) is base


def test_plus_never_exceeds_base_and_both_share_the_resampled_problems():
    problems = {"HumanEval/0": CPP_PLUS}
    results = [_result("passed", "passed", "passed", whole="passed"),
               _result("passed", "passed", "failed"), _result("failed", "passed", "failed")]
    scores = run_base_plus(problems, results, [1, 10])
    assert scores is not None
    (base,), (plus,) = scores.base, scores.plus
    assert base.k == plus.k == 1
    assert (base.value, plus.value) == pytest.approx((2 / 3, 1 / 3))
    assert scores.to_dict()["drop"] == {"pass@1": pytest.approx(1 / 3)}


def test_no_plus_tests_no_scores():
    plain = Problem(dataset="humaneval", task_id="HumanEval/0", language="python",
                    natural_language="en", prompt="", entry_point="f", canonical_solution="",
                    test="assert True")
    assert run_base_plus({"HumanEval/0": plain}, [_result("passed", whole="passed")], [1]) is None
    assert base_plus_scores({}, [1]) is None


def test_cli_reports_base_and_plus_on_humanevalplus(fixtures_dir: Path, tmp_path: Path):
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": "HumanEval/0", "completion": c}) + "\n"
                               for c in (RIGHT_0, LONG_LISTS_WRONG_0, WRONG_0)))
    dataset = str(fixtures_dir / "plus" / "HumanEvalPlus-Mini.jsonl")
    args = ("evaluate", "--dataset-file", dataset, "--samples", str(samples), "--sandbox",
            "none", "--no-cache", "--k", "1,3", "--results", str(tmp_path / "r.jsonl"))
    proc = run_cli(*args, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)["base_plus"]
    assert summary["problems"] == 1
    assert summary["base"]["pass@1"]["value"] == pytest.approx(2 / 3)
    assert summary["plus"]["pass@1"]["value"] == pytest.approx(1 / 3)
    assert summary["base"]["pass@3"]["value"] == summary["plus"]["pass@3"]["value"] == 1.0
    assert summary["drop"]["pass@1"] == pytest.approx(1 / 3)
    text = run_cli(*args, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "pass@1    base 0.6667" in text.stdout
    assert "plus 0.3333" in text.stdout


def test_cli_leaves_base_plus_out_without_plus_tests(tmp_path: Path):
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "completion": RIGHT_0}) + "\n")
    proc = run_cli("evaluate", "--samples", str(samples), "--sandbox", "none", "--no-cache",
                   "--k", "1", "--json", "--results", str(tmp_path / "r.jsonl"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "base_plus" not in json.loads(proc.stdout)


def build_js_plus(shared_dir: Path, out: Path) -> Path:
    """HumanEval-X+ Mini for JavaScript's HumanEval/0, built from the shared datasets."""
    datasets = shared_dir / "datasets"
    proc = run_cli("datasets", "build-plus", "--set", "mini", "--languages", "js", "--tasks",
                   "0", "--out", str(out), "--humanevalplus", str(datasets / "humanevalplus"),
                   "--humaneval-x", str(datasets / "humaneval-x"), cwd=out.parent)
    assert proc.returncode == 0, proc.stderr
    return out / "humaneval_js.jsonl.gz"


def js_samples(plus_file: Path) -> list[dict[str, str]]:
    """HumanEval-X's canonical JavaScript, the same wrong on lists longer than six, and a
    constant: two pass the base inputs, one the plus inputs."""
    right = load_dataset(path=plus_file).problems[0].canonical_solution
    return [{"task_id": "JavaScript/0", "generation": c} for c in (
        right, "  if (numbers.length > 6) { return false; }\n" + right, "  return false;\n}\n")]


def test_cli_reports_base_and_plus_on_humaneval_x_plus(shared_dir: Path, tmp_path: Path):
    plus_file = build_js_plus(shared_dir, tmp_path / "plus")
    samples = tmp_path / "js.jsonl"
    samples.write_text("".join(json.dumps(s) + "\n" for s in js_samples(plus_file)))
    proc = run_cli("evaluate", "--dataset-file", str(plus_file), "--samples", str(samples),
                   "--sandbox", "none", "--no-cache", "--k", "1", "--json", "--results",
                   str(tmp_path / "r.jsonl"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    scores = json.loads(proc.stdout)["base_plus"]
    assert scores["base"]["pass@1"]["value"] == pytest.approx(2 / 3)
    assert scores["plus"]["pass@1"]["value"] == pytest.approx(1 / 3)
