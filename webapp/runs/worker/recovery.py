"""The sweeper: finds work that was lost and sends it again, so that runs recover by
themselves from dead workers, lost broker messages and interrupted scoring.

The database is the record of what still has to run. Every `SWEEP_SECONDS` the beat
process runs a pass itself (`webapp.runs.worker.beat`), never behind evaluation work in a queue.
Each pass:

- takes back chunks whose heartbeat lease has passed (their worker died) and sends them
  again, telling the run's viewers that the run is resuming;
- sends again chunks that were sent a lease ago and never claimed, when the broker holds
  no message of them, neither waiting in a queue nor reserved by a live worker
  (`dispatch.queued_work`): the broker lost it, e.g. in a restart without persistence, or
  the worker that had reserved it died;
- does the same for a run's fan-out and for its scores;
- takes back a run whose scoring process died;
- does the same for harness profile comparisons (`rescoring`): one whose worker died is
  queued and sent again at once, one whose message was lost when the broker holds none.

Sending twice is harmless: a chunk is claimed atomically, and a delivery that finds it
claimed or done does nothing.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from webapp.runs.domain.events import RunRecoveringEvent
from webapp.runs.messaging.dispatch import (
    COMPARE_PROFILES,
    DEFAULT_QUEUE,
    EVALUATE_CHUNK,
    EVALUATE_RUN,
    FINALIZE_RUN,
    QueuedWork,
    language_queue,
    queued_work,
    send_chunks,
    send_finalize,
    send_profile_comparison,
    send_run_start,
)
from webapp.runs.messaging.live import run_event_record
from webapp.runs.models import Chunk, ProfileComparison, Run
from webapp.runs.worker.leases import lease_seconds

logger = logging.getLogger(__name__)


@dataclass
class SweepReport:
    taken_back: dict[int, int] = field(default_factory=dict)
    """run id -> chunks taken back from a lost worker"""
    resent_chunks: int = 0
    started_runs: list[int] = field(default_factory=list)
    finalized_runs: list[int] = field(default_factory=list)
    resent_comparisons: list[int] = field(default_factory=list)
    """Harness profile comparisons sent again."""

    @property
    def anything(self) -> bool:
        return bool(self.taken_back or self.resent_chunks or self.started_runs
                    or self.finalized_runs or self.resent_comparisons)


def runs_sweep(*, all_running: bool = False, now: datetime | None = None) -> SweepReport:
    """One pass of the sweeper. With `all_running` (at the start of `bin/serve`, when no
    worker can be alive) every running chunk and scoring run counts as lost."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=lease_seconds())
    report = SweepReport()
    taken_back = _take_back_chunks(now=now, all_running=all_running, report=report)
    _take_back_scoring(now=now, all_running=all_running)
    taken_comparisons = _take_back_comparisons(now=now, all_running=all_running)

    unsent = Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=stale)
    chunks = list(
        Chunk.objects.filter(unsent, status=Chunk.Status.QUEUED, run__status=Run.Status.RUNNING)
        .order_by("run_id", "index").values_list("pk", "language")
    )
    starts = list(Run.objects.filter(unsent, status=Run.Status.QUEUED)
                  .values_list("pk", flat=True))
    scorable = list(Run.objects.filter(unsent, status=Run.Status.RUNNING,
                                       chunks_done__gte=F("chunks_total"))
                    .values_list("pk", flat=True))
    comparisons = list(
        ProfileComparison.objects.filter(unsent, status=ProfileComparison.Status.QUEUED)
        .values_list("pk", "run__dataset__language"))
    # Work taken back from a dead worker goes out again at once. Work that merely waits
    # long goes out again only when the broker holds no message of it, waiting or
    # reserved by a live worker: the message is surely gone.
    asked = {language_queue(language) for pk, language in chunks if pk not in taken_back}
    asked |= {language_queue(language) for pk, language in comparisons
              if pk not in taken_comparisons}
    if starts or scorable:
        asked.add(DEFAULT_QUEUE)
    work = queued_work(asked, reserved_within=lease_seconds()) if asked else QueuedWork()

    def lost(task: str, pk: int, queue: str) -> bool:
        return work is not None and not work.holds(task, pk, queue=queue)

    report.resent_chunks = send_chunks([
        (pk, language) for pk, language in chunks
        if pk in taken_back or lost(EVALUATE_CHUNK, pk, language_queue(language))],
        again=True)
    report.started_runs = [run_id for run_id in starts
                           if lost(EVALUATE_RUN, run_id, DEFAULT_QUEUE)
                           and send_run_start(run_id=run_id)]
    report.finalized_runs = [run_id for run_id in scorable
                             if lost(FINALIZE_RUN, run_id, DEFAULT_QUEUE)
                             and send_finalize(run_id=run_id)]
    report.resent_comparisons = [
        pk for pk, language in comparisons
        if (pk in taken_comparisons or lost(COMPARE_PROFILES, pk, language_queue(language)))
        and send_profile_comparison(comparison_id=pk, language=language)]
    if report.anything:
        logger.warning("sweeper: %s", report)
    return report


