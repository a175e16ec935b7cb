"""Do our whole-program verdicts agree with CodeGeeX's? Right and wrong variants of real
solutions, judged by both evaluators.

    .venv/bin/python bench/codegeex_agreement.py cpp java go [--problems 30] [--workers 2]
        [--profile codegeex] [--backend auto]

Variants are made from each problem's canonical solution: unchanged and lightly edited
(right), and mutated (wrong): a flipped comparison, an off-by-one constant, a dropped
return, and idioms of other languages. Some variants probe where CodeGeeX's rules differ
from our strict ones: an early `exit(0)`, Java's `assert` without `-ea`, JavaScript
output, a Go vet finding, Python text after the function.

Ours judges under `--profile`: `codegeex` (the default) reproduces CodeGeeX's rules, so
every variant should agree, and any disagreement is printed with both verdicts and why
it remains; `strict` is our own semantics, where the disagreements designed into it are
listed as expected.

Each language is a plug-in: `register(AgreementPlugin(...))` gives the dataset and the
language's extra variants (its idioms).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.codegeex_env import run_codegeex  # noqa: E402
from bench.codegeex_toolchains import go_env, js_env, rust_env  # noqa: E402
from bench.common import load_average  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.defects import (  # noqa: E402
    NONDETERMINISTIC_KIND,
    flaky_defects,
    nondeterministic_tests,
)
from evaluator.engine import Engine, EngineConfig  # noqa: E402
from evaluator.profiles import PROFILES  # noqa: E402
from evaluator.records import Problem, RunOptions, Sample, SampleResult  # noqa: E402
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
    """CodeGeeX's task id prefix: CPP, Java, JavaScript, Go, Rust, Python."""
    idioms: Callable[[Problem], list[Variant]]
    """Language-specific variants of the canonical solution."""
    expected: dict[str, str]
    """Variant name -> why our strict semantics are designed to disagree with CodeGeeX
    on it (used under `--profile strict` only: the codegeex profile follows CodeGeeX)."""
    unreproduced: dict[str, str] = field(default_factory=dict)
    """Variant name -> a behaviour of CodeGeeX's evaluator that no profile of ours
    reproduces, and why (a disagreement under every profile)."""
    known_cases: dict[str, str] = field(default_factory=dict)
    """`<source id> [<variant>]` -> why that one case disagrees (a program whose outcome
    is not defined, so two builds of it may differ)."""
    codegeex_env: Callable[[], dict[str, str]] | None = None
    one_per_task: bool = False
    """CodeGeeX's evaluator is unsafe with more than one worker for this language (Rust
    samples of one task share one file name in one Cargo project; JavaScript and Go
    `os.chdir` into a per-sample directory under a shared `tmp/`): each evaluator runs
    one sample at a time, and the problems are shared out between `--workers`
    evaluators, each in a directory of its own, so no task runs twice at once."""


PLUGINS: dict[str, AgreementPlugin] = {}


def register(plugin: AgreementPlugin) -> None:
    PLUGINS[plugin.name] = plugin


# -- mutations shared by the C-family languages -------------------------------------------


def _first_replaced(body: str, *rules: tuple[str, str, str]) -> list[Variant]:
    """For each (name, pattern, replacement) whose pattern occurs in `body`: `body` with
    its first match replaced, under that name."""
    out: list[Variant] = []
    for name, pattern, new in rules:
        changed, count = re.subn(pattern, new, body, count=1)
        if count:
            out.append((name, changed))
    return out


def common_variants(problem: Problem) -> list[Variant]:
    body = problem.canonical_solution
    out: list[Variant] = [("canonical", body),
                          ("reformatted", "\n" + re.sub(r"\n", "\n\n", body, count=2))]
    out += _first_replaced(
        body,
        ("flip <= to <", r"(?<=\s)<=(?=\s)", "<"),
        ("flip < to <=", r"(?<=\s)<(?=\s)", "<="),
        ("flip > to >=", r"(?<=\s)>(?=\s)", ">="),
        ("flip == to !=", r"==", "!="),
        ("off by one (+1 -> +2)", r"\+\s*1\b", "+ 2"),
        ("off by one (0 -> 1)", r"(?<![\w.])0(?![\w.])", "1"),
    )
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
    return variants + _first_replaced(
        body,
        ("Python idiom len(x)", r"(\w+)\.size\(\)", r"len(\1)"),
        ("Java idiom x.length", r"(\w+)\.size\(\)", r"\1.length"),
    )


