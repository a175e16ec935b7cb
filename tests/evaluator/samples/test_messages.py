"""Each problem in a generation file is named precisely: its line, its column where there
is one, its field, and what would have been valid. The web upload shows these same
messages (tests/webapp/runs/test_upload_checks.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from evaluator.records import Problem
from evaluator.samples import read_samples

REPO = Path(__file__).resolve().parents[3]
GOOD = {"task_id": "HumanEval/0", "completion": "    return False\n"}


def test_json_error_is_reported_at_its_real_column(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    broken = '{"task_id": "HumanEval/0","completion": \'x\'}'
    assert broken.index("'") == 40
    result = read_samples(write_lines([json.dumps(GOOD), broken]), problems)
    [issue] = result.issues
    assert (issue.line, issue.column, issue.code) == (2, 41, "bad_json")
    assert issue.message.startswith("Line 2, column 41: not valid JSON at \"'x'}\": expected a "
                                    'JSON value (a "string" in double quotes')


def test_column_counts_characters_not_bytes(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    broken = '{"task_id": "Задача/0", "completion": x}'
    [issue] = read_samples(write_lines([broken]), problems).issues
    assert issue.column == broken.index("x") + 1


def test_string_broken_by_a_raw_line_break_names_where_it_starts(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    result = read_samples(write_lines(['{"task_id": "HumanEval/0", "completion": "    return 1',
                                       '"}']), problems)
    first = result.issues[0]
    assert (first.line, first.column) == (1, 42)
    assert "the string that starts at column 42 is not closed on this line" in first.message
    assert "\\n" in first.message


def test_raw_tab_in_a_string_is_named(write_lines: Callable[..., Path],
                                      problems: list[Problem]) -> None:
    [issue] = read_samples(write_lines(['{"task_id": "HumanEval/0", "completion": "\tx"}']),
                           problems).issues
    assert issue.column == 43
    assert "raw control character (U+0009)" in issue.message


def test_random_bytes_get_one_summary_and_three_rows(tmp_path: Path,
                                                    problems: list[Problem]) -> None:
    path = tmp_path / "noise.jsonl"
    path.write_bytes(b"".join(bytes([0xff, 0x80 + i % 60, 0xfe]) * 7 + b"\n" for i in range(92)))
    issues = read_samples(path, problems).issues
    assert [i.code for i in issues] == ["not_jsonl", "not_utf8", "not_utf8", "not_utf8"]
    assert issues[0].message.startswith(
        "This is not a JSON Lines file: 92 of 92 lines are unreadable")
    assert (issues[1].line, issues[1].column) == (1, 1)


def test_garbage_before_good_records_is_counted_not_listed(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    issues = read_samples(write_lines([*["nope"] * 10, json.dumps(GOOD)]), problems).issues
    assert [i.line for i in issues] == [1, 2, 3, 4]
    assert issues[3].message == "Lines 4–10: 7 more lines that are not JSON objects " \
        "(not listed one by one)."


def test_endless_garbage_stops_reading(tmp_path: Path, problems: list[Problem]) -> None:
    path = tmp_path / "noise.jsonl"
    path.write_bytes(b"\xff\n" * 50_000)
    issues = read_samples(path, problems).issues
    assert len(issues) == 4
    assert "the first 10,003 lines are all unreadable, so reading stopped" in issues[0].message


def test_task_id_in_another_form_is_named_with_the_datasets_own(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    lines = [{"task_id": f"humaneval_{n}", "completion": "    pass\n"} for n in range(3)]
    result = read_samples(write_lines(lines), problems)
    assert result.ok
    [warning] = result.warnings
    assert (warning.line, warning.field, warning.code) == (1, "task_id", "nonstandard_task_id")
    assert warning.message == (
        'Line 1, field `task_id`: "humaneval_0" is not a task id of humaneval/python, whose '
        'ids look like "HumanEval/0"; it was read as HumanEval/0. 2 more lines use ids that '
        "are not the dataset's own."
    )


def test_unknown_task_id_says_what_is_valid(write_lines: Callable[..., Path],
                                            problems: list[Problem]) -> None:
    [issue] = read_samples(write_lines([{"task_id": "HumanEval/164", "completion": "x"}]),
                           problems).issues
    assert issue.message == (
        'Line 1, field `task_id`: "HumanEval/164" is not a task of humaneval/python: there is '
        'no problem number 164 (they run 0–163). Ids there look like "HumanEval/0".'
    )


def test_cli_prints_the_same_messages(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + '{"task_id": "HumanEval/0","completion": \'x\'}\n')
    done = subprocess.run(
        [sys.executable, "-m", "evaluator", "evaluate", "--samples", str(path),
         "--sandbox", "none"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        check=False, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode != 0
    assert "error: Line 2, column 41: not valid JSON at \"'x'}\"" in done.stderr
