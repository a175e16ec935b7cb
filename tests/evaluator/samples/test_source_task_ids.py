"""Each sample keeps the task id exactly as its file wrote it, beside the aligned one.

The reader aligns `CPP/0`, `python/0`, `HumanEval_0_x` ... to `HumanEval/0` so that variants
can be compared; results given back to the user must still join with the user's own files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from evaluator.records import Problem
from evaluator.samples import read_samples

# Forms the reader accepts for HumanEval/0 .. /2 of a one-language (C++) problem set.
ACCEPTED = {
    "CPP/0": "HumanEval/0",
    "cpp/1": "HumanEval/1",
    "C++/2": "HumanEval/2",
    "cc-0": "HumanEval/0",
    "CPP_1": "HumanEval/1",
    "CPP/00": "HumanEval/0",
    "CPP/002": "HumanEval/2",
    " CPP/1 ": "HumanEval/1",
    "\tCPP/2\n": "HumanEval/2",
    "\u00a0CPP/0\u2028": "HumanEval/0",
    "HumanEval/1": "HumanEval/1",
    "humaneval_2": "HumanEval/2",
    "HumanEval_0_f0": "HumanEval/0",
    "CPP/1/anything at all": "HumanEval/1",
    "2": "HumanEval/2",
    "CPP/\u0661": "HumanEval/1",  # ARABIC-INDIC DIGIT ONE
    "CPP/\uff12": "HumanEval/2",  # FULLWIDTH DIGIT TWO
}


def test_every_accepted_form_is_kept_byte_for_byte(
    write_lines: Callable[..., Path], cpp_problems: list[Problem]
) -> None:
    path = write_lines(
        {"task_id": raw, "generation": "    return x;\n}\n"} for raw in ACCEPTED
    )
    result = read_samples(path, cpp_problems)
    assert result.ok, result.issues
    assert [s.source_task_id for s in result.samples] == list(ACCEPTED)
    assert [s.given_task_id for s in result.samples] == list(ACCEPTED)
    assert [s.task_id for s in result.samples] == list(ACCEPTED.values())


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("CPP/1\u0000", "unknown_task"),
        ("HumanEval_0_\u0000", "unknown_task"),
        ("CPP/-1", "unknown_task"),
        ("CPP/+1", "unknown_task"),
        ("CPP/1.0", "unknown_task"),
        ("CPP /1", "unknown_task"),
        ("CPP/9", "unknown_task"),
        ("", "unknown_task"),
        ("Python/0", "language_mismatch"),
    ],
)
def test_refused_forms_are_reported_not_kept(
    write_lines: Callable[..., Path], cpp_problems: list[Problem], raw: str, code: str
) -> None:
    path = write_lines([{"task_id": raw, "generation": "    return x;\n}\n"}])
    result = read_samples(path, cpp_problems)
    assert not result.samples
    assert [(issue.line, issue.field, issue.code) for issue in result.issues] == [
        (1, "task_id", code)
    ]


@pytest.mark.parametrize("field", ["completion", "generation", "solution"])
def test_task_id_layouts_keep_the_files_id(
    write_lines: Callable[..., Path], problems: list[Problem], field: str
) -> None:
    path = write_lines([
        {"task_id": "Python/3", field: "    return False\n"},
        {"task_id": "HumanEval_3_below_zero", field: "    return True\n"},
        {"task_id": "HumanEval/3", field: "    return True\n"},
    ])
    result = read_samples(path, problems)
    assert result.ok, result.issues
    assert [(s.source_task_id, s.task_id, s.index) for s in result.samples] == [
        ("Python/3", "HumanEval/3", 0),
        ("HumanEval_3_below_zero", "HumanEval/3", 1),
        ("HumanEval/3", "HumanEval/3", 2),
    ]


def test_babelcode_keeps_its_qid(
    write_lines: Callable[..., Path], problems: list[Problem], by_id: dict[str, Problem]
) -> None:
    code = by_id["HumanEval/3"].prompt + by_id["HumanEval/3"].canonical_solution
    path = write_lines([
        {"qid": "3", "language": "Python", "code": code},
        {"qid": "HumanEval/3", "language": "Python", "code": code},
    ])
    result = read_samples(path, problems, sanitize=False)
    assert result.ok, result.issues
    assert [(s.source_task_id, s.task_id) for s in result.samples] == [
        ("3", "HumanEval/3"), ("HumanEval/3", "HumanEval/3")]


def test_codet_without_a_task_id_gets_the_matched_problems_dataset_id(
    write_lines: Callable[..., Path], by_id: dict[str, Problem]
) -> None:
    # A dataset whose own ids are not the aligned ones, as HumanEval-X's `Python/N` are.
    problems = [
        Problem(dataset="humaneval-x", task_id=p.task_id, language="python",
                natural_language="en", prompt=p.prompt, entry_point=p.entry_point,
                canonical_solution=p.canonical_solution, test=p.test,
                source_id=p.task_id.replace("HumanEval", "Python"))
        for p in (by_id["HumanEval/2"], by_id["HumanEval/3"])
    ]
    path = write_lines([
        {"prompt": by_id["HumanEval/3"].prompt, "samples": ["    return False\n"] * 2},
        {"prompt": by_id["HumanEval/2"].prompt, "samples": ["    return 0.0\n"],
         "task_id": "python-2"},
    ])
    result = read_samples(path, problems)
    assert result.ok, result.issues
    assert [(s.source_task_id, s.task_id) for s in result.samples] == [
        ("Python/3", "HumanEval/3"), ("Python/3", "HumanEval/3"),
        ("python-2", "HumanEval/2")]
