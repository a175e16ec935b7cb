"""Build HumanEval-X+ : HumanEval+'s inputs as tests of HumanEval-X's five typed languages.

For each problem and language: the signature is read from the HumanEval-X declaration;
each HumanEval+ input (base, then plus) is rendered as typed literals, with the expected
value the canonical Python solution returns for it (`oracle`, in a child process), or,
for a problem judged by a property (HumanEval/32: any root passes), a check of that
property in the language itself. An input that does not fit the types is left out and
counted under its reason. The output is one `humaneval_<lang>.jsonl.gz` per language in
HumanEval-X's own layout (the plus checks as `test`, the rest of the record unchanged,
plus a `plus` field recording what was kept and dropped), which `load_dataset` reads as
the `plus-<set>` variant of HumanEval-X, and `report.json` beside it.
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.datasets import load_dataset
from evaluator.defects import INTERFACE_KIND, Defect, defects_for
from evaluator.languages import lexing
from evaluator.languages.go import imported_paths, strip_imports, uses_package
from evaluator.plus.literals import MAX_CHECK_CHARS, Untranslatable, literal
from evaluator.plus.oracle import Answer, expected_outputs, tag, untag
from evaluator.plus.programs import ROOT_ORACLE, ROOT_PACKAGES, Check, test_program
from evaluator.plus.python import PythonBuild
from evaluator.plus.types import Signature, SignatureError, ValueType, read_signature
from evaluator.plus.validate import validation_cells, without_problems
from evaluator.records import Problem, task_order

LANGUAGES = ("cpp", "java", "js", "go", "rust")
SETS = {"mini": "HumanEvalPlus-Mini.jsonl.gz", "full": "HumanEvalPlus.jsonl.gz"}
GO_SETUP_PATHS = ("testing", "github.com/stretchr/testify/assert")
"""What every Go plus test imports; a prompt's own packages go between the two."""


def go_setup_text(paths: Iterable[str]) -> str:
    """The Go test setup (package clause and one import block) importing `paths`."""
    imports = "".join(f'    "{path}"\n' for path in paths)
    return f"package main\n\nimport (\n{imports})\n"


GO_TEST_SETUP = go_setup_text(GO_SETUP_PATHS)


def go_test_setup(shipped: str, prompt: str, needed: Iterable[str] = ()) -> str:
    """The Go plus tests' setup: `testing` and testify, those of the shipped setup's
    packages that the prompt's own code calls, and the packages `needed` by the plus
    test itself (a root check's `math` and `strconv`).

    The shipped setup also imports what the base test used (math/rand, time), and Go
    refuses an unused import. But a prompt's helper can call a package too (Go/38's
    `EncodeCyclic` calls `math` and `strings`), and under HumanEval-X's reference rule a
    package is imported for the program only when the completion names it: without the
    setup's import, the canonical solution does not compile."""
    code = lexing.blank(strip_imports(prompt), "go")
    kept = [path for path in imported_paths(shipped)
            if path not in GO_SETUP_PATHS and uses_package(code, path)]
    kept.extend(path for path in needed if path not in kept and path not in GO_SETUP_PATHS)
    testing, testify = GO_SETUP_PATHS
    return go_setup_text([testing, *kept, testify])


@dataclass(frozen=True)
class PlusSource:
    """One HumanEval+ problem with the expected output of each of its inputs."""

    problem: Problem
    inputs: tuple[tuple[Any, ...], ...]
    groups: tuple[str, ...]
    answers: tuple[Answer, ...]
    atol: float
    oracle: str = ""
    """The property the output is judged by (`extra["oracle"]`), when not by equality
    with an expected value: then `answers` holds no values."""


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
    arguments: list[str] = field(default_factory=list)
    """The `repr` of each kept input's argument list, by which the registry names it."""
    packages: tuple[str, ...] = ()
    """Packages the test program itself calls, for the setup to import (Go)."""

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "inputs": self.inputs, "kept": len(self.kept),
                "dropped": dict(self.dropped), "examples": self.examples}


