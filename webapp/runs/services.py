"""Writes for runs: create, start, cancel and re-run."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from evaluator.records import HARNESS_VERSION
from webapp.benchmarks.selectors import problem_variant_ids
from webapp.runs.events import RunFinishedEvent, RunStatusEvent
from webapp.runs.live import emit_run_event
from webapp.runs.models import Chunk, Run, Sample
from webapp.runs.selectors import run_can_manage, run_counts_and_status, run_pass_at_k
from webapp.runs.uploads import UploadCheck
from webapp.teams.models import Membership, Team


@dataclass(frozen=True)
class SampleRow:
    """What a run stores of one sample, whatever it came from (a file, or an earlier run)."""

    task_id: str
    index: int
    line: int
    raw: str
    completion: str
    sanitized: bool
    notes: list[str]
    is_full_program: bool


def plan_chunks(task_sizes: Iterable[tuple[str, int]], *, target: int) -> list[list[str]]:
    """Group tasks, in order, into chunks of whole tasks holding at least `target` samples.

    Whole tasks keep a problem's samples together, so one chunk's duplicates and cache
    hits are found in one pass, and a per-problem page fills in one go.
    """
    chunks: list[list[str]] = []
    current: list[str] = []
    size = 0
    for task_id, count in task_sizes:
        current.append(task_id)
        size += count
        if size >= target:
            chunks.append(current)
            current, size = [], 0
    if current:
        chunks.append(current)
    return chunks


def _require_member(*, user: AbstractBaseUser, team: Team) -> None:
    if not Membership.objects.filter(team=team, user_id=user.pk).exists():
        raise PermissionDenied("You are not a member of that team.")


def _enqueue_start(run_id: int) -> None:
    from webapp.runs.tasks import evaluate_run

    evaluate_run.delay(run_id)


def run_create(
    *,
    owner: AbstractBaseUser,
    team: Team,
    check: UploadCheck,
    name: str,
    model_name: str = "",
    model_meta: dict[str, Any] | None = None,
    visibility: str = Run.Visibility.TEAM,
) -> Run:
    """Store a checked file as a queued run with all its samples, then enqueue it.

    One transaction: a failure leaves nothing behind. The task is sent only after the
    commit, so a worker never looks for a run that is not there yet.
    """
    if not check.ok or check.parsed is None:
        raise ValidationError("The file has errors; it cannot be evaluated.")
    _require_member(user=owner, team=team)
    if visibility not in Run.Visibility.values:
        raise ValidationError(f"Unknown visibility {visibility!r}.")
    rows = [
        SampleRow(
            task_id=s.task_id, index=s.index, line=s.line, raw=s.raw, completion=s.completion,
            sanitized=s.sanitized, notes=list(s.notes), is_full_program=s.is_full_program,
        )
        for s in check.parsed.samples
    ]
    with transaction.atomic():
        run = Run.objects.create(
            owner=owner,
            team=team,
            visibility=visibility,
            name=name.strip()[:200] or check.file_name[:200],
            model_name=model_name.strip()[:200],
            model_meta=model_meta or {},
            dataset=check.dataset,
            file_name=check.file_name[:255],
            file_sha256=check.sha256,
            file_size=check.size,
            file_layout=check.parsed.layout,
            options=check.options,
            fingerprint=check.fingerprint,
            coverage=check.coverage_dict(),
            harness_version=HARNESS_VERSION,
        )
        _store_samples(run=run, rows=rows)
        transaction.on_commit(lambda: _enqueue_start(run.pk))
    return run


def _store_samples(*, run: Run, rows: list[SampleRow]) -> None:
    variants = problem_variant_ids(dataset_id=run.dataset_id)
    per_task: dict[str, int] = {}
    for row in rows:
        per_task[row.task_id] = per_task.get(row.task_id, 0) + 1
    plan = plan_chunks(per_task.items(), target=settings.CHUNK_SAMPLES)
    chunks = Chunk.objects.bulk_create([
        Chunk(run=run, index=i, language=run.dataset.language,
              sample_count=sum(per_task[t] for t in tasks))
        for i, tasks in enumerate(plan)
    ])
    chunk_of = {task: chunks[i].pk for i, tasks in enumerate(plan) for task in tasks}
    Sample.objects.bulk_create(
        (
            Sample(
                run=run, chunk_id=chunk_of[row.task_id], variant_id=variants[row.task_id],
                task_id=row.task_id, index=row.index, position=position, line=row.line,
                raw=row.raw, completion=row.completion, sanitized=row.sanitized,
                notes=row.notes, is_full_program=row.is_full_program,
            )
            for position, row in enumerate(rows)
        ),
        batch_size=1000,
    )
    Run.objects.filter(pk=run.pk).update(samples_total=len(rows), chunks_total=len(chunks))
    run.samples_total, run.chunks_total = len(rows), len(chunks)


def run_start(*, run_id: int) -> list[tuple[int, str]]:
    """Mark a queued run running; return the chunks still to evaluate as (id, language).

    Safe to call twice: a second call finds the run already running and returns the
    chunks still queued, whose tasks will claim them atomically anyway.
    """
    now = timezone.now()
    started = Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(
        status=Run.Status.RUNNING, started_at=now
    )
    if not started and not Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).exists():
        return []
    if started:
        status, progress = run_counts_and_status(run_id=run_id)
        emit_run_event(RunStatusEvent(type="run_status", run_id=run_id, status=status,
                                      progress=progress))
    return list(
        Chunk.objects.filter(run_id=run_id, status=Chunk.Status.QUEUED)
        .order_by("index")
        .values_list("pk", "language")
    )


def run_cancel(*, user: AbstractBaseUser, run: Run) -> bool:
    """Stop a run: queued chunks are dropped, running ones stop after their current sample."""
    if not run_can_manage(user=user, run=run):
        raise PermissionDenied("Only the run's owner or a team owner can cancel it.")
    with transaction.atomic():
        cancelled = Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE).update(
            status=Run.Status.CANCELLED, finished_at=timezone.now()
        )
        if not cancelled:
            return False
        Chunk.objects.filter(run=run, status=Chunk.Status.QUEUED).update(
            status=Chunk.Status.CANCELLED
        )
        transaction.on_commit(lambda: emit_run_finished(run_id=run.pk))
    return True


def run_rerun(*, user: AbstractBaseUser, run: Run, use_cache: bool = True) -> Run:
    """A new run over the same samples, dataset and options, linked to the original."""
    if not run_can_manage(user=user, run=run):
        raise PermissionDenied("Only the run's owner or a team owner can re-run it.")
    if Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE).exists():
        raise ValidationError("The run is still going; cancel it first.")
    rows = [
        SampleRow(task_id=t, index=i, line=ln, raw=r, completion=c, sanitized=s, notes=n,
                  is_full_program=f)
        for t, i, ln, r, c, s, n, f in Sample.objects.filter(run=run).order_by("position")
        .values_list("task_id", "index", "line", "raw", "completion", "sanitized", "notes",
                     "is_full_program")
    ]
    with transaction.atomic():
        new = Run.objects.create(
            owner=user, team=run.team, visibility=run.visibility,
            name=run.name, model_name=run.model_name, model_meta=run.model_meta,
            dataset=run.dataset, file_name=run.file_name, file_sha256=run.file_sha256,
            file_size=run.file_size, file_layout=run.file_layout, options=run.options,
            fingerprint=run.fingerprint, use_cache=use_cache, rerun_of=run,
            coverage=run.coverage, harness_version=HARNESS_VERSION,
        )
        _store_samples(run=new, rows=rows)
        transaction.on_commit(lambda: _enqueue_start(new.pk))
    return new


def run_fail(*, run_id: int, error: str) -> None:
    failed = Run.objects.filter(pk=run_id, status__in=Run.ACTIVE).update(
        status=Run.Status.FAILED, error=error[:5000], finished_at=timezone.now()
    )
    if failed:
        Chunk.objects.filter(run_id=run_id, status=Chunk.Status.QUEUED).update(
            status=Chunk.Status.CANCELLED
        )
        emit_run_finished(run_id=run_id)


def emit_run_finished(*, run_id: int) -> None:
    run = Run.objects.get(pk=run_id)
    status, progress = run_counts_and_status(run_id=run_id)
    emit_run_event(RunFinishedEvent(
        type="run_finished", run_id=run_id, status=status, error=run.error,
        progress=progress, pass_at_k=run_pass_at_k(run=run),
    ))


def runs_resume(*, all_running: bool) -> list[int]:
    """Send again the work of runs that were interrupted; return the run ids.

    A worker killed mid-chunk leaves the chunk `running` with a lease, and a broker that
    lost the message (the filesystem broker after a hard kill) leaves it nowhere. With
    `all_running`, for a start-up when no worker can be alive, every running chunk is
    taken back; otherwise only chunks whose lease has run out. Duplicates are harmless:
    chunks are claimed atomically.
    """
    now = timezone.now()
    stale = Chunk.objects.filter(status=Chunk.Status.RUNNING, run__status=Run.Status.RUNNING)
    if not all_running:
        stale = stale.filter(lease_until__lt=now)
    stale.update(status=Chunk.Status.QUEUED, lease_until=None)
    # An aggregation that died half-way is simply done again.
    Run.objects.filter(status=Run.Status.AGGREGATING).update(status=Run.Status.RUNNING)
    resumed = []
    for run_id, done, total in Run.objects.filter(
        status__in=[Run.Status.QUEUED, Run.Status.RUNNING]
    ).values_list("pk", "chunks_done", "chunks_total"):
        if done >= total:
            from webapp.runs.tasks import finalize_run

            finalize_run.delay(run_id)
        else:
            _enqueue_start(run_id)
        resumed.append(run_id)
    return resumed
