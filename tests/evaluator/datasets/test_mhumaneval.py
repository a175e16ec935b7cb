"""mHumanEval: positional ids, entry points from HumanEval, the /0 indentation fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.datasets import DatasetError, load_dataset
from evaluator.datasets.mhumaneval import INDENT_FIX, indent_body


def test_expert_file_is_json_lines_in_humaneval_order(data_dir: Path) -> None:
    dataset = load_dataset(path=data_dir / "mhumaneval" / "Human_Expert_arb_Arab.json")
    assert dataset.key == "mhumaneval/python/ar/expert"
    assert [p.task_id for p in dataset.problems] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert [p.entry_point for p in dataset.problems] == [
        "has_close_elements",
        "separate_paren_groups",
        "truncate_number",
    ]
    assert dataset.problems[1].source.endswith("Human_Expert_arb_Arab.json:2")
    assert all(p.extra["translation"] == "expert" for p in dataset.problems)


def test_unindented_body_of_problem_zero_is_fixed_and_recorded(data_dir: Path) -> None:
    dataset = load_dataset(path=data_dir / "mhumaneval" / "Human_Expert_arb_Arab.json")
    fixed, untouched = dataset.problems[0], dataset.problems[1]
    assert fixed.canonical_solution.startswith("    for i, a in enumerate(numbers):\n        for b")
    assert fixed.canonical_solution.endswith("\n    return False\n")
    assert fixed.extra["fixes"] == [INDENT_FIX]
    assert "fixes" not in untouched.extra
    namespace: dict[str, object] = {}
    exec(fixed.prompt + fixed.canonical_solution, namespace)  # noqa: S102 - our own fixture
    assert namespace["has_close_elements"]([1.0, 1.2], 0.3) is True  # type: ignore[operator]


def test_indent_body_keeps_blank_lines_blank() -> None:
    assert indent_body("x = 1\n\nreturn x\n") == ("    x = 1\n\n    return x\n", [INDENT_FIX])
    assert indent_body("\n    return 1\n") == ("\n    return 1\n", [])


def test_machine_file_drops_junk_columns(data_dir: Path) -> None:
    dataset = load_dataset(path=data_dir / "mhumaneval" / "mHumanEval-rus_Cyrl-python.json")
    assert dataset.key == "mhumaneval/python/ru/machine"
    assert [p.task_id for p in dataset.problems] == ["HumanEval/0", "HumanEval/2"]
    assert dataset.by_source_id("HumanEval/2") is dataset.problems[1]
    assert dataset.problems[1].source.endswith("mHumanEval-rus_Cyrl-python.json:13")
    assert dataset.problems[0].extra == {"translation": "machine", "fixes": [INDENT_FIX]}


def test_records_out_of_order_are_caught(tmp_path: Path, data_dir: Path) -> None:
    lines = (
        (data_dir / "mhumaneval" / "Human_Expert_arb_Arab.json")
        .read_text(encoding="utf-8")
        .splitlines()
    )
    path = tmp_path / "Human_Expert_rus_Cyrl.json"
    path.write_text("\n".join([lines[0], lines[2], lines[1]]) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r":2: prompt does not define separate_paren_groups"):
        load_dataset(path=path)


def test_non_python_files_are_sent_to_multipl_e(tmp_path: Path) -> None:
    path = tmp_path / "mHumanEval-rus_Cyrl-cpp.json"
    path.write_text(json.dumps([{"task_id": "HumanEval/0", "prompt": ""}]), encoding="utf-8")
    with pytest.raises(DatasetError, match="layout='multipl-e'"):
        load_dataset(path=path)
