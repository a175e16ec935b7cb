"""`python -m evaluator datasets build-plus`: build (and optionally validate) HumanEval-X+.

    python -m evaluator datasets build-plus --set mini --languages cpp,js,python --out DIR
        [--humanevalplus DIR] [--humaneval-x DIR] [--python-variants FILE,FILE]
        [--tasks 0,2,12] [--validate] [--workers N] [--json]

`python` in --languages writes the plus sets of the translated Python prompts
(`evaluator.plus.python`), by default the shared Russian and Arabic ones; --validate
checks those with each variant's own canonical solution too.

--tasks into a directory that holds a build of the same set rebuilds those problems and
keeps the others (`build.build_language`). --validate says on stderr how far it is, one
line per program, so that stdout stays the table (or the JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluator.plus.build import (
    LANGUAGES,
    SETS,
    build_plus,
    record_flags,
    table,
    write_report,
)
from evaluator.plus.python import (
    PythonBuild,
    build_python_variants,
    default_variants,
    python_table,
    validate_variant,
)
from evaluator.plus.validate import Progress, combine_validations, validate
from evaluator.sandbox.levels import describe_choices

CHOICES = (*LANGUAGES, "python")


def _shared(name: str) -> str:
    return str(_shared_root() / name)


def _shared_root() -> Path:
    return Path(os.environ.get("EVALUATOR_SHARED_DATASETS", "../shared/datasets"))


def add_datasets_parser(commands: Any) -> None:
    datasets = commands.add_parser("datasets", help="build derived datasets")
    actions = datasets.add_subparsers(dest="datasets_command", required=True)
    plus = actions.add_parser(
        "build-plus", help="HumanEval+'s inputs as typed tests of HumanEval-X's languages")
    plus.add_argument("--set", choices=sorted(SETS), default="mini", dest="plus_set",
                      help="HumanEval+'s inputs: mini (HumanEvalPlus-Mini, about 16 a "
                           "problem) or full (HumanEvalPlus, hundreds) (default: %(default)s)")
    plus.add_argument("--languages", default=",".join(CHOICES),
                      help=f"comma-separated, from {', '.join(CHOICES)}; python means the "
                           "translated Python prompts (default: all)")
    plus.add_argument("--out", required=True,
                      help="directory for the dataset files, report.json and the cache of "
                           "expected outputs")
    plus.add_argument("--humanevalplus", default=_shared("humanevalplus"),
                      help="directory holding HumanEval+'s HumanEvalPlus[-Mini].jsonl.gz "
                           "(default: $EVALUATOR_SHARED_DATASETS/humanevalplus, now "
                           "%(default)s)")
    plus.add_argument("--humaneval-x", default=_shared("humaneval-x"),
                      help="directory holding HumanEval-X's humaneval_<language>.jsonl.gz "
                           "(default: $EVALUATOR_SHARED_DATASETS/humaneval-x, now "
                           "%(default)s)")
    plus.add_argument("--python-variants", default="",
                      help="translated Python prompt files (default: the shared Russian "
                           "and Arabic HumanEval-XL and mHumanEval files)")
    plus.add_argument("--tasks", default="",
                      help="only these problem numbers (0,2,12); into an earlier build of "
                           "the same set they replace its records of those problems and "
                           "keep the rest (default: every problem)")
    plus.add_argument("--validate", action="store_true",
                      help="run each language's canonical solution on the built tests, "
                           "with progress on stderr (default: off)")
    plus.add_argument("--sandbox", default="auto",
                      help=f"sandbox for --validate: {describe_choices()} "
                           "(default: %(default)s)")
    plus.add_argument("--workers", type=int, default=2,
                      help="problems whose expected outputs are computed, and programs run, "
                           "at once (default: %(default)s)")
    plus.add_argument("--json", action="store_true",
                      help="print the report as JSON on stdout instead of the table "
                           "(default: off)")
    plus.set_defaults(handler=command_build_plus)


def command_build_plus(args: argparse.Namespace) -> int:
    languages = [name.strip() for name in args.languages.split(",") if name.strip()]
    unknown = sorted(set(languages) - set(CHOICES))
    if unknown:
        sys.stderr.write(f"error: unknown languages {unknown}; choose from {CHOICES}\n")
        return 2
    variants = [Path(name.strip()) for name in args.python_variants.split(",")
                if name.strip()] or default_variants(_shared_root())
    missing = [str(path) for path in variants if not path.is_file()]
    if "python" in languages and missing:
        sys.stderr.write(f"error: no such Python variant file: {', '.join(missing)}\n")
        return 2
    task_ids = [f"HumanEval/{int(n)}" for n in args.tasks.split(",") if n.strip()] or None
    out = Path(args.out)
    typed = [language for language in languages if language != "python"]
    # With no typed language, HumanEval+'s expected outputs are not needed here.
    builds = build_plus(Path(args.humanevalplus), Path(args.humaneval_x), out, args.plus_set,
                        typed, task_ids=task_ids, workers=args.workers) if typed else []
    for build in builds:
        if build.merged is not None:
            sys.stderr.write(f"{build.language}: merged {len(build.merged)} problems into "
                             f"the {build.merged_into} of {out}\n")
    plus_file = Path(args.humanevalplus) / SETS[args.plus_set]
    python: list[PythonBuild] = build_python_variants(
        variants, plus_file, args.plus_set, out) if "python" in languages else []
    if args.validate:
        for build in builds:
            path = out / f"humaneval_{build.language}.jsonl.gz"
            # Merged into an earlier build: only the problems built now are checked, and
            # the earlier results of the others stay.
            checked = validate(
                path, task_ids=build.merged,
                arguments={p.task_id: p.arguments for p in build.problems},
                backend=args.sandbox, workers=args.workers,
                progress=_progress_line(build.language))
            record_flags(path, checked, task_ids=build.merged)
            build.validation = combine_validations(build.validation, checked)
        # A variant's records must share one `plus` field, so its flags stay in the report.
        for variant_path, variant_build in zip(variants if python else [], python,
                                                strict=True):
            variant_build.validation = validate_variant(
                out / variant_build.file, variant_path, backend=args.sandbox,
                workers=args.workers)
    write_report(out, args.plus_set, builds, python)
    if args.json:
        sys.stdout.write(json.dumps({"set": args.plus_set,
                                     "languages": [b.to_dict() for b in builds],
                                     "python": [b.to_dict() for b in python]}) + "\n")
    else:
        if builds:
            sys.stdout.write(table(builds))
        if python:
            sys.stdout.write(python_table(python))
        sys.stdout.write(f"written: {out}/humaneval_<language>.jsonl.gz, {out}/report.json\n")
    return 0


def _progress_line(language: str) -> Callable[[Progress], None]:
    """One stderr line per finished program: "go: validated 37/164 problems
    (HumanEval/36: 812/812 pass) 4 min elapsed"."""
    started = time.monotonic()

    def show(progress: Progress) -> None:
        stage = "validated" if progress.stage == "shipped" else "validated patched"
        sys.stderr.write(f"{language}: {stage} {progress.done}/{progress.total} problems "
                         f"({progress.task_id}: {progress.passed}/{progress.tests} pass) "
                         f"{_elapsed(time.monotonic() - started)} elapsed\n")
        sys.stderr.flush()

    return show


def _elapsed(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
