"""Schedule, deduplicate, cache, run, and stream events.

`Engine.evaluate` takes problems and samples and yields typed events as work progresses:
`sample_started` when a worker picks up a program, `sample_finished` with its
`SampleResult` (one per sample, duplicates included), and `run_finished` at the end.
Identical programs are run once. Results are cached by (dataset version, problem,
program hash, harness version, run options), so evaluating the same program again
costs a lookup.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol, Self, TypedDict

from evaluator.calibration import resolve_backend
from evaluator.defects import apply_patches
from evaluator.exclusive import SharedExclusiveLock
from evaluator.languages import get_language
from evaluator.languages.base import (
    Language,
    LanguageError,
    PreparedJob,
    RemoteBuild,
    outcome_from_record,
)
from evaluator.profiles import Profile, get_profile, run_facts
from evaluator.records import (
    HARNESS_VERSION,
    Problem,
    RunOptions,
    Sample,
    SampleResult,
    SandboxInfo,
    TestOutcome,
    content_hash,
)
from evaluator.sandbox.base import RUNTIME_DIR, Backend, SandboxError, SandboxLimits
from evaluator.sandbox.session import RunnerDied, RunnerSession

log = logging.getLogger(__name__)

SERVICE_FAILURES = 3
RETRIED_STATUSES = ("timeout", "memory")
"""Verdicts that a busy machine can cause: a unit that gets one may be run once more,
alone (`load_may_decide`)."""
CANCEL_POLL_SECONDS = 0.2
"""How often a run that can be cancelled looks at its cancel while it waits for results."""
CPU_BUDGET_SPENT = 0.9
"""A program stopped at its CPU limit after using at least this share of it, by its own
measured CPU time, needed that much CPU itself: load did not decide its verdict."""
RUNTIME_FINGERPRINT = content_hash(
    *(f"{path.name}\n{path.read_text(encoding='utf-8')}"
      for path in sorted(RUNTIME_DIR.glob("*.py")))
)
"""The runner as it runs in the sandbox: a change to it can change a verdict (what a
program's streams do, its limits), so it is part of every cache key, whether or not
HARNESS_VERSION was bumped with it; so is the harness a job names (`_harness_fingerprint`)."""


class SampleStarted(TypedDict):
    type: Literal["sample_started"]
    task_id: str
    completion_id: int
    position: int
    """The sample's position in the input (0-based)."""


class TestReported(TypedDict):
    """One test of a running program, as soon as the program reports it."""

    type: Literal["test_reported"]
    position: int
    task_id: str
    completion_id: int
    outcome: TestOutcome


class SampleFinished(TypedDict):
    type: Literal["sample_finished"]
    position: int
    result: SampleResult


class RunFinished(TypedDict):
    type: Literal["run_finished"]
    samples: int
    executed: int
    """Programs actually run (after dedup and cache hits)."""
    deduplicated: int
    cache_hits: int
    seconds: float


EngineEvent = SampleStarted | TestReported | SampleFinished | RunFinished


class ResultCache(Protocol):
    def get(self, key: str) -> SampleResult | None: ...

    def put(self, key: str, result: SampleResult) -> None: ...


class MemoryCache:
    def __init__(self) -> None:
        self._data: dict[str, SampleResult] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> SampleResult | None:
        with self._lock:
            return self._data.get(key)

    def put(self, key: str, result: SampleResult) -> None:
        with self._lock:
            self._data[key] = result


class SqliteCache:
    """A result cache in one SQLite file, shared by successive command-line runs."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, body TEXT)")
        self._db.commit()

    def get(self, key: str) -> SampleResult | None:
        with self._lock:
            row = self._db.execute("SELECT body FROM results WHERE key = ?", (key,)).fetchone()
        return SampleResult.from_dict(json.loads(row[0])) if row else None

    def put(self, key: str, result: SampleResult) -> None:
        body = json.dumps(result.to_dict())
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO results VALUES (?, ?)", (key, body))
            self._db.commit()


@dataclass
class EngineConfig:
    backend: str = "auto"
    workers: int = 2
    options: RunOptions = field(default_factory=RunOptions)
    cache: ResultCache | None = None
    dedup: bool = True
    stream_tests: bool = False
    """Emit `test_reported` for each test while its program runs (for live views)."""
    warm_compilers: bool = True
    """Compile with a language's warm compile service (Java's javac in a long-lived JVM)
    where it has one, instead of starting its compiler for every sample. Same compiler,
    same options, same verdicts; off, every job compiles inside its own run."""
    retry_limits: bool = True
    """Run a program whose result is `timeout` or `memory` once more, while no other
    program of this engine runs; the result keeps the retry's verdict and says whether the
    two attempts agreed (`SampleResult.unstable`)."""


@dataclass
class _Unit:
    """One distinct program and every sample that produced it."""

    prepared: PreparedJob
    language: Language
    problem: Problem
    samples: list[tuple[int, Sample]]
    key: str


@dataclass
class _Plan:
    """What `Engine.evaluate` will do: the distinct programs, in input order, and the
    samples that could not be made into a program."""

    samples: int = 0
    units: list[_Unit] = field(default_factory=list)
    unrunnable: list[tuple[int, SampleResult]] = field(default_factory=list)


class Engine:
    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()
        self._backend: Backend | None = None
        self._local = threading.local()
        self._sessions: list[RunnerSession] = []
        self._sessions_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._turns = SharedExclusiveLock()
        """Programs run under its shared side; a retry runs under its exclusive side."""
        self._service_failures: dict[str, int] = {}
        """Sandbox failures of each compile service; after `SERVICE_FAILURES` of them the
        engine stops trying it."""

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = resolve_backend(self.config.backend)
        return self._backend

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        with self._sessions_lock:
            for session in self._sessions:
                session.close()
            self._sessions.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the run ----------------------------------------------------------------------
    def evaluate(
        self,
        problems: Mapping[str, Problem],
        samples: Iterable[Sample],
        *,
        cancel: threading.Event | None = None,
    ) -> Iterator[EngineEvent]:
        started = time.monotonic()
        profile = get_profile(self.config.options.profile)
        self._warm_runners(problems)
        plan = self._plan(problems, samples, profile)
        for position, result in plan.unrunnable:
            yield SampleFinished(type="sample_finished", position=position,
                                 result=profile.rejudge(result))
        pending = yield from self._serve_cached(plan.units, profile)
        executed = yield from self._run_pending(pending, profile, cancel)
        yield RunFinished(type="run_finished", samples=plan.samples, executed=executed,
                          deduplicated=sum(len(u.samples) - 1 for u in plan.units),
                          cache_hits=len(plan.units) - len(pending),
                          seconds=round(time.monotonic() - started, 3))

    def _plan(self, problems: Mapping[str, Problem], samples: Iterable[Sample],
              profile: Profile) -> _Plan:
        """Prepare every sample's program, and group the samples by distinct program."""
        options = self.config.options
        plan = _Plan()
        by_key: dict[str, _Unit] = {}
        patched: dict[str, Problem] = {}
        for position, sample in enumerate(samples):
            plan.samples += 1
            problem = problems.get(sample.task_id)
            if problem is None:
                raise LanguageError(f"no problem {sample.task_id!r} in the dataset")
            if options.patched:
                # The defect registry's patches (renames, fixed tests...), applied once
                # per problem; verdicts are on the original data unless asked.
                if sample.task_id not in patched:
                    patched[sample.task_id] = apply_patches(problem)
                problem = patched[sample.task_id]
            language = get_language(problem.language)
            text = profile.prepare_text(sample.completion, problem.language)
            if text != sample.completion:
                sample = replace(sample, completion=text)
            try:
                prepared = language.prepare(problem, sample, options)
            except LanguageError as exc:
                plan.unrunnable.append((position, _unrunnable(sample, problem, str(exc))))
                continue
            key = cache_key(problem, prepared, options)
            unit_key = key if self.config.dedup else f"{key}:{position}"
            unit = by_key.get(unit_key)
            if unit is None:
                unit = by_key[unit_key] = _Unit(prepared, language, problem, [], key)
                plan.units.append(unit)
            unit.samples.append((position, sample))
        return plan

    def _serve_cached(self, units: list[_Unit], profile: Profile,
                      ) -> Generator[EngineEvent, None, list[_Unit]]:
        """Answer the units the cache holds; return the others, still to be run."""
        pending: list[_Unit] = []
        cache = self.config.cache
        # A cache that can answer many keys at once (a database's) is asked once for all.
        get_many: Callable[[list[str]], Mapping[str, SampleResult]] | None = getattr(
            cache, "get_many", None)
        known = get_many([unit.key for unit in units]) if get_many and units else None
        for unit in units:
            if known is not None:
                cached = known.get(unit.key)
            else:
                cached = cache.get(unit.key) if cache else None
            if cached is None:
                pending.append(unit)
                continue
            for position, sample in unit.samples:
                yield SampleFinished(type="sample_finished", position=position,
                                     result=_for_sample(cached, sample, profile, cached=True))
        return pending

    def _run_pending(self, pending: list[_Unit], profile: Profile,
                     cancel: threading.Event | None,
                     ) -> Generator[EngineEvent, None, int]:
        """Run the units on the worker pool, passing on their events as they come; return
        how many were run (a cancelled run skips the rest).

        A cancel ends the run within `CANCEL_POLL_SECONDS`, without waiting for the
        programs already running: they finish on the pool's threads (bounded by their
        limits) and their results are dropped. The cache is the one this run was given:
        by the time they finish, the engine may serve another run with another cache.
        """
        events: queue.Queue[EngineEvent | None] = queue.Queue()
        executed: list[_Unit] = []  # list.append is atomic under the GIL
        pool = self._worker_pool()
        cache = self.config.cache
        futures: list[Future[None]] = [
            pool.submit(self._work, unit, profile, events, executed, cancel, cache)
            for unit in pending]
        # A unit's events are queued before its function returns, so its done marker
        # always comes after them.
        for future in futures:
            future.add_done_callback(lambda _f: events.put(None))
        wait = None if cancel is None else CANCEL_POLL_SECONDS
        try:
            remaining = len(futures)
            while remaining:
                if cancel is not None and cancel.is_set():
                    return len(executed)
                try:
                    event = events.get(timeout=wait)
                except queue.Empty:
                    continue
                if event is None:
                    remaining -= 1
                else:
                    yield event
        finally:
            # The caller stopped listening (or something failed): drop queued work.
            for future in futures:
                future.cancel()
        for future in futures:
            error = None if future.cancelled() else future.exception()
            if error is not None:
                raise error
        return len(executed)

    def _work(self, unit: _Unit, profile: Profile, events: queue.Queue[EngineEvent | None],
              executed: list[_Unit], cancel: threading.Event | None,
              cache: ResultCache | None) -> None:
        """Run one unit on a worker thread, queueing its events."""
        if cancel is not None and cancel.is_set():
            return
        executed.append(unit)
        position, first = unit.samples[0]
        events.put(SampleStarted(type="sample_started", task_id=first.task_id,
                                 completion_id=first.index, position=position))
        on_progress = None
        if self.config.stream_tests:
            def on_progress(record: dict[str, Any]) -> None:
                events.put(TestReported(type="test_reported", position=position,
                                        task_id=first.task_id, completion_id=first.index,
                                        outcome=outcome_from_record(record)))
        result = self._attempts(unit, on_progress)
        if cancel is not None and cancel.is_set():
            return
        if cache is not None and result.status != "sandbox_error":
            cache.put(unit.key, result)
        for index, (pos, sample) in enumerate(unit.samples):
            events.put(SampleFinished(type="sample_finished", position=pos,
                                      result=_for_sample(result, sample, profile,
                                                         cached=index > 0)))

    def _worker_pool(self) -> ThreadPoolExecutor:
        # The pool (and so each thread's runner sessions) lives as long as the engine:
        # a worker process that keeps one engine pays the sandbox start-up once.
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=max(1, self.config.workers),
                                            thread_name_prefix="evaluator")
        return self._pool

    def _warm_runners(self, problems: Mapping[str, Problem]) -> None:
        """Have each worker thread start its runner while the samples are being prepared.

        A runner's start-up (a sandbox, an interpreter, the harness) is a tenth of a
        second or more, several times that on a busy machine, and would otherwise come
        before each thread's first program. Only where every problem has one language
        (the usual dataset), so no runner is started for nothing. A runner that fails to
        start is left for the first job to report.
        """
        languages = {problem.language for problem in problems.values()}
        if len(languages) != 1:
            return
        try:
            language = get_language(languages.pop())
            _ = self.backend  # resolved here once, not by two threads at the same time
        except (LanguageError, SandboxError):
            return
        pool = self._worker_pool()
        for _ in range(max(1, self.config.workers)):
            pool.submit(self._warm_runner, language)

    def _warm_runner(self, language: Language) -> None:
        with contextlib.suppress(SandboxError, RunnerDied, OSError):
            self._session(language).ensure_started()

    # -- one program ------------------------------------------------------------------
    def _session(self, language: Language, *, role: str = "runner",
                 limits: SandboxLimits | None = None) -> RunnerSession:
        """This thread's sandboxed runner for `language` (role "runner"), or the separate
        one that keeps its warm compiler (role "compiler")."""
        sessions: dict[str, RunnerSession] | None = getattr(self._local, "sessions", None)
        if sessions is None:
            sessions = {}
            self._local.sessions = sessions
        key = f"{language.name}:{role}"
        session = sessions.get(key)
        if session is None:
            env = {"EVALUATOR_PRELOAD": ",".join(language.preload), **language.environment()}
            session = RunnerSession(self.backend, limits=limits or self.config.options.limits,
                                    mounts=language.mounts(), env=env)
            sessions[key] = session
            with self._sessions_lock:
                self._sessions.append(session)
        return session

    def _attempts(self, unit: _Unit,
                  on_progress: Callable[[dict[str, Any]], None] | None = None,
                  ) -> SampleResult:
        """Run `unit`; should it time out or hit a resource limit, run it once more alone.

        Such a verdict may say more about the machine than about the program: the retry
        waits until no other program of this engine runs, and runs while none starts. Its
        verdict is the result's; `unstable` says the two attempts disagreed. A sandbox
        failure is not retried here (`_run_job` has its own retry for a dead runner).
        """
        with self._turns.shared():
            first = self._execute(unit, on_progress)
        if not self.config.retry_limits or not load_may_decide(first, self.backend):
            return first
        # The retry's tests are not streamed: a live view already showed the first's.
        with self._turns.exclusive():
            again = self._execute(unit)
        # What the first attempt measured stays with the result: why it was run again.
        measured = {key: (first.facts or {}).get(key)
                    for key in ("killed_for", "cpu_ms", "sandbox_cpu_ms", "wall_ms")}
        return replace(again, attempts=2, first_status=first.status,
                       unstable=again.status != first.status,
                       facts={**(again.facts or {}), "first_attempt": measured})

    def _execute(self, unit: _Unit,
                 on_progress: Callable[[dict[str, Any]], None] | None = None) -> SampleResult:
        options = self.config.options
        # A job may carry limits of its own (a profile's per-program rule): the result
        # records those it ran under.
        limits = {**options.limits.to_dict(), **unit.prepared.job.get("limits", {})}
        sandbox = SandboxInfo(backend=self.backend.name, limits=limits,
                              level=self.backend.level, chosen=self.backend.chosen)
        first = unit.samples[0][1]
        answer = self._build_and_run(unit, on_progress)
        if isinstance(answer, SampleResult):
            return answer
        result = unit.language.interpret(unit.prepared, answer, first, unit.problem, options,
                                         sandbox)
        judged = answer
        fallback = unit.language.fallback(unit.prepared, answer, result)
        if fallback is not None:
            # The run cannot be trusted (a program interfered with its instrumentation):
            # the language's other job gives the verdict, the tests stay this run's, and
            # the sample is flagged.
            job, note = fallback
            again = self._run_job(unit, job)
            if not isinstance(again, SampleResult):
                judged = again
                again_result = unit.language.interpret(unit.prepared, again, first,
                                                       unit.problem, options, sandbox)
                result = replace(again_result, tests=result.tests,
                                 suspicious=(*result.suspicious, note))
        facts = run_facts(judged, float(limits["cpu_seconds"]))
        if unit.prepared.job.get("limit_rule"):
            facts["limit_rule"] = unit.prepared.job["limit_rule"]
        return replace(result, facts=facts)

    def _build_and_run(self, unit: _Unit,
                       on_progress: Callable[[dict[str, Any]], None] | None = None,
                       ) -> dict[str, Any] | SampleResult:
        build, failure = self._remote_build(unit)
        if build is None:
            answer = self._run_job(unit, unit.prepared.job, on_progress)
            if failure is not None:
                self._service_failed(*failure, answer)
            return answer
        if build.answer is not None:
            return build.answer
        if build.job is None:  # it did not compile: the compile step is the answer
            return {"steps": build.steps, "records": [], "forged_lines": 0}
        answer = self._run_job(unit, build.job, on_progress)
        if isinstance(answer, SampleResult):
            return answer
        return {**answer, "steps": [*build.steps, *answer.get("steps", [])]}

    def _remote_build(self, unit: _Unit) -> tuple[RemoteBuild | None, tuple[str, str] | None]:
        """Compile with the language's warm compile service, when it has one; and the
        service's name and error when it failed.

        Should the service fail as a sandbox (not as a compiler), the job compiles inside
        its own run as it would without the service: slower, same verdict.
        """
        if not self.config.warm_compilers:
            return None, None
        limits = self.config.options.compile_limits
        service = unit.language.compile_service(limits)
        if service is None or self._service_failures.get(service.name, 0) >= SERVICE_FAILURES:
            return None, None
        spec = service.to_dict(limits)
        session = self._session(unit.language, role="compiler", limits=limits)

        def ask(request: list[str]) -> dict[str, Any]:
            answer = session.run({"kind": "service", "service": spec,
                                  "limits": spec["limits"], "request": request})
            if "service_error" in answer or "runner_error" in answer:
                raise SandboxError(str(answer.get("service_error") or answer["runner_error"]))
            return answer

        try:
            return unit.language.build_remotely(unit.prepared, ask), None
        except SandboxError as exc:
            return None, (service.name, str(exc))

    def _service_failed(self, name: str, error: str,
                        answer: dict[str, Any] | SampleResult) -> None:
        """Count a compile service's failure, unless the job, run on its own, ended the way
        a program ends that would have taken the service down with it (a signal, a limit,
        V8 aborting on an array too long): a service (JavaScript's pool runs programs) is
        not given up for what the programs it met did."""
        steps = answer.get("steps", []) if isinstance(answer, dict) else []
        if any(step.get("signal") or step.get("timed_out") or step.get("cpu_timed_out")
               or step.get("oom_killed") or step.get("output_exceeded") for step in steps):
            log.info("the %s compile service failed (%s) on a job that failed alike on its own",
                     name, error)
            return
        failures = self._service_failures[name] = self._service_failures.get(name, 0) + 1
        log.warning("the %s compile service failed (%s)%s", name, error,
                    "; from now on each job compiles inside its own run"
                    if failures >= SERVICE_FAILURES else "")

    def _run_job(self, unit: _Unit, job: dict[str, Any],
                 on_progress: Callable[[dict[str, Any]], None] | None = None,
                 ) -> dict[str, Any] | SampleResult:
        first = unit.samples[0][1]
        session = self._session(unit.language)
        last_error = ""
        # A program that kills its runner is run once more on a fresh runner, to tell a
        # hostile program from a runner that failed on its own.
        for _attempt in range(2):
            try:
                return session.run(job, on_progress)
            except RunnerDied as exc:
                last_error = str(exc)
            except SandboxError as exc:
                return _sandbox_failure(first, unit, str(exc), self.backend, self.config)
        return _sandbox_failure(
            first, unit, f"the program stopped its sandboxed runner twice ({last_error})",
            self.backend, self.config,
        )


