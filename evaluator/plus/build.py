"""Build HumanEval-X+ : HumanEval+'s inputs as tests of HumanEval-X's five typed languages.

For each problem and language: the signature is read from the HumanEval-X declaration;
each HumanEval+ input (base, then plus) is rendered as typed literals, with the expected
value the canonical Python solution returns for it (`oracle`, in a child process). An
input that does not fit the types is left out and counted under its reason. The output
is one `humaneval_<lang>.jsonl.gz` per language in HumanEval-X's own layout (the plus
checks as `test`, the rest of the record unchanged, plus a `plus` field recording what
was kept and dropped), which `load_dataset` reads as the `plus-<set>` variant of
HumanEval-X, and `report.json` beside it.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.datasets import load_dataset
from evaluator.plus.literals import MAX_CHECK_CHARS, Untranslatable, literal
from evaluator.plus.oracle import Answer, expected_outputs, tag, untag
from evaluator.plus.programs import Check, test_program
from evaluator.plus.types import Signature, SignatureError, ValueType, read_signature
from evaluator.records import Problem

LANGUAGES = ("cpp", "java", "js", "go", "rust")
SETS = {"mini": "HumanEvalPlus-Mini.jsonl.gz", "full": "HumanEvalPlus.jsonl.gz"}
GO_TEST_SETUP = ('package main\n\nimport (\n    "testing"\n'
                 '    "github.com/stretchr/testify/assert"\n)\n')
PROPERTY_ORACLES = frozenset({"HumanEval/32"})
"""Judged by a property of the output (a root of the polynomial), which a plain equality
check cannot express: no plus tests are written for them."""


@dataclass(frozen=True)
class PlusSource:
    """One HumanEval+ problem with the expected output of each of its inputs."""

    problem: Problem
    inputs: tuple[tuple[Any, ...], ...]
    groups: tuple[str, ...]
    answers: tuple[Answer, ...]
    atol: float


@dataclass
class ProblemBuild:
    task_id: str
    inputs: int
    kept: list[int] = field(default_factory=list)
    """Indices (into the HumanEval+ inputs) of the inputs that became tests, in order."""
    dropped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    """One example input per drop reason: `reason -> detail`."""
    test: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "inputs": self.inputs, "kept": len(self.kept),
                "dropped": dict(self.dropped), "examples": self.examples}


@dataclass
class LanguageBuild:
    language: str
    problems: list[ProblemBuild] = field(default_factory=list)
    validation: dict[str, Any] | None = None

    @property
    def covered(self) -> int:
        return sum(1 for p in self.problems if p.kept)

    @property
    def kept(self) -> int:
        return sum(len(p.kept) for p in self.problems)

    @property
    def dropped(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for problem in self.problems:
            total.update(problem.dropped)
        return total

    def to_dict(self) -> dict[str, Any]:
        return {"language": self.language, "problems": len(self.problems),
                "covered": self.covered, "kept": self.kept, "dropped": dict(self.dropped),
                "validation": self.validation,
                "per_problem": [p.to_dict() for p in self.problems]}


def load_sources(plus_dir: Path, which: str, *, task_ids: Iterable[str] | None = None,
                 workers: int = 2, progress: Callable[[str], None] | None = None,
                 cache: Path | None = None) -> list[PlusSource]:
    """HumanEval+ problems of set `which` (mini or full) with their expected outputs.

    With `cache` (a .json.gz file), answers computed before for the same HumanEval+ file
    (by its version) are read from it, and new ones added to it.
    """
    dataset = load_dataset(path=plus_dir / SETS[which])
    wanted = set(task_ids) if task_ids is not None else None
    problems = [p for p in dataset.problems if wanted is None or p.task_id in wanted]
    known = _read_cache(cache, dataset.version)

    def one(problem: Problem) -> PlusSource:
        inputs = [list(case.args) for case in problem.call_cases]
        if problem.task_id in PROPERTY_ORACLES:
            answers = [Answer(False, error="property_oracle")] * len(inputs)
        elif problem.task_id in known and len(known[problem.task_id]) == len(inputs):
            answers = known[problem.task_id]
        else:
            answers = expected_outputs(problem.prompt + problem.canonical_solution,
                                       problem.entry_point, inputs)
        if progress:
            progress(problem.task_id)
        atol = problem.call_cases[0].atol if problem.call_cases else 0.0
        return PlusSource(problem, tuple(tuple(i) for i in inputs),
                          tuple(c.group for c in problem.call_cases), tuple(answers), atol)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        sources = list(pool.map(one, problems))
    if cache is not None:
        known.update({s.problem.task_id: list(s.answers) for s in sources})
        _write_cache(cache, dataset.version, known)
    return sources


def _read_cache(cache: Path | None, version: str) -> dict[str, list[Answer]]:
    if cache is None or not cache.exists():
        return {}
    with gzip.open(cache, "rt", encoding="utf-8") as stream:
        data = json.load(stream)
    if data.get("version") != version:
        return {}
    return {task_id: [Answer(bool(ok), untag(value), str(error))
                      for ok, value, error in answers]
            for task_id, answers in data["answers"].items()}


def _write_cache(cache: Path, version: str, answers: dict[str, list[Answer]]) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    data = {"version": version,
            "answers": {task_id: [[a.ok, tag(a.value), a.error] for a in items]
                        for task_id, items in answers.items()}}
    with gzip.open(cache, "wt", encoding="utf-8") as stream:
        json.dump(data, stream)


def integral(value: Any, value_type: ValueType) -> Any:
    """An expected float with an integral value, where the declared type is an integer,
    as that integer: Python's `==`, which EvalPlus judges by, holds 2 == 2.0."""
    if value_type.kind == "int" and isinstance(value, float) and value.is_integer():
        return int(value)
    if value_type.kind in ("list", "array") and isinstance(value, list | tuple):
        return [integral(item, value_type.args[0]) for item in value]
    if value_type.kind == "tuple" and isinstance(value, list | tuple) \
            and len(value) == len(value_type.args):
        return tuple(integral(item, arg) for item, arg in zip(value, value_type.args,
                                                               strict=True))
    return value


