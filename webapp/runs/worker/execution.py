"""The worker's side of a run: start it, evaluate its chunks, record results as they come,
fail it, and finish it once its scores are stored (`aggregation` computes them).

A chunk is held by a heartbeat lease (`leases.Heartbeat`) and its results are written one
sample at a time, each only while the sample is pending: a chunk that is delivered twice,
taken back from a dead worker, or interrupted by a dropped database connection ends with
every sample counted exactly once. Transient database errors are tried again (`transient`),
never turned into a failed run.
"""

from __future__ import annotations

import logging
import socket
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from evaluator.engine import EngineEvent
from evaluator.raw_verdicts import evaluate_with_raw_verdicts
from evaluator.records import INFRASTRUCTURE_STATUS, STATUSES, RunOptions, SampleResult, cap_text
from webapp.benchmarks.selectors import dataset_problems
from webapp.health.selectors import canary_healthy, language_readiness
from webapp.health.services import canary_request, canary_run
from webapp.runs.domain.events import (
    RunStatusEvent,
    SampleFinishedEvent,
    SampleStartedEvent,
    TestReportedEvent,
    sample_finished_event,
    test_summary,
)
from webapp.runs.domain.sample_rows import (
    SAMPLE_COLUMNS,
    result_from_json,
    result_json,
    stored_sample,
)
from webapp.runs.domain.sample_rows import storable as storable
from webapp.runs.messaging.dispatch import send_chunks
from webapp.runs.messaging.live import emit_run_event, run_event_record, run_finished_record
from webapp.runs.models import CachedResult, Chunk, Run, Sample
from webapp.runs.reads.selectors import COUNT_FIELDS, progress_from_counts, run_counts_and_status
from webapp.runs.worker.engines import engine_lease
from webapp.runs.worker.leases import Heartbeat, lease_end
from webapp.runs.worker.manifests import run_manifest_record
from webapp.runs.worker.transient import TRANSIENT_DB_ERRORS, db_retry

logger = logging.getLogger(__name__)

MAX_CHUNK_ATTEMPTS = 10
"""A chunk taken back from lost workers this many times fails the run: something in it
kills its worker (memory, say), and trying for ever would hide that."""
WORKER_NAME = socket.gethostname()
CACHE_BATCH = 16
"""Results are stored in the result cache this many at a time, and at the chunk's end: a
worker lost in between costs only their evaluation again, never a verdict."""


@dataclass(frozen=True)
class ChunkOutcome:
    state: str
    """done | cancelled | skipped | busy | lost | retry | failed"""
    retry_in: float = 0.0
    """For `retry`: seconds to wait before trying the chunk again."""
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
        stored = db_retry(
            lambda: CachedResult.objects.filter(key=key).values_list("result", flat=True).first(),
            what="reading the result cache",
        )
        if stored is None:
            return None
        self.hits += 1
        return result_from_json(stored)

    def put(self, key: str, result: SampleResult) -> None:
        with self._lock:
            self._pending[key] = result

    def flush(self, *, at_least: int = 1) -> None:
        """Store the results held, once there are `at_least` of them: one write for many
        samples (`CACHE_BATCH`)."""
        with self._lock:
            if len(self._pending) < at_least:
                return
            pending, self._pending = self._pending, {}
        if pending:
            rows = [CachedResult(key=k, result=result_json(r)) for k, r in pending.items()]
            db_retry(lambda: CachedResult.objects.bulk_create(rows, ignore_conflicts=True),
                     what="storing results in the cache")


def run_start(*, run_id: int) -> list[tuple[int, str]]:
    """Mark a queued run running; return the chunks still to evaluate as (id, language).

    Safe to call twice: a second call finds the run already running and returns the
    chunks still queued, whose tasks will claim them atomically anyway.
    """

    def start() -> bool:
        with transaction.atomic():
            started = Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(
                status=Run.Status.RUNNING, started_at=timezone.now()
            )
            if started:
                run_event_record(run_id=run_id, make=_status_event(run_id))
            return bool(started)

    started = db_retry(start, what="starting a run")
    if not started and not Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).exists():
        return []
    return list(
        Chunk.objects.filter(run_id=run_id, status=Chunk.Status.QUEUED)
        .order_by("index")
        .values_list("pk", "language")
    )


def _status_event(run_id: int) -> Any:
    def make(seq: int) -> RunStatusEvent:
        status, progress = run_counts_and_status(run_id=run_id)
        return RunStatusEvent(type="run_status", run_id=run_id, seq=seq, status=status,
                              progress=progress)

    return make


