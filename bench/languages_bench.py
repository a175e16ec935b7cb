"""Time our evaluator against CodeGeeX's on the 164 canonical solutions of each language.

    .venv/bin/python bench/languages_bench.py cpp java [--workers 2] [--backend auto,none]

Ours runs under the sandbox a user gets by default (`auto`; the level it picks here is
printed, with why), or under each of `--backend`'s comma-separated choices in turn, side
by side with CodeGeeX's evaluator, which runs every program unsandboxed. Both get the
same problems, the same number of workers, and a cold start (our result cache is off;
CodeGeeX has none; our runners start inside the clock). The machine is warm: before a
language's first round, each evaluator judges a few of its solutions untimed, so both
find the compilers and headers in the page cache rather than one paying the other's
disk reads (`--no-warm-up` to skip); and each starts after the other's files are
written back (`sync`), not while the disk is busy with them. It prints samples per
second for each, how many canonical solutions each judged passed, the load average
after each row, and the ratio. The figures are only comparable within one run: on a
shared machine, compare ratios, not seconds.

Each language is a plug-in: `register(LanguagePlugin(...))` names the dataset file and
anything CodeGeeX's evaluator needs set up for it.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.codegeex_env import run_codegeex  # noqa: E402
from bench.codegeex_toolchains import go_env, js_env, rust_env  # noqa: E402
from bench.common import load_average  # noqa: E402
from evaluator.calibration import resolve_backend  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.engine import Engine, EngineConfig  # noqa: E402
from evaluator.languages import get_language  # noqa: E402
from evaluator.records import RunOptions, Sample  # noqa: E402
from evaluator.sandbox.base import SandboxError, SandboxLimits  # noqa: E402
from evaluator.sandbox.levels import level_of_backend  # noqa: E402

SHARED = Path(os.environ.get("WORKBENCH_SHARED",
                             Path(__file__).resolve().parents[2] / "shared"))


@dataclass(frozen=True)
class LanguagePlugin:
    name: str
    """Our language name (`evaluator.languages.registry.language_names`)."""
    dataset: str
    """The HumanEval-X file, relative to shared/datasets."""
    codegeex_timeout: float = 60.0
    """CodeGeeX's per-sample timeout; generous, so a busy machine fails nothing."""
    codegeex_env: Callable[[], dict[str, str]] | None = None
    """Environment CodeGeeX's evaluator needs for this language (Go's module, say)."""


PLUGINS: dict[str, LanguagePlugin] = {}


def register(plugin: LanguagePlugin) -> None:
    PLUGINS[plugin.name] = plugin


register(LanguagePlugin("python", "humaneval-x/humaneval_python.jsonl.gz"))
register(LanguagePlugin("cpp", "humaneval-x/humaneval_cpp.jsonl.gz"))
register(LanguagePlugin("java", "humaneval-x/humaneval_java.jsonl.gz"))
# JavaScript, Go, Rust: CodeGeeX's evaluator gets js-md5, an offline testify and warm Go
# build cache, and a warm Cargo project (see codegeex_toolchains).
register(LanguagePlugin("js", "humaneval-x/humaneval_js.jsonl.gz", codegeex_env=js_env))
register(LanguagePlugin("go", "humaneval-x/humaneval_go.jsonl.gz", codegeex_env=go_env))
register(LanguagePlugin("rust", "humaneval-x/humaneval_rust.jsonl.gz", codegeex_timeout=180.0,
                        codegeex_env=rust_env))


@dataclass(frozen=True)
class Timing:
    seconds: float
    cpu_seconds: float
    """CPU used by the evaluator and every process it started: unlike wall time, not
    inflated when other work shares the machine."""
    samples: int
    passed: int

    @property
    def rate(self) -> float:
        return self.samples / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms_per_sample(self) -> float:
        return 1000 * self.cpu_seconds / self.samples if self.samples else 0.0


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


WARM_UP = 8
"""Solutions each evaluator judges, untimed, before a language's first round."""