def load_may_decide(result: SampleResult, backend: Backend) -> bool:
    """Whether a busy machine may have given `result` its verdict, so that it is worth
    running again alone.

    A memory verdict and a wall-clock backstop may. A CPU-limit timeout may only when the
    program was stopped before it had used most of its limit by its own measured CPU
    time: the kernel bills CPU by ticks, and on a busy machine other processes' bursts
    land on whoever holds the tick (docs/sandbox.md, "Verdicts under load"). A program
    that spent its whole budget computing, such as an endless loop, would time out on an
    idle machine too; running it again alone only made the other workers wait.

    gVisor counts waiting for a CPU as the program's CPU time, so there the program's own
    figure proves nothing; what the host's CPU accounting saw the whole sandbox use during
    the job does (`sandbox_cpu_ms`, from the session's cgroup). Where the session has that
    figure it also stops the program by it (`session._CpuWatch`), so such a timeout has
    spent its budget. Without that figure every timeout under gVisor may be load's."""
    if result.status not in RETRIED_STATUSES:
        return False
    facts = result.facts or {}
    if result.status != "timeout" or facts.get("killed_for") != "cpu":
        return True
    limit = facts.get("cpu_limit_ms")
    used = facts.get("cpu_ms") if backend.cpu_time_exact else facts.get("sandbox_cpu_ms")
    if used is None or not limit:
        return True
    return float(used) < CPU_BUDGET_SPENT * float(limit)