def run_fan_out(*, run_id: int) -> int:
    """Start a run and send one task per chunk still queued; the number sent."""
    return send_chunks(run_start(run_id=run_id))


def run_fail(*, run_id: int, error: str) -> None:
    with transaction.atomic():
        failed = Run.objects.filter(pk=run_id, status__in=Run.ACTIVE).update(
            status=Run.Status.FAILED, error=error[:5000], finished_at=timezone.now(),
            lease_until=None,
        )
        if failed:
            Chunk.objects.filter(run_id=run_id, status=Chunk.Status.QUEUED).update(
                status=Chunk.Status.CANCELLED
            )
            run_finished_record(run_id=run_id)


def run_finish(*, run_id: int) -> bool:
    """Mark a run whose scores are stored finished, and tell its viewers; False when it was
    no longer aggregating (cancelled meanwhile, or finished by another caller)."""

    def finish() -> int:
        with transaction.atomic():
            finished = Run.objects.filter(pk=run_id, status=Run.Status.AGGREGATING).update(
                status=Run.Status.FINISHED, finished_at=timezone.now(), lease_until=None
            )
            if finished:
                run_finished_record(run_id=run_id)
            return finished

    return bool(db_retry(finish, what="finishing a run"))


def _claim(chunk_id: int, worker: str = WORKER_NAME) -> str | None:
    """Take the chunk if it is queued, or running under a lease that has passed; the claim
    token that this delivery holds it by, or None."""
    token = uuid.uuid4().hex
    now = timezone.now()
    claimed = (
        Chunk.objects.filter(pk=chunk_id)
        .filter(Q(status=Chunk.Status.QUEUED) | Q(status=Chunk.Status.RUNNING, lease_until__lt=now))
        .update(status=Chunk.Status.RUNNING, claim=token, worker=worker[:200],
                lease_until=lease_end(now), started_at=now, attempts=F("attempts") + 1)
    )
    return token if claimed else None


def _held(chunk_id: int, claim: str) -> Any:
    return Chunk.objects.filter(pk=chunk_id, claim=claim, status=Chunk.Status.RUNNING)


def _give_back(chunk_id: int, claim: str) -> None:
    """Put a chunk we hold back in the queue, without counting the attempt: the failure was
    the database's or the broker's, not the chunk's."""
    try:
        # Stamped as sent: the retry that follows is a new message, which this worker holds
        # through its countdown, and the sweeper must not take it for lost meanwhile.
        _held(chunk_id, claim).update(status=Chunk.Status.QUEUED, claim="", lease_until=None,
                                      attempts=F("attempts") - 1,
                                      dispatched_at=timezone.now())
    except TRANSIENT_DB_ERRORS:
        # The lease runs out by itself, and the sweeper takes the chunk back then.
        logger.warning("could not give chunk %s back; its lease will expire", chunk_id)


