"""Choosing a loader: by file name, by the first record, or by the caller."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evaluator.datasets import LAYOUTS, DatasetError, detect_layout, load_dataset


@pytest.mark.parametrize(
    ("relative", "layout"),
    [
        ("humaneval/HumanEval.jsonl", "humaneval"),
        ("humanevalplus/HumanEvalPlus.jsonl", "humanevalplus"),
        ("humanevalplus/HumanEvalPlus-Mini.jsonl", "humanevalplus"),
        ("humaneval_x/humaneval_go.jsonl", "humaneval-x"),
        ("humaneval_xl/java/Russian.jsonl", "humaneval-xl"),
        ("mhumaneval/Human_Expert_arb_Arab.json", "mhumaneval"),
        ("mhumaneval/mHumanEval-rus_Cyrl-python.json", "mhumaneval"),
        ("multipl_e/humaneval-cpp.jsonl", "multipl-e"),
        ("ruhumaneval.jsonl", "mera-ruhumaneval"),
        ("babelcode/human_eval_questions.jsonl", "babelcode"),
    ],
)
def test_layout_from_file_name(data_dir: Path, relative: str, layout: str) -> None:
    assert detect_layout(data_dir / relative) == layout


@pytest.mark.parametrize(
    ("relative", "layout"),
    [
        ("humaneval/HumanEval.jsonl", "humaneval"),
        ("humanevalplus/HumanEvalPlus.jsonl", "humanevalplus"),
        ("humaneval_x/humaneval_rust.jsonl", "humaneval-x"),
        ("humaneval_xl/java/Russian.jsonl", "humaneval-xl"),
        ("mhumaneval/mHumanEval-rus_Cyrl-python.json", "mhumaneval"),
        ("multipl_e/humaneval-go.jsonl", "multipl-e"),
        ("ruhumaneval.jsonl", "mera-ruhumaneval"),
        ("mera_task.json", "mera-ruhumaneval"),
        ("babelcode/human_eval_questions.jsonl", "babelcode"),
    ],
)
def test_renamed_file_is_recognised_by_its_fields(
    tmp_path: Path, data_dir: Path, relative: str, layout: str
) -> None:
    renamed = tmp_path / "upload.data"
    shutil.copyfile(data_dir / relative, renamed)
    assert detect_layout(renamed) == layout


def test_unknown_layout_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text('{"task_id": "HumanEval/0", "completion": "pass"}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"samples\.jsonl: unknown dataset layout.*'completion'"):
        load_dataset(path=path)


def test_unknown_layout_argument_is_rejected(data_dir: Path) -> None:
    with pytest.raises(DatasetError, match="unknown layout 'codex'"):
        load_dataset(path=data_dir / "humaneval" / "HumanEval.jsonl", layout="codex")


def test_explicit_layout_overrides_the_name(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "HumanEval.jsonl"
    shutil.copyfile(data_dir / "ruhumaneval.jsonl", path)
    assert load_dataset(path=path, layout="mera-ruhumaneval").name == "mera-ruhumaneval"
    with pytest.raises(DatasetError, match="missing field 'task_id'"):
        load_dataset(path=path)


def test_name_must_agree_with_the_file(data_dir: Path) -> None:
    path = data_dir / "multipl_e" / "humaneval-cpp.jsonl"
    assert load_dataset("multipl-e", path=path).name == "multipl-e"
    with pytest.raises(DatasetError, match="is a 'multipl-e' dataset, not 'humaneval-x'"):
        load_dataset("humaneval-x", path=path)


def test_only_humaneval_loads_without_a_path() -> None:
    with pytest.raises(DatasetError, match="pass path="):
        load_dataset("humaneval-x")


def test_every_layout_has_a_loader() -> None:
    assert set(LAYOUTS) == {
        "humaneval",
        "humaneval-x",
        "humaneval-xl",
        "humanevalplus",
        "mhumaneval",
        "multipl-e",
        "mera-ruhumaneval",
        "babelcode",
    }
