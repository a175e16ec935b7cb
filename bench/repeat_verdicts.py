"""Is a verdict stable? The same variant of one problem judged many times, by ours and by
CodeGeeX's evaluator.

    .venv/bin/python bench/repeat_verdicts.py js 32 [--repeat 20] [--variant flip]
        [--workers 2] [--patched] [--no-codegeex]

The variants are those of `codegeex_agreement.py` (the canonical solution and its
mutations). Each copy of a variant gets a comment of its own at the end, so neither
evaluator can reuse one run for another (ours removes duplicate programs). A variant whose
copies do not all get the same verdict is judged by chance: by its test, when the test
draws its inputs at random (a `nondeterministic_test` entry of the defect registry), or by
the program itself. `--patched` runs ours with the registry's patches (a seeded test).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.codegeex_agreement import (  # noqa: E402
    PLUGINS,
    SHARED,
    Case,
    common_variants,
    ours,
    theirs,
)
from bench.common import load_average  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.defects import nondeterministic_tests  # noqa: E402
from evaluator.records import Problem  # noqa: E402

COMMENT = {"python": "#"}
"""How a line comment starts, where it is not `//`."""


def repeated_cases(problem: Problem, variants: list[tuple[str, str]], repeat: int,
                   language: str) -> list[Case]:
    comment = COMMENT.get(language, "//")
    cases: list[Case] = []
    for name, completion in variants:
        for copy in range(repeat):
            text = f"{completion.rstrip()}\n{comment} copy {copy}\n"
            cases.append(Case(problem, name, text, len(cases)))
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("language", choices=list(PLUGINS))
    parser.add_argument("task", type=int, help="the problem number N of HumanEval/N")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--variant", action="append", default=[],
                        help="only variants whose name contains this (repeatable)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--profile", default="codegeex")
    parser.add_argument("--completion", type=Path, action="append", default=[],
                        help="a completion of one's own to judge too (a file)")
    parser.add_argument("--patched", action="store_true",
                        help="ours with the defect registry's patches")
    parser.add_argument("--no-codegeex", action="store_true",
                        help="judge with ours only")
    args = parser.parse_args(argv)
    plugin = PLUGINS[args.language]
    problem = load_dataset(path=SHARED / "datasets" / plugin.dataset).get(
        f"HumanEval/{args.task}")
    if problem is None:
        parser.error(f"HumanEval/{args.task} is not in {plugin.dataset}")
    variants = [(name, text) for name, text in [*common_variants(problem),
                                                *plugin.idioms(problem)]
                if not args.variant or any(part in name for part in args.variant)]
    variants += [(path.name, path.read_text()) for path in args.completion]
    cases = repeated_cases(problem, variants, args.repeat, args.language)
    our, backend = ours(cases, workers=args.workers, backend=args.backend,
                        profile=args.profile, patched=args.patched)
    their = {} if args.no_codegeex else theirs(plugin, cases, workers=args.workers)
    print(f"== {problem.source_id}: {len(variants)} variant(s) x {args.repeat}, ours under "
          f"{args.profile}{' patched' if args.patched else ''} (backend {backend}); "
          f"load {load_average()}")
    for entry in nondeterministic_tests(problem):
        print(f"   registry: {entry.id} ({entry.kind})")
    for name, _ in variants:
        mine = [c for c in cases if c.variant == name]
        passed = sum(our[c.index].passed for c in mine)
        statuses = Counter(our[c.index].status for c in mine)
        line = f"   {name}: ours passed {passed}/{len(mine)} {dict(statuses)}"
        if their:
            line += (f"; codegeex passed "
                     f"{sum(their[c.index] == 'passed' for c in mine)}/{len(mine)}")
        print(line)
        failures = Counter(f"{our[c.index].status} {our[c.index].error_type}: "
                           f"{our[c.index].message[:120]!r}"
                           for c in mine if not our[c.index].passed)
        for failure, count in failures.most_common(3):
            print(f"      ours {count}x {failure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
