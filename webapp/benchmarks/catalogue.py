"""The dataset catalogue in the web app: which public datasets are not stored yet (a read),
importing one (a write: download, check the pinned sha256, store in one transaction), and
the background job a staff user starts from the Datasets page, whose progress the page
polls.

The download is checked before anything is stored, and `dataset_import` stores a dataset
in one transaction, so a failure at any point leaves nothing behind.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from evaluator.datasets import DatasetError, load_dataset
from evaluator.datasets.catalogue import (
    CatalogueEntry,
    CatalogueError,
    Progress,
    Unreachable,
    download_entry,
    load_catalogue,
)
from webapp.benchmarks.models import CatalogueImport, Dataset
from webapp.benchmarks.services import ImportOutcome, dataset_import

logger = logging.getLogger(__name__)

IMPORT_CATALOGUE_ENTRY = "benchmarks.import_catalogue_entry"
DEFAULT_QUEUE = "default"
PROGRESS_SECONDS = 0.5
PROGRESS_STEP = 5.0
"""A background import writes its progress when it has moved this many percentage points,
or PROGRESS_SECONDS have passed, since the last write."""
QUEUED_PATIENCE = timedelta(minutes=15)
"""A job no worker took within this may be asked for again."""
RUNNING_PATIENCE = timedelta(minutes=5)
"""A running job whose progress has not moved for this long has stopped (its worker died)."""
ACTIVE = (CatalogueImport.Status.QUEUED, CatalogueImport.Status.RUNNING)


def catalogue_entries() -> tuple[CatalogueEntry, ...]:
    return load_catalogue(settings.DATASET_CATALOGUE)


def catalogue_entry(*, key: str) -> CatalogueEntry | None:
    return next((entry for entry in catalogue_entries() if entry.key == key), None)


def catalogue_stored(*, entry: CatalogueEntry) -> Dataset | None:
    """The stored copy of exactly the catalogue's version of `entry`, if any."""
    if not entry.sha256:
        return None
    return Dataset.objects.filter(key=entry.key, version=entry.version).first()


def job_in_progress(job: CatalogueImport) -> bool:
    if job.status == CatalogueImport.Status.QUEUED:
        return job.created_at > timezone.now() - QUEUED_PATIENCE
    if job.status == CatalogueImport.Status.RUNNING:
        return job.updated_at > timezone.now() - RUNNING_PATIENCE
    return False


@dataclass(frozen=True)
class CatalogueRow:
    entry: CatalogueEntry
    job: CatalogueImport | None
    """The latest import asked for, when there is one."""

    @property
    def in_progress(self) -> bool:
        return self.job is not None and job_in_progress(self.job)


def catalogue_missing() -> list[CatalogueRow]:
    """The catalogue's entries whose pinned version is not stored, with the latest job of
    each. An entry stored under another version still counts as missing."""
    entries = catalogue_entries()
    stored = set(Dataset.objects.filter(key__in=[entry.key for entry in entries])
                 .values_list("key", "version"))
    latest: dict[str, CatalogueImport] = {}
    for job in CatalogueImport.objects.filter(key__in=[entry.key for entry in entries]):
        latest.setdefault(job.key, job)  # newest first, by the model's ordering
    return [CatalogueRow(entry=entry, job=latest.get(entry.key)) for entry in entries
            if (entry.key, entry.version) not in stored]


def unreachable_message(exc: Unreachable) -> str:
    local = "or download the file elsewhere and import it with `manage.py import_dataset PATH`."
    if settings.DATASET_BASE_URL:
        return (f"Offline? The download could not start: {exc}, for {exc.url}, on the mirror "
                "that WORKBENCH_DATASET_BASE_URL names. Check that the mirror is running, or "
                f"unset WORKBENCH_DATASET_BASE_URL to download from upstream; {local}")
    return (f"Offline? The download could not start: {exc}, for {exc.url}. Check the "
            "network; or set WORKBENCH_DATASET_BASE_URL to a mirror that serves the same "
            f"files by their relative paths; {local}")


def catalogue_entry_import(*, entry: CatalogueEntry,
                           progress: Progress | None = None) -> ImportOutcome:
    """Download `entry`, check its size and sha256, and store it in one transaction.

    The same version already stored is a no-op with no download. Raises `CatalogueError`
    (or `DatasetError` from the loader) with a message for a person; nothing is stored then.
    """
    existing = catalogue_stored(entry=entry)
    if existing is not None:
        return ImportOutcome(dataset=existing, created=False)
    if not entry.importable:
        raise CatalogueError(f"{entry.key} cannot be downloaded from the catalogue: "
                             f"{entry.title}. Import a local copy with `manage.py "
                             f"import_dataset PATH{_layout_option(entry)}`.")
    url = entry.source_url(settings.DATASET_BASE_URL)
    try:
        with download_entry(entry, base_url=settings.DATASET_BASE_URL,
                            progress=progress) as path:
            try:
                loaded = load_dataset(path=path, layout=entry.layout)
            except DatasetError as exc:
                # Name the file by where it came from, not by its temporary copy.
                raise CatalogueError(str(exc).replace(str(path), url)) from exc
    except Unreachable as exc:
        raise CatalogueError(unreachable_message(exc)) from exc
    if loaded.key != entry.key:
        raise CatalogueError(f"{entry.key}: the file reads as {loaded.key}; the catalogue "
                             "entry is wrong, so nothing was stored")
    return dataset_import(loaded=loaded, source=entry.url)


