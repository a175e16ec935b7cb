"""The user's writes to runs: create, cancel and re-run. What workers do to a run (start,
evaluate, fail) is in `execution`; scores are in `aggregation`; recovery in `recovery`."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connections, models, transaction
from django.utils import timezone

from evaluator.records import HARNESS_VERSION
from evaluator.records import Sample as ReadSample
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import problem_variant_ids
from webapp.runs.domain.sample_rows import (
    NEW_SAMPLE_COLUMNS,
    SAMPLE_COLUMNS,
    NewSampleRow,
    new_sample_row,
    stored_sample,
)
from webapp.runs.messaging.dispatch import send_run_start
from webapp.runs.messaging.live import run_finished_record
from webapp.runs.models import Chunk, Run, RunChange, Sample
from webapp.runs.reads.selectors import find_duplicate_run, forget_run_facts, run_can_manage
from webapp.runs.upload_checks.files import UploadCheck, checked_samples, run_fingerprint
from webapp.teams.models import Membership, Team

STAGING_MAX_AGE = 3600
"""Seconds a staged upload may wait for its confirmation (the token's life)."""
STAGE_BATCH_ROWS = 2000
STAGE_BATCH_CHARS = 8_000_000
"""A staged run's samples are written in batches of at most this many rows and characters
of text: what one upload holds in memory while it is read, whatever its size."""


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


def _require_member(*, user: User, team: Team) -> None:
    if not Membership.objects.filter(team=team, user_id=user.pk).exists():
        raise PermissionDenied("You are not a member of that team.")


def _enqueue_start(run_id: int) -> None:
    send_run_start(run_id=run_id)


class RunStager:
    """Writes an upload's samples into a staged run as they are read: the `SampleSink` of
    `uploads.upload_check`.

    The run is created, status `staged` (stored, but neither queued nor shown anywhere),
    when the first sample comes; the samples follow in batches (`STAGE_BATCH_ROWS`,
    `STAGE_BATCH_CHARS`), each batch a transaction of its own, so that neither memory nor
    a lock on the database grows with the file. `finish` completes the run once the file
    passed its checks; `discard` deletes it otherwise. A staged run that neither finishes
    nor is discarded (the process died) is purged with the expired ones
    (`staged_runs_purge`).

    Chunks hold whole tasks, planned as `plan_chunks` plans them from every task's count,
    which only the end of the file tells. Each task is given a chunk when it first
    appears, as the plan would if the file were grouped by task (as files usually are);
    `finish` moves the tasks of a file that is not to the chunks of the plan.
    """

    def __init__(self, *, owner: User, team: Team, name: str, model_name: str = "",
                 model_meta: dict[str, Any] | None = None,
                 visibility: str = Run.Visibility.TEAM) -> None:
        _require_member(user=owner, team=team)
        if visibility not in Run.Visibility.values:
            raise ValidationError(f"Unknown visibility {visibility!r}.")
        self.owner = owner
        self.team = team
        self.name = name
        self.model_name = model_name
        self.model_meta = model_meta or {}
        self.visibility = visibility
        self.run: Run | None = None
        self.variants: dict[str, int] = {}
        self.batch: list[NewSampleRow] = []
        self.batch_chars = 0
        self.position = 0
        self.per_task: dict[str, int] = {}
        """Samples per task, in the order the tasks first came."""
        self.chunk_of: dict[str, int] = {}
        """Task -> index of the chunk it was given when it first came."""
        self.chunks: list[int] = []
        """Chunk index -> the chunk's id."""
        self.chunk_size = 0

    def begin(self, check: UploadCheck) -> None:
        self.run = Run.objects.create(
            owner=self.owner,
            team=self.team,
            visibility=self.visibility,
            name=self.name.strip()[:200] or check.file_name[:200],
            model_name=self.model_name.strip()[:200],
            model_meta=self.model_meta,
            dataset=check.dataset,
            file_name=check.file_name[:255],
            file_sha256=check.sha256,
            file_size=check.size,
            file_layout="",
            options=check.options,
            fingerprint=check.fingerprint,
            harness_version=HARNESS_VERSION,
            status=Run.Status.STAGED,
        )
        self.variants = problem_variant_ids(dataset_id=check.dataset.pk)

    def add(self, sample: ReadSample) -> None:
        run = self.run
        if run is None:
            raise RuntimeError("begin() comes before the first sample.")
        task_id = sample.task_id
        if task_id not in self.chunk_of:
            if not self.chunks or self.chunk_size >= settings.CHUNK_SAMPLES:
                self.chunks.append(Chunk.objects.create(
                    run=run, index=len(self.chunks), language=run.dataset.language,
                    sample_count=0).pk)
                self.chunk_size = 0
            self.chunk_of[task_id] = len(self.chunks) - 1
        if self.chunk_of[task_id] == len(self.chunks) - 1:
            self.chunk_size += 1
        self.per_task[task_id] = self.per_task.get(task_id, 0) + 1
        self.batch.append(new_sample_row(
            sample, run_id=run.pk, chunk_id=self.chunks[self.chunk_of[task_id]],
            variant_id=self.variants[task_id], position=self.position))
        self.position += 1
        self.batch_chars += len(sample.raw) + (
            len(sample.completion) if sample.completion is not sample.raw else 0)
        if len(self.batch) >= STAGE_BATCH_ROWS or self.batch_chars >= STAGE_BATCH_CHARS:
            self._flush()

    def _flush(self) -> None:
        if self.batch:
            with transaction.atomic():
                _insert_samples(self.batch)
        self.batch, self.batch_chars = [], 0

    def finish(self, check: UploadCheck, *, start: bool = False) -> Run:
        """Complete the staged run of a file that passed its checks (or only looks like
        another language): the last batch, the chunks, the counts and the coverage.
        `start` queues it as well (`run_create`); the intake starts it later instead."""
        run = self.run
        if run is None or check.summary is None:
            raise ValueError("Only a file that was read, with samples, makes a run.")
        self._flush()
        with transaction.atomic():
            self._plan_chunks(run)
            run.samples_total, run.chunks_total = self.position, len(self.chunks)
            run.file_layout = check.summary.layout
            run.coverage = check.coverage_dict()
            # The confirmation's hour (`staged_runs_purge`) starts when the file was read.
            run.created_at = timezone.now()
            fields = ["samples_total", "chunks_total", "file_layout", "coverage", "created_at"]
            if start:
                run.status = Run.Status.QUEUED
                fields.append("status")
                transaction.on_commit(lambda: _enqueue_start(run.pk))
            run.save(update_fields=fields)
        return run

    def _plan_chunks(self, run: Run) -> None:
        plan = plan_chunks(self.per_task.items(), target=settings.CHUNK_SAMPLES)
        planned = {task: i for i, tasks in enumerate(plan) for task in tasks}
        moved = [task for task, index in planned.items() if self.chunk_of[task] != index]
        while len(self.chunks) < len(plan):
            self.chunks.append(Chunk.objects.create(
                run=run, index=len(self.chunks), language=run.dataset.language,
                sample_count=0).pk)
        for task in moved:
            Sample.objects.filter(run=run, task_id=task).update(
                chunk_id=self.chunks[planned[task]])
        if len(self.chunks) > len(plan):
            Chunk.objects.filter(run=run, index__gte=len(plan)).delete()
            del self.chunks[len(plan):]
        Chunk.objects.bulk_update(
            [Chunk(pk=self.chunks[i], sample_count=sum(self.per_task[t] for t in tasks))
             for i, tasks in enumerate(plan)], ["sample_count"])

    def discard(self) -> None:
        """Delete the staged run, if it was begun and is still staged."""
        self.batch = []
        if self.run is not None:
            Run.objects.filter(pk=self.run.pk, status=Run.Status.STAGED).delete()


def run_create(
    *,
    owner: User,
    team: Team,
    check: UploadCheck,
    name: str,
    model_name: str = "",
    model_meta: dict[str, Any] | None = None,
    visibility: str = Run.Visibility.TEAM,
) -> Run:
    """Store a file checked without a sink as a queued run with all its samples, reading
    it again, then enqueue it. Uploads store their samples while they are checked instead
    (`intake`); this is for a file at hand, such as a test's.

    One transaction: a failure leaves nothing behind. The task is sent only after the
    commit, so a worker never looks for a run that is not there yet.
    """
    if not check.ok:
        raise ValidationError("The file has errors; it cannot be evaluated.")
    stager = RunStager(owner=owner, team=team, name=name, model_name=model_name,
                       model_meta=model_meta, visibility=visibility)
    with transaction.atomic():
        stager.begin(check)
        for sample in checked_samples(check):
            stager.add(sample)
        return stager.finish(check, start=True)


def run_start_staged(*, owner: User, run_id: int) -> Run | None:
    """Queue a staged run of `owner`'s (the confirmation of an upload): one update, not
    the samples' insert. Its creation time becomes now, when it was asked for.

    Returns the run to show: this one, or, when a run of the same file, dataset and
    options became visible to the owner meanwhile (another tab), that one, the staged
    copy being dropped. None when there is no such staged run any more (purged, or
    already started): the caller makes the run from the staged file instead.
    """
    with transaction.atomic():
        run = (Run.objects.select_for_update()
               .filter(pk=run_id, owner_id=owner.pk, status=Run.Status.STAGED).first())
        if run is None:
            return None
        duplicate = find_duplicate_run(user=owner, fingerprint=run.fingerprint)
        if duplicate is not None:
            run.delete()
            return duplicate
        run.status = Run.Status.QUEUED
        run.created_at = timezone.now()
        run.save(update_fields=["status", "created_at"])
        transaction.on_commit(lambda: _enqueue_start(run.pk))
    return run


def run_discard_staged(*, owner: User, run_id: int) -> None:
    """Drop a staged run that will not be started (its upload was confirmed another way)."""
    Run.objects.filter(pk=run_id, owner_id=owner.pk, status=Run.Status.STAGED).delete()


def staged_runs_purge(*, now: datetime | None = None) -> int:
    """Remove the staged runs whose confirmation can no longer come (their token has
    expired, `STAGING_MAX_AGE`); how many."""
    cutoff = (now or timezone.now()) - timedelta(seconds=STAGING_MAX_AGE + 60)
    _, purged = Run.objects.filter(status=Run.Status.STAGED, created_at__lt=cutoff).delete()
    return purged.get(Run._meta.label, 0)


def _store_samples(*, run: Run, samples: list[ReadSample]) -> None:
    variants = problem_variant_ids(dataset_id=run.dataset_id)
    per_task: dict[str, int] = {}
    for sample in samples:
        per_task[sample.task_id] = per_task.get(sample.task_id, 0) + 1
    plan = plan_chunks(per_task.items(), target=settings.CHUNK_SAMPLES)
    chunks = Chunk.objects.bulk_create([
        Chunk(run=run, index=i, language=run.dataset.language,
              sample_count=sum(per_task[t] for t in tasks))
        for i, tasks in enumerate(plan)
    ])
    chunk_of = {task: chunks[i].pk for i, tasks in enumerate(plan) for task in tasks}
    _insert_samples([
        new_sample_row(sample, run_id=run.pk, chunk_id=chunk_of[sample.task_id],
                       variant_id=variants[sample.task_id], position=position)
        for position, sample in enumerate(samples)
    ])
    Run.objects.filter(pk=run.pk).update(samples_total=len(samples), chunks_total=len(chunks))
    run.samples_total, run.chunks_total = len(samples), len(chunks)


def _insert_samples(new_rows: list[NewSampleRow]) -> None:
    """Insert new samples, their `NEW_SAMPLE_COLUMNS` given, the rest of their fields
    taking their defaults: what `Sample.objects.bulk_create` does (no signals either),
    without a model object per sample. A 16,400-sample upload spent 1.3 of its 2.2 s
    building them; one `executemany` of prepared rows takes about a quarter of that."""
    connection = connections[Sample.objects.db]
    by_name = {f.attname: f for f in Sample._meta.concrete_fields if not f.primary_key}
    # The given columns first, in `NEW_SAMPLE_COLUMNS`' order, then the defaulted ones: a
    # row is the given values followed by the defaults, with no per-column placing.
    given = [by_name[name] for name in NEW_SAMPLE_COLUMNS]
    defaulted = [f for name, f in by_name.items() if name not in NEW_SAMPLE_COLUMNS]
    quote = connection.ops.quote_name
    # Concrete fields always have a column (django-stubs allow None, for the other fields).
    columns = [cast(str, f.column) for f in [*given, *defaulted]]
    # Names from the model's own metadata, quoted; the values travel as parameters.
    sql = (f"INSERT INTO {quote(Sample._meta.db_table)} "  # noqa: S608
           f"({', '.join(quote(column) for column in columns)}) "
           f"VALUES ({', '.join(['%s'] * len(columns))})")
    defaults = [f.get_db_prep_save(f.get_default(), connection) for f in defaulted]
    encoded = [(at, f) for at, f in enumerate(given) if isinstance(f, models.JSONField)]
    # Most samples carry no notes: their empty list is encoded once, not once a sample
    # (encoding each was half of the insert's Python time for 16,400 samples).
    empty = {at: f.get_db_prep_save([], connection) for at, f in encoded}
    rows = []
    for new_row in new_rows:
        row = [*new_row, *defaults]
        for at, field in encoded:
            value = new_row[at]
            row[at] = (empty[at] if isinstance(value, list) and not value
                       else field.get_db_prep_save(value, connection))
        rows.append(row)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 2000):
            cursor.executemany(sql, rows[start:start + 2000])


