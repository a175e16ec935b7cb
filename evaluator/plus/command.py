"""`python -m evaluator datasets build-plus`: build (and optionally validate) HumanEval-X+.

    python -m evaluator datasets build-plus --set mini --languages cpp,js --out DIR
        [--humanevalplus DIR] [--humaneval-x DIR] [--tasks 0,2,12] [--validate]
        [--workers N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from evaluator.plus.build import LANGUAGES, SETS, build_plus, table, write_report
from evaluator.plus.validate import validate


def _shared(name: str) -> str:
    root = os.environ.get("EVALUATOR_SHARED_DATASETS", "../shared/datasets")
    return str(Path(root) / name)


def add_datasets_parser(commands: Any) -> None:
    datasets = commands.add_parser("datasets", help="build derived datasets")
    actions = datasets.add_subparsers(dest="datasets_command", required=True)
    plus = actions.add_parser(
        "build-plus", help="HumanEval+'s inputs as typed tests of HumanEval-X's languages")
    plus.add_argument("--set", choices=sorted(SETS), default="mini", dest="plus_set")
    plus.add_argument("--languages", default=",".join(LANGUAGES))
    plus.add_argument("--out", required=True, help="directory for the dataset files")
    plus.add_argument("--humanevalplus", default=_shared("humanevalplus"))
    plus.add_argument("--humaneval-x", default=_shared("humaneval-x"))
    plus.add_argument("--tasks", default="", help="only these problem numbers (0,2,12)")
    plus.add_argument("--validate", action="store_true",
                      help="run each language's canonical solution on the built tests")
    plus.add_argument("--sandbox", default="auto")
    plus.add_argument("--workers", type=int, default=2)
    plus.add_argument("--json", action="store_true", help="print the report as JSON")
    plus.set_defaults(handler=command_build_plus)


def command_build_plus(args: argparse.Namespace) -> int:
    languages = [name.strip() for name in args.languages.split(",") if name.strip()]
    unknown = sorted(set(languages) - set(LANGUAGES))
    if unknown:
        sys.stderr.write(f"error: unknown languages {unknown}; choose from {LANGUAGES}\n")
        return 2
    task_ids = [f"HumanEval/{int(n)}" for n in args.tasks.split(",") if n.strip()] or None
    out = Path(args.out)
    builds = build_plus(Path(args.humanevalplus), Path(args.humaneval_x), out, args.plus_set,
                        languages, task_ids=task_ids, workers=args.workers)
    if args.validate:
        for build in builds:
            build.validation = validate(out / f"humaneval_{build.language}.jsonl.gz",
                                        backend=args.sandbox, workers=args.workers)
        write_report(out, args.plus_set, builds)
    if args.json:
        sys.stdout.write(json.dumps({"set": args.plus_set,
                                     "languages": [b.to_dict() for b in builds]}) + "\n")
    else:
        sys.stdout.write(table(builds))
        sys.stdout.write(f"written: {out}/humaneval_<language>.jsonl.gz, {out}/report.json\n")
    return 0