def _layout_option(entry: CatalogueEntry) -> str:
    return f" --layout {entry.layout}" if entry.layout else ""


def catalogue_import_request(*, user: AbstractBaseUser | AnonymousUser,
                             key: str) -> CatalogueImport:
    """A staff user asks for an entry to be added; the task is sent on commit. Refused
    for an unknown, stored or non-downloadable entry, and while one is in progress."""
    if not getattr(user, "is_staff", False):
        raise PermissionDenied("Only an administrator (a staff user) can add datasets.")
    entry = catalogue_entry(key=key)
    if entry is None:
        raise ValidationError(f"{key!r} is not in the dataset catalogue.")
    if not entry.importable:
        raise ValidationError(f"{entry.key} cannot be added with a click; import a local copy "
                              f"with `manage.py import_dataset PATH{_layout_option(entry)}`.")
    if catalogue_stored(entry=entry) is not None:
        raise ValidationError(f"{entry.key} is already stored.")
    with transaction.atomic():
        for job in CatalogueImport.objects.select_for_update().filter(key=key, status__in=ACTIVE):
            if job_in_progress(job):
                raise ValidationError(f"{entry.key} is already being added.")
        job = CatalogueImport.objects.create(key=entry.key, sha256=entry.sha256,
                                             bytes_total=entry.total_size,
                                             requested_by_id=user.pk)
        job_id = job.pk
        transaction.on_commit(lambda: _enqueue(job_id))
    return job


def _enqueue(job_id: int) -> None:
    try:
        current_app.tasks[IMPORT_CATALOGUE_ENTRY].apply_async(
            (job_id,), queue=DEFAULT_QUEUE, retry=True,
            retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5,
                          "interval_max": 1.0})
    except (BrokerError, ConnectionError, OSError) as exc:
        logger.warning("could not send the catalogue import %s: %s", job_id, exc)
        CatalogueImport.objects.filter(pk=job_id, status=CatalogueImport.Status.QUEUED).update(
            status=CatalogueImport.Status.FAILED, finished_at=timezone.now(),
            error="The task queue could not be reached; try again in a moment.")


def catalogue_job_run(*, job_id: int) -> str:
    """Do an asked-for import: "done", "failed" (the reason is stored on the job), or
    "skipped" when another delivery took it first."""
    job = CatalogueImport.objects.filter(pk=job_id)
    if not job.filter(status=CatalogueImport.Status.QUEUED).update(
            status=CatalogueImport.Status.RUNNING, bytes_done=0):
        return "skipped"
    key = job.values_list("key", flat=True).get()
    last_write, last_percent = 0.0, -100.0

    def progress(received: int, expected: int) -> None:
        nonlocal last_write, last_percent
        now = time.monotonic()
        percent = 100.0 * received / expected if expected else 100.0
        # Often enough for the page, seldom enough for the database: a write per
        # PROGRESS_STEP points, or per PROGRESS_SECONDS, and the end.
        if (received < expected and percent - last_percent < PROGRESS_STEP
                and now - last_write < PROGRESS_SECONDS):
            return
        last_write, last_percent = now, percent
        # `update` skips auto_now: the heartbeat is set by hand.
        job.update(bytes_done=received, bytes_total=expected, updated_at=timezone.now())

    try:
        entry = catalogue_entry(key=key)
        if entry is None:
            raise CatalogueError(f"{key!r} is no longer in the dataset catalogue.")
        outcome = catalogue_entry_import(entry=entry, progress=progress)
    except (DatasetError, ValidationError) as exc:
        _fail(job, str(exc) if isinstance(exc, DatasetError) else " ".join(exc.messages))
        return "failed"
    except Exception as exc:
        logger.exception("the catalogue import %s failed", job_id)
        _fail(job, f"{type(exc).__name__}: {exc}")
        return "failed"
    job.update(status=CatalogueImport.Status.DONE, dataset=outcome.dataset,
               finished_at=timezone.now(), updated_at=timezone.now())
    return "done"


def _fail(job: QuerySet[CatalogueImport], message: str) -> None:
    job.update(status=CatalogueImport.Status.FAILED, error=message[:5000],
               finished_at=timezone.now(), updated_at=timezone.now())
