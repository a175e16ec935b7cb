"""MultiPL-E: `HumanEval_<N>_<name>` ids, renamed entry points, `tests` as the harness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.datasets import DatasetError, load_dataset


def test_ids_align_and_prompt_names_win(data_dir: Path) -> None:
    dataset = load_dataset(path=data_dir / "multipl_e" / "humaneval-cpp.jsonl")
    assert dataset.key == "multipl-e/cpp/en"
    strlen = dataset.by_source_id("HumanEval_23_strlen")
    assert strlen is not None
    assert strlen.task_id == "HumanEval/23"
    assert strlen.entry_point == "string_length"
    assert strlen.test.startswith("}\nint main() {\n    auto candidate = string_length;")
    assert strlen.canonical_solution == ""
    assert strlen.extra == {
        "doctests": "transform",
        "prompt_terminology": "reworded",
        "stop_tokens": ["\n}"],
    }


def test_go_language_comes_from_the_file_name(data_dir: Path) -> None:
    dataset = load_dataset(path=data_dir / "multipl_e" / "humaneval-go.jsonl")
    assert (dataset.language, dataset.problems[0].entry_point) == ("go", "add")
    assert dataset.problems[0].test.startswith("func TestAdd")


def test_rs_is_rust(tmp_path: Path, data_dir: Path) -> None:
    record = {
        "name": "HumanEval_53_add",
        "language": "rs",
        "prompt": "fn add(x: isize, y: isize) -> isize {\n",
        "tests": "}\n",
    }
    path = tmp_path / "humaneval-rs.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert load_dataset(path=path).key == "multipl-e/rust/en"


def test_differing_test_field_is_kept(tmp_path: Path) -> None:
    record = {
        "name": "HumanEval_53_add",
        "language": "js",
        "prompt": "function add(x, y){\n",
        "tests": "}\ntest();\n",
        "test": "something else",
    }
    path = tmp_path / "humaneval-js.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    problem = load_dataset(path=path).problems[0]
    assert (problem.test, problem.extra["test_field"]) == ("}\ntest();\n", "something else")


def test_bad_name_is_rejected(tmp_path: Path) -> None:
    record = {"name": "MBPP_3_f", "language": "js", "prompt": "", "tests": ""}
    path = tmp_path / "humaneval-js.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"humaneval-js\.jsonl:1: name 'MBPP_3_f'"):
        load_dataset(path=path)
