"""Reads: whether a worker's canary vouches for a language, and the status of them all.

A canary vouches for a language on a worker when its latest check under each sandbox
level the worker offers passed, and is not older than `CANARY_STALE_SECONDS` (by default
three canary intervals: a worker that missed three rounds is gone, stuck or cut off).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from evaluator.languages.registry import canonical_name, display_name, language_rank
from webapp.benchmarks.models import Dataset
from webapp.health.models import CanaryCheck, Worker
from webapp.health.queues import language_queue, served_languages


@dataclass(frozen=True)
class LanguageReadiness:
    language: str
    display_name: str
    required: bool
    """An imported dataset is in this language (or it was asked about by name)."""
    healthy_workers: tuple[str, ...]
    reason: str

    @property
    def ready(self) -> bool:
        return bool(self.healthy_workers)


@dataclass(frozen=True)
class WorkerStatus:
    worker: Worker
    languages: tuple[str, ...]
    checks: tuple[CanaryCheck, ...]
    stale: bool
    """Not heard from within the staleness bound, and not stopped cleanly either."""


@dataclass(frozen=True)
class Status:
    ready: bool
    languages: tuple[LanguageReadiness, ...]
    workers: tuple[WorkerStatus, ...]
    stale_after: dt.timedelta
    checked_at: dt.datetime
    problems: tuple[str, ...] = field(default=())
    """Why it is not ready, one line per required language that no worker vouches for."""


def stale_after() -> dt.timedelta:
    return dt.timedelta(seconds=settings.CANARY_STALE_SECONDS)


def canary_healthy(*, worker: str, language: str) -> tuple[bool, str]:
    """Whether a recent, passing canary of `language` is recorded for `worker`; the reason
    in plain words either way."""
    name = display_name(language)
    row = Worker.objects.filter(name=worker).first()
    if row is None:
        return False, f"worker {worker} has recorded no canary"
    if row.stopped_at is not None:
        return False, f"worker {worker} stopped at {_when(row.stopped_at)}"
    return _vouches(row, canonical_name(language) or language, name,
                    list(row.checks.filter(language=canonical_name(language) or language)))


def _vouches(row: Worker, language: str, name: str,
             checks: list[CanaryCheck]) -> tuple[bool, str]:
    if row.levels:
        checks = [check for check in checks if check.sandbox in row.levels]
    if not checks:
        return False, f"no canary of {name} has run on {row.name} yet"
    failed = next((check for check in checks if not check.ok), None)
    if failed is not None:
        return False, (f"the {name} canary failed on {row.name} under {failed.sandbox} at "
                       f"{_when(failed.checked_at)}: {failed.error}")
    oldest = min(checks, key=lambda check: check.checked_at)
    if oldest.checked_at < timezone.now() - stale_after():
        return False, (f"the last {name} canary on {row.name} ran at "
                       f"{_when(oldest.checked_at)}, more than "
                       f"{settings.CANARY_STALE_SECONDS} s ago")
    levels = ", ".join(sorted({check.sandbox for check in checks}))
    return True, (f"the {name} canary passed on {row.name} under {levels} at "
                  f"{_when(oldest.checked_at)}")


def status(*, languages: list[str] | None = None) -> Status:
    """Every worker with its canaries, and for each language whether a live worker that
    serves it vouches for it. `languages`: the ones readiness requires; by default those
    of the imported datasets, else those the workers serve."""
    now = timezone.now()
    workers = list(Worker.objects.prefetch_related("checks"))
    rows = tuple(_worker_status(row, now) for row in workers)
    served = {language for row in rows for language in row.languages}
    required = _required(languages, served)
    readiness = []
    for language in sorted(served | required, key=language_rank):
        healthy: list[str] = []
        reasons: list[str] = []
        for status_row in rows:
            if language not in status_row.languages:
                continue
            if status_row.worker.stopped_at is not None:
                reasons.append(f"worker {status_row.worker.name} stopped")
                continue
            ok, reason = _vouches(status_row.worker, language, display_name(language),
                                  [c for c in status_row.checks if c.language == language])
            if ok:
                healthy.append(status_row.worker.name)
            else:
                reasons.append(reason)
        if healthy:
            reason = f"served by {', '.join(healthy)}"
        else:
            reason = "; ".join(reasons) or "no worker serves its queue " + language_queue(language)
        readiness.append(LanguageReadiness(
            language=language, display_name=display_name(language),
            required=language in required, healthy_workers=tuple(healthy), reason=reason))
    problems = tuple(f"{item.display_name}: {item.reason}" for item in readiness
                     if item.required and not item.ready)
    if not required and not any(item.ready for item in readiness):
        problems = ("no worker has vouched for any language yet",)
    return Status(ready=not problems, languages=tuple(readiness), workers=rows,
                  stale_after=stale_after(), checked_at=now, problems=problems)


def language_readiness(*, language: str) -> LanguageReadiness:
    """Whether any live worker that serves `language` vouches for it, and which."""
    name = canonical_name(language) or language
    found = next((item for item in status(languages=[name]).languages
                  if item.language == name), None)
    return found or LanguageReadiness(language=name, display_name=display_name(name),
                                      required=True, healthy_workers=(),
                                      reason="no worker serves its queue "
                                             + language_queue(name))


def _worker_status(row: Worker, now: dt.datetime) -> WorkerStatus:
    checks = sorted(row.checks.all(), key=lambda c: (language_rank(c.language), c.sandbox))
    stale = row.stopped_at is None and row.seen_at < now - stale_after()
    return WorkerStatus(worker=row, languages=tuple(served_languages(row.queues)),
                        checks=tuple(checks), stale=stale)


def _required(languages: list[str] | None, served: set[str]) -> set[str]:
    if languages:
        return {canonical_name(name) or name for name in languages}
    imported = {canonical_name(name) for name in
                Dataset.objects.values_list("language", flat=True).distinct()}
    return {name for name in imported if name} or served


def _when(moment: dt.datetime) -> str:
    return f"{moment.astimezone(dt.UTC):%Y-%m-%d %H:%M:%S} UTC"