def time_ours(plugin: LanguagePlugin, *, workers: int, backend: str,
              limit: int | None = None) -> Timing:
    dataset = load_dataset(path=SHARED / "datasets" / plugin.dataset)
    chosen = dataset.problems[:limit] if limit else dataset.problems
    problems = {p.task_id: p for p in chosen}
    samples = [Sample(task_id=p.task_id, index=0, raw=p.canonical_solution,
                      completion=p.canonical_solution) for p in chosen]
    # Toolchain artefacts (precompiled headers, the Java harness) are built once per
    # machine, not per run: build them before the clock starts, as a warm machine has.
    language = get_language(plugin.name)
    for problem, sample in zip(chosen, samples, strict=True):
        language.prepare(problem, sample, RunOptions())
    options = RunOptions(limits=SandboxLimits(wall_seconds=plugin.codegeex_timeout,
                                              cpu_seconds=plugin.codegeex_timeout))
    passed = 0
    os.sync()  # the other evaluator's files are written back before our clock starts
    cpu = _cpu(resource.RUSAGE_SELF) + _cpu(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    # The runners are our children; closing the engine reaps them, which adds their
    # CPU (and that of every program they ran) to RUSAGE_CHILDREN.
    with Engine(EngineConfig(backend=backend, workers=workers, options=options, cache=None,
                             dedup=False)) as engine:
        for event in engine.evaluate(problems, samples):
            if event["type"] == "sample_finished":
                passed += event["result"].passed
    seconds = time.monotonic() - started
    cpu = _cpu(resource.RUSAGE_SELF) + _cpu(resource.RUSAGE_CHILDREN) - cpu
    return Timing(seconds, cpu, len(samples), passed)


def time_codegeex(plugin: LanguagePlugin, *, workers: int, limit: int | None = None) -> Timing:
    env = plugin.codegeex_env() if plugin.codegeex_env else None
    rows = None
    if limit:
        dataset = load_dataset(path=SHARED / "datasets" / plugin.dataset)
        rows = [{"task_id": p.source_id, "prompt": p.prompt, "generation": p.canonical_solution,
                 "completion_id": 0} for p in dataset.problems[:limit]]
    os.sync()
    cpu = _cpu(resource.RUSAGE_CHILDREN)
    run = run_codegeex(SHARED / "datasets" / plugin.dataset, rows, workers=workers,
                       timeout=plugin.codegeex_timeout, env=env)
    cpu = _cpu(resource.RUSAGE_CHILDREN) - cpu
    passed = sum(1 for row in run.results if row["passed"])
    return Timing(run.seconds, cpu, len(run.results), passed)


def describe_backend(name: str) -> str:
    """Which isolation level and backend `name` means here; for `auto`, why."""
    backend = resolve_backend(name)
    level = level_of_backend(backend.name) or backend.name
    text = f"{name}: the {level} level ({backend.name})"
    return f"{text}; {backend.chosen}" if name == "auto" else text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("languages", nargs="*", default=list(PLUGINS),
                        help=f"any of {', '.join(PLUGINS)} (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-warm-up", action="store_true",
                        help="time the first round on a machine whose page cache may not "
                             "hold the toolchains")
    parser.add_argument("--backend", default="auto",
                        help="our sandbox: a level, a backend or auto (the default, as for "
                             "users); several, comma-separated, run side by side in each "
                             "round ('none' is like for like with CodeGeeX, which has none)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.languages if name not in PLUGINS]
    if unknown:
        parser.error(f"unknown language(s) {', '.join(unknown)}; choose from "
                     f"{', '.join(PLUGINS)}")
    backends = [name.strip() for name in args.backend.split(",") if name.strip()]
    for name in backends:
        try:
            print(f"our sandbox {describe_backend(name)}")
        except SandboxError as exc:
            parser.error(str(exc))
    print(f"{args.workers} workers, load average (1, 5, 15 min) at the start: {load_average()}")
    print(f"{'language':9} {'evaluator':14} {'seconds':>8} {'samples/s':>10} "
          f"{'CPU ms/sample':>14} {'passed':>8}  {'load':>14}  ratio (wall, CPU)")
    for name in args.languages:
        plugin = PLUGINS[name]
        if not args.no_warm_up:
            time_codegeex(plugin, workers=args.workers, limit=WARM_UP)
            for backend in backends:
                time_ours(plugin, workers=args.workers, backend=backend, limit=WARM_UP)
        for round_ in range(args.rounds):
            # Alternating rounds: a load spike from elsewhere hits both evaluators alike.
            label = f"{name}#{round_ + 1}" if args.rounds > 1 else name
            theirs = time_codegeex(plugin, workers=args.workers)
            print(f"{label:9} {'codegeex':14} {theirs.seconds:8.1f} {theirs.rate:10.2f} "
                  f"{theirs.cpu_ms_per_sample:14.0f} {theirs.passed:4}/{theirs.samples}  "
                  f"{load_average():>14}", flush=True)
            for backend in backends:
                ours = time_ours(plugin, workers=args.workers, backend=backend)
                ratio = ours.rate / theirs.rate if theirs.rate else float("inf")
                # Under a sandbox the programs are not our descendants' to account (bwrap
                # reaps them inside its namespace): their CPU time does not reach us.
                counted = resolve_backend(backend).name == "none"
                cpu = f"{ours.cpu_ms_per_sample:14.0f}" if counted else f"{'n/a':>14}"
                cpu_ratio = (f"{theirs.cpu_ms_per_sample / ours.cpu_ms_per_sample:.2f}x"
                             if counted and ours.cpu_ms_per_sample else "n/a")
                print(f"{label:9} {'ours, ' + backend:14} {ours.seconds:8.1f} "
                      f"{ours.rate:10.2f} {cpu} {ours.passed:4}/{ours.samples}  "
                      f"{load_average():>14}  {ratio:.2f}x, {cpu_ratio}", flush=True)
    print(f"load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
