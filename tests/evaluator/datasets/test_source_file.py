"""evaluator/datasets/reading.py: JSON nested too deeply in each container names where it
starts, and the `Dataset` a loader makes of a read file carries the file's version and
origin."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.datasets import DatasetError
from evaluator.datasets.reading import read_bytes, read_path

DEEP = "[" * 100_000 + "]" * 100_000


def test_deep_nesting_in_an_array_names_the_element_s_line() -> None:
    text = '[\n{"a": 1},\n\n{"a": ' + DEEP + "}\n]"
    with pytest.raises(DatasetError, match=r"^x\.json:4: JSON nested too deeply$"):
        read_bytes(text.encode(), "x.json")


def test_deep_nesting_in_a_wrapped_split_names_the_file() -> None:
    text = '{\n"data": {"test": [{"a": ' + DEEP + "}]}\n}"
    with pytest.raises(DatasetError, match=r"^x\.json: JSON nested too deeply$"):
        read_bytes(text.encode(), "x.json")


def test_a_syntax_error_in_a_wrapped_split_names_its_own_line() -> None:
    with pytest.raises(DatasetError, match=r"^x\.json:3: invalid JSON: .* \(column 7\)$"):
        read_bytes(b'{\n"data": {"test": [\n{"a": }]}\n}', "x.json")


def test_a_dataset_carries_the_file_s_version_and_path(tmp_path: Path) -> None:
    path = tmp_path / "problems.jsonl"
    path.write_text('{"a": 1}\n', encoding="utf-8")
    source = read_path(path)
    dataset = source.dataset(layout="multipl-e", language="js", natural_language="en",
                             problems=(), variant="plus-mini")
    assert (dataset.name, dataset.layout, dataset.version, dataset.source) == (
        "multipl-e", "multipl-e", source.version, str(path))
    assert (dataset.language, dataset.natural_language, dataset.variant) == (
        "js", "en", "plus-mini")


@pytest.mark.parametrize("name", ["humaneval-x", ""])
def test_a_name_given_wins_over_the_layout_s(name: str) -> None:
    source = read_bytes(b'{"a": 1}\n', "x.jsonl")
    dataset = source.dataset(layout="humanevalplus", language="python", natural_language="en",
                             problems=(), name=name)
    assert (dataset.name, dataset.layout) == (name, "humanevalplus")
