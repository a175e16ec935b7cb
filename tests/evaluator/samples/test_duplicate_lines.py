"""Duplicate samples are named with the line that first gave them (issue 26), while what the
reader keeps to find them stays a few bytes a sample, however the file numbers its samples."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

from evaluator.records import Problem
from evaluator.samples import SampleReader, _FirstLines, read_samples

GOOD = {"task_id": "HumanEval/3", "completion": "    return False\n"}


def duplicates(path: Path, problems: list[Problem]) -> list[tuple[int | None, str]]:
    result = read_samples(path, problems)
    return [(issue.line, issue.message) for issue in result.issues
            if issue.code == "duplicate_sample"]


def test_a_repeated_id_names_the_first_line_in_order_or_not(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    lines = [{**GOOD, "completion_id": i} for i in (2, 0, 1, 5, 3, 4)]
    lines += [{**GOOD, "completion_id": 3}, {**GOOD, "completion_id": 2}]
    found = duplicates(write_lines(lines), problems)
    assert [line for line, _ in found] == [7, 8]
    assert "repeats sample 3 of HumanEval/3, already given on line 5." in found[0][1]
    assert "repeats sample 2 of HumanEval/3, already given on line 1." in found[1][1]


def test_sparse_and_huge_ids_are_still_matched(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    ids = (10**12, 7, 5_000_000, 10**12, 7, 5_000_000)
    found = duplicates(write_lines([{**GOOD, "completion_id": i} for i in ids]), problems)
    assert [line for line, _ in found] == [4, 5, 6]
    for (_, message), first in zip(found, (1, 2, 3), strict=True):
        assert message.endswith(f"already given on line {first}.")


def test_the_same_id_in_another_task_is_no_duplicate(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    lines = [{**GOOD, "completion_id": 0}, {**GOOD, "task_id": "HumanEval/4", "completion_id": 0}]
    assert read_samples(write_lines(lines), problems).ok


def test_the_packed_lines_never_outgrow_twice_the_samples() -> None:
    seen = _FirstLines()
    # Ids that would each double a naive array: 0, 64, 192, 448, ...
    index = 0
    for line in range(1, 40):
        seen.add(index, line)
        index = 2 * index + 64
    assert len(seen.dense) <= 2 * seen.count + _FirstLines.SLACK
    index = 0
    for line in range(1, 40):
        assert seen.get(index) == line
        index = 2 * index + 64
    assert seen.get(1) is None
    assert seen.get(-1) is None


def test_what_the_reader_keeps_for_duplicates_is_a_few_bytes_a_sample(
    problems: list[Problem],
) -> None:
    """164,000 samples (1,000 a task) in file order, as the upload limit allows: the old
    dict keyed by (task, index) held about 144 bytes a sample (some 24 MB); the packed
    lines hold 8, with slack."""
    reader = SampleReader(problems)
    per_task = 1_000
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        line = 0
        for problem in problems:
            seen = reader.first_seen.setdefault(problem.task_id, _FirstLines())
            for index in range(per_task):
                line += 1
                seen.add(index, line)
        grown = sum(stat.size_diff for stat in
                    tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    samples = per_task * len(problems)
    assert grown < 16 * samples, f"{grown / samples:.1f} bytes a sample"
    assert reader.first_seen["HumanEval/163"].get(999) == samples
