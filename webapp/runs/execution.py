"""Evaluating one chunk of a run: claim it, run the engine, record results as they come."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, transaction
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from evaluator.languages.base import RunOptions
from evaluator.records import Sample as EvaluatorSample
from evaluator.records import SampleResult, cap_text
from evaluator.sandbox.base import SandboxLimits
from webapp.benchmarks.selectors import dataset_problems
from webapp.runs.engines import engine_lease
from webapp.runs.events import (
    LogEntry,
    SampleFinishedEvent,
    SampleStartedEvent,
    TestReportedEvent,
    first_failure,
    test_summaries,
    test_summary,
)
from webapp.runs.live import emit_run_event
from webapp.runs.models import CachedResult, Chunk, Run, Sample
from webapp.runs.selectors import progress_from_counts
from webapp.runs.services import run_fail

logger = logging.getLogger(__name__)

CANCEL_POLL_SECONDS = 1.0


@dataclass(frozen=True)
class ChunkOutcome:
    state: str
    """done | cancelled | skipped | busy | failed"""
    retry_in: float = 0.0
    """For `busy`: seconds until another worker's claim runs out."""
    finalize: bool = False
    """True when this chunk was the run's last: the run's scores are due."""
    run_id: int = 0


class DatabaseResultCache:
    """The engine's `ResultCache`, kept in `CachedResult`.

    The engine reads the cache from the thread that iterates its events and writes it from
    its worker threads; writes are held in memory and stored by `flush`, called from the
    iterating thread, so database connections stay on one thread.
    """

    def __init__(self) -> None:
        self._pending: dict[str, SampleResult] = {}
        self._lock = threading.Lock()
        self.hits = 0

    def get(self, key: str) -> SampleResult | None:
        with self._lock:
            pending = self._pending.get(key)
        if pending is not None:
            return pending
        stored = CachedResult.objects.filter(key=key).values_list("result", flat=True).first()
        if stored is None:
            return None
        self.hits += 1
        return SampleResult.from_dict(stored)

    def put(self, key: str, result: SampleResult) -> None:
        with self._lock:
            self._pending[key] = result

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        if pending:
            CachedResult.objects.bulk_create(
                [CachedResult(key=k, result=storable(r.to_dict())) for k, r in pending.items()],
                ignore_conflicts=True,
            )


def storable(value: Any) -> Any:
    """`value` with NUL characters replaced: PostgreSQL text and JSON cannot hold them, and a
    program's output may contain anything."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {key: storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return value


def run_options(options: dict[str, Any]) -> RunOptions:
    limits = SandboxLimits(
        wall_seconds=float(options.get("timeout_seconds", 10.0)),
        cpu_seconds=float(options.get("timeout_seconds", 10.0)),
        memory_mb=int(options.get("memory_mb", 1024)),
    )
    return RunOptions(task=options.get("task", "generation"), tests=options.get("tests", "hidden"),
                      limits=limits)


def _claim(chunk_id: int) -> bool:
    now = timezone.now()
    lease = timedelta(seconds=settings.CHUNK_TIME_LIMIT + 60)
    return bool(
        Chunk.objects.filter(pk=chunk_id)
        .filter(Q(status=Chunk.Status.QUEUED) | Q(status=Chunk.Status.RUNNING, lease_until__lt=now))
        .update(status=Chunk.Status.RUNNING, lease_until=now + lease, started_at=now,
                attempts=F("attempts") + 1)
    )


class _CancelWatcher(threading.Thread):
    """Polls the run's status so that Cancel stops a chunk between two programs."""

    def __init__(self, run_id: int, cancel: threading.Event) -> None:
        super().__init__(daemon=True, name=f"cancel-watch-{run_id}")
        self.run_id = run_id
        self.cancel = cancel
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(CANCEL_POLL_SECONDS):
                try:
                    stopped = Run.objects.filter(pk=self.run_id).exclude(
                        status__in=Run.ACTIVE
                    ).exists()
                except DatabaseError:
                    continue  # A busy database delays a cancel; it must not end the chunk.
                if stopped:
                    self.cancel.set()
                    return
        finally:
            connection.close()


def chunk_evaluate(*, chunk_id: int) -> ChunkOutcome:
    """Evaluate the pending samples of one chunk. Safe to run twice, or after a crash."""
    if not _claim(chunk_id):
        chunk = Chunk.objects.filter(pk=chunk_id).values("status", "lease_until").first()
        if chunk is None or chunk["status"] != Chunk.Status.RUNNING:
            return ChunkOutcome("skipped")
        remaining = (chunk["lease_until"] - timezone.now()).total_seconds()
        return ChunkOutcome("busy", retry_in=max(1.0, remaining + 1.0))
    chunk = Chunk.objects.select_related("run", "run__dataset").get(pk=chunk_id)
    run = chunk.run
    if run.status not in (Run.Status.QUEUED, Run.Status.RUNNING):
        Chunk.objects.filter(pk=chunk_id).update(status=Chunk.Status.CANCELLED)
        return ChunkOutcome("cancelled")
    try:
        cancelled = _evaluate(chunk=chunk, run=run)
    except Exception as exc:
        logger.exception("chunk %s of run %s failed", chunk.index, run.pk)
        Chunk.objects.filter(pk=chunk_id).update(status=Chunk.Status.FAILED,
                                                 finished_at=timezone.now())
        run_fail(run_id=run.pk, error=f"{type(exc).__name__}: {exc}")
        return ChunkOutcome("failed")
    if cancelled:
        Chunk.objects.filter(pk=chunk_id).update(status=Chunk.Status.CANCELLED,
                                                 finished_at=timezone.now())
        return ChunkOutcome("cancelled")
    with transaction.atomic():
        if not Chunk.objects.filter(pk=chunk_id, status=Chunk.Status.RUNNING).update(
            status=Chunk.Status.DONE, finished_at=timezone.now()
        ):
            return ChunkOutcome("skipped")
        Run.objects.filter(pk=run.pk).update(chunks_done=F("chunks_done") + 1)
        done, total = Run.objects.filter(pk=run.pk).values_list(
            "chunks_done", "chunks_total"
        ).get()
    return ChunkOutcome("done", finalize=done >= total, run_id=run.pk)


