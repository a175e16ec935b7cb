"""Where one Python program's time goes in a sandbox: the runner's phases, averaged.

    python bench/gvisor_profile.py [--sandbox gvisor] [--programs 60]

One long-lived runner (as a worker keeps one) runs the first N HumanEval canonical
solutions, each as the evaluator sends it, with `"profile": true`, so the runner
reports how long each phase of the job took inside the sandbox:

- scratch: make the job's scratch directory and give it to the job's user;
- pipes, fork: the three pipes, then `fork()` as the parent sees it;
- run: from the fork to the child's exit (its set-up, the copy-on-write faults of a
  child of a large process, the harness, the program itself, its exit);
- sweep: kill the child's group and every leftover process of the sandbox;
- drain: read what is left in the pipes and build the result;
- empty: empty the scratch file system.

"host" is the round trip seen by the worker less all of these: JSON on both sides and
the pipes between the host and the runner (under gVisor, every one of those reads and
writes passes through the Sentry).

The last figure is the one to compare across runs: the CPU time of the whole sandbox
per program, which the machine's load moves far less than wall time. For a before and
after, `--runtime DIR` runs another runner.py (say, from `git archive`), with the harness
`--harness FILE` (default: ours); a DIR that holds its own pyharness.py is the layout from
before the harness moved to `evaluator/languages/runtime/python/`, whose runner imports it
itself and takes `"kind": "python"` jobs. `EVALUATOR_RUNSC` runs another runsc binary.
docs/sandbox.md, "Where gVisor's time goes", has the figures.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import load_average, shared_dir  # noqa: E402
from evaluator.calibration import resolve_backend  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.languages import get_language  # noqa: E402
from evaluator.languages.python import HARNESS_JOB  # noqa: E402
from evaluator.records import RunOptions, Sample  # noqa: E402
from evaluator.samples import read_samples  # noqa: E402
from evaluator.sandbox import gvisor  # noqa: E402
from evaluator.sandbox import session as session_module  # noqa: E402
from evaluator.sandbox.base import Mount, SandboxLimits  # noqa: E402
from evaluator.sandbox.session import RunnerSession  # noqa: E402

PHASES = ("scratch", "pipes", "fork", "run", "sweep", "drain", "empty")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sandbox", default="gvisor")
    parser.add_argument("--programs", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2,
                        help="passes over the programs; the first (of several) warms the runner")
    parser.add_argument("--codegen", action="store_true",
                        help="CodeGen-16B's samples (the first of each task, then the "
                             "second...) instead of the canonical solutions")
    parser.add_argument("--tasks", type=int, default=164,
                        help="only the first T tasks (the speed benchmark's 20: HumanEval/0-19)")
    parser.add_argument("--preload", default=None,
                        help="the modules the runner imports before forking "
                             "(default: the Python language's own list)")
    parser.add_argument("--runtime", type=Path, default=None,
                        help="a directory holding another runner.py (say, an older "
                             "version from git) to run instead: before/after")
    parser.add_argument("--harness", type=Path, default=None,
                        help="another Python harness file for the jobs to name")
    args = parser.parse_args()
    harness = dict(HARNESS_JOB["harness"])
    if args.harness is not None:
        harness["path"] = str(args.harness.resolve())
    old_layout = False
    if args.runtime is not None:
        # The session reads the name it imported from evaluator.sandbox.base: swap that one.
        session_module.RUNTIME_DIR = args.runtime.resolve()  # type: ignore[attr-defined]
        old_layout = (args.runtime / "pyharness.py").exists()

    backend = resolve_backend(args.sandbox)
    language = get_language("python")
    limits = SandboxLimits.for_timeout(3.0)
    options = RunOptions(limits=limits)
    problems = load_dataset().problems
    by_id = {problem.task_id: problem for problem in problems}
    if args.codegen:
        source = next((shared_dir() / "generations" / "codegen-16b-n100").glob("*.jsonl.gz"))
        parsed = read_samples(source, problems, sanitize=False)
        samples = sorted((s for s in parsed.samples
                          if int(s.task_id.split("/")[1]) < args.tasks),
                         key=lambda s: (s.index, int(s.task_id.split("/")[1])))
    else:
        samples = [Sample(task_id=p.task_id, index=0, raw=p.canonical_solution,
                          completion=p.canonical_solution) for p in problems]
    jobs = [language.prepare(by_id[s.task_id], s, options).job
            for s in samples[: args.programs]]
    if old_layout:
        jobs = [{**{k: v for k, v in job.items() if k != "harness"}, "kind": "python"}
                for job in jobs]
    else:
        jobs = [{**job, "harness": harness} for job in jobs]
    mounts = (list(language.mounts()) if args.harness is None
              else [Mount(Path(harness["path"]).parent)])

    preload = ",".join(language.preload) if args.preload is None else args.preload
    # CPU time is what limits throughput on a busy machine, and it varies far less with
    # the load than wall time does: every process of the sandbox (runsc, the Sentry, the
    # Gofer, the program) is our descendant, and its CPU time is ours once it is reaped.
    cpu_before = _children_cpu()
    idle = RunnerSession(backend, limits=limits, mounts=mounts,
                         env={**language.environment(), "EVALUATOR_PRELOAD": preload})
    idle.start()
    idle.close()
    start_cpu = _children_cpu() - cpu_before
    cpu_before = _children_cpu()
    started = time.monotonic()
    session = RunnerSession(backend, limits=limits, mounts=mounts,
                            env={**language.environment(), "EVALUATOR_PRELOAD": preload})
    session.start()
    start_ms = (time.monotonic() - started) * 1000
    rows: list[dict[str, float]] = []
    try:
        for round_index in range(args.rounds):
            for job in jobs:
                sent = time.monotonic()
                answer = session.run({**job, "profile": True})
                total = (time.monotonic() - sent) * 1000
                if round_index == 0 and args.rounds > 1:
                    continue
                phases = answer.get("phases_ms", {})
                row = {name: float(phases.get(name, 0.0)) for name in PHASES}
                row["host"] = total - sum(row.values())
                row["total"] = total
                step = (answer.get("steps") or [{}])[0]
                row["faults"] = float(step.get("minor_faults") or 0)
                row["cpu"] = float(step.get("cpu_ms") or 0)
                row["wall"] = float(step.get("wall_ms") or 0)
                row["passed"] = float(all(r.get("status") == "passed"
                                          for r in answer.get("records", [])
                                          if r.get("kind") == "test"))
                rows.append(row)
    finally:
        session.close()
    cpu_ms = (_children_cpu() - cpu_before) * 1000
    executed = len(jobs) * args.rounds

    platform = ""
    if args.sandbox == "gvisor":
        version = subprocess.run([gvisor.RUNSC, "--version"], capture_output=True, text=True,
                                 check=False).stdout.split("\n")[0]
        platform = f"({version}, {gvisor.platform()})"
    runtime = f", runner from {args.runtime}" if args.runtime else ""
    print(f"{args.sandbox} {platform}, preload {preload!r}{runtime}, {len(rows)} programs, "
          f"load {load_average()}; runner start {start_ms:.0f} ms")
    print(f"{'phase':<8} {'mean ms':>8} {'median':>8}")
    for name in (*PHASES, "host", "total"):
        values = [row[name] for row in rows]
        print(f"{name:<8} {statistics.mean(values):8.1f} {statistics.median(values):8.1f}")
    print(f"minor page faults in the child (gVisor counts none): "
          f"{statistics.mean(r['faults'] for r in rows):.0f}"
          f"; all tests passed: {sum(r['passed'] for r in rows):.0f}/{len(rows)}"
          f"; runner starts: {session.starts}")
    print(f"CPU of the whole sandbox per program: {(cpu_ms - start_cpu * 1000) / executed:.1f}"
          f" ms ({executed} programs; its start and end: {start_cpu * 1000:.0f} ms)")
    slowest = sorted(rows, key=lambda row: -row["total"])[:5]
    print("slowest (total/program wall/program CPU ms):",
          ", ".join(f"{r['total']:.0f}/{r['wall']:.0f}/{r['cpu']:.0f}" for r in slowest))
    print(f"sum of totals {sum(r['total'] for r in rows) / 1000:.1f} s, of which programs "
          f"over 1 s: {sum(r['total'] for r in rows if r['total'] > 1000) / 1000:.1f} s")


if __name__ == "__main__":
    main()
