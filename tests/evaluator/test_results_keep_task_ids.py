"""`python -m evaluator evaluate --results` writes each sample's task id as the file had it.

A researcher joins the results with CodeGeeX's `_results.jsonl`, or with the generation
file itself, on `task_id`: `CPP/0` must come back as `CPP/0`, not as the aligned
`HumanEval/0`, which goes in `aligned_task_id`.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evaluator.datasets import load_dataset
from tests.evaluator.test_cli import run_cli

REPO = Path(__file__).resolve().parents[2]
PYTHON_X = REPO / "tests" / "fixtures" / "datasets" / "humaneval_x" / "humaneval_python.jsonl"


def write_generations(path: Path, records: list[dict[str, Any]]) -> Path:
    # Non-ASCII text is written as UTF-8, not escaped, so its bytes can be looked for.
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


def evaluate(samples: Path, dataset_file: Path, tmp_path: Path) -> list[str]:
    results = tmp_path / "results.jsonl"
    proc = run_cli("evaluate", "--samples", str(samples), "--dataset-file", str(dataset_file),
                   "--sandbox", "none", "--workers", "2", "--no-cache", "--k", "1",
                   "--results", str(results), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # Not splitlines(): an id may hold U+2028, which JSON leaves unescaped.
    return results.read_text(encoding="utf-8").split("\n")[:-1]


def assert_joins(records: list[dict[str, Any]], lines: list[str], content: str) -> None:
    """Each result line has its input line's task id, byte for byte and in input order,
    so a join on `task_id` matches every line of both files."""
    rows = [json.loads(line) for line in lines]
    assert [row["task_id"] for row in rows] == [record["task_id"] for record in records]
    for line, record in zip(lines, records, strict=True):
        assert json.dumps(record["task_id"], ensure_ascii=False) in line
    joined = Counter((r["task_id"], r["completion"]) for r in rows)
    assert joined == Counter((r["task_id"], r[content]) for r in records)


def test_humaneval_x_results_keep_the_files_ids_in_input_order(tmp_path: Path) -> None:
    records = [
        {"task_id": "Python/23", "generation": "    return len(string)\n"},
        {"task_id": "Python/0", "generation": "    return False\n"},
        {"task_id": "Python/2", "generation": "    return number % 1.0\n"},
        {"task_id": "Python/23", "generation": "    return 0\n"},
        {"task_id": "Python/0", "generation": "    return True\n"},
    ]
    samples = write_generations(tmp_path / "python_generations.jsonl", records)
    lines = evaluate(samples, PYTHON_X, tmp_path)
    assert_joins(records, lines, "generation")
    rows = [json.loads(line) for line in lines]
    assert [row["aligned_task_id"] for row in rows] == [
        "HumanEval/23", "HumanEval/0", "HumanEval/2", "HumanEval/23", "HumanEval/0"]
    assert [row["completion_id"] for row in rows] == [0, 0, 0, 1, 1]
    assert [row["passed"] for row in rows] == [True, False, True, False, False]
    assert list(rows[0])[:2] == ["task_id", "aligned_task_id"]


# Every odd form the reader accepts for these problems; each must come back unchanged.
ODD_IDS = {
    "python/0": "HumanEval/0",
    "PYTHON-2": "HumanEval/2",
    "py_23": "HumanEval/23",
    "python3/0": "HumanEval/0",
    "Python/002": "HumanEval/2",
    "Python/00": "HumanEval/0",
    " Python/23 ": "HumanEval/23",
    "\tPython/0\n": "HumanEval/0",
    "\u00a0Python/2\u2028": "HumanEval/2",
    "HumanEval/23": "HumanEval/23",
    "humaneval_0": "HumanEval/0",
    "HumanEval_2_truncate_number": "HumanEval/2",
    "Python/23/x y z": "HumanEval/23",
    "0": "HumanEval/0",
    "Python/\u0662": "HumanEval/2",  # ARABIC-INDIC DIGIT TWO
    "Python/\uff12\uff13": "HumanEval/23",  # FULLWIDTH DIGITS
}


def test_odd_but_accepted_ids_come_back_unchanged(tmp_path: Path) -> None:
    records = [{"task_id": raw, "completion": "    pass\n"} for raw in ODD_IDS]
    samples = write_generations(tmp_path / "odd.jsonl", records)
    lines = evaluate(samples, PYTHON_X, tmp_path)
    assert_joins(records, lines, "completion")
    assert [json.loads(line)["aligned_task_id"] for line in lines] == list(ODD_IDS.values())


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_humaneval_x_cpp_results_keep_cpp_ids(shared_dir: Path, tmp_path: Path) -> None:
    dataset_file = shared_dir / "datasets" / "humaneval-x" / "humaneval_cpp.jsonl.gz"
    first, second = load_dataset(path=dataset_file).problems[:2]
    records = [
        {"task_id": second.source_id, "generation": second.canonical_solution},
        {"task_id": first.source_id, "generation": first.canonical_solution},
        {"task_id": first.source_id, "generation": "    return false;\n}\n"},
    ]
    assert [r["task_id"] for r in records] == ["CPP/1", "CPP/0", "CPP/0"]
    samples = write_generations(tmp_path / "cpp_generations.jsonl", records)
    lines = evaluate(samples, dataset_file, tmp_path)
    assert_joins(records, lines, "generation")
    rows = [json.loads(line) for line in lines]
    assert [row["aligned_task_id"] for row in rows] == ["HumanEval/1", "HumanEval/0",
                                                        "HumanEval/0"]
    assert [row["passed"] for row in rows] == [True, True, False]
