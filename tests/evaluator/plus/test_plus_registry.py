"""HumanEval-X+ and the defect registry, on the real data: the canonical failures it
explains, the patches that fix them, the inputs it says a variant asks another output
for, and the flags the built file then carries."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evaluator.__main__ import main

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")


def _records(path: Path) -> dict[str, dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return {r["task_id"]: r for r in map(json.loads, stream) if r}


@needs_gxx
def test_validation_explains_patches_and_flags_canonical_failures(
        shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    datasets = shared_dir / "datasets"
    out = tmp_path / "out"
    code = main(["datasets", "build-plus", "--set", "mini", "--languages", "cpp",
                 "--tasks", "32,44,103", "--out", str(out),
                 "--humanevalplus", str(datasets / "humanevalplus"),
                 "--humaneval-x", str(datasets / "humaneval-x"),
                 "--validate", "--workers", "1"])
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    (cpp,) = report["languages"]
    by_task = {p["task_id"]: p for p in cpp["per_problem"]}
    # The registry says C++'s rounded_avg asks for another output: every input is left out.
    rounded = by_task["HumanEval/103"]
    assert rounded["kept"] == 0
    assert rounded["dropped"] == {"variant_interface": rounded["inputs"]}
    assert "hx-cpp-103-plus" in rounded["examples"]["variant_interface"]
    # change_base(0, 3) fails as shipped, explained by its entry, and passes patched.
    validation = cpp["validation"]
    assert validation["tests"] == by_task["HumanEval/44"]["kept"]
    assert validation["passed"] == validation["tests"] - 1
    (failure,) = validation["failures"]
    assert (failure["arguments"], failure["explained_by"]) == ("[0, 3]", ["hx-cpp-44-plus"])
    assert (validation["explained"], validation["unexplained"]) == (1, 0)
    assert validation["passed_patched"] == validation["tests"]
    printed = capsys.readouterr().out
    tests = validation["tests"]
    assert f"{tests - 1}/{tests}" in printed
    assert f"{tests}/{tests} 100.00%" in printed
    # The file carries what the page shows: the flags and the problems left out.
    records = _records(out / "humaneval_cpp.jsonl.gz")
    assert list(records) == ["CPP/44"]
    plus = records["CPP/44"]["plus"]
    assert plus["flagged"] == [{"input": failure["input"], "inputs": 1,
                                "cause": failure["cause"], "defects": ["hx-cpp-44-plus"]}]
    roots = by_task["HumanEval/32"]["inputs"]
    assert plus["omitted"] == {"HumanEval/32": {"property_oracle": roots},
                               "HumanEval/103": rounded["dropped"]}