def java_idioms(problem: Problem) -> list[Variant]:
    body = problem.canonical_solution
    variants: list[Variant] = [
        ("debug print to stdout", _after_signature(problem,
                                                   '        System.out.println("debug");\n')),
        ("System.exit(0) before the tests", _after_signature(problem,
                                                             "        System.exit(0);\n")),
        ("failing assert statement", _after_signature(problem, "        assert false;\n")),
    ]
    return variants + _first_replaced(
        body,
        ("JavaScript idiom ===", r"==", "==="),
        ("Python idiom len(x)", r"(\w+)\.size\(\)", r"len(\1)"),
    )


EARLY_EXIT = ("the program exits with status 0 before its tests ran; CodeGeeX judges the "
              "exit status and passes it, our harness requires the tests to finish")
register(AgreementPlugin(
    "cpp", "humaneval-x/humaneval_cpp.jsonl.gz", "CPP", cpp_idioms,
    expected={"exit(0) before the tests": EARLY_EXIT},
    known_cases={"CPP/63 [off by one (0 -> 1)]": (
        "the mutation sets ff[1] twice and never ff[0], which fibfib then reads: an "
        "uninitialised stack slot, undefined behaviour; it held 0 in CodeGeeX's build "
        "and garbage in ours (our main differs), so the verdicts differ by chance"),
        "CPP/55 [off by one (0 -> 1)]": (
            "the same undefined behaviour as CPP/63: the mutation sets f[1] twice and never "
            "f[0], which fib then reads; on 2026-11-27 the slot held 0 in ours and garbage "
            "in CodeGeeX's build (CPP/63 then agreed): which way such a slot falls moves "
            "with each build, so the verdicts differ by chance")}))
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
    return variants + _first_replaced(
        body,
        ("loose == for ===", r"===", "=="),
        ("var for let", r"\blet\b", "var"),
        ("Python idiom len(x)", r"(\w+)\.length\b", r"len(\1)"),
    )


def go_idioms(problem: Problem) -> list[Variant]:
    body = problem.canonical_solution
    variants: list[Variant] = [
        ("debug print to stdout", _after_signature(problem, '    fmt.Println("debug")\n')),
        ("printf verb mismatch (go vet)",
         _after_signature(problem, '    _ = fmt.Sprintf("%d", "x")\n')),
        ("int to string conversion (go vet)",
         _after_signature(problem, '    _ = string(len("ab"))\n')),
        ("redundant || (go vet)",
         _after_signature(problem, "    if true || true {\n        _ = 0\n    }\n")),
        ("formatted debug print, vet-clean",
         _after_signature(problem, '    fmt.Printf("%d\\n", 1)\n')),
    ]
    unused = next((pkg for pkg in ("strings", "sort", "strconv", "bytes", "regexp")
                   if f"{pkg}." not in body), None)
    if unused:
        variants.append(("package named only in a comment",
                         _after_signature(problem, f"    // not {unused}.Anything\n")))
    variants += _first_replaced(
        body, ("JavaScript idiom x.length", r"\blen\((\w+)\)", r"\1.length"))
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
    return variants + _first_replaced(
        body, ("Python idiom len(x)", r"(\w+)\.len\(\)", r"len(\1)"))


register(AgreementPlugin(
    "js", "humaneval-x/humaneval_js.jsonl.gz", "JavaScript", js_idioms,
    expected={
        "process.exit(0) before the tests": EARLY_EXIT,
        "debug print to stdout": (
            "CodeGeeX fails a JavaScript sample that writes anything to stdout or stderr "
            "(its only way to see a console.assert failure); we read every assertion's "
            "outcome, so output does not matter"),
    },
    codegeex_env=js_env, one_per_task=True))
GO_VET = ("CodeGeeX runs `go test`, which runs `go vet` first and fails on its findings "
          "(here a Printf verb that does not match its argument, a conversion of an int "
          "to a string, a redundant ||); vet is a lint, not a test, and our strict profile "
          "compiles and runs the tests without it (the codegeex profile vets as go test "
          "does)")
register(AgreementPlugin(
    "go", "humaneval-x/humaneval_go.jsonl.gz", "Go", go_idioms,
    expected={"printf verb mismatch (go vet)": GO_VET,
              "int to string conversion (go vet)": GO_VET,
              "redundant || (go vet)": GO_VET,
              "package named only in a comment": (
                  "CodeGeeX imports each helper package whose `name.` occurs anywhere in "
                  "the generation, a comment included, so a package named only in a "
                  "comment is an unused import and the program does not compile; our "
                  "strict profile imports the packages the code uses (the codegeex "
                  "profile follows CodeGeeX's rule)")},
    codegeex_env=go_env, one_per_task=True))
register(AgreementPlugin(
    "rust", "humaneval-x/humaneval_rust.jsonl.gz", "Rust", rust_idioms,
    expected={"process::exit(0) before the tests": EARLY_EXIT},
    codegeex_env=rust_env, one_per_task=True))


