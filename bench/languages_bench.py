"""Time our evaluator against CodeGeeX's on the 164 canonical solutions of each language.

    .venv/bin/python bench/languages_bench.py cpp java [--workers 2] [--backend auto,none]
                                              [--limit N] [--ours-only]

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

It also prints the CPU each evaluator spent per sample, every process of the evaluation
counted (the evaluator, its runners, the sandbox: bubblewrap, or gVisor's Sentry and
Gofer; compilers, programs), and what that makes per core: 1000 / CPU ms per sample, the
samples/s one worker core carries when it does nothing else. CPU is counted by a cgroup
(v1 `cpuacct`) that the bench moves itself into, since a sandbox's processes are not all
reaped by us: bubblewrap's and gVisor's CPU never fully reaches `getrusage`. Without such
a cgroup, sandboxed rows print n/a. `--ours-only` skips CodeGeeX (for the capacity table
in docs/webapp.md); `--limit N` takes the first N problems of each language;
`--warm-runners` starts our runners before the clock, as a long-lived worker has them.

Each language is a plug-in: `register(LanguagePlugin(...))` names the dataset file and
anything CodeGeeX's evaluator needs set up for it.
"""

from __future__ import annotations

import argparse
import contextlib
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
from evaluator.sandbox.cgroups import own_path  # noqa: E402
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


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


class CpuClock:
    """CPU seconds used by this process and everything it has started, running or ended.

    With `enter_cgroup()`, a cpuacct group of the bench's own counts it all; the
    sandboxes' groups are made below it, and cpuacct counts a group's descendants too.
    Otherwise `getrusage` does, which sees only the processes we reaped ourselves.
    """

    def __init__(self) -> None:
        self.group: Path | None = None
        self._home: Path | None = None

    @property
    def complete(self) -> bool:
        """Whether a sandbox's processes are in the count."""
        return self.group is not None

    def enter_cgroup(self) -> str:
        """Move this process into a group of its own; say how CPU is counted."""
        own = own_path("cpuacct")
        if own is None or not (CPUACCT / "cpuacct.usage").exists():
            return "getrusage (no cgroup v1 cpuacct here: sandboxed rows are n/a)"
        home = CPUACCT / own.lstrip("/")
        group = home / f"languages-bench-{os.getpid()}"
        try:
            group.mkdir()
            (group / "cgroup.procs").write_text(str(os.getpid()))
        except OSError as exc:
            with contextlib.suppress(OSError):
                group.rmdir()
            return f"getrusage (cannot make a cpuacct group: {exc}; sandboxed rows are n/a)"
        self.group, self._home = group, home
        return f"the cpuacct group {group} (this process and all it starts)"

    def leave_cgroup(self) -> None:
        if self.group is None or self._home is None:
            return
        with contextlib.suppress(OSError):
            (self._home / "cgroup.procs").write_text(str(os.getpid()))
            self.group.rmdir()
        self.group = None

    def seconds(self) -> float:
        if self.group is not None:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        return _cpu(resource.RUSAGE_SELF) + _cpu(resource.RUSAGE_CHILDREN)


CLOCK = CpuClock()


WARM_UP = 8
"""Solutions each evaluator judges, untimed, before a language's first round."""


def time_ours(plugin: LanguagePlugin, *, workers: int, backend: str,
              limit: int | None = None, warm_runners: bool = False) -> Timing:
    """With `warm_runners`, the engine judges a few solutions before the clock starts, so
    its runners are up: the steady cost of a long-lived worker, start-up left out."""
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
    with contextlib.ExitStack() as stack:
        engine = None
        if warm_runners:
            engine = stack.enter_context(Engine(EngineConfig(
                backend=backend, workers=workers, options=options, cache=None, dedup=False)))
            first = samples[:WARM_UP * workers]
            for _ in engine.evaluate({s.task_id: problems[s.task_id] for s in first}, first):
                pass
        os.sync()  # the other evaluator's files are written back before our clock starts
        cpu = CLOCK.seconds()
        started = time.monotonic()
        # Cold (the default), the runners start and end inside the clock.
        if engine is None:
            engine = stack.enter_context(Engine(EngineConfig(
                backend=backend, workers=workers, options=options, cache=None, dedup=False)))
        for event in engine.evaluate(problems, samples):
            if event["type"] == "sample_finished":
                passed += event["result"].passed
        if not warm_runners:
            stack.close()  # cold: the runners end inside the clock too
        seconds = time.monotonic() - started
        cpu = CLOCK.seconds() - cpu
    return Timing(seconds, cpu, len(samples), passed)


def time_codegeex(plugin: LanguagePlugin, *, workers: int, limit: int | None = None) -> Timing:
    env = plugin.codegeex_env() if plugin.codegeex_env else None
    rows = None
    if limit:
        dataset = load_dataset(path=SHARED / "datasets" / plugin.dataset)
        rows = [{"task_id": p.source_id, "prompt": p.prompt, "generation": p.canonical_solution,
                 "completion_id": 0} for p in dataset.problems[:limit]]
    os.sync()
    # Its evaluator is a child process: getrusage counts it whole, and so does the cgroup.
    cpu = CLOCK.seconds()
    run = run_codegeex(SHARED / "datasets" / plugin.dataset, rows, workers=workers,
                       timeout=plugin.codegeex_timeout, env=env)
    cpu = CLOCK.seconds() - cpu
    passed = sum(1 for row in run.results if row["passed"])
    return Timing(run.seconds, cpu, len(run.results), passed)


