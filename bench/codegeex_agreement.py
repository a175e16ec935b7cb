"""Do our whole-program verdicts agree with CodeGeeX's? Right and wrong variants of real
solutions, judged by both evaluators.

    .venv/bin/python bench/codegeex_agreement.py cpp java [--problems 30] [--workers 2]

Variants are made from each problem's canonical solution: unchanged and lightly edited
(right), and mutated (wrong): a flipped comparison, an off-by-one constant, a dropped
return, and idioms of other languages. Some variants are there to show the differences
we designed (an early `exit(0)` passes CodeGeeX but not us: our harness requires the
tests to finish). Every disagreement is printed with both verdicts.

Each language is a plug-in: `register(AgreementPlugin(...))` gives the dataset and the
language's extra variants (its idioms).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from codegeex_env import run_codegeex  # noqa: E402
from codegeex_toolchains import go_env, js_env, rust_env  # noqa: E402

from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.engine import Engine, EngineConfig  # noqa: E402
from evaluator.languages.base import RunOptions  # noqa: E402
from evaluator.records import Problem, Sample, SampleResult  # noqa: E402
from evaluator.sandbox.base import SandboxLimits  # noqa: E402

SHARED = Path(os.environ.get("WORKBENCH_SHARED",
                             Path(__file__).resolve().parents[2] / "shared"))

Variant = tuple[str, str]
"""(name, completion)"""


@dataclass(frozen=True)
class AgreementPlugin:
    name: str
    dataset: str
    source_prefix: str
    """CodeGeeX's task id prefix: CPP, Java, JavaScript, Go, Rust."""
    idioms: Callable[[Problem], list[Variant]]
    """Language-specific variants of the canonical solution."""
    expected: dict[str, str]
    """Variant name -> why the two evaluators are designed to disagree on it."""
    codegeex_env: Callable[[], dict[str, str]] | None = None
    codegeex_workers: int | None = None
    """Workers for CodeGeeX's evaluator when it is unsafe with more: its threads share
    one working directory (`os.chdir` before writing the program), and Rust samples of
    one task share one file name, so concurrent variants of a task can swap programs."""


PLUGINS: dict[str, AgreementPlugin] = {}


def register(plugin: AgreementPlugin) -> None:
    PLUGINS[plugin.name] = plugin


# -- mutations shared by the C-family languages -------------------------------------------


def _replace_first(text: str, pattern: str, new: str) -> str | None:
    changed, count = re.subn(pattern, new, text, count=1)
    return changed if count else None


def common_variants(problem: Problem) -> list[Variant]:
    body = problem.canonical_solution
    out: list[Variant] = [("canonical", body),
                          ("reformatted", "\n" + re.sub(r"\n", "\n\n", body, count=2))]
    for name, pattern, new in (
        ("flip <= to <", r"(?<=\s)<=(?=\s)", "<"),
        ("flip < to <=", r"(?<=\s)<(?=\s)", "<="),
        ("flip > to >=", r"(?<=\s)>(?=\s)", ">="),
        ("flip == to !=", r"==", "!="),
        ("off by one (+1 -> +2)", r"\+\s*1\b", "+ 2"),
        ("off by one (0 -> 1)", r"(?<![\w.])0(?![\w.])", "1"),
    ):
        changed = _replace_first(body, pattern, new)
        if changed is not None:
            out.append((name, changed))
    returns = list(re.finditer(r"\n\s*return\b[^;]*;", body))
    if returns:
        last = returns[-1]
        out.append(("drop the last return", body[: last.start()] + body[last.end():]))
    return out


def _after_signature(problem: Problem, statement: str) -> str:
    return statement + problem.canonical_solution


def cpp_idioms(problem: Problem) -> list[Variant]:
    body = problem.canonical_solution
    variants: list[Variant] = [
        ("debug print to stdout", _after_signature(problem, '    printf("debug\\n");\n')),
        ("exit(0) before the tests", _after_signature(problem, "    exit(0);\n")),
    ]
    python_len = _replace_first(body, r"(\w+)\.size\(\)", r"len(\1)")
    if python_len:
        variants.append(("Python idiom len(x)", python_len))
    java_length = _replace_first(body, r"(\w+)\.size\(\)", r"\1.length")
    if java_length:
        variants.append(("Java idiom x.length", java_length))
    return variants


