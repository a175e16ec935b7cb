"""Writes: recording workers and their canaries, and following a canary with the queues.

`canary_run` is the one way a canary runs in the web app: the worker's own loop
(`webapp.health.worker`) calls it at start, periodically and when asked to after a
failure; `manage.py canary` calls it by hand; the worker side may call it directly.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evaluator.doctor import LanguageCheck
from evaluator.languages.registry import canonical_name, language_names
from webapp.health.doctor_process import doctor_check
from webapp.health.models import CanaryCheck, Worker
from webapp.health.queues import (
    language_queue,
    queue_consume,
    queue_release,
    served_languages,
)

logger = logging.getLogger(__name__)

CANARY_COMMAND = "canary_check"
"""The remote-control command a worker's canary loop answers (`webapp.health.worker`)."""


def worker_register(*, name: str, queues: list[str], sandbox: str) -> Worker:
    """A worker starting: its language queues are not consumed until their canary passes."""
    now = timezone.now()
    held = set(served_languages(queues))
    consuming = [queue for queue in queues
                 if not any(queue == language_queue(language) for language in held)]
    worker, _ = Worker.objects.update_or_create(name=name, defaults={
        "queues": list(queues), "consuming": consuming, "sandbox": sandbox,
        "started_at": now, "seen_at": now, "stopped_at": None, "note": "",
    })
    return worker


def worker_stopped(*, name: str) -> None:
    """A worker stopping cleanly: it consumes nothing more, and vouches for nothing."""
    Worker.objects.filter(name=name).update(stopped_at=timezone.now(), consuming=[])


def canary_record(*, worker: Worker, check: LanguageCheck) -> CanaryCheck:
    checked_at = _parse_time(check.checked_at)
    defaults = {
        "backend": check.backend, "ok": check.ok, "error": check.cause, "hint": check.hint,
        "checked_at": checked_at, "duration_ms": round(check.seconds * 1000),
    }
    if check.ok:
        defaults["last_ok_at"] = checked_at
    with transaction.atomic():
        record, _ = CanaryCheck.objects.update_or_create(
            worker=worker, language=check.language, sandbox=check.sandbox, defaults=defaults)
    return record


def canary_run(*, worker: str, languages: list[str] | None = None,
               cancel: threading.Event | None = None) -> dict[str, LanguageCheck]:
    """Run the canaries of `worker`'s languages (or of `languages`) under the sandbox this
    process is configured with, record each, and have the worker consume the queue of each
    language whose canary passed and release the others'. Returns each language's check.

    A worker not registered by its canary loop (`manage.py canary` on a machine whose
    worker does not run one) gets its results recorded, and no queue is touched.
    Languages run one at a time, and each queue follows its own canary at once.
    """
    row = Worker.objects.filter(name=worker).first()
    served = served_languages(row.queues) if row is not None else list(language_names())
    chosen = served if languages is None else [
        name for name in (canonical_name(language) for language in languages) if name]
    results: dict[str, LanguageCheck] = {}
    for language in chosen:
        if cancel is not None and cancel.is_set():
            break
        check = doctor_check(language=language, sandbox=settings.EVALUATOR_SANDBOX,
                             timeout=settings.CANARY_TIMEOUT_SECONDS)
        if cancel is not None and cancel.is_set():
            break  # stopped mid-check (the worker is stopping): that is no verdict
        if row is None:
            now = timezone.now()
            row, _ = Worker.objects.get_or_create(name=worker, defaults={
                "queues": [], "consuming": [], "sandbox": settings.EVALUATOR_SANDBOX,
                "started_at": now, "seen_at": now})
        canary_record(worker=row, check=check)
        results[language] = check
        if language in served and language_queue(language) in row.queues:
            _follow(row, language_queue(language), consume=check.ok)
        if not check.ok:
            logger.warning("canary of %s failed on %s (%s): %s", language, worker,
                           check.sandbox, check.cause)
    if row is not None and results:
        levels = sorted({check.sandbox for check in results.values()})
        Worker.objects.filter(pk=row.pk).update(seen_at=timezone.now(), levels=levels)
    return results


def canary_request(*, worker: str) -> bool:
    """Ask `worker`'s canary loop to run its canaries again soon (after an infrastructure
    failure, say), without waiting for them; False when the worker did not answer."""
    replies = current_app.control.broadcast(CANARY_COMMAND, destination=[worker], reply=True,
                                            timeout=5.0)
    return any(worker in reply for reply in replies or ())


def _follow(row: Worker, queue: str, *, consume: bool) -> None:
    """Have the worker consume `queue` or not, and record what it now consumes."""
    answered = (queue_consume if consume else queue_release)(worker=row.name, queue=queue)
    with transaction.atomic():
        current = Worker.objects.select_for_update().get(pk=row.pk)
        if not answered:
            current.note = (f"it did not answer when asked to {'consume' if consume else 'stop'}"
                            f" {queue} ({timezone.now():%Y-%m-%d %H:%M:%S} UTC)")
            current.save(update_fields=["note"])
            return
        consuming = set(current.consuming)
        if consume:
            consuming.add(queue)
        else:
            consuming.discard(queue)
        current.consuming = [q for q in current.queues if q in consuming]
        current.note = ""
        current.save(update_fields=["consuming", "note"])
        row.consuming = current.consuming


def _parse_time(text: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return timezone.now()
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
