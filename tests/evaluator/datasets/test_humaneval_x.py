"""HumanEval-X: `<Lang>/N` ids, entry points read from declarations, Go's extra fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.datasets import DatasetError, load_dataset
from evaluator.datasets.signatures import function_names


def test_go_ids_align_and_extra_fields_are_kept(data_dir: Path) -> None:
    dataset = load_dataset(path=data_dir / "humaneval_x" / "humaneval_go.jsonl")
    assert dataset.key == "humaneval-x/go/en"
    problem = dataset.by_source_id("Go/2")
    assert problem is not None
    assert problem.task_id == "HumanEval/2"
    first = dataset.get("HumanEval/0")
    assert first is not None
    assert first.entry_point == "HasCloseElements"
    assert first.extra["import"] == 'import (\n    "math"\n)\n'
    assert first.extra["test_setup"].startswith("package main\n")
    assert "docstring" in first.extra
    assert first.declaration.startswith("\nfunc HasCloseElements(numbers []float64, threshold")
    assert first.example_test.startswith("func TestHasCloseElements")


def test_rust_none_example_test_is_emptied_and_recorded(data_dir: Path) -> None:
    dataset = load_dataset(path=data_dir / "humaneval_x" / "humaneval_rust.jsonl")
    assert dataset.language == "rust"
    for problem in dataset.problems:
        assert problem.example_test == ""
        assert problem.extra["fixes"] == [
            "example_test was the string 'None'; treated as no example test"
        ]


def test_entry_point_is_the_target_not_the_declared_helper(data_dir: Path) -> None:
    dataset = load_dataset(path=data_dir / "humaneval_x" / "humaneval_rust.jsonl")
    helper_first = dataset.get("HumanEval/10")
    assert helper_first is not None
    assert helper_first.entry_point == "make_palindrome"
    # The misspelt name is what the tests call, so it is kept.
    misspelt = dataset.get("HumanEval/27")
    assert misspelt is not None
    assert misspelt.entry_point == "filp_case"


@pytest.mark.parametrize(
    ("language", "code", "names"),
    [
        (
            "cpp",
            "#include<vector>\nusing namespace std;\nvector<string> split_words(string txt){\n",
            ["split_words"],
        ),
        (
            "cpp",
            "bool is_p(string s){\n    if (s.empty()) {\n    return true;\n}\n"
            "string make(string s){\n",
            ["is_p", "make"],
        ),
        (
            "java",
            "class Solution {\n    public List<Integer> sortThird(List<Integer> l) {\n",
            ["sortThird"],
        ),
        (
            "js",
            "const isPalindrome = (text) => {\n}\n\nconst makePalindrome = (s) => {\n",
            ["isPalindrome", "makePalindrome"],
        ),
        ("go", "\nfunc (s Stack) Push(x int) {\n}\nfunc Sum(a int) int {\n", ["Push", "Sum"]),
        ("rust", "use std::cmp;\nfn max_of<T: Ord>(v: Vec<T>) -> T {\n", ["max_of"]),
        ("python", "def f(x):\n    return x\n\n\ndef g(y):\n", ["f", "g"]),
        ("kotlin", "fun f() {", []),
    ],
)
def test_function_names_per_language(language: str, code: str, names: list[str]) -> None:
    assert function_names(language, code) == names


def test_malformed_task_id_names_the_line(tmp_path: Path, data_dir: Path) -> None:
    record = json.loads(
        (data_dir / "humaneval_x" / "humaneval_go.jsonl").read_text(encoding="utf-8").split("\n")[0]
    )
    path = tmp_path / "humaneval_go.jsonl"
    path.write_text(json.dumps(record | {"task_id": "Go-0"}) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"humaneval_go\.jsonl:1: task_id 'Go-0'"):
        load_dataset(path=path)


def test_file_mixing_languages_is_rejected(tmp_path: Path, data_dir: Path) -> None:
    go = (data_dir / "humaneval_x" / "humaneval_go.jsonl").read_text(encoding="utf-8")
    rust = (data_dir / "humaneval_x" / "humaneval_rust.jsonl").read_text(encoding="utf-8")
    path = tmp_path / "humaneval_go.jsonl"
    path.write_text(go + rust, encoding="utf-8")
    with pytest.raises(DatasetError, match=r"mix programming languages \['go', 'rust'\]"):
        load_dataset(path=path)