def java_idioms(problem: Problem) -> list[Variant]:
    body = problem.canonical_solution
    variants: list[Variant] = [
        ("debug print to stdout", _after_signature(problem,
                                                   '        System.out.println("debug");\n')),
        ("System.exit(0) before the tests", _after_signature(problem,
                                                             "        System.exit(0);\n")),
        ("failing assert statement", _after_signature(problem, "        assert false;\n")),
    ]
    js_equals = _replace_first(body, r"==", "===")
    if js_equals:
        variants.append(("JavaScript idiom ===", js_equals))
    python_len = _replace_first(body, r"(\w+)\.size\(\)", r"len(\1)")
    if python_len:
        variants.append(("Python idiom len(x)", python_len))
    return variants


EARLY_EXIT = ("the program exits with status 0 before its tests ran; CodeGeeX judges the "
              "exit status and passes it, our harness requires the tests to finish")
register(AgreementPlugin(
    "cpp", "humaneval-x/humaneval_cpp.jsonl.gz", "CPP", cpp_idioms,
    expected={"exit(0) before the tests": EARLY_EXIT}))
register(AgreementPlugin(
    "java", "humaneval-x/humaneval_java.jsonl.gz", "Java", java_idioms,
    expected={
        "System.exit(0) before the tests": EARLY_EXIT,
        "failing assert statement": (
            "CodeGeeX runs `java` without -ea, so the solution's own assert is ignored; we "
            "run `java -ea` as the issue (and MultiPL-E) requires, so it throws"),
    }))


# -- JavaScript, Go, Rust --------------------------------------------------------------------


def js_idioms(problem: Problem) -> list[Variant]:
    body = problem.canonical_solution
    variants: list[Variant] = [
        ("debug print to stdout", _after_signature(problem, "  console.log('debug')\n")),
        ("process.exit(0) before the tests", _after_signature(problem, "  process.exit(0)\n")),
    ]
    loose = _replace_first(body, r"===", "==")
    if loose:
        variants.append(("loose == for ===", loose))
    var = _replace_first(body, r"\blet\b", "var")
    if var:
        variants.append(("var for let", var))
    python_len = _replace_first(body, r"(\w+)\.length\b", r"len(\1)")
    if python_len:
        variants.append(("Python idiom len(x)", python_len))
    return variants


def go_idioms(problem: Problem) -> list[Variant]:
    body = problem.canonical_solution
    variants: list[Variant] = [
        ("debug print to stdout", _after_signature(problem, '    fmt.Println("debug")\n')),
        ("printf verb mismatch (go vet)",
         _after_signature(problem, '    _ = fmt.Sprintf("%d", "x")\n')),
    ]
    js_length = _replace_first(body, r"\blen\((\w+)\)", r"\1.length")
    if js_length:
        variants.append(("JavaScript idiom x.length", js_length))
    returns = list(re.finditer(r"\n[ \t]*return\b[^\n]*", body))
    if returns:
        last = returns[-1]
        variants.append(("drop the last return (Go)", body[: last.start()] + body[last.end():]))
    return variants


def rust_idioms(problem: Problem) -> list[Variant]:
    body = problem.canonical_solution
    variants: list[Variant] = [
        ("debug print to stdout", _after_signature(problem, '    println!("debug");\n')),
        ("process::exit(0) before the tests",
         _after_signature(problem, "    std::process::exit(0);\n")),
        ("rand 0.8 API", _after_signature(
            problem, "    let _unused: u8 = rand::thread_rng().gen_range(0..10);\n")),
    ]
    python_len = _replace_first(body, r"(\w+)\.len\(\)", r"len(\1)")
    if python_len:
        variants.append(("Python idiom len(x)", python_len))
    return variants


register(AgreementPlugin(
    "js", "humaneval-x/humaneval_js.jsonl.gz", "JavaScript", js_idioms,
    expected={
        "process.exit(0) before the tests": EARLY_EXIT,
        "debug print to stdout": (
            "CodeGeeX fails a JavaScript sample that writes anything to stdout or stderr "
            "(its only way to see a console.assert failure); we read every assertion's "
            "outcome, so output does not matter"),
    },
    codegeex_env=js_env, codegeex_workers=1))
register(AgreementPlugin(
    "go", "humaneval-x/humaneval_go.jsonl.gz", "Go", go_idioms,
    expected={
        "printf verb mismatch (go vet)": (
            "CodeGeeX runs `go test`, which runs `go vet` first and fails on its findings "
            "(a Printf verb that does not match its argument); vet is a lint, not a test, "
            "and our evaluator compiles and runs the tests without it"),
    },
    codegeex_env=go_env, codegeex_workers=1))
