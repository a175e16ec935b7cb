"""MERA ruHumanEval: kwargs tests parsed as literals, str_equal expectations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.datasets import DatasetError, load_dataset


@pytest.fixture
def mera_path(data_dir: Path) -> Path:
    return data_dir / "ruhumaneval.jsonl"


def _first_record(mera_path: Path) -> dict[str, object]:
    record: dict[str, object] = json.loads(mera_path.read_text(encoding="utf-8").split("\n")[0])
    return record


def test_problems_are_python_in_russian_with_aligned_ids(mera_path: Path) -> None:
    dataset = load_dataset(path=mera_path)
    assert dataset.key == "mera-ruhumaneval/python/ru"
    assert [p.task_id for p in dataset.problems] == [
        "HumanEval/0",
        "HumanEval/2",
        "HumanEval/6",
        "HumanEval/13",
    ]
    assert dataset.by_source_id("6") is dataset.problems[2]


def test_prompt_is_the_function_exactly(mera_path: Path) -> None:
    record = _first_record(mera_path)
    problem = load_dataset(path=mera_path).problems[0]
    assert problem.prompt == record["inputs"]["function"]  # type: ignore[index]
    assert problem.entry_point == "has_close_elements"
    assert problem.canonical_solution.startswith("    ordered = sorted(numbers)")
    assert problem.extra["instruction"].endswith("{function}")
    assert problem.extra["tests"] == record["inputs"]["tests"]  # type: ignore[index]
    assert problem.test == ""


def test_tests_become_kwargs_cases_compared_as_strings(mera_path: Path) -> None:
    problem = load_dataset(path=mera_path).get("HumanEval/6")
    assert problem is not None
    assert [c.kwargs for c in problem.call_cases][:2] == [
        {"paren_string": ""},
        {"paren_string": "((()))"},
    ]
    assert [c.expected for c in problem.call_cases] == ["[]", "[3]", "[2, 3, 1, 3]", "[1, 2]"]
    assert all(c.comparison == "str_equal" and c.args == () for c in problem.call_cases)
    assert [c.index for c in problem.call_cases] == [0, 1, 2, 3]


def test_wrapped_task_file_with_two_dimensional_outputs(data_dir: Path) -> None:
    dataset = load_dataset(path=data_dir / "mera_task.json", layout="mera-ruhumaneval")
    assert [p.task_id for p in dataset.problems] == ["HumanEval/2", "HumanEval/13"]
    gcd = dataset.problems[1]
    assert [c.expected for c in gcd.call_cases] == ["6", "1", "7"]
    assert gcd.source.endswith("mera_task.json: data.test[1]")


def test_tests_string_is_never_executed(tmp_path: Path, mera_path: Path) -> None:
    record = _first_record(mera_path)
    record["inputs"] = {"function": "def f():\n", "tests": "[{'x': __import__('os').getpid()}]"}
    path = tmp_path / "ruhumaneval.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"ruhumaneval\.jsonl:1: field 'inputs.tests' is not a"):
        load_dataset(path=path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"outputs": ["1"]}, "4 tests but 1 outputs"),
        ({"outputs": "True"}, "field 'outputs' must be a list"),
        ({"meta": {"id": "x", "entry_point": "f"}}, "field 'meta.id' must be a non-negative"),
        ({"meta": {"id": 1}}, "field 'meta.entry_point' must be a string"),
        (
            {"inputs": {"function": "def f():\n", "tests": "[1, 2]"}},
            "'inputs.tests' must be a list of keyword-argument dicts",
        ),
        ({"inputs": "def f():"}, "field 'inputs' must be an object"),
    ],
)
def test_malformed_records_are_rejected(
    tmp_path: Path, mera_path: Path, change: dict[str, object], message: str
) -> None:
    record = _first_record(mera_path) | change
    path = tmp_path / "ruhumaneval.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"ruhumaneval\.jsonl:1: .*{message}"):
        load_dataset(path=path)


def test_hidden_outputs_leave_expectations_open(tmp_path: Path, mera_path: Path) -> None:
    record = _first_record(mera_path) | {"outputs": []}
    path = tmp_path / "ruhumaneval.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    problem = load_dataset(path=path).problems[0]
    assert problem.extra["outputs_hidden"] is True
    assert len(problem.call_cases) == 4
    assert all(c.expected is None for c in problem.call_cases)