# -- Python ------------------------------------------------------------------------------


def python_variants(problem: Problem) -> list[Variant]:
    """The shared mutations, and Python's idioms (CodeGeeX's own rules among them)."""
    body = problem.canonical_solution
    variants: list[Variant] = [
        ("debug print to stdout", '    print("debug")\n' + body),
        ("sys.exit(0) before the tests", "    import sys\n    sys.exit(0)\n" + body),
        ("failing assert statement", "    assert False\n" + body),
        # CodeGeeX keeps the generation up to its first line that is not indented.
        ("junk after the function", body.rstrip("\n") + "\n\nassert False, 'junk'\n"),
        # CodeGeeX's header imports these modules for every program.
        ("math without an import", "    _unused = math.floor(2.5)\n" + body),
        ("np without an import", "    _unused = np.zeros(1)\n" + body),
    ]
    returns = list(re.finditer(r"\n[ \t]*return\b[^\n]*", "\n" + body))
    if returns:
        last = returns[-1]
        text = "\n" + body
        variants.append(("drop the last return (Python)",
                         (text[: last.start()] + text[last.end():])[1:]))
    return variants + _first_replaced(
        body,
        ("JavaScript idiom x.length", r"\blen\((\w+)\)", r"\1.length"),
        ("Java idiom null", r"\bNone\b", "null"),
    )


register(AgreementPlugin(
    "python", "humaneval-x/humaneval_python.jsonl.gz", "Python", python_variants,
    expected={
        "junk after the function": (
            "CodeGeeX cuts the generation at its first line that is not indented; our "
            "strict semantics run the completion as written"),
    }))


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


def ours(cases: list[Case], *, workers: int, backend: str, profile: str,
         patched: bool = False) -> tuple[dict[int, SampleResult], str]:
    """Our verdicts, and the sandbox backend that ran them (`auto` resolved)."""
    problems = {c.problem.task_id: c.problem for c in cases}
    samples = [Sample(task_id=c.problem.task_id, index=c.index, raw=c.completion,
                      completion=c.completion) for c in cases]
    # The sandbox limit is generous; the profile's own limit (3 s of CPU for codegeex)
    # is applied to the CPU time each program used.
    options = RunOptions(profile=profile, patched=patched,
                         limits=SandboxLimits(wall_seconds=20, cpu_seconds=20))
    results: dict[int, SampleResult] = {}
    with Engine(EngineConfig(backend=backend, workers=workers, options=options,
                             cache=None)) as engine:
        for event in engine.evaluate(problems, samples):
            if event["type"] == "sample_finished":
                result = event["result"]
                results[result.completion_id] = result
        return results, engine.backend.name


def theirs(plugin: AgreementPlugin, cases: list[Case], *, workers: int) -> dict[int, str]:
    env = plugin.codegeex_env() if plugin.codegeex_env else None
    dataset = SHARED / "datasets" / plugin.dataset

    def run(shard: list[Case], shard_workers: int) -> dict[int, str]:
        rows = [{"task_id": f"{plugin.source_prefix}/{c.problem.number}",
                 "prompt": c.problem.prompt, "generation": c.completion,
                 "completion_id": c.index} for c in shard]
        done = run_codegeex(dataset, rows, workers=shard_workers, timeout=60.0, env=env)
        return {int(row["completion_id"]): str(row["result"]) for row in done.results}

    if not plugin.one_per_task:
        return run(cases, workers)
    tasks = sorted({c.problem.task_id for c in cases})
    shards = [[c for c in cases if tasks.index(c.problem.task_id) % workers == k]
              for k in range(workers)]
    verdicts: dict[int, str] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for part in pool.map(lambda shard: run(shard, 1), [s for s in shards if s]):
            verdicts.update(part)
    return verdicts


