"""HumanEval-XL: aligning the 80-problem subset to HumanEval ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evaluator.datasets import DatasetError, load_dataset
from evaluator.datasets.humaneval import reference_problem

# python/N -> HumanEval/M for the hand-made tree: gcd, add (/53, not /85), solve (/161, not /84)
TREE_MAPPING = {0: 13, 1: 53, 2: 161}


def _python_record(index: int, number: int, language: str = "Russian") -> dict[str, object]:
    reference = reference_problem(number)
    assert reference is not None
    # HumanEval's own test is what HumanEval-XL ships; it is built here, not stored.
    return {
        "task_id": f"python/{index}",
        "prompt": f'def {reference.entry_point}(*args):\n    """Описание задачи {index}."""\n',
        "entry_point": reference.entry_point,
        "test": reference.test,
        "language": "python",
        "canonical_solution": "    pass\n",
        "description": f"Описание задачи {index}.",
        "natural_language": language,
    }


@pytest.fixture
def xl_tree(tmp_path: Path, data_dir: Path) -> Path:
    (tmp_path / "python").mkdir()
    (tmp_path / "java").mkdir()
    records = [_python_record(i, n) for i, n in TREE_MAPPING.items()]
    (tmp_path / "python" / "Russian.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    shutil.copyfile(
        data_dir / "humaneval_xl" / "java" / "Russian.jsonl", tmp_path / "java" / "Russian.jsonl"
    )
    return tmp_path


def test_python_problems_align_by_test_text(xl_tree: Path) -> None:
    dataset = load_dataset(path=xl_tree / "python" / "Russian.jsonl")
    assert dataset.key == "humaneval-xl/python/ru"
    assert {int(p.source_id.split("/")[1]): p.number for p in dataset.problems} == TREE_MAPPING
    assert all(p.extra["alignment"] == "test" for p in dataset.problems)
    assert dataset.problems[0].extra["description"] == "Описание задачи 0."


def test_other_languages_align_through_the_python_sibling(xl_tree: Path) -> None:
    dataset = load_dataset(path=xl_tree / "java" / "Russian.jsonl")
    assert dataset.key == "humaneval-xl/java/ru"
    assert [p.number for p in dataset.problems] == [13, 53, 161]
    assert dataset.problems[0].extra["alignment"] == "sibling:python/Russian.jsonl"
    assert all(p.canonical_solution == "" for p in dataset.problems)


def test_english_python_file_serves_when_the_same_language_is_missing(xl_tree: Path) -> None:
    (xl_tree / "python" / "Russian.jsonl").rename(xl_tree / "python" / "English.jsonl")
    dataset = load_dataset(path=xl_tree / "java" / "Russian.jsonl")
    assert [p.number for p in dataset.problems] == [13, 53, 161]
    assert dataset.problems[0].extra["alignment"] == "sibling:python/English.jsonl"


def test_without_a_sibling_entry_points_are_matched_in_humaneval_order(data_dir: Path) -> None:
    dataset = load_dataset(path=data_dir / "humaneval_xl_orphan" / "go" / "English.jsonl")
    assert dataset.key == "humaneval-xl/go/en"
    # `solve` is both /84 and /161: order after `solution` (/121) settles it.
    assert [p.number for p in dataset.problems] == [53, 121, 161]
    assert all(p.extra["alignment"] == "entry_point_order" for p in dataset.problems)
    assert all(p.canonical_solution == "" for p in dataset.problems)  # NaN in the file


def test_python_test_matching_nothing_is_an_error(xl_tree: Path) -> None:
    path = xl_tree / "python" / "Russian.jsonl"
    record = _python_record(0, 13) | {"test": "def check(candidate):\n    assert True\n"}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"Russian\.jsonl:1: its 'test' matches no original"):
        load_dataset(path=path)


def test_sibling_without_the_index_is_an_error(xl_tree: Path) -> None:
    path = xl_tree / "python" / "Russian.jsonl"
    path.write_text(json.dumps(_python_record(0, 13)) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"java/Russian\.jsonl:2: .* has no python/1"):
        load_dataset(path=xl_tree / "java" / "Russian.jsonl")


def test_unknown_entry_point_without_sibling_is_an_error(tmp_path: Path, data_dir: Path) -> None:
    (tmp_path / "go").mkdir()
    source = data_dir / "humaneval_xl_orphan" / "go" / "English.jsonl"
    records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    records[1]["entry_point"] = "no_such_function"
    path = tmp_path / "go" / "English.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"English\.jsonl:2: entry point 'no_such_function'"):
        load_dataset(path=path)
