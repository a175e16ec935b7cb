"""The sweeper: finds work that was lost and sends it again, so that runs recover by
themselves from dead workers, lost broker messages and interrupted scoring.

The database is the record of what still has to run. Every `SWEEP_SECONDS` (Celery beat in
production; the beat process that `bin/serve` starts, embedded) the sweeper:

- takes back chunks whose heartbeat lease has passed (their worker died) and sends them
  again, telling the run's viewers that the run is resuming;
- sends again chunks that were sent a lease ago and never claimed, when their queue is
  empty (the broker lost the message, e.g. in a restart without persistence);
- does the same for a run's fan-out and for its scores;
- takes back a run whose scoring process died;
- does the same for harness profile comparisons (`rescoring`): one whose worker died is
  queued and sent again at once, one whose message was lost when its queue is empty.

Sending twice is harmless: a chunk is claimed atomically, and a delivery that finds it
claimed or done does nothing.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from webapp.runs.dispatch import (
    DEFAULT_QUEUE,
    language_queue,
    queue_waiting,
    send_chunks,
    send_finalize,
    send_profile_comparison,
    send_run_start,
)
from webapp.runs.events import RunRecoveringEvent
from webapp.runs.leases import lease_seconds
from webapp.runs.live import run_event_record
from webapp.runs.models import Chunk, ProfileComparison, Run

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
    waiting: dict[str, int | None] = {}

    def queue_is_empty(queue: str) -> bool:
        if queue not in waiting:
            waiting[queue] = queue_waiting(queue)
        return waiting[queue] == 0

    unsent = Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=stale)
    lost = list(
        Chunk.objects.filter(unsent, status=Chunk.Status.QUEUED, run__status=Run.Status.RUNNING)
        .order_by("run_id", "index").values_list("pk", "language")
    )
    # A chunk taken back from a dead worker goes out again at once; one that merely waits
    # long goes out again only when its queue is empty, i.e. its message is surely gone.
    resend = [(pk, language) for pk, language in lost
              if pk in taken_back or queue_is_empty(language_queue(language))]
    report.resent_chunks = send_chunks(resend)

    for run_id in Run.objects.filter(unsent, status=Run.Status.QUEUED).values_list("pk", flat=True):
        if queue_is_empty(DEFAULT_QUEUE) and send_run_start(run_id=run_id):
            report.started_runs.append(run_id)
    scorable = Run.objects.filter(unsent, status=Run.Status.RUNNING,
                                  chunks_done__gte=F("chunks_total"))
    for run_id in scorable.values_list("pk", flat=True):
        if queue_is_empty(DEFAULT_QUEUE) and send_finalize(run_id=run_id):
            report.finalized_runs.append(run_id)
    report.resent_comparisons = _resend_comparisons(
        now=now, all_running=all_running, unsent=unsent, queue_is_empty=queue_is_empty)
    if report.anything:
        logger.warning("sweeper: %s", report)
    return report


def _resend_comparisons(*, now: datetime, all_running: bool, unsent: Q,
                        queue_is_empty: Callable[[str], bool]) -> list[int]:
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
    sent = []
    waiting = ProfileComparison.objects.filter(unsent, status=ProfileComparison.Status.QUEUED)
    for pk, language in waiting.values_list("pk", "run__dataset__language"):
        if ((pk in taken or queue_is_empty(language_queue(language)))
                and send_profile_comparison(comparison_id=pk, language=language)):
            sent.append(pk)
    return sent


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
        _note_recovery(run_id=run_id, chunks=count)
    report.taken_back = dict(per_run)
    return taken


def _take_back_scoring(*, now: datetime, all_running: bool) -> None:
    scoring = Run.objects.filter(status=Run.Status.AGGREGATING)
    if not all_running:
        scoring = scoring.filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
    # Scoring is simply done again; the sweep below sends it.
    scoring.update(status=Run.Status.RUNNING, lease_until=None, dispatched_at=None)


def _note_recovery(*, run_id: int, chunks: int) -> None:
    when = timezone.now()

    def make(seq: int) -> RunRecoveringEvent:
        recoveries = Run.objects.filter(pk=run_id).values_list("recoveries", flat=True).get()
        return RunRecoveringEvent(
            type="run_recovering", run_id=run_id, seq=seq, recoveries=recoveries,
            message=(f"A worker stopped answering; {chunks} chunk(s) of this run were taken "
                     f"back at {when:%H:%M:%S} UTC and are running again."),
        )

    with transaction.atomic():
        Run.objects.filter(pk=run_id).update(recoveries=F("recoveries") + 1, recovered_at=when)
        run_event_record(run_id=run_id, make=make)