def compare(plugin: AgreementPlugin, cases: list[Case], *, problems: int, workers: int,
            backend: str, profile: str) -> None:
    """Run both evaluators on `cases` and print the agreement and every disagreement."""
    expected = plugin.expected if profile == "strict" else {}
    started = time.monotonic()
    our, backend = ours(cases, workers=workers, backend=backend, profile=profile)
    ours_seconds = time.monotonic() - started
    their = theirs(plugin, cases, workers=workers)
    their_seconds = time.monotonic() - started - ours_seconds
    reruns: dict[int, tuple[str, str]] = {}
    unexpected = [c for c in cases if our[c.index].passed != (their[c.index] == "passed")
                  and c.variant not in expected]
    if unexpected:
        # A verdict that changes on a second run is the harness's, not the program's:
        # CodeGeeX gives javac 5 s (x5 tries), so a busy machine turns correct Java
        # into "compilation error", and a C++ compile counts against its timeout.
        again = theirs(plugin, unexpected, workers=workers)
        for case in unexpected:
            if again[case.index] != their[case.index]:
                reruns[case.index] = (their[case.index], again[case.index])
                their[case.index] = again[case.index]
    table: Counter[str] = Counter()
    disagreements = []
    for case in cases:
        we_pass = our[case.index].passed
        they_pass = their[case.index] == "passed"
        table[f"ours {'pass' if we_pass else 'fail'} / codegeex "
              f"{'pass' if they_pass else 'fail'}"] += 1
        if we_pass != they_pass:
            disagreements.append((case, our[case.index], their[case.index]))
    agree = len(cases) - len(disagreements)
    why = {case.index: (expected.get(case.variant) or plugin.unreproduced.get(case.variant)
                        or plugin.known_cases.get(f"{case.problem.source_id} [{case.variant}]"))
           for case, _, _ in disagreements}
    by_registry = {case.index: _registry_explanation(case.problem)
                   for case, _, _ in disagreements if not why[case.index]}
    explained = sum(1 for reason in by_registry.values() if reason)
    print(f"\n== {plugin.name} (ours under {profile}, backend {backend}): {len(cases)} "
          f"variants of {problems} problems; agreement {agree}/{len(cases)} "
          f"({100 * agree / len(cases):.1f}%); ours {ours_seconds:.0f} s, codegeex "
          f"{their_seconds:.0f} s; load {load_average()}")
    if explained:
        # The raw agreement above still counts them: a verdict drawn by chance is a
        # disagreement, only not one either harness can be blamed for.
        print(f"   {explained} of the {len(disagreements)} disagreement(s) explained by "
              f"the defect registry (a test or solution that varies from run to run); "
              f"agreement on the rest {agree}/{len(cases) - explained}")
    for key, count in sorted(table.items()):
        print(f"   {key}: {count}")
    by_index = {case.index: case for case in cases}
    for index, (first, second) in reruns.items():
        rerun = by_index[index]
        print(f"   codegeex changed its verdict on a re-run of variant {index} "
              f"({rerun.problem.source_id} [{rerun.variant}]): {first[:80]!r} -> "
              f"{second[:80]!r} (the second one is used)")
        if registry := _registry_explanation(rerun.problem):
            print(f"       why: {registry}")
    for case, result, codegeex in disagreements:
        reason = why[case.index] or by_registry.get(case.index) or "UNEXPLAINED"
        print(f"   - {case.problem.source_id} [{case.variant}] ours={result.status}"
              f" ({result.error_type}: {result.message[:160]!r})"
              f" codegeex={codegeex[:160]!r}\n       why: {reason}")
    by_variant = Counter(case.variant for case, _, _ in disagreements)
    print(f"   disagreements by variant: {dict(by_variant)}")


def _registry_explanation(problem: Problem) -> str:
    """Why the defect registry expects verdicts on `problem` to vary from run to run (""
    when it does not): its hidden test draws random inputs, or its canonical solution is
    flaky. A disagreement there says nothing about either harness."""
    entries = [*nondeterministic_tests(problem, "hidden"),
               *(d for d in flaky_defects(problem) if d.kind != NONDETERMINISTIC_KIND)]
    return "; ".join(f"explained by registry entry {d.id} ({d.kind}): {d.effect}"
                     for d in entries)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("languages", nargs="*", default=list(PLUGINS),
                        help=f"any of {', '.join(PLUGINS)} (default: all)")
    parser.add_argument("--problems", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--profile", default="codegeex", choices=list(PROFILES),
                        help="the harness profile ours judges by (default: CodeGeeX's)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.languages if name not in PLUGINS]
    if unknown:
        parser.error(f"unknown language(s) {unknown}; choose from {', '.join(PLUGINS)}")
    if not (SHARED / "datasets" / "humaneval-x").is_dir():
        print(f"skipped: the HumanEval-X datasets are not at {SHARED / 'datasets'} "
              "(set WORKBENCH_SHARED to the shared directory)")
        return 0
    for name in args.languages:
        plugin = PLUGINS[name]
        if not (SHARED / "datasets" / plugin.dataset).is_file():
            print(f"\n== {name}: skipped, {SHARED / 'datasets' / plugin.dataset} is missing")
            continue
        cases = build_cases(plugin, args.problems)
        try:
            compare(plugin, cases, problems=args.problems, workers=args.workers,
                    backend=args.backend, profile=args.profile)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            # The reference could not be set up or run for this language: say what.
            print(f"\n== {name}: CodeGeeX's evaluator could not run: "
                  f"{type(exc).__name__}: {str(exc)[-2000:]}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
