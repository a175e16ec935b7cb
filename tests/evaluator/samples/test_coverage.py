"""Coverage is reported for any file, never asserted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evaluator.records import Problem
from evaluator.samples import read_samples


def test_reports_missing_tasks_and_unequal_sample_counts(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    records = [{"task_id": "HumanEval/0", "completion": f"    return {i}\n"} for i in range(5)]
    records += [{"task_id": "HumanEval/1", "completion": f"    return [{i}]\n"} for i in range(3)]
    result = read_samples(write_lines(records), problems)
    assert result.ok  # a partial file is valid; coverage says what it covers
    coverage = result.coverage
    assert coverage.tasks_total == 164
    assert coverage.tasks_with_samples == 2
    assert coverage.samples_total == 8
    assert coverage.samples_per_task == {"HumanEval/0": 5, "HumanEval/1": 3}
    assert (coverage.min_n, coverage.max_n, coverage.max_k) == (3, 5, 3)
    assert coverage.unequal_n
    assert len(coverage.missing_tasks) == 162
    assert coverage.missing_tasks[:2] == ("HumanEval/2", "HumanEval/3")


def test_equal_counts_give_max_k_equal_to_n(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    records = [
        {"task_id": problem.task_id, "completion": "    pass\n", "completion_id": i}
        for problem in problems[:3]
        for i in range(4)
    ]
    coverage = read_samples(write_lines(records), problems[:3]).coverage
    assert (coverage.min_n, coverage.max_k, coverage.unequal_n) == (4, 4, False)
    assert coverage.missing_tasks == ()


def test_no_samples_means_max_k_zero(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    result = read_samples(write_lines(["{bad json"]), problems)
    coverage = result.coverage
    assert (coverage.tasks_with_samples, coverage.min_n, coverage.max_k) == (0, 0, 0)
    assert not coverage.unequal_n
    assert len(coverage.missing_tasks) == 164
