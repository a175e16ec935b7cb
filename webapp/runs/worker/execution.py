"""The worker's side of a run: start it, evaluate its chunks, record results as they come,
fail it, and finish it once its scores are stored (`aggregation` computes them).

A chunk is held by a heartbeat lease (`leases.Heartbeat`) and its results are written as
they come (for an unwatched run, those of half a second together), those that come
together in one transaction (`_EngineEvents`), each only while
its sample is pending: a chunk that is delivered twice, taken back from a dead worker, or
interrupted by a dropped database connection ends with every sample counted exactly once.
Transient database errors are tried again (`transient`), never turned into a failed run.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Field, Q
from django.utils import timezone

from evaluator.engine import EngineEvent
from evaluator.raw_verdicts import evaluate_with_raw_verdicts
from evaluator.records import INFRASTRUCTURE_STATUS, STATUSES, RunOptions, SampleResult, cap_text
from webapp.benchmarks.selectors import dataset_problems
from webapp.health.selectors import canary_healthy, language_readiness
from webapp.health.services import canary_request, canary_run
from webapp.runs.domain.events import (
    RunEvent,
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
from webapp.runs.messaging.live import (
    emit_run_event,
    emitted_together,
    run_event_record,
    run_finished_record,
)
from webapp.runs.messaging.watching import WatchCheck
from webapp.runs.models import CachedResult, Chunk, Run, Sample
from webapp.runs.reads.selectors import COUNT_FIELDS, progress_from_counts, run_counts_and_status
from webapp.runs.worker.engines import engine_lease
from webapp.runs.worker.leases import Heartbeat, lease_end
from webapp.runs.worker.manifests import run_manifest_record
from webapp.runs.worker.transient import TRANSIENT_DB_ERRORS, db_retry, drop_stale_connections

logger = logging.getLogger(__name__)

MAX_CHUNK_ATTEMPTS = 10
"""A chunk taken back from lost workers this many times fails the run: something in it
kills its worker (memory, say), and trying for ever would hide that."""
WORKER_NAME = socket.gethostname()
CACHE_BATCH = 16
"""Results are stored in the result cache this many at a time, and at the chunk's end: a
worker lost in between costs only their evaluation again, never a verdict."""
UNWATCHED_GATHER_SECONDS = 0.5
"""With nobody watching a run, the results that finish within this long of one another are
recorded together, in one transaction: each transaction cost PostgreSQL and the worker a
commit, the run's counters and the result cache's flush, beside programs that needed the
same two cores. A watched run records each result as soon as it is ready. A worker killed
meanwhile loses at most this long of results, which are evaluated again."""
GATHER_MAX = 256
"""Events handed over together at most, so a transaction stays short."""
CACHE_READ_BATCH = 500
"""Keys looked up in the result cache by one query (SQLite caps a statement's parameters)."""


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
    recording thread, and reads made on another thread go through `read_through` to it, so
    database connections stay on one thread.
    """

    def __init__(self, *, read_through: Callable[[Callable[[], Any]], Any] | None = None
                 ) -> None:
        self._pending: dict[str, SampleResult] = {}
        self._lock = threading.Lock()
        self._read_through = read_through
        """For an engine iterated on another thread (`_EngineEvents`): runs a read on the
        thread that owns the database connection and returns its answer."""
        self.hits = 0

    def get(self, key: str) -> SampleResult | None:
        with self._lock:
            pending = self._pending.get(key)
        if pending is not None:
            return pending

        def read() -> Any:
            return db_retry(
                lambda: CachedResult.objects.filter(key=key).values_list("result",
                                                                         flat=True).first(),
                what="reading the result cache",
            )

        stored = read() if self._read_through is None else self._read_through(read)
        if stored is None:
            return None
        self.hits += 1
        return result_from_json(stored)

    def get_many(self, keys: list[str]) -> dict[str, SampleResult]:
        """The results held for `keys`, by key: one query for many samples (the engine asks
        for a chunk's programs at once), rather than one a sample."""
        with self._lock:
            found = {key: self._pending[key] for key in keys if key in self._pending}
        wanted = [key for key in keys if key not in found]

        def fetch(part: list[str]) -> list[tuple[str, Any]]:
            return list(CachedResult.objects.filter(key__in=part).values_list("key", "result"))

        def read() -> list[tuple[str, Any]]:
            rows: list[tuple[str, Any]] = []
            for at in range(0, len(wanted), CACHE_READ_BATCH):
                rows += db_retry(functools.partial(fetch, wanted[at:at + CACHE_READ_BATCH]),
                                 what="reading the result cache")
            return rows

        rows = read() if self._read_through is None else self._read_through(read)
        for key, stored in rows:
            found[key] = result_from_json(stored)
        self.hits += len(rows)
        return found

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
            db_retry(functools.partial(_cache_store, pending), what="storing results in the cache")


def _cache_store(results: dict[str, SampleResult]) -> None:
    """Store `results` in the result cache by key, keeping a key's stored result if it has
    one: one statement, every value bound apart (`_bound_cursor`)."""
    sql, fields = _cache_statement(connection.vendor)
    now = timezone.now()
    rows = [[field.get_db_prep_save(value, connection)
             for field, value in zip(fields, (key, result_json(result), now), strict=True)]
            for key, result in results.items()]
    with transaction.atomic(), _bound_cursor() as cursor:
        cursor.executemany(sql, rows)


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
        drop_stale_connections()
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
    stop = threading.Event()
    events = _EngineEvents(stop=stop)
    cache = DatabaseResultCache(read_through=events.ask) if run.use_cache else None

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
            # The live page gets this chunk's events (each program's start, its tests as
            # they run, its result) only while someone watches it; the engine reads this as
            # each program starts. A page opened meanwhile reads what it missed from the
            # database, as after any gap.
            watched = WatchCheck(run_id=run.pk)
            engine.config.stream_tests = watched()
            # A sample that sanitizing changed is also run as written, so the run can
            # say which verdicts sanitizing changed (`raw_status`).
            events.start(evaluate_with_raw_verdicts(engine, problems, samples, cancel=stop))
            try:
                for batch in events.batches(gather=lambda: 0.0 if engine.config.stream_tests
                                            else UNWATCHED_GATHER_SECONDS):
                    engine.config.stream_tests = watched()
                    if stop.is_set():
                        # The engine drops its queued work; what is not recorded stays
                        # pending, so whoever takes the chunk next picks it up.
                        break
                    cause = _forward(batch, run=run, sample_ids=sample_ids, cache=cache,
                                     live=engine.config.stream_tests)
                    if cause is not None:
                        # The machine, not the program: nothing more of this run is judged
                        # until the cause is fixed and the run retried.
                        run_pause(run_id=run.pk, cause=cause, language=chunk.language)
                        _recheck_canaries(worker)
                        stop.set()
                        break
            finally:
                events.finish()
            if cache is not None:
                cache.flush()
            if not stop.is_set():
                # Asked here, of this worker's own toolchains and sandbox.
                db_retry(lambda: run_manifest_record(run=run, engine=engine,
                                                     language=chunk.language),
                         what="recording the manifest")
    finally:
        drop_stale_connections()
    if heartbeat.lost:
        return "lost"
    return "cancelled" if stop.is_set() else None


T = TypeVar("T")


@dataclass(frozen=True)
class _Read:
    """A read the engine's thread asks of the thread that owns the database connection."""

    read: Callable[[], Any]
    answer: Future[Any]


@dataclass(frozen=True)
class _Failed:
    error: BaseException


_END = object()


class _EngineEvents:
    """The engine's events, iterated on a thread of its own and handed over in batches: each
    batch is every event that is ready when the recorder asks, so results that came while
    it was writing go into its next transaction together (`sample_results_record`). For a
    watched run, a recorder that keeps up gets them one by one, as soon as each is ready: a
    slow sample never holds a fast one back. Unwatched, a batch also waits a moment for
    more (`UNWATCHED_GATHER_SECONDS`).

    The database stays on the recording thread: a result-cache read that the engine makes
    from its thread is handed over too (`ask`), and answered there between batches.
    """

    def __init__(self, *, stop: threading.Event) -> None:
        self._stop = stop
        self._ready: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._ended = False

    def start(self, events: Iterator[EngineEvent]) -> None:
        self._thread = threading.Thread(target=self._produce, args=(events,),
                                        name="engine-events", daemon=True)
        self._thread.start()

    def _produce(self, events: Iterator[EngineEvent]) -> None:
        try:
            for event in events:
                # When it finished: the batch it goes in may be recorded a moment later.
                self._ready.put((event, timezone.now()))
                if self._stop.is_set():
                    break
        except BaseException as exc:
            self._ready.put(_Failed(exc))
        finally:
            close = getattr(events, "close", None)
            try:
                if close is not None:
                    close()  # drops the engine's queued work
            finally:
                self._ready.put(_END)

    def ask(self, read: Callable[[], T]) -> T:
        """`read()`, run on the recording thread (from the engine's); on the recording thread
        itself, or once the work stops, run here and now."""
        if self._thread is None or threading.current_thread() is not self._thread:
            return read()
        answer: Future[T] = Future()
        self._ready.put(_Read(read, answer))
        return answer.result()

    def batches(self, *, gather: Callable[[], float] = lambda: 0.0
                ) -> Iterator[list[tuple[EngineEvent, datetime]]]:
        """Blocks for the next event, then takes every other one ready with it, and those
        that come within `gather()` seconds of the first (at most `GATHER_MAX`); each with
        the moment the engine gave it. A read is answered as it comes, while the batch
        gathers."""
        while not self._ended:
            batch: list[tuple[EngineEvent, datetime]] = []
            until: float | None = None
            item = self._ready.get()
            while True:
                if item is _END:
                    self._ended = True
                    break
                if isinstance(item, _Failed):
                    self._ended = True
                    raise item.error
                if isinstance(item, _Read):
                    self._answer(item)
                else:
                    batch.append(item)
                    if until is None:
                        until = time.monotonic() + gather()
                    if len(batch) >= GATHER_MAX:
                        break
                try:
                    item = self._ready.get_nowait()
                except queue.Empty:
                    left = 0.0 if until is None else until - time.monotonic()
                    if left <= 0 or self._stop.is_set():
                        break
                    try:
                        item = self._ready.get(timeout=left)
                    except queue.Empty:
                        break
            if batch:
                yield batch

    @staticmethod
    def _answer(request: _Read) -> None:
        try:
            request.answer.set_result(request.read())
        except BaseException as exc:
            request.answer.set_exception(exc)
            raise

    def finish(self) -> None:
        """Stop the engine's thread, if the events did not end, and wait for it; a read it
        asks meanwhile is still answered."""
        if self._thread is None:
            return
        if not self._ended:
            self._stop.set()
        while not self._ended:
            item = self._ready.get()
            if item is _END:
                self._ended = True
            elif isinstance(item, _Read):
                try:
                    self._answer(item)
                except Exception:
                    logger.debug("a cache read failed while the chunk stopped", exc_info=True)
        self._thread.join()


def _forward(batch: Sequence[tuple[EngineEvent, datetime]], *, run: Run,
             sample_ids: list[int], cache: DatabaseResultCache | None, live: bool
             ) -> str | None:
    """Record a batch of engine events and, when `live` (someone watches the run), send
    them live, in order; the cause, when a sample the machine failed
    (`INFRASTRUCTURE_STATUS`) is among them. The samples that finished are recorded in one
    transaction; none after a failed one, whose cause stops the chunk.

    Unwatched, nothing is sent: with nobody in the run's group, each message still cost the
    worker and Redis a round of the channel layer (`watching` says why that matters)."""
    finished: list[tuple[int, SampleResult]] = []
    finished_at: list[datetime] = []
    cause: str | None = None
    taken = len(batch)
    for at, (event, moment) in enumerate(batch):
        if event["type"] == "sample_finished":
            result: SampleResult = event["result"]
            finished.append((sample_ids[event["position"]], result))
            finished_at.append(moment)
            if result.status == INFRASTRUCTURE_STATUS:
                cause = result.message or result.error_type or "unknown cause"
                taken = at + 1
                break
    recorded: dict[int, SampleFinishedEvent] = {}
    if finished:
        if cache is not None:
            cache.flush(at_least=CACHE_BATCH)
        _record_sandbox(run, [result for _, result in finished])
        stored = db_retry(lambda: sample_results_record(run_id=run.pk, results=finished,
                                                        finished_at=finished_at),
                          what="storing results")
        recorded = {event["entry"]["sample_id"]: event for event in stored}
    if not live:
        return cause
    # In the engine's order, so a sample's tests go before its result; one hand-off to the
    # sender for the batch.
    with emitted_together():
        for event, _ in batch[:taken]:
            live_event: RunEvent | None
            if event["type"] == "sample_finished":
                live_event = recorded.get(sample_ids[event["position"]])
            else:
                live_event = _live_event(event, run=run, sample_ids=sample_ids)
            if live_event is not None:
                emit_run_event(live_event)
    return cause


def _record_sandbox(run: Run, results: list[SampleResult]) -> None:
    """Note on the run the sandbox its first result names."""
    if run.sandbox_backend:
        return
    backend = next((r.sandbox.backend for r in results if r.sandbox is not None), "")
    if backend:
        run.sandbox_backend = backend
        db_retry(lambda: Run.objects.filter(pk=run.pk, sandbox_backend="").update(
            sandbox_backend=backend), what="recording the sandbox")


def _live_event(event: EngineEvent, *, run: Run, sample_ids: list[int]) -> RunEvent | None:
    """The ephemeral live event of an engine event; None for the others."""
    if event["type"] == "test_reported":
        return TestReportedEvent(
            type="test_reported", run_id=run.pk, sample_id=sample_ids[event["position"]],
            task_id=event["task_id"], completion_id=event["completion_id"],
            test=test_summary(event["outcome"]),
        )
    if event["type"] == "sample_started":
        return SampleStartedEvent(
            type="sample_started", run_id=run.pk, sample_id=sample_ids[event["position"]],
            task_id=event["task_id"], completion_id=event["completion_id"],
        )
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
    """Store one sample's result (`sample_results_record`): the event to emit, or None when
    the sample already had its result or the run had stopped."""
    events = sample_results_record(run_id=run_id, results=[(sample_id, result)])
    return events[0] if events else None


RESULT_COLUMNS = ("status", "cached", "program_hash", "error_type", "message", "duration_ms",
                  "tests_passed", "tests_total", "result", "finished_at", "seq")
"""What recording a result writes on its sample's row (`_store_result`)."""


def sample_results_record(
    *, run_id: int, results: Sequence[tuple[int, SampleResult]],
    finished_at: Sequence[datetime] | None = None,
) -> list[SampleFinishedEvent]:
    """Store the results of samples (id, result), bump the run's counters and draw their
    event numbers, in one transaction: one statement for the run, one for each sample, one
    commit, however many results come together. `finished_at` holds when each finished
    (now, without it).

    Only a pending sample of an active run is updated: a chunk evaluated twice counts each
    sample once, and nothing is recorded after a cancel or a pause. Returns the events to
    emit, in the order of `results`, of the samples recorded: none when the run had stopped.
    """
    if not results:
        return []
    for _, result in results:
        if result.status not in STATUSES:
            raise ValueError(f"not a sample status: {result.status!r}")
    stored: list[tuple[int, SampleResult, int, dict[str, int]]] = []
    with transaction.atomic():
        # The run's row is locked first, as `run_cancel` does: a cancel either waits for
        # these results, which then come before its event, or came first, and this waits
        # for it and records nothing.
        counted = _count_results(run_id=run_id, results=[result for _, result in results])
        if counted is None:
            return []
        seq, counts = counted
        # Numbers and counts were drawn for every result; each sample takes the next one
        # when it is stored, so a sample recorded before skips none.
        seq -= len(results)
        counts = _tally(counts, [result for _, result in results], sign=-1)
        skipped: list[SampleResult] = []
        now = timezone.now()
        moments = finished_at or [now] * len(results)
        with _bound_cursor() as cursor:
            for (sample_id, result), moment in zip(results, moments, strict=True):
                if _store_result(cursor, sample_id=sample_id, result=result, seq=seq + 1,
                                 finished_at=moment):
                    seq += 1
                    counts = _tally(counts, [result])
                    stored.append((sample_id, result, seq, counts))
                else:
                    skipped.append(result)
        if skipped:
            # Already recorded: the counts and the numbers drawn for them go back.
            _count_results(run_id=run_id, results=skipped, sign=-1)
    return [sample_finished_event(run_id=run_id, sample_id=sample_id, seq=seq, result=result,
                                  progress=progress_from_counts(counts))
            for sample_id, result, seq, counts in stored]


def _tally(counts: dict[str, int], results: Sequence[SampleResult], *,
           sign: int = 1) -> dict[str, int]:
    """`counts` (the run's `COUNT_FIELDS`) with `results` added, or taken away."""
    counts = dict(counts)
    for name, by in _bumps(results).items():
        counts[name] += sign * by
    return counts


def _bumps(results: Sequence[SampleResult]) -> dict[str, int]:
    bumps = {"done_count": len(results)}
    for result in results:
        name = f"{result.status}_count"
        bumps[name] = bumps.get(name, 0) + 1
        if result.cached:
            bumps["cached_count"] = bumps.get("cached_count", 0) + 1
    return bumps


def _store_result(cursor: Any, *, sample_id: int, result: SampleResult, seq: int,
                  finished_at: datetime) -> bool:
    """Write a result on its sample's row, if the sample is still pending; whether it was.
    The result and its number in one write: the row, result included, is written once (a
    second update would copy it whole again into the log)."""
    values = {
        "status": result.status,
        "cached": result.cached,
        "program_hash": result.program_hash,
        "error_type": cap_text(result.error_type or "", 90),
        "message": storable(cap_text(result.message or "", 2000)),
        "duration_ms": result.compile_ms + result.run_ms,
        "tests_passed": sum(1 for test in result.tests if test.status == "passed"),
        "tests_total": len(result.tests),
        "result": result_json(result),
        "finished_at": finished_at,
        "seq": seq,
    }
    sql, fields = _store_statement(connection.vendor)
    cursor.execute(sql, [*(field.get_db_prep_save(values[field.attname], connection)
                           for field in fields), sample_id, "pending"])
    return bool(cursor.rowcount)


@contextlib.contextmanager
def _bound_cursor() -> Iterator[Any]:
    """A cursor for this thread's connection that sends values apart from the statement.

    On PostgreSQL, Django's cursor quotes every value into the statement's text in Python
    (psycopg's client-side binding): for a result's JSON, escaped once more inside an array
    by a bulk insert, that cost a worker more CPU than the rest of recording it (issue 26).
    Here the server binds them. Otherwise it is made as Django makes its own (`_cursor`):
    the connection checked, and the cursor wrapped, so errors are Django's (`db_retry` and
    the transient errors depend on it) and statements are logged where Django logs them.
    Elsewhere (SQLite), Django's own cursor."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            yield cursor
        return
    import psycopg

    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        bound: Any = psycopg.Cursor(connection.connection)  # the stubs want a wrapper here
    connection.validate_thread_sharing()
    wrapped = (connection.make_debug_cursor(bound) if connection.queries_logged
               else connection.make_cursor(bound))
    with wrapped as cursor:
        yield cursor


@functools.cache
def _cache_statement(vendor: str) -> tuple[str, tuple[Field[Any, Any], ...]]:
    """`_cache_store`'s statement, built once (for the database `vendor`), and its fields."""
    by_name = {field.name: field for field in CachedResult._meta.concrete_fields}
    fields = tuple(by_name[column] for column in ("key", "result", "created_at"))
    name = connection.ops.quote_name
    # Only quoted names of this model's own columns are formatted in.
    sql = (f"INSERT INTO {name(CachedResult._meta.db_table)} "  # noqa: S608
           f"({', '.join(name(str(field.column)) for field in fields)}) VALUES (%s, %s, %s) "
           f"ON CONFLICT ({name('key')}) DO NOTHING")
    return sql, fields


@functools.cache
def _store_statement(vendor: str) -> tuple[str, tuple[Field[Any, Any], ...]]:
    """`_store_result`'s statement, built once (for the database `vendor`), and its fields.
    Written by hand, as `_count_results` is, to spare the ORM's query building for each
    result: only quoted names of this model's own columns are formatted in, and every value
    is a parameter, prepared by its field."""
    by_name = {field.name: field for field in Sample._meta.concrete_fields}
    fields = tuple(by_name[name] for name in RESULT_COLUMNS)
    name = connection.ops.quote_name
    sql = (f"UPDATE {name(Sample._meta.db_table)} "  # noqa: S608
           f"SET {', '.join(f'{name(str(field.column))} = %s' for field in fields)} "
           f"WHERE {name('id')} = %s AND {name('status')} = %s")
    return sql, fields


def _count_results(*, run_id: int, results: Sequence[SampleResult],
                   sign: int = 1) -> tuple[int, dict[str, int]] | None:
    """Count `results` in the run's counters and draw as many of the run's event numbers
    (or, with `sign` -1, give them back), in one statement that also locks the run's row
    until the transaction ends: the last number and the counts after the change. None when
    the run is not active. The numbers follow commit order and have no gaps
    (`live.next_event_seq`'s rule)."""
    name = connection.ops.quote_name
    bumps = {"event_seq": len(results), **_bumps(results)}
    returned = ["event_seq", *COUNT_FIELDS]
    active = ", ".join(["%s"] * len(Run.ACTIVE))
    # Only quoted names of this model's own columns are formatted in (the statuses were
    # checked by the caller) and every value is a parameter.
    with _bound_cursor() as cursor:
        cursor.execute(
            f"UPDATE {name(Run._meta.db_table)} "  # noqa: S608
            f"SET {', '.join(f'{name(c)} = {name(c)} + %s' for c in bumps)} "
            f"WHERE {name('id')} = %s AND {name('status')} IN ({active}) "
            f"RETURNING {', '.join(name(c) for c in returned)}",
            [*(sign * by for by in bumps.values()), run_id, *Run.ACTIVE])
        row = cursor.fetchone()
    if row is None:
        return None
    values = dict(zip(returned, row, strict=True))
    return int(values.pop("event_seq")), {key: int(value) for key, value in values.items()}