def run_change_record(*, run: Run, actor: User, field: str, before: str,
                      after: str) -> None:
    """One entry of the run's audit trail (shown on the run page, `GET .../changes`)."""
    RunChange.objects.create(run=run, actor=actor, actor_name=actor.get_username()[:150],
                             field=field, before=before, after=after)
    forget_run_facts(run)


def run_cancel(*, user: User, run: Run) -> bool:
    """Stop a run: queued chunks are dropped, running ones stop after their current sample."""
    if not run_can_manage(user=user, run=run):
        raise PermissionDenied("Only the run's owner or a team owner can cancel it.")
    with transaction.atomic():
        before = Run.objects.select_for_update().filter(
            pk=run.pk, status__in=Run.ACTIVE).values_list("status", flat=True).first()
        if before is None:
            return False
        Run.objects.filter(pk=run.pk).update(
            status=Run.Status.CANCELLED, finished_at=timezone.now()
        )
        run_change_record(run=run, actor=user, field=RunChange.Field.STATUS, before=before,
                          after=Run.Status.CANCELLED)
        Chunk.objects.filter(run=run, status=Chunk.Status.QUEUED).update(
            status=Chunk.Status.CANCELLED
        )
        run_finished_record(run_id=run.pk)
    return True


def run_rerun(*, user: User, run: Run, use_cache: bool = True) -> Run:
    """A new run over the same samples, dataset and options, linked to the original."""
    if not run_can_manage(user=user, run=run):
        raise PermissionDenied("Only the run's owner or a team owner can re-run it.")
    if Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE).exists():
        raise ValidationError("The run is still going; cancel it first.")
    return run_copy(owner=user, run=run, use_cache=use_cache, rerun_of=run)