def _rough_size(value: Any, budget: int = MAX_CHECK_CHARS) -> int:
    """A lower bound on the characters `value` takes as a literal, cheap to compute
    (rendering a 34 MB string character by character is not): stops past `budget`."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, list | tuple | dict):
        total = 2
        for item in (value.items() if isinstance(value, dict) else value):
            total += _rough_size(item, budget - total) + 1
            if total > budget:
                break
        return total
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4000:
        return budget + 1
    return len(repr(value)) if isinstance(value, int | float) else 4


def _holds_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, list | tuple):
        return any(_holds_float(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_float(item) for item in value.values())
    return False


def build_problem(language: str, signature: Signature, source: PlusSource) -> ProblemBuild:
    built = ProblemBuild(task_id=source.problem.task_id, inputs=len(source.inputs))
    checks: list[Check] = []
    for index, (arguments, answer) in enumerate(zip(source.inputs, source.answers,
                                                     strict=True)):
        try:
            if not answer.ok:
                reason = "property_oracle" if answer.error == "property_oracle" \
                    else "canonical_error"
                raise Untranslatable(reason, answer.error)
            if len(arguments) != len(signature.params) and not (
                    language == "js" and len(arguments) < len(signature.params)):
                # A JavaScript function may take fewer arguments than it names.
                raise Untranslatable("arity", f"{len(arguments)} arguments for "
                                              f"{len(signature.params)} parameters")
            if _rough_size(arguments) + _rough_size(answer.value) > MAX_CHECK_CHARS:
                raise Untranslatable("literal_too_large", "the values alone pass the limit")
            rendered = tuple(literal(language, value, value_type) for value, value_type
                             in zip(arguments, signature.params, strict=False))
            value = integral(answer.value, signature.returns)
            expected = literal(language, value, signature.returns)
            size = len(expected) + sum(len(argument) for argument in rendered)
            if size > MAX_CHECK_CHARS:
                raise Untranslatable("literal_too_large", f"{size} characters")
        except Untranslatable as exc:
            built.dropped[exc.reason] += 1
            built.examples.setdefault(exc.reason, f"input {index}: {exc}"[:300])
            continue
        built.kept.append(index)
        checks.append(Check(rendered, expected, tolerant=_holds_float(value)))
    if checks:
        built.test = test_program(language, signature, checks, source.atol)
    return built


def _raw_records(path: Path) -> dict[str, dict[str, Any]]:
    records: dict[str, dict[str, Any]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        for line in stream:
            if line.strip():
                record = json.loads(line)
                number = int(str(record["task_id"]).rsplit("/", 1)[1])
                records[f"HumanEval/{number}"] = record
    return records


def build_language(language: str, x_dir: Path, sources: list[PlusSource], out_dir: Path,
                   which: str) -> LanguageBuild:
    """Write `out_dir/humaneval_<language>.jsonl.gz`; returns what was kept and dropped."""
    path = x_dir / f"humaneval_{language}.jsonl.gz"
    dataset = load_dataset(path=path)
    raw = _raw_records(path)
    result = LanguageBuild(language)
    lines: list[str] = []
    for source in sources:
        problem = dataset.get(source.problem.task_id)
        if problem is None:
            continue
        try:
            signature = read_signature(language, problem.declaration + "\n"
                                       + problem.canonical_solution, problem.entry_point)
        except SignatureError as exc:
            built = ProblemBuild(task_id=problem.task_id, inputs=len(source.inputs))
            built.dropped["dynamic_type"] = len(source.inputs)
            built.examples["dynamic_type"] = str(exc)
        else:
            built = build_problem(language, signature, source)
        result.problems.append(built)
        if not built.kept:
            continue
        record = dict(raw[problem.task_id])
        record["test"] = built.test
        if language == "go" and "test_setup" in record:
            # The shipped setup imports what the base test used (math/rand, time); Go
            # refuses an unused import, and the program's own imports are added by use.
            record["test_setup"] = GO_TEST_SETUP
        record["plus"] = {"set": which, "kept": built.kept, "inputs": built.inputs,
                          "groups": [source.groups[i] for i in built.kept],
                          "dropped": dict(built.dropped)}
        lines.append(json.dumps(record, ensure_ascii=False))
    out_dir.mkdir(parents=True, exist_ok=True)
    with gzip.open(out_dir / f"humaneval_{language}.jsonl.gz", "wt", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    return result


def build_plus(plus_dir: Path, x_dir: Path, out_dir: Path, which: str,
               languages: Iterable[str], *, task_ids: Iterable[str] | None = None,
               workers: int = 2) -> list[LanguageBuild]:
    sources = load_sources(plus_dir, which, task_ids=task_ids, workers=workers,
                           cache=out_dir / f"expected-{which}.json.gz")
    builds = [build_language(language, x_dir, sources, out_dir, which)
              for language in languages]
    write_report(out_dir, which, builds)
    return builds


def write_report(out_dir: Path, which: str, builds: list[LanguageBuild]) -> Path:
    path = out_dir / "report.json"
    path.write_text(json.dumps({"set": which, "languages": [b.to_dict() for b in builds]},
                               indent=1) + "\n", encoding="utf-8")
    return path


def table(builds: list[LanguageBuild]) -> str:
    """The builder's table: per language, coverage, kept, drops by reason, pass rate."""
    lines = [f"{'language':9} {'covered':>9} {'kept':>7} {'dropped':>7}  {'canonical':>17}"
             "  dropped by reason"]
    for build in builds:
        dropped = build.dropped
        reasons = ", ".join(f"{reason} {count}" for reason, count in dropped.most_common())
        validation = build.validation
        rate = "-"
        if validation:
            rate = f"{validation['passed']}/{validation['tests']}" \
                   f" {100 * validation['passed'] / max(1, validation['tests']):.2f}%"
        covered = f"{build.covered}/{len(build.problems)}"
        lines.append(f"{build.language:9} {covered:>9} {build.kept:>7} "
                     f"{sum(dropped.values()):>7}  {rate:>17}  {reasons or '-'}")
    return "\n".join(lines) + "\n"
