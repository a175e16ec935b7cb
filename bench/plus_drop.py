"""The base -> plus drop in every language (issue 25).

Python: real generations (`../shared/generations`: the ollama models, one sample per
task, and CodeGen-16B's first few samples per task) judged on HumanEval's own tests, on
HumanEval+'s base inputs and on all of HumanEval+'s inputs (Mini by default); pass@1 of
each, and the drop from HumanEval to HumanEval+.

C++, Java, JavaScript, Go and Rust have no generations here, so each HumanEval-X canonical
solution stands in for a right answer and a small mutator, by regex, breaks it the way a
model slips: a comparison moved by one (`<` for `<=`), an integer constant moved by one,
an early-return branch dropped. Each mutant runs on HumanEval-X's own tests (base) and on
HumanEval-X+ (`python -m evaluator datasets build-plus`, built here into --work); the
report counts the mutants that compile, and the share of them each test set kills. The
mutants count only on problems whose canonical solution passes both test sets, so a
defect of the data is not taken for a kill.

    python bench/plus_drop.py [--problems N] [--set mini] [--languages cpp,java,js,go,rust]
        [--models qwen2.5-coder_7b,deepseek-coder_6.7b,codegemma_7b] [--codegen 5]
        [--mutants 2] [--sandbox auto] [--workers 2] [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import load_average, shared_dir  # noqa: E402
from bench.languages_bench import describe_backend  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.engine import Engine, EngineConfig  # noqa: E402
from evaluator.metrics_plus import passed_base  # noqa: E402
from evaluator.plus.build import SETS, build_plus  # noqa: E402
from evaluator.records import Problem, Sample, SampleResult, task_order  # noqa: E402
from evaluator.samples import read_samples  # noqa: E402

LANGUAGES = ("cpp", "java", "js", "go", "rust")
DEFAULT_MODELS = ("qwen2.5-coder_7b", "deepseek-coder_6.7b", "codegemma_7b")
CODEGEN_FILE = ("codegen-16b-n100/"
                "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz")

# -- the mutator -----------------------------------------------------------------------------
TYPE_WORDS = frozenset({
    "int", "float", "double", "char", "long", "bool", "boolean", "string", "String",
    "Integer", "Double", "Float", "Character", "Long", "Boolean", "Object", "void", "auto",
    "size_t", "unsigned", "str", "usize", "isize", "i8", "i16", "i32", "i64", "i128", "u8",
    "u16", "u32", "u64", "u128", "f32", "f64", "vector", "map", "set", "pair", "tuple",
    "unordered_map", "unordered_set", "List", "ArrayList", "Map", "HashMap", "Set",
    "HashSet", "Optional", "Vec", "Option", "Box", "Result", "Comparator", "Stack", "Queue",
    "PriorityQueue", "LinkedList", "Deque", "Iterator", "Entry", "Collections", "Arrays",
    "Stream", "Collectors", "BTreeMap",
})
"""Words on either side of a `<` or `>` that is a template or generic bracket, not a
comparison (`vector<int>`, `List<Integer>`, `Vec<i32>`)."""
_COMPARISON = re.compile(r"(?<![<>=!\-&|])(?P<op><=|>=|<|>)(?![<>=])")
_LEFT_WORD = re.compile(r"(\w+)\s*$")
_RIGHT_WORD = re.compile(r"^\s*(\w+)")
_FLIPPED = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
_CONSTANT = re.compile(r"(?P<op>==|!=|<=|>=|<|>|\+|-)\s*(?P<n>\d+)\b(?![.\w])")
_ONE_LINE_GUARD = re.compile(r"^[ \t]*if\b[^\n{]*\breturn\b[^\n]*\n", re.MULTILINE)
_BLOCK_GUARD = re.compile(
    r"^(?P<indent>[ \t]*)(?:\}\s*else\s+)?if\b[^\n]*\{[ \t]*\n"
    r"[ \t]*return\b[^\n]*\n(?P=indent)\}[ \t]*\n", re.MULTILINE)
_ONE_LINE_BLOCK_GUARD = re.compile(r"^[ \t]*if\b[^\n]*\{\s*return\b[^\n]*\}[ \t]*\n",
                                   re.MULTILINE)
OPERATORS = ("boundary", "constant", "drop_guard")


@dataclass(frozen=True)
class Mutant:
    operator: str
    position: int
    """Where in the solution the change starts (the mutants' order)."""
    code: str


def _comment_spans(code: str, language: str) -> list[tuple[int, int]]:
    """Comments and string literals, where a `<` is text, not code."""
    pattern = r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])'"
    if language == "js":
        pattern += r"|`(?:\\.|[^`\\])*`"
    return [m.span() for m in re.finditer(pattern, code, re.DOTALL)]