def chunk_evaluate(*, chunk_id: int, worker: str = WORKER_NAME) -> ChunkOutcome:
    """Evaluate the pending samples of one chunk. Safe to run twice, or after a crash.
    `worker` names who evaluates it (the Celery node name), for the record."""
    claim = db_retry(lambda: _claim(chunk_id, worker), what="claiming a chunk")
    if claim is None:
        status = Chunk.objects.filter(pk=chunk_id).values_list("status", flat=True).first()
        # Held by a live worker (its heartbeat renews the lease), or finished: either way
        # there is nothing to do here. A holder that dies is found by the sweeper.
        return ChunkOutcome("busy" if status == Chunk.Status.RUNNING else "skipped")
    chunk = Chunk.objects.select_related("run", "run__dataset").get(pk=chunk_id)
    run = chunk.run
    if run.status not in (Run.Status.QUEUED, Run.Status.RUNNING):
        _held(chunk_id, claim).update(status=Chunk.Status.CANCELLED, lease_until=None)
        return ChunkOutcome("cancelled")
    if chunk.attempts > MAX_CHUNK_ATTEMPTS:
        _held(chunk_id, claim).update(status=Chunk.Status.FAILED, finished_at=timezone.now())
        run_fail(run_id=run.pk, error=(
            f"Chunk {chunk.index} ({chunk.sample_count} samples) was taken back from a lost "
            f"worker {chunk.attempts - 1} times; a program in it may be killing its worker "
            "(out of memory?). See the worker logs."))
        return ChunkOutcome("failed")
    vouched = _canary_before_work(chunk=chunk, run=run, worker=worker)
    if vouched is not None:
        _give_back(chunk_id, claim)
        return vouched
    try:
        stopped = _evaluate(chunk=chunk, run=run, claim=claim, worker=worker)
    except TRANSIENT_DB_ERRORS as exc:
        logger.warning("chunk %s of run %s: the database is unavailable (%s); giving it back",
                       chunk.index, run.pk, exc)
        close_old_connections()
        _give_back(chunk_id, claim)
        return ChunkOutcome("retry", retry_in=10.0, run_id=run.pk)
    except Exception as exc:
        logger.exception("chunk %s of run %s failed", chunk.index, run.pk)
        _held(chunk_id, claim).update(status=Chunk.Status.FAILED, finished_at=timezone.now())
        run_fail(run_id=run.pk, error=f"{type(exc).__name__}: {exc}")
        return ChunkOutcome("failed")
    if stopped == "lost":
        return ChunkOutcome("lost")
    if stopped == "cancelled":
        _held(chunk_id, claim).update(status=Chunk.Status.CANCELLED, finished_at=timezone.now())
        return ChunkOutcome("cancelled")

    def finish() -> ChunkOutcome:
        with transaction.atomic():
            # Under the run's lock, as each result is: a run stopped before the heartbeat
            # noticed refused the chunk's last results, which are still pending.
            if not Run.objects.select_for_update().filter(pk=run.pk,
                                                          status__in=Run.ACTIVE).exists():
                _held(chunk_id, claim).update(status=Chunk.Status.CANCELLED,
                                              finished_at=timezone.now())
                return ChunkOutcome("cancelled")
            if not _held(chunk_id, claim).update(status=Chunk.Status.DONE,
                                                 finished_at=timezone.now(), lease_until=None):
                return ChunkOutcome("lost")
            Run.objects.filter(pk=run.pk).update(chunks_done=F("chunks_done") + 1)
            done, total = Run.objects.filter(pk=run.pk).values_list(
                "chunks_done", "chunks_total"
            ).get()
            return ChunkOutcome("done", finalize=done >= total, run_id=run.pk)

    return db_retry(finish, what="finishing a chunk")


CANARY_RETRY_SECONDS = 15.0
"""How long a chunk given back for want of a healthy canary here waits to be sent again
(another worker, whose canary passed, takes it from the queue meanwhile)."""


def _canary_before_work(*, chunk: Chunk, run: Run, worker: str) -> ChunkOutcome | None:
    """None when this worker may evaluate the chunk: a recent canary of its language passed
    here (one is run now when none is recorded, or the last failed or is stale). Otherwise
    the chunk is not this worker's: it goes back to the queue for a healthy worker, or,
    when no worker can run the language, the run pauses and names the cause. With
    canaries switched off (`WORKBENCH_CANARY=0`) the run records the gap and is not
    verified (`verified.CONDITIONS["healthy_canaries"]`)."""
    language = chunk.language
    if not settings.CANARY_ENABLED:
        _record_canary_gap(run_id=run.pk, worker=worker, language=language,
                           reason="canaries are switched off on this worker "
                                  "(WORKBENCH_CANARY=0)")
        return None
    healthy, reason = canary_healthy(worker=worker, language=language)
    if healthy:
        return None
    check = canary_run(worker=worker, languages=[language]).get(language)
    if check is not None and check.ok:
        return None
    cause = (check.cause + (f" ({check.hint})" if check.hint else "")) if check else reason
    others = [name for name in language_readiness(language=language).healthy_workers
              if name != worker]
    if others:
        logger.warning("chunk %s of run %s: the %s canary fails on %s (%s); left to %s",
                       chunk.index, run.pk, language, worker, cause, ", ".join(others))
        return ChunkOutcome("retry", retry_in=CANARY_RETRY_SECONDS, run_id=run.pk)
    run_pause(run_id=run.pk, language=language,
              cause=f"no worker can run {language} programs now: its canary (a known-good "
                    f"program) fails on {worker}: {cause}")
    return ChunkOutcome("cancelled", run_id=run.pk)


def _record_canary_gap(*, run_id: int, worker: str, language: str, reason: str) -> None:
    gap = {"worker": worker[:200], "language": language, "reason": reason}

    def record() -> None:
        with transaction.atomic():
            locked = Run.objects.select_for_update().get(pk=run_id)
            if gap not in locked.canary_gaps:
                locked.canary_gaps = [*locked.canary_gaps, gap]
                locked.save(update_fields=["canary_gaps"])

    db_retry(record, what="recording a canary gap")


