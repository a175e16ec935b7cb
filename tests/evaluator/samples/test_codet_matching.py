"""CodeT records carry no task id: each is matched to a problem by its function signature."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from evaluator.records import Problem
from evaluator.samples import match_signature, read_samples

CODEGEN_FILE = (
    "generations/codegen-16b-n100/"
    "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
)


def codet_prompt(problem: Problem) -> str:
    """The prompt the way CodeT ships it: doctest examples and their outputs removed."""
    kept: list[str] = []
    skipping = False
    for line in problem.prompt.split("\n"):
        stripped = line.strip()
        if stripped.startswith(">>>"):
            skipping = True
            continue
        if skipping and stripped and not stripped.startswith('"""'):
            continue
        skipping = False
        kept.append(line)
    return "\n".join(kept)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("HumanEval/84", "HumanEval/161"),
        ("HumanEval/53", "HumanEval/85"),
        ("HumanEval/133", "HumanEval/142"),
        ("HumanEval/56", "HumanEval/61"),
    ],
)
def test_matches_problems_that_share_an_entry_point(
    problems: list[Problem], by_id: dict[str, Problem], first: str, second: str
) -> None:
    assert by_id[first].entry_point == by_id[second].entry_point
    for task_id in (first, second):
        found = match_signature(codet_prompt(by_id[task_id]), problems)
        assert isinstance(found, Problem), found
        assert found.task_id == task_id


def test_same_signature_is_told_apart_by_the_docstring(by_id: dict[str, Problem]) -> None:
    # /56 and /61 have the very same `def correct_bracketing(brackets: str):` line.
    header = re.compile(r"^def .*$", re.M)
    first, second = by_id["HumanEval/56"], by_id["HumanEval/61"]
    assert header.findall(first.prompt) == header.findall(second.prompt)
    found = match_signature(codet_prompt(second), [first, second])
    assert isinstance(found, Problem)
    assert found.task_id == "HumanEval/61"


def test_matches_the_last_def_when_the_prompt_has_helpers(
    problems: list[Problem], by_id: dict[str, Problem]
) -> None:
    # HumanEval/10 defines is_palindrome before make_palindrome.
    found = match_signature(codet_prompt(by_id["HumanEval/10"]), problems)
    assert isinstance(found, Problem)
    assert found.task_id == "HumanEval/10"


def test_reports_codet_prompt_matching_no_problem(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines(
        [
            {
                "prompt": 'def fizzbuzz(n: int) -> str:\n    """Play."""\n',
                "samples": ["    return ''\n"],
            }
        ]
    )
    result = read_samples(path, problems)
    (issue,) = result.issues
    assert (issue.code, issue.line, issue.field) == ("no_match", 1, "prompt")
    assert "fizzbuzz" in issue.message
    assert result.samples == ()


def test_reports_codet_prompt_that_fits_two_problems_equally(
    write_lines: Callable[..., Path], by_id: dict[str, Problem]
) -> None:
    twins = [by_id["HumanEval/56"], by_id["HumanEval/61"]]
    path = write_lines(
        [{"prompt": "def correct_bracketing(brackets: str):\n", "samples": ["    pass\n"]}]
    )
    (issue,) = read_samples(path, twins).issues
    assert issue.code == "no_match"
    assert "HumanEval/56" in issue.message
    assert "HumanEval/61" in issue.message


def test_warns_when_two_codet_records_match_the_same_task(
    write_lines: Callable[..., Path], problems: list[Problem], by_id: dict[str, Problem]
) -> None:
    prompt = codet_prompt(by_id["HumanEval/23"])
    path = write_lines(
        [
            {"prompt": prompt, "samples": ["    return len(string)\n"]},
            {"prompt": prompt, "samples": ["    return 0\n"]},
        ]
    )
    result = read_samples(path, problems)
    assert result.ok
    assert [(i.code, i.severity, i.line) for i in result.issues] == [
        ("duplicate_task", "warning", 2)
    ]
    assert [s.index for s in result.samples] == [0, 1]


def test_real_codegen_file_matches_164_records_to_164_distinct_tasks(
    shared_dir: Path, problems: list[Problem]
) -> None:
    path = shared_dir / CODEGEN_FILE
    if not path.exists():
        pytest.skip(f"CodeGen generations not found at {path}")
    matched = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            found = match_signature(json.loads(line)["prompt"], problems)
            assert isinstance(found, Problem), found
            matched.append(found.task_id)
    assert len(matched) == 164
    assert len(set(matched)) == 164
    # The file is sorted by task id as strings: /0, /1, /10, /100, ...
    assert matched == sorted(matched)


def test_real_codegen_file_reads_clean_with_n_100(
    shared_dir: Path, problems: list[Problem]
) -> None:
    path = shared_dir / CODEGEN_FILE
    if not path.exists():
        pytest.skip(f"CodeGen generations not found at {path}")
    result = read_samples(path, problems, sanitize=False)
    assert result.ok, result.issues[:5]
    coverage = result.coverage
    assert (coverage.tasks_with_samples, coverage.samples_total) == (164, 16_400)
    assert (coverage.min_n, coverage.max_k, coverage.unequal_n) == (100, 100, False)