def describe_backend(name: str) -> str:
    """Which isolation level and backend `name` means here; for `auto`, why."""
    backend = resolve_backend(name)
    level = level_of_backend(backend.name) or backend.name
    text = f"{name}: the {level} level ({backend.name})"
    return f"{text}; {backend.chosen}" if name == "auto" else text


def per_core(timing: Timing) -> str:
    """Samples/s one core carries at this CPU cost per sample."""
    return f"{1000 / timing.cpu_ms_per_sample:.1f}" if timing.cpu_ms_per_sample else "n/a"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("languages", nargs="*", default=list(PLUGINS),
                        help=f"any of {', '.join(PLUGINS)} (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, metavar="N",
                        help="only the first N problems of each language (default: all 164)")
    parser.add_argument("--ours-only", action="store_true",
                        help="skip CodeGeeX's evaluator: our figures alone, as the capacity "
                             "table in docs/webapp.md uses them")
    parser.add_argument("--warm-runners", action="store_true",
                        help="start our runners before the clock, as a long-lived worker "
                             "has them: the steady cost per sample, start-up left out")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="time the first round on a machine whose page cache may not "
                             "hold the toolchains")
    parser.add_argument("--backend", default="auto",
                        help="our sandbox: a level, a backend or auto (the default, as for "
                             "users); several, comma-separated, run side by side in each "
                             "round ('none' is like for like with CodeGeeX, which has none)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    unknown = [name for name in args.languages if name not in PLUGINS]
    if unknown:
        parser.error(f"unknown language(s) {', '.join(unknown)}; choose from "
                     f"{', '.join(PLUGINS)}")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    backends = [name.strip() for name in args.backend.split(",") if name.strip()]
    for name in backends:
        try:
            print(f"our sandbox {describe_backend(name)}")
        except SandboxError as exc:
            parser.error(str(exc))
    print(f"CPU counted by {CLOCK.enter_cgroup()}")
    try:
        run_rounds(args, backends)
    finally:
        CLOCK.leave_cgroup()
    print(f"load average at the end: {load_average()}")
    return 0


def run_rounds(args: argparse.Namespace, backends: list[str]) -> None:
    print(f"{args.workers} workers, load average (1, 5, 15 min) at the start: {load_average()}")
    print(f"{'language':9} {'evaluator':14} {'seconds':>8} {'samples/s':>10} "
          f"{'CPU ms/sample':>14} {'/s per core':>11} {'passed':>8}  {'load':>14}  "
          f"ratio (wall, CPU)")
    for name in args.languages:
        plugin = PLUGINS[name]
        if not args.no_warm_up:
            if not args.ours_only:
                time_codegeex(plugin, workers=args.workers, limit=WARM_UP)
            for backend in backends:
                time_ours(plugin, workers=args.workers, backend=backend, limit=WARM_UP)
        for round_ in range(args.rounds):
            # Alternating rounds: a load spike from elsewhere hits both evaluators alike.
            label = f"{name}#{round_ + 1}" if args.rounds > 1 else name
            theirs = None
            if not args.ours_only:
                theirs = time_codegeex(plugin, workers=args.workers, limit=args.limit)
                print(f"{label:9} {'codegeex':14} {theirs.seconds:8.1f} {theirs.rate:10.2f} "
                      f"{theirs.cpu_ms_per_sample:14.1f} {per_core(theirs):>11} "
                      f"{theirs.passed:4}/{theirs.samples}  {load_average():>14}", flush=True)
            for backend in backends:
                ours = time_ours(plugin, workers=args.workers, backend=backend,
                                 limit=args.limit, warm_runners=args.warm_runners)
                # Without the cgroup, a sandbox's programs are not ours to account
                # (bubblewrap reaps them inside its namespace, gVisor runs them in its
                # Sentry), so the figure would be far too low.
                counted = CLOCK.complete or resolve_backend(backend).name == "none"
                cpu = f"{ours.cpu_ms_per_sample:14.1f}" if counted else f"{'n/a':>14}"
                core = per_core(ours) if counted else "n/a"
                ratio = "-"
                if theirs is not None:
                    wall = ours.rate / theirs.rate if theirs.rate else float("inf")
                    cpu_ratio = (f"{theirs.cpu_ms_per_sample / ours.cpu_ms_per_sample:.2f}x"
                                 if counted and ours.cpu_ms_per_sample else "n/a")
                    ratio = f"{wall:.2f}x, {cpu_ratio}"
                print(f"{label:9} {'ours, ' + backend:14} {ours.seconds:8.1f} "
                      f"{ours.rate:10.2f} {cpu} {core:>11} {ours.passed:4}/{ours.samples}  "
                      f"{load_average():>14}  {ratio}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