def _evaluate(*, chunk: Chunk, run: Run) -> bool:
    """Run the engine over the chunk's pending samples; True if the run was cancelled."""
    rows = list(
        Sample.objects.filter(chunk=chunk, status="pending")
        .order_by("position")
        .values_list("pk", "task_id", "index", "raw", "completion", "line", "is_full_program",
                     "sanitized")
    )
    if not rows:
        return False
    problems = dataset_problems(dataset=run.dataset)
    samples = [
        EvaluatorSample(task_id=task_id, index=index, raw=raw, completion=completion, line=line,
                        is_full_program=full, sanitized=sanitized)
        for _, task_id, index, raw, completion, line, full, sanitized in rows
    ]
    sample_ids = [row[0] for row in rows]
    cache = DatabaseResultCache() if run.use_cache else None
    cancel = threading.Event()
    watcher = _CancelWatcher(run.pk, cancel)
    watcher.start()
    try:
        with engine_lease(backend=run.options.get("sandbox", settings.EVALUATOR_SANDBOX),
                          workers=settings.EVALUATOR_WORKERS, options=run_options(run.options),
                          cache=cache) as engine:
            for event in engine.evaluate(problems, samples, cancel=cancel):
                if cancel.is_set():
                    # Closing the generator drops the engine's queued work; what is not
                    # recorded stays pending, so a re-run picks it up.
                    break
                if event["type"] == "test_reported":
                    emit_run_event(TestReportedEvent(
                        type="test_reported", run_id=run.pk,
                        sample_id=sample_ids[event["position"]],  # type: ignore[typeddict-item]
                        task_id=event["task_id"],  # type: ignore[typeddict-item]
                        completion_id=event["completion_id"],  # type: ignore[typeddict-item]
                        test=test_summary(event["outcome"]),  # type: ignore[typeddict-item]
                    ))
                elif event["type"] == "sample_started":
                    emit_run_event(SampleStartedEvent(
                        type="sample_started", run_id=run.pk,
                        sample_id=sample_ids[event["position"]],  # type: ignore[typeddict-item]
                        task_id=event["task_id"],  # type: ignore[typeddict-item]
                        completion_id=event["completion_id"],  # type: ignore[typeddict-item]
                    ))
                elif event["type"] == "sample_finished":
                    if cache is not None:
                        cache.flush()
                    result: SampleResult = event["result"]  # type: ignore[typeddict-item]
                    if not run.sandbox_backend and result.sandbox is not None:
                        run.sandbox_backend = result.sandbox.backend
                        Run.objects.filter(pk=run.pk, sandbox_backend="").update(
                            sandbox_backend=result.sandbox.backend
                        )
                    finished = sample_record_result(
                        run_id=run.pk, sample_id=sample_ids[event["position"]], result=result
                    )
                    if finished is not None:
                        emit_run_event(finished)
    finally:
        watcher.stopped.set()
        watcher.join(timeout=5)
        close_old_connections()
    return cancel.is_set()


def sample_record_result(
    *, run_id: int, sample_id: int, result: SampleResult
) -> SampleFinishedEvent | None:
    """Store one sample's result and bump the run's counters, in one transaction.

    Only a pending sample is updated, so a chunk evaluated twice counts each sample once.
    Returns the event to emit, or None when the sample already had its result.
    """
    status = result.status
    passed_tests = sum(1 for test in result.tests if test.status == "passed")
    now = timezone.now()
    with transaction.atomic():
        updated = Sample.objects.filter(pk=sample_id, status="pending").update(
            status=status,
            cached=result.cached,
            program_hash=result.program_hash,
            error_type=cap_text(result.error_type or "", 90),
            message=storable(cap_text(result.message or "", 2000)),
            duration_ms=result.compile_ms + result.run_ms,
            tests_passed=passed_tests,
            tests_total=len(result.tests),
            result=storable(result.to_dict()),
            finished_at=now,
        )
        if not updated:
            return None
        Run.objects.filter(pk=run_id).update(
            done_count=F("done_count") + 1,
            cached_count=F("cached_count") + int(result.cached),
            **{f"{status}_count": F(f"{status}_count") + 1},
        )
        # Read inside the transaction: these are the counts right after this sample.
        counts = Run.objects.filter(pk=run_id).values(
            "samples_total", "done_count", "cached_count", "passed_count", "failed_count",
            "error_count", "compile_error_count", "timeout_count", "memory_count",
            "sandbox_error_count",
        ).get()
    entry = LogEntry(
        sample_id=sample_id,
        task_id=result.task_id,
        completion_id=result.completion_id,
        status=status,
        duration_ms=round(result.compile_ms + result.run_ms, 1),
        cached=result.cached,
        first_failure=first_failure(result),
        url=reverse("runs:sample", args=[run_id, sample_id]),
    )
    return SampleFinishedEvent(
        type="sample_finished", run_id=run_id, entry=entry, tests=test_summaries(result),
        tests_total=len(result.tests), progress=progress_from_counts(counts),
    )