def _evaluate(*, chunk: Chunk, run: Run, claim: str, worker: str = WORKER_NAME) -> str | None:
    """Run the engine over the chunk's pending samples. None when it went through;
    "cancelled" when the run was cancelled; "lost" when the lease was taken over."""
    rows = list(
        Sample.objects.filter(chunk=chunk, status="pending")
        .order_by("position")
        .values_list("pk", *SAMPLE_COLUMNS)
    )
    if not rows:
        return None
    problems = dataset_problems(dataset=run.dataset)
    samples = [stored_sample(row[1:]) for row in rows]
    sample_ids = [row[0] for row in rows]
    cache = DatabaseResultCache() if run.use_cache else None
    stop = threading.Event()

    def renew() -> bool:
        return bool(_held(chunk.pk, claim).update(lease_until=lease_end()))

    def cancelled() -> bool:
        return Run.objects.filter(pk=run.pk).exclude(status__in=Run.ACTIVE).exists()

    heartbeat = Heartbeat(name=f"chunk-{chunk.pk}", renew=renew, should_stop=cancelled,
                          stop=stop)
    try:
        # The worker's own setting is the sandbox policy: a run says what to evaluate, the
        # machine that runs it says how strongly to isolate it.
        with heartbeat, engine_lease(backend=settings.EVALUATOR_SANDBOX,
                                     workers=settings.EVALUATOR_WORKERS,
                                     options=RunOptions.from_dict(run.options),
                                     cache=cache) as engine:
            # A sample that sanitizing changed is also run as written, so the run can
            # say which verdicts sanitizing changed (`raw_status`).
            for event in evaluate_with_raw_verdicts(engine, problems, samples, cancel=stop):
                if stop.is_set():
                    # Closing the generator drops the engine's queued work; what is not
                    # recorded stays pending, so whoever takes the chunk next picks it up.
                    break
                cause = _forward(event, run=run, sample_ids=sample_ids, cache=cache)
                if cause is not None:
                    # The machine, not the program: nothing more of this run is judged
                    # until the cause is fixed and the run retried.
                    run_pause(run_id=run.pk, cause=cause, language=chunk.language)
                    _recheck_canaries(worker)
                    stop.set()
                    break
            if cache is not None:
                cache.flush()
            if not stop.is_set():
                # Asked here, of this worker's own toolchains and sandbox.
                db_retry(lambda: run_manifest_record(run=run, engine=engine,
                                                     language=chunk.language),
                         what="recording the manifest")
    finally:
        close_old_connections()
    if heartbeat.lost:
        return "lost"
    return "cancelled" if stop.is_set() else None


def _forward(event: EngineEvent, *, run: Run, sample_ids: list[int],
             cache: DatabaseResultCache | None) -> str | None:
    """Record one engine event and send it live; the cause, when the event is a sample
    the machine failed (`INFRASTRUCTURE_STATUS`)."""
    if event["type"] == "test_reported":
        emit_run_event(TestReportedEvent(
            type="test_reported", run_id=run.pk, sample_id=sample_ids[event["position"]],
            task_id=event["task_id"], completion_id=event["completion_id"],
            test=test_summary(event["outcome"]),
        ))
    elif event["type"] == "sample_started":
        emit_run_event(SampleStartedEvent(
            type="sample_started", run_id=run.pk, sample_id=sample_ids[event["position"]],
            task_id=event["task_id"], completion_id=event["completion_id"],
        ))
    elif event["type"] == "sample_finished":
        if cache is not None:
            cache.flush(at_least=CACHE_BATCH)
        result: SampleResult = event["result"]
        if not run.sandbox_backend and result.sandbox is not None:
            run.sandbox_backend = result.sandbox.backend
            db_retry(lambda: Run.objects.filter(pk=run.pk, sandbox_backend="").update(
                sandbox_backend=result.sandbox.backend if result.sandbox else ""
            ), what="recording the sandbox")
        sample_id = sample_ids[event["position"]]
        finished = db_retry(
            lambda: sample_record_result(run_id=run.pk, sample_id=sample_id, result=result),
            what="storing a result",
        )
        if finished is not None:
            emit_run_event(finished)
        if result.status == INFRASTRUCTURE_STATUS:
            return result.message or result.error_type or "unknown cause"
    return None


def _recheck_canaries(worker: str) -> None:
    """After an infrastructure failure: the worker's canary loop checks its languages
    again soon, and lets go of the queues of those that now fail."""
    try:
        canary_request(worker=worker)
    except Exception:
        # No loop to ask (a worker without canaries, an eager task): the next chunk of
        # the language runs its canary first anyway (`_canary_before_work`).
        logger.info("could not ask %s to check its canaries again", worker, exc_info=True)