@dataclass
class LanguageBuild:
    language: str
    problems: list[ProblemBuild] = field(default_factory=list)
    validation: dict[str, Any] | None = None
    merged: list[str] | None = None
    """The problems built this time, when they were merged into an earlier build of the
    same set in the output directory (`--tasks`); None when the file was written anew."""
    merged_into: int = 0
    """How many problems that earlier build had."""

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
        data = {"language": self.language, "problems": len(self.problems),
                "covered": self.covered, "kept": self.kept, "dropped": dict(self.dropped),
                "validation": self.validation,
                "per_problem": [p.to_dict() for p in self.problems]}
        if self.merged is not None:
            data["merged"] = {"problems": self.merged, "into": self.merged_into}
        return data


UNREADABLE = (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError, TypeError,
              AttributeError, KeyError, IndexError)
"""What reading a gzip file of JSON of the wrong shape can raise: gzip.BadGzipFile is an
OSError, json.JSONDecodeError a ValueError; a list or a number where a mapping or a
triple belongs fails as one of the others."""


def warn(text: str) -> None:
    sys.stderr.write(f"warning: {text}\n")


@contextmanager
def replaced_atomically(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` to write to, renamed over `path` when the block ends
    without error (and removed when it does not): an interrupted build leaves the earlier
    file whole, or none, never a truncated one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


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
    computed: list[str] = []

    def one(problem: Problem) -> PlusSource:
        inputs = [list(case.args) for case in problem.call_cases]
        oracle = str(problem.extra.get("oracle") or "")
        if oracle:
            # Judged by a property of the output (a root of the polynomial), which the
            # test checks itself: there is no expected value, so the canonical solution
            # is not run (where HumanEval+'s misses a root, any input still holds one).
            answers = [Answer(oracle == ROOT_ORACLE, error="" if oracle == ROOT_ORACLE
                              else "property_oracle")] * len(inputs)
        elif problem.task_id in known and len(known[problem.task_id]) == len(inputs):
            answers = known[problem.task_id]
        else:
            answers = expected_outputs(problem.prompt + problem.canonical_solution,
                                       problem.entry_point, inputs)
            computed.append(problem.task_id)
        if progress:
            progress(problem.task_id)
        atol = problem.call_cases[0].atol if problem.call_cases else 0.0
        return PlusSource(problem, tuple(tuple(i) for i in inputs),
                          tuple(c.group for c in problem.call_cases), tuple(answers), atol,
                          oracle)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        sources = list(pool.map(one, problems))
    # The full set's cache is tens of MB: written again only when it has something new.
    if cache is not None and computed:
        known.update({s.problem.task_id: list(s.answers) for s in sources
                      if not s.oracle})
        _write_cache(cache, dataset.version, known)
    return sources


def _read_cache(cache: Path | None, version: str) -> dict[str, list[Answer]]:
    """The cached answers of HumanEval+ file `version`. A file that cannot be read as a
    cache (truncated, corrupt, of another shape) is no cache: said once, and the answers
    are computed again, and the file rewritten whole."""
    if cache is None or not cache.exists():
        return {}
    try:
        with gzip.open(cache, "rt", encoding="utf-8") as stream:
            data = json.load(stream)
        if data.get("version") != version:
            return {}
        return {str(task_id): [Answer(bool(ok), untag(value), str(error))
                               for ok, value, error in answers]
                for task_id, answers in data["answers"].items()}
    except UNREADABLE as exc:
        warn(f"{cache} is not a readable cache of expected outputs ({type(exc).__name__}: "
             f"{str(exc)[:200]}); computing them again and rewriting it")
        return {}


def _write_cache(cache: Path, version: str, answers: dict[str, list[Answer]]) -> None:
    data = {"version": version,
            "answers": {task_id: [[a.ok, tag(a.value), a.error] for a in items]
                        for task_id, items in answers.items()}}
    with replaced_atomically(cache) as temporary, \
            gzip.open(temporary, "wt", encoding="utf-8") as stream:
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


def build_problem(language: str, signature: Signature, source: PlusSource,
                  interface: Sequence[Defect] = ()) -> ProblemBuild:
    """The plus tests of one problem in `language`. `interface`: the registry's entries
    saying this variant asks for another output than Python's on some (or all) inputs,
    which are left out: HumanEval+'s expected value is not the variant's."""
    built = ProblemBuild(task_id=source.problem.task_id, inputs=len(source.inputs))
    checks: list[Check] = []
    shapes = declared_shapes(source.problem.prompt, source.problem.entry_point)
    for index, (arguments, answer) in enumerate(zip(source.inputs, source.answers,
                                                     strict=True)):
        try:
            _check_shapes(arguments, shapes, signature)
            differs = [d.id for d in interface
                       if not d.inputs or repr(list(arguments)) in d.inputs]
            if differs:
                raise Untranslatable("variant_interface", ", ".join(differs))
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
            # A root check writes the coefficients twice: for the call and for the judge.
            expected = rendered[0] if source.oracle else \
                literal(language, value, signature.returns)
            size = len(expected) + sum(len(argument) for argument in rendered)
            if size > MAX_CHECK_CHARS:
                raise Untranslatable("literal_too_large", f"{size} characters")
        except Untranslatable as exc:
            built.dropped[exc.reason] += 1
            built.examples.setdefault(exc.reason, f"input {index}: {exc}"[:300])
            continue
        built.kept.append(index)
        built.arguments.append(repr(list(arguments)))
        if source.oracle:
            checks.append(Check(rendered, "", tolerant=False, oracle=source.oracle))
        else:
            checks.append(Check(rendered, expected, tolerant=_holds_float(value)))
    if checks:
        built.test = test_program(language, signature, checks, source.atol)
        if source.oracle:
            built.packages = ROOT_PACKAGES.get(language, ())
    return built


SHAPES = {"list": list, "List": list, "str": str, "dict": dict, "Dict": dict,
          "tuple": tuple, "Tuple": tuple}
"""Python annotations whose values a language without declared types (JavaScript) would
take for another kind of value: the Python prompt's types stand in for its own."""


def declared_shapes(prompt: str, entry_point: str) -> tuple[str, ...]:
    """Per parameter of `entry_point` in the Python prompt, the `SHAPES` name of its
    annotation (`List[str]` gives "List"), or "" when it has none of those."""
    try:
        tree = ast.parse(prompt + "\n    pass\n")
    except SyntaxError:
        return ()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return tuple(_shape(arg.annotation) for arg in node.args.args)
    return ()


def _shape(annotation: ast.expr | None) -> str:
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    name = annotation.id if isinstance(annotation, ast.Name) else ""
    return name if name in SHAPES else ""


def _check_shapes(arguments: tuple[Any, ...], shapes: tuple[str, ...],
                  signature: Signature) -> None:
    """Refuse a value of another kind than the Python prompt declares, for a parameter
    the language does not type (HumanEval+ passes a str for a List[str] in places,
    which Python iterates and JavaScript's array methods do not)."""
    for value, shape, value_type in zip(arguments, shapes, signature.params, strict=False):
        if shape and value_type.kind == "any" and not isinstance(value, SHAPES[shape]):
            raise Untranslatable("wrong_type", f"{type(value).__name__} where the Python "
                                               f"prompt declares {shape}")


def _raw_records(path: Path) -> dict[str, dict[str, Any]]:
    records: dict[str, dict[str, Any]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        for line in stream:
            if line.strip():
                record = json.loads(line)
                records[_task_id(record)] = record
    return records


@dataclass
class EarlierBuild:
    """What the output directory already holds of one language's build of the same set."""

    records: dict[str, dict[str, Any]]
    """The records of the problems with tests, by task id."""
    problems: list[ProblemBuild]
    """Every problem of that build, with tests or left out (kept, dropped, examples)."""
    validation: dict[str, Any] | None


def read_earlier_build(out_dir: Path, language: str, which: str) -> EarlierBuild | None:
    """The build of set `which` of `language` already in `out_dir`, or None: no file, a
    file of another set, or one that cannot be read (said), which is then written anew.
    The file holds the records; `report.json`, where it is of the same set, adds each
    problem's drop examples and the validation."""
    path = out_dir / f"humaneval_{language}.jsonl.gz"
    if not path.exists():
        return None
    try:
        records = _raw_records(path)
        plus = [record["plus"] for record in records.values()]
        if not plus or any(item.get("set") != which for item in plus):
            return None
        built = [ProblemBuild(task_id=task_id, inputs=int(item["inputs"]),
                              kept=[int(i) for i in item["kept"]],
                              dropped=Counter(item.get("dropped", {})))
                 for task_id, item in zip(records, plus, strict=True)]
        built.extend(ProblemBuild(task_id=task_id, inputs=sum(dropped.values()),
                                  dropped=Counter(dropped))
                     for task_id, dropped in dict(plus[0].get("omitted", {})).items()
                     if task_id not in records)
    except UNREADABLE as exc:
        warn(f"cannot read the earlier build {path} ({type(exc).__name__}: "
             f"{str(exc)[:200]}); it is written anew with the problems built now only")
        return None
    row = next((item for item in _earlier_report(out_dir, which).get("languages", [])
                if isinstance(item, dict) and item.get("language") == language), {})
    rows = {item.get("task_id"): item for item in row.get("per_problem", [])
            if isinstance(item, dict)}
    for problem in built:
        earlier = rows.get(problem.task_id, {})
        problem.examples = dict(earlier.get("examples", {}))
        if not problem.kept and "inputs" in earlier:
            problem.inputs = int(earlier["inputs"])
    built.sort(key=lambda problem: task_order(problem.task_id))
    return EarlierBuild(records, built, row.get("validation"))


def _earlier_report(out_dir: Path, which: str) -> dict[str, Any]:
    """`out_dir/report.json` where it is a report of set `which`, else {}."""
    try:
        report = json.loads((out_dir / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return report if isinstance(report, dict) and report.get("set") == which else {}


def build_language(language: str, x_dir: Path, sources: list[PlusSource], out_dir: Path,
                   which: str, *, merge: bool = False) -> LanguageBuild:
    """Write `out_dir/humaneval_<language>.jsonl.gz`; returns what was kept and dropped.

    With `merge` (the sources are some problems only), a build of the same set already in
    `out_dir` keeps its other problems: the records, report rows and validation results
    of the problems built now are replaced, the rest stay as they were."""
    earlier = read_earlier_build(out_dir, language, which) if merge else None
    path = x_dir / f"humaneval_{language}.jsonl.gz"
    dataset = load_dataset(path=path)
    raw = _raw_records(path)
    result = LanguageBuild(language)
    records: list[dict[str, Any]] = []
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
            built = build_problem(language, signature, source, [
                d for d in defects_for(problem) if d.kind == INTERFACE_KIND])
        result.problems.append(built)
        if not built.kept:
            continue
        record = dict(raw[problem.task_id])
        record["test"] = built.test
        if language == "go" and "test_setup" in record:
            record["test_setup"] = go_test_setup(str(record["test_setup"]),
                                                 str(record.get("prompt", "")), built.packages)
        record["plus"] = {"set": which, "kept": built.kept, "inputs": built.inputs,
                          "groups": [source.groups[i] for i in built.kept],
                          "dropped": dict(built.dropped)}
        records.append(record)
    if earlier is not None:
        rebuilt = {source.problem.task_id for source in sources}
        kept = {task_id: record for task_id, record in earlier.records.items()
                if task_id not in rebuilt}
        kept.update((_task_id(record), record) for record in records)
        records = [kept[task_id] for task_id in sorted(kept, key=task_order)]
        result.problems = sorted(
            [p for p in earlier.problems if p.task_id not in rebuilt] + result.problems,
            key=lambda problem: task_order(problem.task_id))
        result.validation = without_problems(earlier.validation, rebuilt)
        if earlier.validation and result.validation is None:
            warn(f"the validation in {out_dir / 'report.json'} has no per-problem figures "
                 f"(an older report), so it is dropped: run --validate on the whole set again")
        result.merged = sorted(rebuilt & {p.task_id for p in result.problems}, key=task_order)
        result.merged_into = len(earlier.problems)
    # Each record names the problems left out of the file with why, so that the file
    # alone (and so the dataset page after an import) shows every drop.
    omitted = {p.task_id: dict(p.dropped) for p in result.problems if not p.kept}
    for record in records:
        record["plus"]["omitted"] = omitted
    _write_records(out_dir / f"humaneval_{language}.jsonl.gz", records)
    return result


def _task_id(record: Mapping[str, Any]) -> str:
    """`HumanEval/<n>` for a HumanEval-X record's own id (`CPP/12`)."""
    return f"HumanEval/{int(str(record['task_id']).rsplit('/', 1)[1])}"


def _write_records(path: Path, records: list[dict[str, Any]]) -> None:
    with replaced_atomically(path) as temporary, \
            gzip.open(temporary, "wt", encoding="utf-8") as out:
        out.write("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")


def record_flags(path: Path, validation: dict[str, Any],
                 task_ids: Iterable[str] | None = None) -> None:
    """Write the validation's canonical failures into the records of the built file at
    `path`, as `plus.flagged` (`[{input, cause, defects}]`): a page showing the dataset
    then shows which inputs the canonical solution fails and which registry entries say
    why. A problem that did not fail gets `[]`, so "validated, nothing flagged" differs
    from "not validated" (no `flagged`). `task_ids`: the problems validated (default:
    all); the others keep what they had."""
    flagged: dict[str, list[dict[str, Any]]] = {}
    for failure in validation["failures"]:
        flagged.setdefault(failure["task_id"], []).append({
            "input": failure.get("input"), "inputs": failure.get("inputs", 1),
            "cause": failure["cause"], "defects": failure["explained_by"]})
    validated = set(task_ids) if task_ids is not None else None
    records = _raw_records(path)
    for task_id, record in records.items():
        if validated is None or task_id in validated:
            record["plus"]["flagged"] = flagged.get(task_id, [])
    _write_records(path, list(records.values()))


def build_plus(plus_dir: Path, x_dir: Path, out_dir: Path, which: str,
               languages: Iterable[str], *, task_ids: Iterable[str] | None = None,
               workers: int = 2) -> list[LanguageBuild]:
    """Build the plus set of each language into `out_dir`. With `task_ids`, a build of
    the same set already there keeps its other problems (`build_language`)."""
    sources = load_sources(plus_dir, which, task_ids=task_ids, workers=workers,
                           cache=out_dir / f"expected-{which}.json.gz")
    builds = [build_language(language, x_dir, sources, out_dir, which,
                             merge=task_ids is not None)
              for language in languages]
    write_report(out_dir, which, builds)
    return builds


def write_report(out_dir: Path, which: str, builds: list[LanguageBuild],
                 python: Sequence[PythonBuild] = ()) -> Path:
    """Write `out_dir/report.json`. The rows of an earlier report of the same set for the
    languages not built now (and its Python variants', when none are) are kept: the
    report describes every file of the set in the directory."""
    path = out_dir / "report.json"
    earlier = _earlier_report(out_dir, which)
    built = {build.language for build in builds}
    rows = [build.to_dict() for build in builds] + [
        row for row in earlier.get("languages", [])
        if isinstance(row, dict) and row.get("language") not in built]
    variants = [b.to_dict() for b in python] if python else list(earlier.get("python", []))
    with replaced_atomically(path) as temporary:
        temporary.write_text(json.dumps({"set": which, "languages": rows,
                                         "python": variants}, indent=1) + "\n",
                             encoding="utf-8")
    return path


def table(builds: list[LanguageBuild]) -> str:
    """The builder's table: per language, coverage, kept, drops by reason, and with
    validation the canonical pass rate as shipped and after the registry's patches, and
    how many of the failures as shipped the registry explains."""
    lines = [f"{'language':9} {'covered':>9} {'kept':>7} {'dropped':>7}  {'canonical':>17}"
             f"  {'patched':>17}  {'explained':>9}  {'unexplained':>11}  dropped by reason"]
    for build in builds:
        dropped = build.dropped
        reasons = ", ".join(f"{reason} {count}" for reason, count in dropped.most_common())
        before, after, explained, unexplained = validation_cells(build.validation)
        covered = f"{build.covered}/{len(build.problems)}"
        lines.append(f"{build.language:9} {covered:>9} {build.kept:>7} "
                     f"{sum(dropped.values()):>7}  {before:>17}  {after:>17}  "
                     f"{explained:>9}  {unexplained:>11}  {reasons or '-'}")
    return "\n".join(lines) + "\n"