def _in_spans(position: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


def _is_bracket(code: str, start: int, end: int) -> bool:
    """Whether the `<`/`>` at code[start:end] is a generic's bracket or part of an arrow."""
    left = _LEFT_WORD.search(code[max(0, start - 40):start])
    right = _RIGHT_WORD.search(code[end:end + 40])
    if code[max(0, start - 2):start].endswith("::") or code[start - 1:start] == "#":
        return True
    line_start = code.rfind("\n", 0, start) + 1
    if code[line_start:start].lstrip().startswith("#include"):
        return True
    words = {m.group(1) for m in (left, right) if m is not None}
    return bool(words & TYPE_WORDS)


def boundary_sites(code: str, language: str) -> list[tuple[int, int, str]]:
    """(start, end, replacement) of each comparison, moved by one: `<` <-> `<=`."""
    spans = _comment_spans(code, language)
    sites = []
    for match in _COMPARISON.finditer(code):
        start, end = match.span("op")
        if _in_spans(start, spans) or _is_bracket(code, start, end):
            continue
        sites.append((start, end, _FLIPPED[match.group("op")]))
    return sites


def constant_sites(code: str, language: str) -> list[tuple[int, int, str]]:
    """(start, end, replacement) of each small integer constant after a comparison or an
    addition, moved up by one."""
    spans = _comment_spans(code, language)
    sites = []
    for match in _CONSTANT.finditer(code):
        start, end = match.span("n")
        if _in_spans(start, spans) or (match.group("op") in "<>" and _is_bracket(
                code, *match.span("op"))):
            continue
        sites.append((start, end, str(int(match.group("n")) + 1)))
    return sites


def guard_sites(code: str, language: str) -> list[tuple[int, int, str]]:
    """(start, end, "") of each branch that only returns: `if (...) return x;`, `if c {
    return x }` on one line, or the same over three lines (dropped whole)."""
    spans = _comment_spans(code, language)
    found: dict[int, tuple[int, int, str]] = {}
    for pattern in (_BLOCK_GUARD, _ONE_LINE_BLOCK_GUARD, _ONE_LINE_GUARD):
        for match in pattern.finditer(code):
            start, end = match.span()
            if not _in_spans(start, spans) and not any(
                    s <= start < e for s, e, _ in found.values()):
                found[start] = (start, end, "")
    return [found[start] for start in sorted(found)]


def mutants(code: str, language: str, *, per_operator: int = 2) -> list[Mutant]:
    """Up to `per_operator` mutants of each operator, the first sites in the code, each
    one change away from `code` and different from it; deterministic."""
    made: list[Mutant] = []
    seen = {code}
    finders = {"boundary": boundary_sites, "constant": constant_sites,
               "drop_guard": guard_sites}
    for operator in OPERATORS:
        count = 0
        for start, end, replacement in finders[operator](code, language):
            if count == per_operator:
                break
            changed = code[:start] + replacement + code[end:]
            if changed in seen:
                continue
            seen.add(changed)
            made.append(Mutant(operator=operator, position=start, code=changed))
            count += 1
    return made


# -- evaluating ------------------------------------------------------------------------------
def evaluate(problems: Mapping[str, Problem], samples: Sequence[Sample], *, backend: str,
             workers: int) -> dict[tuple[str, int], SampleResult]:
    """(task id, sample index) -> its result."""
    config = EngineConfig(backend=backend, workers=workers, cache=None, dedup=False)
    found: dict[tuple[str, int], SampleResult] = {}
    with Engine(config) as engine:
        for event in engine.evaluate(dict(problems), list(samples)):
            if event["type"] == "sample_finished":
                sample = samples[event["position"]]
                found[(sample.task_id, sample.index)] = event["result"]
    return found


def pass_at_1(verdicts: Mapping[str, Sequence[bool]]) -> float:
    """Mean over problems of each problem's share of passing samples."""
    shares = [sum(v) / len(v) for v in verdicts.values() if v]
    return sum(shares) / len(shares) if shares else 0.0


@dataclass
class ModelDrop:
    model: str
    problems: int
    samples: int
    humaneval: float
    plus_base: float
    """pass@1 on HumanEval+'s base inputs."""
    plus: float

    @property
    def drop(self) -> float:
        return self.humaneval - self.plus


def python_drop(model: str, path: Path, task_ids: Sequence[str], *, per_task: int,
                base: Mapping[str, Problem], plus: Mapping[str, Problem], backend: str,
                workers: int) -> ModelDrop:
    parsed = read_samples(path, list(base.values()), sanitize=False)
    wanted = set(task_ids) & set(plus)
    samples = [s for s in parsed.samples if s.task_id in wanted and s.index < per_task]
    on_base = evaluate({t: base[t] for t in wanted}, samples, backend=backend,
                       workers=workers)
    on_plus = evaluate({t: plus[t] for t in wanted}, samples, backend=backend,
                       workers=workers)
    verdicts: dict[str, dict[str, list[bool]]] = {"he": {}, "base": {}, "plus": {}}
    for sample in samples:
        key = (sample.task_id, sample.index)
        verdicts["he"].setdefault(sample.task_id, []).append(on_base[key].passed)
        verdicts["base"].setdefault(sample.task_id, []).append(
            passed_base(plus[sample.task_id], on_plus[key]))
        verdicts["plus"].setdefault(sample.task_id, []).append(on_plus[key].passed)
    return ModelDrop(model=model, problems=len(verdicts["he"]), samples=len(samples),
                     humaneval=pass_at_1(verdicts["he"]),
                     plus_base=pass_at_1(verdicts["base"]), plus=pass_at_1(verdicts["plus"]))


@dataclass
class LanguageDrop:
    language: str
    problems: int
    """Problems of the language with plus tests, among those asked for."""
    canonical_base: int = 0
    canonical_plus: int = 0
    clean: int = 0
    """Problems whose canonical solution passes both: the mutants' problems."""
    mutants: int = 0
    compiled: int = 0
    killed_base: int = 0
    killed_plus: int = 0
    plus_only: int = 0
    base_only: int = 0
    by_operator: dict[str, dict[str, int]] = field(default_factory=dict)

    def share(self, count: int) -> float:
        return count / self.compiled if self.compiled else 0.0


def language_drop(language: str, base: Mapping[str, Problem], plus: Mapping[str, Problem],
                  *, per_operator: int, backend: str, workers: int) -> LanguageDrop:
    tasks = sorted(set(base) & set(plus), key=task_order)
    made = {t: mutants(base[t].canonical_solution, language, per_operator=per_operator)
            for t in tasks}
    samples = [Sample(task_id=t, index=i, raw=code, completion=code) for t in tasks
               for i, code in enumerate([base[t].canonical_solution,
                                         *(m.code for m in made[t])])]
    on_base = evaluate({t: base[t] for t in tasks}, samples, backend=backend, workers=workers)
    on_plus = evaluate({t: plus[t] for t in tasks}, samples, backend=backend, workers=workers)
    drop = LanguageDrop(language=language, problems=len(tasks))
    for task_id in tasks:
        right_base = on_base[(task_id, 0)].passed
        right_plus = on_plus[(task_id, 0)].passed
        drop.canonical_base += right_base
        drop.canonical_plus += right_plus
        if not (right_base and right_plus):
            continue
        drop.clean += 1
        for index, mutant in enumerate(made[task_id], start=1):
            _count(drop, mutant.operator, on_base[(task_id, index)],
                   on_plus[(task_id, index)])
    return drop


def _count(drop: LanguageDrop, operator: str, base: SampleResult, plus: SampleResult
           ) -> None:
    tally = drop.by_operator.setdefault(operator, dict.fromkeys(
        ("mutants", "compiled", "killed_base", "killed_plus"), 0))
    drop.mutants += 1
    tally["mutants"] += 1
    if base.status == "compile_error" or plus.status == "compile_error":
        return
    drop.compiled += 1
    tally["compiled"] += 1
    killed_base, killed_plus = not base.passed, not plus.passed
    drop.killed_base += killed_base
    drop.killed_plus += killed_plus
    tally["killed_base"] += killed_base
    tally["killed_plus"] += killed_plus
    drop.plus_only += killed_plus and not killed_base
    drop.base_only += killed_base and not killed_plus


# -- the report ------------------------------------------------------------------------------
def python_table(rows: Iterable[ModelDrop]) -> str:
    lines = [f"{'python model':24} {'problems':>8} {'samples':>7} {'HumanEval':>9} "
             f"{'HE+ base':>8} {'HE+':>6} {'drop':>6}"]
    for row in rows:
        lines.append(f"{row.model:24} {row.problems:>8} {row.samples:>7} "
                     f"{row.humaneval:>9.3f} {row.plus_base:>8.3f} {row.plus:>6.3f} "
                     f"{row.drop:>6.3f}")
    return "\n".join(lines) + "\n"


def language_table(rows: Iterable[LanguageDrop]) -> str:
    lines = [f"{'language':8} {'problems':>8} {'canon. base':>11} {'canon. plus':>11} "
             f"{'mutants':>7} {'compile':>7} {'killed base':>11} {'killed plus':>11} "
             f"{'plus only':>9} {'drop':>6}"]
    for row in rows:
        # The drop: the compiled mutants' pass rate on base minus on plus.
        drop = row.share(row.killed_plus) - row.share(row.killed_base)
        lines.append(
            f"{row.language:8} {row.problems:>8} {row.canonical_base:>11} "
            f"{row.canonical_plus:>11} {row.mutants:>7} {row.compiled:>7} "
            f"{row.killed_base:>5} {row.share(row.killed_base):>5.0%} "
            f"{row.killed_plus:>5} {row.share(row.killed_plus):>5.0%} {row.plus_only:>9} "
            f"{drop:>6.3f}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=164,
                        help="the first N HumanEval problems (default: all)")
    parser.add_argument("--set", choices=sorted(SETS), default="mini", dest="plus_set")
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help="ollama models of ../shared/generations/ollama-8-models")
    parser.add_argument("--codegen", type=int, default=5,
                        help="CodeGen-16B samples per task (0: none)")
    parser.add_argument("--mutants", type=int, default=2,
                        help="mutants per operator per problem")
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "plus_drop"),
                        help="where the plus sets are built (and their expected values kept)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    shared = shared_dir()
    datasets = shared / "datasets"
    task_ids = [f"HumanEval/{n}" for n in range(min(args.problems, 164))]
    languages = [name for name in args.languages.split(",") if name]
    unknown = sorted(set(languages) - set(LANGUAGES))
    if unknown:
        parser.error(f"unknown languages {unknown}; choose from {LANGUAGES}")
    started = time.perf_counter()
    print(f"load average before: {load_average()}; sandbox {describe_backend(args.sandbox)}; "
          f"{args.workers} workers, {len(task_ids)} problems, HumanEval+ {args.plus_set}")

    humaneval = {p.task_id: p for p in load_dataset().problems}
    plus_python = {p.task_id: p for p in load_dataset(
        path=datasets / "humanevalplus" / SETS[args.plus_set]).problems}
    generations = shared / "generations"
    runs = [(m, generations / "ollama-8-models" / f"{m}_samples.jsonl", 1)
            for m in args.models.split(",") if m]
    if args.codegen:
        runs.append(("codegen-16b", generations / CODEGEN_FILE, args.codegen))
    models = [python_drop(name, path, task_ids, per_task=per_task, base=humaneval,
                          plus=plus_python, backend=args.sandbox, workers=args.workers)
              for name, path, per_task in runs]
    print(python_table(models))

    work = Path(args.work)
    build_plus(datasets / "humanevalplus", datasets / "humaneval-x", work, args.plus_set,
               languages, task_ids=task_ids, workers=args.workers)
    wanted = set(task_ids)
    rows = []
    for language in languages:
        base = {p.task_id: p for p in load_dataset(
            path=datasets / "humaneval-x" / f"humaneval_{language}.jsonl.gz").problems
            if p.task_id in wanted}
        plus = {p.task_id: p for p in load_dataset(
            path=work / f"humaneval_{language}.jsonl.gz").problems}
        rows.append(language_drop(language, base, plus, per_operator=args.mutants,
                                  backend=args.sandbox, workers=args.workers))
        print(language_table(rows[-1:]).splitlines()[-1], flush=True)
    print(language_table(rows))
    elapsed = time.perf_counter() - started
    print(f"{elapsed:.0f} s; load average after: {load_average()}")
    if args.json:
        print(json.dumps({"python": [{**asdict(m), "drop": m.drop} for m in models],
                          "languages": [asdict(r) for r in rows],
                          "seconds": round(elapsed, 1), "load_average": load_average()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
