"""HumanEval+'s tests for the translated Python prompts (HumanEval-XL, mHumanEval).

A Russian or Arabic prompt asks for HumanEval's own function, aligned by `HumanEval/N`,
so HumanEval+'s inputs test it as they are: no types to translate. A test is reused only
where the variant's prompt defines the same function as HumanEval+'s, with the same
parameters (names, defaults, annotations) and return annotation; a prompt that does not
(a translated name, a prompt that does not parse) is left out and counted.

Each variant becomes one file in HumanEval+'s layout: HumanEval+'s record with the
variant's prompt and a `plus` field naming the variant, which `load_dataset` reads as
that benchmark's `plus-<set>` variant (`evaluator.datasets.humanevalplus`).
"""

from __future__ import annotations

import ast
import gzip
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.datasets import Dataset, load_dataset
from evaluator.records import Problem

MISMATCHES = {
    "no_plus_problem": "HumanEval+ has no problem of that id in this set",
    "unparsable_prompt": "the variant's prompt does not parse as Python",
    "no_function": "the variant's prompt does not define the entry point",
    "signature_mismatch": "the variant's function takes other parameters or annotations",
}


def default_variants(shared: Path) -> list[Path]:
    """The Russian and Arabic Python prompts of the shared datasets."""
    return [shared / "humaneval-xl/python/Russian.jsonl",
            shared / "humaneval-xl/python/Arabic.jsonl",
            shared / "mhumaneval/mHumanEval-rus_Cyrl-python.json",
            shared / "mhumaneval/mHumanEval-arb_Arab-python.json",
            shared / "mhumaneval/Human_Expert_arb_Arab.json"]


@dataclass
class PythonBuild:
    """One translated variant's plus set: which problems reuse HumanEval+'s tests."""

    key: str
    problems: int
    covered: int = 0
    inputs: int = 0
    mismatched: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    """One task id per mismatch reason."""
    file: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.key, "problems": self.problems, "covered": self.covered,
                "inputs": self.inputs, "mismatched": dict(self.mismatched),
                "examples": self.examples, "file": self.file}


def signature(prompt: str, entry_point: str) -> str:
    """The entry point's signature in `prompt`, as comparable text (`ast.dump` of its
    name, parameters and return annotation). Raises SyntaxError or LookupError."""
    for node in ast.walk(ast.parse(prompt + "\n    pass\n")):
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            returns = ast.dump(node.returns) if node.returns else ""
            return f"{node.name}{ast.dump(node.args)}->{returns}"
    raise LookupError(entry_point)


def mismatch(variant: Problem, plus: Problem | None) -> str:
    """Why `plus`'s tests cannot test `variant`, or "" when they can."""
    if plus is None:
        return "no_plus_problem"
    try:
        wanted = signature(plus.prompt, plus.entry_point)
        found = signature(variant.prompt, plus.entry_point)
    except SyntaxError:
        return "unparsable_prompt"
    except LookupError:
        return "no_function"
    return "" if found == wanted else "signature_mismatch"


def build_python_variants(variant_paths: Sequence[Path], plus_path: Path, which: str,
                          out_dir: Path) -> list[PythonBuild]:
    """Write `out_dir/python_<variant key>.jsonl.gz` for each variant file."""
    plus = load_dataset(path=plus_path)
    raw = _raw_records(plus_path)
    return [_build_variant(path, plus, raw, which, out_dir) for path in variant_paths]


def _build_variant(variant_path: Path, plus: Dataset, raw: dict[str, dict[str, Any]],
                   which: str, out_dir: Path) -> PythonBuild:
    variant = load_dataset(path=variant_path)
    key = variant.key.replace("/", "_")
    built = PythonBuild(key=variant.key, problems=len(variant.problems))
    records: list[dict[str, Any]] = []
    for problem in variant.problems:
        reason = mismatch(problem, plus.get(problem.task_id))
        if reason:
            built.mismatched[reason] += 1
            built.examples.setdefault(reason, problem.task_id)
            continue
        record = dict(raw[problem.task_id])
        record["prompt"] = problem.prompt
        record["plus"] = {"of": variant.name, "natural_language": variant.natural_language,
                          "set": which, "translation": variant.variant}
        built.covered += 1
        built.inputs += len(record.get("base_input", [])) + len(record.get("plus_input", []))
        records.append(record)
    path = out_dir / f"python_{key}.jsonl.gz"
    out_dir.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
    built.file = path.name
    return built


def _raw_records(path: Path) -> dict[str, dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        records = (json.loads(line) for line in stream if line.strip())
        return {str(record["task_id"]): record for record in records}


def python_table(builds: list[PythonBuild]) -> str:
    lines = [f"{'python variant':36} {'covered':>9} {'inputs':>8}  mismatched"]
    for build in builds:
        mismatched = ", ".join(f"{reason} {count}" for reason, count
                               in build.mismatched.most_common()) or "-"
        lines.append(f"{build.key:36} {build.covered:>4}/{build.problems:<4} "
                     f"{build.inputs:>8}  {mismatched}")
    return "\n".join(lines) + "\n"
