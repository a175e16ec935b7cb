"""bench/evalplus_agreement.py: reading EvalPlus's results, comparing verdicts per sample,
reading a cause, and (with ../shared and the EvalPlus venv) one small real run."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.evalplus_agreement import (
    DEFAULT_VENV,
    EvalPlusRow,
    SampleSource,
    Verdict,
    collect_samples,
    disagreements,
    evalplus_pass_at_1,
    evalplus_verdicts,
    our_verdicts,
    pass_at_1,
    read_cause,
    write_inputs,
)
from evaluator.datasets import load_dataset
from tests.conftest import REPO_ROOT

RECORD: dict[str, Any] = {
    "task_id": "HumanEval/0", "prompt": "def double(x):\n",
    "entry_point": "double", "canonical_solution": "    return 2 * x\n",
    "test": "", "contract": "", "atol": 0,
    "base_input": [[1], [2]], "plus_input": [[10], [11], [12]],
}


def _their_row(base: str, plus: str | None, *, base_fail: list[Any] | None = None,
               plus_fail: list[Any] | None = None) -> EvalPlusRow:
    return {"task_id": "HumanEval/0", "solution": "", "base_status": base,
            "plus_status": plus, "base_fail_tests": base_fail or [],
            "plus_fail_tests": plus_fail or []}


def _our_row(task_id: str, index: int, statuses: list[str]) -> dict[str, Any]:
    """A row of our results file with one test per input: two base, then plus ones."""
    tests = [{"index": i, "source": f"double({i})", "status": status,
              "group": "base" if i < 2 else "plus", "duration_ms": 3.0}
             for i, status in enumerate(statuses)]
    whole = "passed" if all(s == "passed" for s in statuses) else "failed"
    return {"task_id": task_id, "completion_id": index, "status": whole,
            "program_hash": "x", "tests": tests}


def test_evalplus_verdicts_follow_completion_order_and_plus_needs_base() -> None:
    results = {"eval": {"HumanEval/0": [_their_row("pass", "pass"), _their_row("pass", "fail"),
                                        _their_row("fail", "pass")],
                        "HumanEval/1": [_their_row("timeout", "timeout")]}}
    verdicts = evalplus_verdicts(results)
    assert verdicts[("HumanEval/0", 0)] == Verdict(True, True, "pass/pass")
    assert verdicts[("HumanEval/0", 1)] == Verdict(True, False, "pass/fail")
    # EvalPlus's plus score counts base_status == plus_status == pass.
    assert verdicts[("HumanEval/0", 2)] == Verdict(False, False, "fail/pass")
    assert verdicts[("HumanEval/1", 0)].base is False


def test_our_verdicts_judge_base_by_the_base_tests_alone(tmp_path: Path) -> None:
    path = tmp_path / "HumanEvalPlus.jsonl"
    path.write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    problems = {p.task_id: p for p in load_dataset(path=path).problems}
    rows = [_our_row("HumanEval/0", 0, ["passed"] * 5),
            _our_row("HumanEval/0", 1, ["passed", "passed", "passed", "failed", "passed"]),
            _our_row("HumanEval/0", 2, ["passed", "timeout", "passed", "passed", "passed"])]
    verdicts = our_verdicts(rows, problems)
    assert [(v.base, v.plus) for v in verdicts.values()] == [
        (True, True), (True, False), (False, False)]


def test_disagreements_list_each_sample_whose_base_or_plus_differs() -> None:
    ours = {("HumanEval/2", 0): Verdict(True, True, "passed"),
            ("HumanEval/10", 0): Verdict(True, False, "failed"),
            ("HumanEval/10", 1): Verdict(False, False, "failed")}
    theirs = {("HumanEval/2", 0): Verdict(True, False, "pass/fail"),
              ("HumanEval/10", 0): Verdict(True, False, "pass/fail"),
              ("HumanEval/10", 1): Verdict(True, True, "pass/pass")}
    # In task order (2 before 10), not in string order.
    assert disagreements(ours, theirs) == [("HumanEval/2", 0), ("HumanEval/10", 1)]
    assert pass_at_1(ours, "base") == pytest.approx((1 + 0.5) / 2)
    assert pass_at_1(theirs, "plus") == pytest.approx((0 + 0.5) / 2)


def test_disagreements_refuse_two_different_sets_of_samples() -> None:
    one = {("HumanEval/0", 0): Verdict(True, True, "passed")}
    other = {("HumanEval/0", 1): Verdict(True, True, "pass/pass")}
    with pytest.raises(ValueError, match="different samples"):
        disagreements(one, other)


def test_reads_evalplus_printed_pass_at_1_through_colour_codes() -> None:
    printed = ("\x1b[31mhumaneval (base tests)\x1b[0m\n\x1b[31mpass@1:\t0.625\x1b[0m\n"
               "\x1b[32mhumaneval+ (base + extra tests)\x1b[0m\n\x1b[32mpass@1:\t0.500\x1b[0m\n")
    assert evalplus_pass_at_1(printed) == {"base": 0.625, "plus": 0.5}
    assert evalplus_pass_at_1("Reading samples...\n") == {}


def test_cause_names_the_input_evalplus_stopped_at_with_its_limit_and_our_time() -> None:
    ours = _our_row("HumanEval/0", 0, ["passed"] * 5)
    theirs = _their_row("pass", "fail", plus_fail=[[11]])
    cause = read_cause(ours, theirs, RECORD, {"base": [0.0, 0.0], "plus": [0.0, 0.5, 0.0]})
    # Input 11 is the second plus input: our test 3; EvalPlus's limit max(1, 4 x 0.5).
    assert cause == ("EvalPlus failed plus input 1 ([11]; its limit there 2.00 s wall); "
                     "ours on it: passed in 3 ms")


def test_cause_reports_our_first_failing_test_and_a_whole_sample_timeout() -> None:
    ours = _our_row("HumanEval/0", 0, ["passed", "passed", "timeout", "passed", "passed"])
    ours["tests"][2]["message"] = "this input took more than its limit of 1 s of CPU"
    theirs = _their_row("pass", "timeout")
    cause = read_cause(ours, theirs, RECORD, {})
    assert cause.startswith("EvalPlus: the whole sample ran past its wall limit")
    assert cause.endswith("ours failed test 2 (plus) timeout: this input took more than its "
                          "limit of 1 s of CPU")


def test_cause_tells_a_program_evalplus_failed_before_its_first_input() -> None:
    # As doctest.testmod() at the top level: EvalPlus's guard has set `open` to None.
    ours = _our_row("HumanEval/0", 0, ["passed"] * 5)
    cause = read_cause(ours, _their_row("fail", "fail"), RECORD, {})
    assert cause.startswith("EvalPlus failed the program before its first base input")
    # A named failing input is not that case, nor is a timeout.
    for theirs in (_their_row("fail", "fail", base_fail=[[2]]), _their_row("timeout", "fail")):
        assert "before its first" not in read_cause(ours, theirs, RECORD, {})
    assert "before its first plus input" in read_cause(
        ours, _their_row("pass", "fail"), RECORD, {})


def test_inputs_hold_only_the_tasks_with_samples_numbered_per_task(tmp_path: Path) -> None:
    release = tmp_path / "shared" / "datasets" / "humanevalplus" / "HumanEvalPlus.jsonl.gz"
    release.parent.mkdir(parents=True)
    second = {**RECORD, "task_id": "HumanEval/1"}
    with gzip.open(release, "wt", encoding="utf-8") as out:
        out.write(json.dumps(RECORD) + "\n" + json.dumps(second) + "\n")
    sources = [SampleSource("a", "HumanEval/1", "    return x + x\n"),
               SampleSource("b", "HumanEval/1", "    return x\n")]
    work = tmp_path / "work"
    work.mkdir()
    dataset_file, samples_file, placed, records = write_inputs(
        work, tmp_path / "shared", "full", sources, 0)
    # EvalPlus asserts that every task of its file has samples: HumanEval/0 has none.
    assert list(records) == ["HumanEval/1"]
    assert [json.loads(line)["task_id"] for line in dataset_file.read_text().splitlines()] == [
        "HumanEval/1"]
    rows = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert [(r["completion_id"], r["completion"]) for r in rows] == [
        (0, "    return x + x\n"), (1, "    return x\n")]
    assert placed[("HumanEval/1", 1)].model == "b"


def test_codegen_samples_from_an_offset_are_the_next_ones_per_task(shared_dir: Path) -> None:
    # Chunks of CodeGen-16B's samples, each run on its own, add up to the first N.
    first_five = collect_samples([], 5, shared_dir)
    chunk = collect_samples([], 2, shared_dir, codegen_from=3)
    assert len(first_five) == 5 * 164
    assert len(chunk) == 2 * 164
    by_task: dict[str, list[str]] = {}
    for source in first_five:
        by_task.setdefault(source.task_id, []).append(source.completion)
    taken: dict[str, list[str]] = {}
    for source in chunk:
        taken.setdefault(source.task_id, []).append(source.completion)
    assert taken == {task: raws[3:] for task, raws in by_task.items()}
    assert {s.model for s in chunk} == {"codegen-16b"}


@pytest.mark.slow
def test_a_small_real_run_agrees_and_reports_the_wall_time_ratio(shared_dir: Path) -> None:
    python = DEFAULT_VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no EvalPlus venv at {DEFAULT_VENV} (bench/evalplus_agreement.py "
                    "--install creates it)")
    done = subprocess.run(
        [sys.executable, "bench/evalplus_agreement.py", "--models", "qwen2.5-coder_7b",
         "--tasks", "4"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        check=False, env={"WORKBENCH_SHARED": str(shared_dir), "PATH": "/usr/bin:/bin",
                          "HOME": str(Path.home())})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"^qwen2\.5-coder_7b\s+4\s+4/4\s+4/4 ", done.stdout, re.M), done.stdout
    assert "disagreements: 0 of 4 samples" in done.stdout
    assert re.search(r"wall time ours / EvalPlus: [\d.]+ s / [\d.]+ s = [\d.]+; load",
                     done.stdout), done.stdout
