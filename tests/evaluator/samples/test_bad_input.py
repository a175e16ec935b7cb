"""Hostile and broken generation files: every problem is reported with its line and field."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evaluator.records import Problem
from evaluator.samples import FileIssue, iter_records, read_samples

GOOD = {"task_id": "HumanEval/0", "completion": "    return False\n"}


def only_issue(path: Path, problems: list[Problem], **kwargs: Any) -> FileIssue:
    result = read_samples(path, problems, **kwargs)
    assert not result.ok
    assert len(result.issues) == 1, result.issues
    return result.issues[0]


def test_rejects_bad_json_naming_the_line(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines([GOOD, '{"task_id": "HumanEval/1", "completion": '])
    issue = only_issue(path, problems)
    assert (issue.code, issue.line, issue.severity) == ("bad_json", 2, "error")
    assert "Line 2" in issue.message


def test_rejects_json_that_is_not_an_object(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    issue = only_issue(write_lines([GOOD, '["HumanEval/1", "    pass"]']), problems)
    assert (issue.code, issue.line) == ("not_object", 2)
    assert "array" in issue.message


def test_rejects_missing_completion_field(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    issue = only_issue(write_lines([GOOD, {"task_id": "HumanEval/1"}]), problems)
    assert (issue.code, issue.line, issue.field) == ("missing_field", 2, "completion")


def test_rejects_a_record_of_another_layout_in_the_same_file(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines([GOOD, {"task_id": "HumanEval/1", "generation": "    return []\n"}])
    issue = only_issue(path, problems)
    assert (issue.code, issue.line, issue.field) == ("missing_field", 2, "completion")
    assert "`generation`" in issue.message
    assert "line 1" in issue.message


def test_rejects_wrong_field_type(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    issue = only_issue(write_lines([{"task_id": "HumanEval/0", "completion": 42}]), problems)
    assert (issue.code, issue.line, issue.field) == ("wrong_type", 1, "completion")
    assert "string" in issue.message
    assert "number" in issue.message


@pytest.mark.parametrize("bad_id", [True, -1, "3", 1.5])
def test_rejects_bad_completion_id(
    write_lines: Callable[..., Path], problems: list[Problem], bad_id: object
) -> None:
    issue = only_issue(write_lines([{**GOOD, "completion_id": bad_id}]), problems)
    assert (issue.code, issue.field) == ("wrong_type", "completion_id")


def test_rejects_non_string_item_in_codet_samples(
    write_lines: Callable[..., Path], problems: list[Problem], by_id: dict[str, Problem]
) -> None:
    path = write_lines([{"prompt": by_id["HumanEval/23"].prompt, "samples": ["    pass\n", None]}])
    issue = only_issue(path, problems)
    assert (issue.code, issue.field) == ("wrong_type", "samples[1]")


@pytest.mark.parametrize("task_id", ["HumanEval/164", "MBPP/3", "HumanEval/x", "banana"])
def test_rejects_unknown_task_id(
    write_lines: Callable[..., Path], problems: list[Problem], task_id: str
) -> None:
    issue = only_issue(write_lines([GOOD, {"task_id": task_id, "completion": "x"}]), problems)
    assert (issue.code, issue.line, issue.field) == ("unknown_task", 2, "task_id")
    assert task_id in issue.message


def test_rejects_cpp_ids_given_with_python_problems(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    issue = only_issue(write_lines([{"task_id": "CPP/3", "generation": "x"}]), problems)
    assert (issue.code, issue.line, issue.field) == ("language_mismatch", 1, "task_id")
    assert "C++" in issue.message
    assert "Python" in issue.message


def test_rejects_babelcode_prediction_in_another_language(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines([{"qid": "3", "language": "Rust", "code": "fn below_zero() {}"}])
    issue = only_issue(path, problems)
    assert (issue.code, issue.field) == ("language_mismatch", "language")


def test_rejects_duplicate_completion_id(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines([{**GOOD, "completion_id": 0}, GOOD, {**GOOD, "completion_id": 0}])
    result = read_samples(path, problems)
    codes = [(issue.code, issue.line) for issue in result.issues]
    # Line 2 has no id, so it is sample 1; line 3 repeats sample 0 from line 1.
    assert codes == [("duplicate_sample", 3)]
    assert "line 1" in result.issues[0].message
    assert len(result.samples) == 2


def test_rejects_unrecognisable_layout(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    issue = only_issue(write_lines([{"id": 1, "text": "x"}]), problems)
    assert (issue.code, issue.line) == ("unknown_layout", 1)


def test_reports_empty_file(tmp_path: Path, problems: list[Problem]) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    issue = only_issue(path, problems)
    assert (issue.code, issue.line) == ("empty_file", None)


def test_reports_file_of_blank_lines_as_empty(tmp_path: Path, problems: list[Problem]) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n  \n\r\n")
    assert only_issue(path, problems).code == "empty_file"


def test_reports_empty_gzip(tmp_path: Path, problems: list[Problem]) -> None:
    path = tmp_path / "empty.jsonl.gz"
    path.write_bytes(gzip.compress(b""))
    assert only_issue(path, problems).code == "empty_file"


def test_reports_truncated_gzip_with_the_line_reached(
    tmp_path: Path, problems: list[Problem]
) -> None:
    data = "".join(
        json.dumps({"task_id": f"HumanEval/{n}", "completion": f"    return {n}\n" * 20}) + "\n"
        for n in range(50)
    ).encode()
    compressed = gzip.compress(data)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(compressed[: len(compressed) // 2])
    result = read_samples(path, problems)
    (issue,) = result.issues
    assert issue.code == "corrupt_gzip"
    assert issue.line == len(result.samples) + 1
    assert 0 < len(result.samples) < 50


def test_reports_corrupt_gzip(tmp_path: Path, problems: list[Problem]) -> None:
    path = tmp_path / "corrupt.jsonl.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 6 + b"not deflate data at all")
    issue = only_issue(path, problems)
    assert (issue.code, issue.line) == ("corrupt_gzip", 1)


def test_rejects_text_that_is_not_utf8(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    latin1 = '{"task_id": "HumanEval/1", "completion": "# caf\xe9"}\n'.encode("latin-1")
    issue = only_issue(write_lines([GOOD, latin1]), problems)
    assert (issue.code, issue.line) == ("not_utf8", 2)
    assert "0xe9" in issue.message


def test_reports_absurdly_long_line_without_parsing_it(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    huge = json.dumps({"task_id": "HumanEval/1", "completion": "x" * 5000})
    path = write_lines([GOOD, huge, {"task_id": "HumanEval/2", "completion": "    return 0.0\n"}])
    result = read_samples(path, problems, max_line_bytes=1000)
    assert [(i.code, i.line) for i in result.issues] == [("line_too_long", 2)]
    assert "5,0" in result.issues[0].message
    # The reader recovers at the next line.
    assert [s.task_id for s in result.samples] == ["HumanEval/0", "HumanEval/2"]


def test_line_exactly_at_the_limit_is_accepted(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    line = json.dumps(GOOD)
    result = read_samples(write_lines([line]), problems, max_line_bytes=len(line))
    assert result.ok, result.issues


def test_stops_after_max_issues_and_says_so(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    # A file that starts well: each bad line is listed (a file of nothing but garbage
    # gets one summary instead, see test_unreadable_file_gets_one_summary).
    path = write_lines([json.dumps(GOOD), *["not json"] * 50])
    result = read_samples(path, problems, max_issues=10)
    assert len(result.issues) == 11
    assert result.issues[-1].code == "too_many_issues"
    assert result.issues[-1].line == 12
    assert "10 issues" in result.issues[-1].message


def test_skips_blank_lines_and_keeps_line_numbers(write_lines: Callable[..., Path]) -> None:
    path = write_lines(["", json.dumps(GOOD), "   ", "{bad"])
    items = list(iter_records(path))
    assert items[0] == (2, GOOD)
    line, issue = items[1]
    assert line == 4
    assert isinstance(issue, FileIssue)
    assert issue.code == "bad_json"


def test_ignores_utf8_byte_order_mark(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines([b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b"\n"])
    assert read_samples(path, problems).ok


def test_reports_deeply_nested_json(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    issue = only_issue(write_lines(["[" * 100_000 + "]" * 100_000]), problems)
    assert issue.code in ("bad_json", "not_object")


# -- odd Unicode ------------------------------------------------------------------------------
@pytest.mark.parametrize(("record", "field"), [
    ({"task_id": "HumanEval/1", "completion": "    return []  # \ud83d\n"}, "completion"),
    ({"task_id": "HumanEval/1\udc00", "completion": "    return []\n"}, "task_id"),
    ({"prompt": "def f():\n", "samples": ["    pass\n", "    return 1 \ud800\n"]}, "samples[1]"),
    ({"task_id": "HumanEval/1", "completion": "    pass\n", "meta": {"note\udfff": 1}},
     "meta.note\\udfff"),
])
def test_rejects_a_lone_surrogate_naming_the_line_and_field(
    write_lines: Callable[..., Path], problems: list[Problem], record: dict[str, object],
    field: str,
) -> None:
    first = GOOD if "task_id" in record else {"prompt": problems[0].prompt, "samples": ["x"]}
    issue = only_issue(write_lines([first, record]), problems)
    assert (issue.code, issue.line, issue.field) == ("lone_surrogate", 2, field)
    assert issue.message.startswith(f"Line 2, field `{field}`: holds \\u")
    issue.message.encode("utf-8")  # the message itself can be shown and stored


def test_accepts_a_surrogate_pair_escape(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    # An emoji as JSON writes it with ensure_ascii: two escapes that make one character.
    path = write_lines(['{"task_id": "HumanEval/0", '
                        '"completion": "    return False  # \\ud83d\\ude00\\n"}'])
    result = read_samples(path, problems)
    assert result.ok, result.issues
    assert "\U0001F600" in result.samples[0].raw


@pytest.mark.parametrize("text", ["\u0000", "\u202e\u2066", "\u2028\u2029", "\ufeff\ufffe"])
def test_reads_nul_and_bidirectional_controls_as_text(
    write_lines: Callable[..., Path], problems: list[Problem], text: str
) -> None:
    completion = f"    return False  # {text}\n"
    path = write_lines([{"task_id": "HumanEval/0", "completion": completion}])
    result = read_samples(path, problems, sanitize=False)
    assert result.ok, result.issues
    assert result.samples[0].raw == completion


def test_gzip_that_expands_past_the_limit_stops_reading_with_too_large(
    tmp_path: Path, problems: list[Problem]
) -> None:
    line = json.dumps(GOOD).encode() + b"\n"
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress(line * 100_000, compresslevel=9))
    result = read_samples(path, problems, max_expanded_bytes=100 * len(line))
    assert [issue.code for issue in result.issues] == ["too_large"]
    assert f"more than {100 * len(line):,} bytes" in result.issues[0].message
    assert "stopped at line 101" in result.issues[0].message
    assert not result.ok


def test_gzip_exactly_at_the_expansion_limit_is_read(
    tmp_path: Path, problems: list[Problem]
) -> None:
    data = json.dumps(GOOD).encode() + b"\n"
    path = tmp_path / "samples.jsonl.gz"
    path.write_bytes(gzip.compress(data))
    assert read_samples(path, problems, max_expanded_bytes=len(data)).ok
    assert not read_samples(path, problems, max_expanded_bytes=len(data) - 1).ok


def test_expansion_limit_does_not_apply_to_plain_files(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    assert read_samples(write_lines([GOOD]), problems, max_expanded_bytes=10).ok