def run_copy(*, owner: User, run: Run, use_cache: bool, rerun_of: Run | None = None,
             reproduction_of: Run | None = None, plus_of: Run | None = None,
             dataset: Dataset | None = None) -> Run:
    """A new queued run over `run`'s samples and options, on its dataset or on `dataset`
    (whose problems the samples are then narrowed to), sent to the workers when the
    transaction commits. The caller has checked who may ask for it."""
    target = dataset or run.dataset
    samples = Sample.objects.filter(run=run).order_by("position")
    if dataset is not None:
        samples = samples.filter(task_id__in=list(problem_variant_ids(dataset_id=target.pk)))
    copied = [stored_sample(values, layout=run.file_layout)
              for values in samples.values_list(*SAMPLE_COLUMNS)]
    same = target.pk == run.dataset_id
    with transaction.atomic():
        new = Run.objects.create(
            owner=owner, team=run.team, visibility=run.visibility,
            name=run.name, model_name=run.model_name, model_meta=run.model_meta,
            dataset=target, file_name=run.file_name, file_sha256=run.file_sha256,
            file_size=run.file_size, file_layout=run.file_layout, options=run.options,
            fingerprint=(run.fingerprint if same else
                         run_fingerprint(sha256=run.file_sha256, dataset=target,
                                         options=run.options)),
            use_cache=use_cache, rerun_of=rerun_of, reproduction_of=reproduction_of,
            plus_of=plus_of,
            coverage=run.coverage if same else _narrowed_coverage(run.coverage, copied, target),
            harness_version=HARNESS_VERSION,
        )
        _store_samples(run=new, samples=copied)
        transaction.on_commit(lambda: _enqueue_start(new.pk))
    for source in (plus_of, reproduction_of):
        if source is not None:
            forget_run_facts(source)
    return new


def _narrowed_coverage(coverage: dict[str, Any], samples: list[ReadSample],
                       dataset: Dataset) -> dict[str, Any]:
    """The coverage of the samples kept for another dataset: its tasks, those samples."""
    per_task: dict[str, int] = {}
    for sample in samples:
        per_task[sample.task_id] = per_task.get(sample.task_id, 0) + 1
    tasks = problem_variant_ids(dataset_id=dataset.pk)
    return {**coverage, "tasks_total": len(tasks), "tasks_with_samples": len(per_task),
            "missing_tasks": sorted(set(tasks) - set(per_task)),
            "samples_total": len(samples), "min_n": min(per_task.values(), default=0),
            "max_n": max(per_task.values(), default=0)}