def cache_key(problem: Problem, prepared: PreparedJob, options: RunOptions) -> str:
    return content_hash(
        HARNESS_VERSION,
        RUNTIME_FINGERPRINT,
        _harness_fingerprint(prepared.job),
        problem.language,
        problem.dataset_version,
        problem.task_id,
        prepared.program_hash,
        options.task,
        options.tests,
        str(options.patched),
        json.dumps(options.limits.to_dict(), sort_keys=True),
        json.dumps(options.compile_limits.to_dict(), sort_keys=True),
    )


def _harness_fingerprint(job: Mapping[str, Any]) -> str:
    """The harness file a job names, by content ("" for a job that names none)."""
    harness = job.get("harness")
    return _file_fingerprint(str(harness["path"])) if isinstance(harness, Mapping) else ""


@functools.cache
def _file_fingerprint(path: str) -> str:
    """Read once per process, as `RUNTIME_FINGERPRINT` is."""
    file = Path(path)
    return content_hash(f"{file.name}\n{file.read_text(encoding='utf-8')}")


def _for_sample(result: SampleResult, sample: Sample, profile: Profile, *,
                cached: bool) -> SampleResult:
    """`result` for one of the samples that produced its program, judged by `profile`'s
    rules (a cached result may have been judged under another profile)."""
    return replace(profile.rejudge(result), task_id=sample.task_id,
                   completion_id=sample.index, cached=cached)


def _unrunnable(sample: Sample, problem: Problem, message: str) -> SampleResult:
    return SampleResult(task_id=sample.task_id, completion_id=sample.index,
                        status="sandbox_error", program_hash="", error_type="NotRunnable",
                        message=message, dataset_version=problem.dataset_version,
                        language=problem.language)


def _sandbox_failure(sample: Sample, unit: _Unit, message: str, backend: Backend,
                     config: EngineConfig) -> SampleResult:
    return SampleResult(
        task_id=sample.task_id, completion_id=sample.index, status="sandbox_error",
        program_hash=unit.prepared.program_hash, error_type="SandboxError", message=message,
        sandbox=SandboxInfo(backend=backend.name, limits=config.options.limits.to_dict(),
                            level=backend.level, chosen=backend.chosen),
        dataset_version=unit.problem.dataset_version, language=unit.language.name,
    )
