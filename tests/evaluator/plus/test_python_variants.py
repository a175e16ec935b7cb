"""HumanEval+'s tests for translated Python prompts: reused by aligned id only where the
variant's function is HumanEval+'s, and loaded as that benchmark's plus variant."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.__main__ import main
from evaluator.datasets import DatasetError, load_dataset
from evaluator.engine import Engine, EngineConfig
from evaluator.plus.python import build_python_variants, mismatch, signature
from evaluator.records import Problem, Sample

PLUS = [
    {"task_id": "HumanEval/53", "entry_point": "add", "atol": 0, "contract": "",
     "prompt": "def add(x: int, y: int):\n    \"\"\"Add two numbers.\"\"\"\n",
     "canonical_solution": "    return x + y\n",
     "base_input": [[1, 2]], "plus_input": [[-7, 3], [2 ** 70, 1]]},
    {"task_id": "HumanEval/27", "entry_point": "flip_case", "atol": 0, "contract": "",
     "prompt": "def flip_case(string: str) -> str:\n    \"\"\"Flip.\"\"\"\n",
     "canonical_solution": "    return string.swapcase()\n",
     "base_input": [["Hello"]], "plus_input": [["Ça va"]]},
    {"task_id": "HumanEval/12", "entry_point": "longest", "atol": 0, "contract": "",
     "prompt": "def longest(strings):\n    \"\"\"Longest.\"\"\"\n",
     "canonical_solution": "    return max(strings, key=len) if strings else None\n",
     "base_input": [[[]]], "plus_input": []},
]

RUSSIAN = [
    {"task_id": "HumanEval/53", "nl": "rus_Cyrl", "pl": "python", "test": "",
     "prompt": "def add(x: int, y: int):\n    \"\"\"Сложить два числа.\"\"\"\n",
     "canonical_solution": "    return x + y\n"},
    # The parameter is renamed: HumanEval+'s inputs may be passed by that name.
    {"task_id": "HumanEval/27", "nl": "rus_Cyrl", "pl": "python", "test": "",
     "prompt": "def flip_case(строка: str) -> str:\n    \"\"\"Поменять регистр.\"\"\"\n",
     "canonical_solution": "    return строка.swapcase()\n"},
    {"task_id": "HumanEval/12", "nl": "rus_Cyrl", "pl": "python", "test": "",
     "prompt": "def longest(strings):\n    \"\"\"Самая длинная \"строка\"\"\"\"\n",
     "canonical_solution": "    return None\n"},
]


def _write_json(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    plus = tmp_path / "HumanEvalPlus-Mini.jsonl.gz"
    with gzip.open(plus, "wt", encoding="utf-8") as stream:
        stream.write("".join(json.dumps(r) + "\n" for r in PLUS))
    return plus, _write_json(tmp_path / "mHumanEval-rus_Cyrl-python.json", RUSSIAN)


def test_reuses_tests_only_where_the_function_is_humanevalplus_s(
        files: tuple[Path, Path], tmp_path: Path) -> None:
    plus, russian = files
    (built,) = build_python_variants([russian], plus, "mini", tmp_path / "out")
    assert (built.problems, built.covered, built.inputs) == (3, 1, 3)
    assert built.mismatched == {"signature_mismatch": 1, "unparsable_prompt": 1}
    assert built.examples["signature_mismatch"] == "HumanEval/27"
    dataset = load_dataset(path=tmp_path / "out" / built.file)
    assert dataset.key == "mhumaneval/python/ru/plus-mini-machine"
    (problem,) = dataset.problems
    assert (problem.dataset, problem.natural_language) == ("mhumaneval", "ru")
    assert "Сложить" in problem.prompt
    assert [case.group for case in problem.call_cases] == ["base", "plus", "plus"]


def test_a_missing_function_and_a_missing_problem_are_mismatches() -> None:
    base = Problem(dataset="humanevalplus", task_id="HumanEval/53", language="python",
                   natural_language="en", prompt="def add(x, y):\n    \"\"\"A.\"\"\"\n",
                   entry_point="add", canonical_solution="", test="")
    renamed = Problem(dataset="mhumaneval", task_id="HumanEval/53", language="python",
                      natural_language="ru", prompt="def сложить(x, y):\n    \"\"\"A.\"\"\"\n",
                      entry_point="add", canonical_solution="", test="")
    assert mismatch(renamed, base) == "no_function"
    assert mismatch(renamed, None) == "no_plus_problem"
    assert mismatch(base, base) == ""
    assert signature("def f(a: int = 1) -> int:\n", "f") != signature("def f(a=1):\n", "f")


def test_a_variant_s_plus_set_judges_by_humanevalplus_s_inputs(
        files: tuple[Path, Path], tmp_path: Path) -> None:
    plus, russian = files
    (built,) = build_python_variants([russian], plus, "mini", tmp_path / "out")
    dataset = load_dataset(path=tmp_path / "out" / built.file)
    problems = {p.task_id: p for p in dataset.problems}
    # Right on HumanEval's input, wrong on HumanEval+'s negative and huge ones.
    thin = "    return abs(x) + y if x < 2 ** 31 else 0\n"
    samples = [Sample(task_id="HumanEval/53", index=0, raw=thin, completion=thin)]
    with Engine(EngineConfig(workers=1, cache=None)) as engine:
        results = [e["result"] for e in engine.evaluate(problems, samples)
                   if e["type"] == "sample_finished"]
    (result,) = results
    assert result.status == "failed"
    assert [t.status for t in result.tests] == ["passed", "failed", "failed"]


def test_command_writes_the_python_sets_and_counts_mismatches(
        files: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    plus, russian = files
    out = tmp_path / "out"
    code = main(["datasets", "build-plus", "--languages", "python", "--out", str(out),
                 "--humanevalplus", str(plus.parent), "--python-variants", str(russian)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "mhumaneval/python/ru/machine" in printed
    assert "signature_mismatch 2 (1 problem)" in printed
    report = json.loads((out / "report.json").read_text())
    assert report["python"][0]["mismatched"] == {"signature_mismatch": 1,
                                                 "unparsable_prompt": 1}
    assert report["python"][0]["dropped"] == {"signature_mismatch": 2,
                                              "unparsable_prompt": 1}
    assert report["python"][0]["validation"] is None


def test_command_refuses_a_missing_variant_file(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["datasets", "build-plus", "--languages", "python", "--out", str(tmp_path),
                 "--python-variants", str(tmp_path / "nope.json")])
    assert code == 2
    assert "no such Python variant file" in capsys.readouterr().err


def test_a_file_mixing_variants_is_refused(files: tuple[Path, Path], tmp_path: Path) -> None:
    plus, russian = files
    (built,) = build_python_variants([russian], plus, "mini", tmp_path / "out")
    path = tmp_path / "out" / built.file
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        (record,) = [json.loads(line) for line in stream if line.strip()]
    other = {**record, "task_id": "HumanEval/12",
             "plus": {**record["plus"], "natural_language": "ar"}}
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.write(json.dumps(record) + "\n" + json.dumps(other) + "\n")
    with pytest.raises(DatasetError, match="different variants"):
        load_dataset(path=path)