def _take_back_comparisons(*, now: datetime, all_running: bool) -> set[int]:
    lost = Q() if all_running else Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    taken: set[int] = set()
    for pk in ProfileComparison.objects.filter(
        lost, status=ProfileComparison.Status.RUNNING
    ).values_list("pk", flat=True):
        # Row by row, as for chunks: the holder may have renewed its lease since.
        if ProfileComparison.objects.filter(lost, pk=pk,
                                            status=ProfileComparison.Status.RUNNING).update(
            status=ProfileComparison.Status.QUEUED, claim="", lease_until=None,
            dispatched_at=None,
        ):
            taken.add(pk)
    return taken


def _take_back_chunks(*, now: datetime, all_running: bool, report: SweepReport) -> set[int]:
    lost = Q() if all_running else Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    running = Chunk.objects.filter(lost, status=Chunk.Status.RUNNING,
                                   run__status=Run.Status.RUNNING)
    per_run: Counter[int] = Counter()
    taken: set[int] = set()
    for chunk_id, run_id in running.values_list("pk", "run_id"):
        # The same condition again, row by row: the holder may have renewed its lease since.
        if Chunk.objects.filter(lost, pk=chunk_id, status=Chunk.Status.RUNNING).update(
            status=Chunk.Status.QUEUED, claim="", lease_until=None, dispatched_at=None
        ):
            per_run[run_id] += 1
            taken.add(chunk_id)
    for run_id, count in per_run.items():
        _note_recovery(run_id=run_id, chunks=count, restarted=all_running)
    report.taken_back = dict(per_run)
    return taken


def _take_back_scoring(*, now: datetime, all_running: bool) -> None:
    scoring = Run.objects.filter(status=Run.Status.AGGREGATING)
    if not all_running:
        scoring = scoring.filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
    # Scoring is simply done again; the sweep below sends it.
    scoring.update(status=Run.Status.RUNNING, lease_until=None, dispatched_at=None)


def _note_recovery(*, run_id: int, chunks: int, restarted: bool = False) -> None:
    """Count the interruption on the run (`recoveries`, `recovered_at`) and record it as a
    durable `run_recovering` event, which the run page lists."""
    when = timezone.now()
    cause = ("The workbench restarted while this run was going" if restarted
             else "A worker stopped answering")

    def make(seq: int) -> RunRecoveringEvent:
        recoveries = Run.objects.filter(pk=run_id).values_list("recoveries", flat=True).get()
        return RunRecoveringEvent(
            type="run_recovering", run_id=run_id, seq=seq, recoveries=recoveries,
            message=(f"{cause}; {chunks} chunk(s) of this run were taken back at "
                     f"{when:%Y-%m-%d %H:%M:%S} UTC and are running again."),
        )

    with transaction.atomic():
        Run.objects.filter(pk=run_id).update(recoveries=F("recoveries") + 1, recovered_at=when)
        run_event_record(run_id=run_id, make=make)