def run_pause(*, run_id: int, cause: str, language: str = "") -> bool:
    """Pause a run that met an infrastructure failure: its other chunks stop (their
    heartbeat sees the run is no longer active, and a result is recorded only while the
    run is active, `sample_record_result`), no score is
    computed, and the run page names the cause and offers to retry
    (`lifecycle.run_resume`). False when the run was no longer going."""
    where = f" ({language})" if language else ""
    error = (f"Paused: the machine failed a sample{where}, so it is not a verdict and no "
             f"score is given. Cause: {cause}\nFix the cause, then retry the run: what was "
             "judged is kept, and the samples the machine failed are run again.")

    def pause() -> int:
        with transaction.atomic():
            paused = Run.objects.filter(pk=run_id, status__in=Run.ACTIVE).update(
                status=Run.Status.PAUSED, error=error[:5000], lease_until=None)
            if paused:
                Chunk.objects.filter(run_id=run_id, status=Chunk.Status.QUEUED).update(
                    status=Chunk.Status.CANCELLED)
                run_finished_record(run_id=run_id)
            return paused

    paused = bool(db_retry(pause, what="pausing a run"))
    if paused:
        logger.warning("run %s paused: %s", run_id, cause)
    return paused


def sample_record_result(
    *, run_id: int, sample_id: int, result: SampleResult
) -> SampleFinishedEvent | None:
    """Store one sample's result, bump the run's counters and draw the event's number, in
    one transaction of two statements.

    Only a pending sample of an active run is updated: a chunk evaluated twice counts each
    sample once, and nothing is recorded after a cancel or a pause. Returns the event to
    emit, or None when the sample already had its result or the run had stopped.
    """
    status = result.status
    passed_tests = sum(1 for test in result.tests if test.status == "passed")
    with transaction.atomic():
        # The run's row is locked first, as `run_cancel` does: a cancel either waits for
        # this result, which then comes before its event, or came first, and this waits
        # for it and records nothing.
        counted = _count_result(run_id=run_id, status=status, cached=result.cached)
        if counted is None:
            return None
        seq, counts = counted
        # The result and its number in one write: the row, result included, is written
        # once (a second update would copy it whole again into the log).
        updated = Sample.objects.filter(pk=sample_id, status="pending").update(
            status=status,
            cached=result.cached,
            program_hash=result.program_hash,
            error_type=cap_text(result.error_type or "", 90),
            message=storable(cap_text(result.message or "", 2000)),
            duration_ms=result.compile_ms + result.run_ms,
            tests_passed=passed_tests,
            tests_total=len(result.tests),
            result=result_json(result),
            finished_at=timezone.now(),
            seq=seq,
        )
        if not updated:
            # Already recorded: the counts and the number drawn for it go back.
            transaction.set_rollback(True)
            return None
    return sample_finished_event(run_id=run_id, sample_id=sample_id, seq=seq, result=result,
                                 progress=progress_from_counts(counts))


def _count_result(*, run_id: int, status: str, cached: bool) -> tuple[int, dict[str, int]] | None:
    """Count one result of `status` in the run's counters and draw the run's next event
    number, in one statement that also locks the run's row until the transaction ends:
    the number and the counts right after this result. None when the run is not active.
    The numbers follow commit order and have no gaps (`live.next_event_seq`'s rule)."""
    if status not in STATUSES:
        raise ValueError(f"not a sample status: {status!r}")
    name = connection.ops.quote_name
    bumped = ["event_seq", "done_count", f"{status}_count", *(["cached_count"] if cached else [])]
    returned = ["event_seq", *COUNT_FIELDS]
    active = ", ".join(["%s"] * len(Run.ACTIVE))
    # Only quoted names of this model's own columns are formatted in; the status was
    # checked above and every value is a parameter.
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {name(Run._meta.db_table)} "  # noqa: S608
            f"SET {', '.join(f'{name(c)} = {name(c)} + 1' for c in bumped)} "
            f"WHERE {name('id')} = %s AND {name('status')} IN ({active}) "
            f"RETURNING {', '.join(name(c) for c in returned)}",
            [run_id, *Run.ACTIVE])
        row = cursor.fetchone()
    if row is None:
        return None
    values = dict(zip(returned, row, strict=True))
    return int(values.pop("event_seq")), {key: int(value) for key, value in values.items()}