register(AgreementPlugin(
    "rust", "humaneval-x/humaneval_rust.jsonl.gz", "Rust", rust_idioms,
    expected={"process::exit(0) before the tests": EARLY_EXIT},
    codegeex_env=rust_env, codegeex_workers=1))


# -- running both --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    problem: Problem
    variant: str
    completion: str
    index: int


def build_cases(plugin: AgreementPlugin, count: int) -> list[Case]:
    dataset = load_dataset(path=SHARED / "datasets" / plugin.dataset)
    step = max(1, len(dataset.problems) // count)
    cases: list[Case] = []
    for problem in dataset.problems[::step][:count]:
        seen: set[str] = set()
        for name, completion in [*common_variants(problem), *plugin.idioms(problem)]:
            if completion in seen:
                continue
            seen.add(completion)
            cases.append(Case(problem, name, completion, len(cases)))
    return cases


def ours(cases: list[Case], *, workers: int, backend: str) -> dict[int, SampleResult]:
    problems = {c.problem.task_id: c.problem for c in cases}
    samples = [Sample(task_id=c.problem.task_id, index=c.index, raw=c.completion,
                      completion=c.completion) for c in cases]
    options = RunOptions(limits=SandboxLimits(wall_seconds=20, cpu_seconds=20))
    results: dict[int, SampleResult] = {}
    with Engine(EngineConfig(backend=backend, workers=workers, options=options,
                             cache=None)) as engine:
        for event in engine.evaluate(problems, samples):
            if event["type"] == "sample_finished":
                result = event["result"]  # type: ignore[typeddict-item]
                results[result.completion_id] = result
    return results


def theirs(plugin: AgreementPlugin, cases: list[Case], *, workers: int) -> dict[int, str]:
    rows = [{"task_id": f"{plugin.source_prefix}/{c.problem.number}",
             "prompt": c.problem.prompt, "generation": c.completion, "completion_id": c.index}
            for c in cases]
    env = plugin.codegeex_env() if plugin.codegeex_env else None
    run = run_codegeex(SHARED / "datasets" / plugin.dataset, rows,
                       workers=plugin.codegeex_workers or workers, timeout=60.0, env=env)
    return {int(row["completion_id"]): str(row["result"]) for row in run.results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("languages", nargs="*", default=list(PLUGINS))
    parser.add_argument("--problems", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backend", default="none")
    args = parser.parse_args(argv)
    for name in args.languages:
        plugin = PLUGINS[name]
        cases = build_cases(plugin, args.problems)
        our = ours(cases, workers=args.workers, backend=args.backend)
        their = theirs(plugin, cases, workers=args.workers)
        reruns: dict[int, tuple[str, str]] = {}
        table: Counter[str] = Counter()
        disagreements = []
        unexpected = [c for c in cases if our[c.index].passed != (their[c.index] == "passed")
                      and c.variant not in plugin.expected]
        if unexpected:
            # A verdict that changes on a second run is the harness's, not the program's:
            # CodeGeeX gives javac 5 s (x5 tries), so a busy machine turns correct Java
            # into "compilation error", and a C++ compile counts against its timeout.
            again = theirs(plugin, unexpected, workers=args.workers)
            for case in unexpected:
                if again[case.index] != their[case.index]:
                    reruns[case.index] = (their[case.index], again[case.index])
                    their[case.index] = again[case.index]
        for case in cases:
            we_pass = our[case.index].passed
            they_pass = their[case.index] == "passed"
            table[f"ours {'pass' if we_pass else 'fail'} / codegeex "
                  f"{'pass' if they_pass else 'fail'}"] += 1
            if we_pass != they_pass:
                disagreements.append((case, our[case.index], their[case.index]))
        agree = len(cases) - len(disagreements)
        print(f"\n== {name}: {len(cases)} variants of {args.problems} problems; "
              f"agreement {agree}/{len(cases)} ({100 * agree / len(cases):.1f}%)")
        for key, count in sorted(table.items()):
            print(f"   {key}: {count}")
        by_variant = Counter(case.variant for case, _, _ in disagreements)
        for index, (first, second) in reruns.items():
            print(f"   codegeex changed its verdict on a re-run of variant {index}: "
                  f"{first[:80]!r} -> {second[:80]!r} (the second one is used)")
        for case, result, codegeex in disagreements:
            why = plugin.expected.get(case.variant, "UNEXPLAINED")
            print(f"   - {case.problem.source_id} [{case.variant}] ours={result.status}"
                  f" ({result.error_type}: {result.message[:120]!r})"
                  f" codegeex={codegeex[:120]!r}\n       why: {why}")
        print(f"   disagreements by variant: {dict(by_variant)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
