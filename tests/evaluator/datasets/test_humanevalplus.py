"""HumanEval+ (EvalPlus): inputs become call cases; Mini has no test; special oracles."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from evaluator.datasets import DatasetError, load_dataset
from evaluator.datasets.humanevalplus import SPECIAL_ORACLES


@pytest.fixture
def plus_path(data_dir: Path) -> Path:
    return data_dir / "humanevalplus" / "HumanEvalPlus.jsonl"


def test_inputs_become_base_then_plus_call_cases(plus_path: Path) -> None:
    problem = load_dataset(path=plus_path).get("HumanEval/2")
    assert problem is not None
    cases = problem.call_cases
    assert [c.index for c in cases] == [0, 1, 2, 3, 4]
    assert [c.group for c in cases] == ["base", "base", "plus", "plus", "plus"]
    assert [c.args for c in cases] == [(3.0,), (1.0,), (0.5,), (1e9,), (-2.25,)]
    assert all(c.expected is None and c.comparison == "allclose" for c in cases)
    assert all(c.atol == 1e-6 for c in cases)


def test_contract_stays_in_extra_and_inputs_do_not(plus_path: Path) -> None:
    problem = load_dataset(path=plus_path).problems[0]
    assert problem.extra["contract"].startswith("\n    assert isinstance(x, float)")
    assert not {"base_input", "plus_input", "atol"} & set(problem.extra)


def test_find_zero_gets_the_poly_root_oracle(plus_path: Path) -> None:
    dataset = load_dataset(path=plus_path)
    assert SPECIAL_ORACLES == {"HumanEval/32": "poly_root"}
    special = dataset.get("HumanEval/32")
    assert special is not None
    assert special.extra["oracle"] == "poly_root"
    assert special.call_cases[0].args == ([2.0, 4.0],)
    assert special.call_cases[0].atol == 1e-4
    assert {case.comparison for case in special.call_cases} == {"poly_root"}
    assert all("oracle" not in p.extra for p in dataset.problems if p.number != 32)


def test_mini_has_no_test_but_keeps_its_cases(data_dir: Path) -> None:
    dataset = load_dataset(path=data_dir / "humanevalplus" / "HumanEvalPlus-Mini.jsonl")
    assert dataset.key == "humanevalplus/python/en/mini"
    assert all(p.test == "" and p.call_cases for p in dataset.problems)


def test_gzipped_release_names_give_the_variant(tmp_path: Path, plus_path: Path) -> None:
    for name, key in [
        ("HumanEvalPlus-v0.1.10.jsonl.gz", "humanevalplus/python/en"),
        ("HumanEvalPlus-NoExtreme-v0.1.10.jsonl.gz", "humanevalplus/python/en/noextreme"),
    ]:
        path = tmp_path / name
        path.write_bytes(gzip.compress(plus_path.read_bytes()))
        dataset = load_dataset(path=path)
        assert (dataset.layout, dataset.key) == ("humanevalplus", key)


def test_origin_format_has_no_call_cases(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "HumanEvalPlus-OriginFmt.jsonl"
    path.write_bytes((data_dir / "humaneval" / "HumanEval.jsonl").read_bytes())
    dataset = load_dataset(path=path)
    assert (dataset.name, dataset.variant) == ("humanevalplus", "originfmt")
    assert all(p.test and not p.call_cases for p in dataset.problems)


def test_missing_test_without_inputs_is_an_error(tmp_path: Path) -> None:
    record = {"task_id": "HumanEval/0", "prompt": "", "entry_point": "f", "canonical_solution": ""}
    path = tmp_path / "HumanEvalPlus.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=":1: missing field 'test'"):
        load_dataset(path=path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"atol": "0.1"}, "'atol' must be a non-negative number"),
        ({"atol": -1}, "'atol' must be a non-negative number"),
        ({"base_input": [1, 2]}, "'base_input' must be a list of argument lists"),
        ({"plus_input": "[[1]]"}, "'plus_input' must be a list of argument lists"),
    ],
)
def test_malformed_inputs_are_rejected(
    tmp_path: Path, plus_path: Path, change: dict[str, object], message: str
) -> None:
    lines = plus_path.read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[1]) | change
    path = tmp_path / "HumanEvalPlus.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(broken)]) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"HumanEvalPlus\.jsonl:2: field {message}"):
        load_dataset(path=path)
