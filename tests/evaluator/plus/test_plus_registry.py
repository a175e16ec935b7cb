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
from tests.evaluator.registry_checks import validated_mini

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
    # find_zero's inputs are checked for a root, which the canonical solution finds.
    roots = by_task["HumanEval/32"]
    assert (roots["kept"], roots["dropped"]) == (roots["inputs"], {})
    assert validation["tests"] == by_task["HumanEval/44"]["kept"] + roots["kept"]
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
    assert list(records) == ["CPP/32", "CPP/44"]
    plus = records["CPP/44"]["plus"]
    assert plus["flagged"] == [{"input": failure["input"], "inputs": 1,
                                "cause": failure["cause"], "defects": ["hx-cpp-44-plus"]}]
    assert plus["omitted"] == {"HumanEval/103": rounded["dropped"]}
    assert records["CPP/32"]["plus"]["flagged"] == []


needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed")


GO_PATCHED = (11, 13, 46, 55, 57, 69, 76, 86, 95, 122, 124, 150)
"""Go problems whose canonical solution fails plus inputs and whose entries patch it."""


@needs_go
def test_go_canonical_solutions_pass_every_plus_input_patched(
        shared_dir: Path, tmp_path: Path) -> None:
    """Under the dataset's own profile and 3 s limit, as a user's run gets them: Go/13 (a
    GCD linear in b), Go/46 and Go/55 (exponential recursions) run out of time on
    HumanEval+'s large inputs, the others answer wrongly. Their entries explain every
    failure, and their patches make each solution right and fast: every input passes."""
    validation = validated_mini(shared_dir, tmp_path / "out", "go", GO_PATCHED)
    assert sorted(validation["patched_problems"]) == sorted(
        f"HumanEval/{n}" for n in GO_PATCHED)
    assert validation["passed_patched"] == validation["tests"], validation["tests"]
    # As shipped, Fib4(41) and Fib(63) never finish and GCD(100, 50) is 25 (when the
    # GCD finishes at all); each failure is explained by its problem's own plus entry.
    failing = {f["task_id"]: f["explained_by"] for f in validation["failures"]}
    assert {"HumanEval/13", "HumanEval/46", "HumanEval/55"} <= set(failing)
    for task_id, explained_by in failing.items():
        assert f"hx-go-{task_id.rsplit('/', 1)[1]}-plus" in explained_by, task_id
    assert validation["unexplained"] == 0
