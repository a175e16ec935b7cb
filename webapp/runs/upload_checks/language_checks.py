"""The language check of an upload, run by workers: the web process runs no toolchain.

`check_language` (`evaluator.language_check`) decides from parsers' yes/no answers;
here its `parse` is `WorkerParsers`. Each language's sources become a
`LanguageCheckPart` row, and a task for it goes to that language's queue
(`eval-<language>`), whose workers have the toolchain; the worker parses them in its
sandbox (`language_check_part_run`) and writes the answers into the row. Results come
back through the database because Celery keeps none (`CELERY_TASK_IGNORE_RESULT`, and
the embedded broker has no result backend). The web request waits for the rows, up to
`LANGUAGE_CHECK_WAIT_SECONDS` for the whole check: a language whose worker did not answer
by then is reported as not asked, never as "does not parse". Eager Celery (the tests)
runs the task inline. Python is the exception: the web process's own parser reads it
(`evaluator.languages.python.python_parses`), so that a Python upload never waits for a
free worker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from evaluator.language_check import Answer, sandboxed_parsers
from evaluator.languages.python import python_parses
from evaluator.languages.registry import display_name
from webapp.runs.messaging.dispatch import send_language_check
from webapp.runs.models import LanguageCheckPart

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.1
STALE_PARTS = timedelta(hours=1)
"""Parts older than this were left by a request that gave up waiting: deleted."""


def not_answered(language: str, seconds: float) -> str:
    """Why `language` was not asked: its workers did not answer in time."""
    return (f"no {display_name(language)} worker answered within {seconds:.0f} s: the "
            "language check is not done")


class WorkerParsers:
    """`Parse` by the workers of each language, within one deadline for the whole check."""

    def __init__(self, *, wait_seconds: float | None = None) -> None:
        self.wait_seconds = float(wait_seconds if wait_seconds is not None
                                  else settings.LANGUAGE_CHECK_WAIT_SECONDS)
        self.deadline = time.monotonic() + self.wait_seconds

    def __call__(self, requests: Mapping[str, list[str]]) -> dict[str, list[Answer] | str]:
        answers: dict[str, list[Answer] | str] = {
            language: list(python_parses(sources)) for language, sources in requests.items()
            if language == "python"}
        requests = {language: sources for language, sources in requests.items()
                    if language not in answers}
        if not requests:
            return answers
        LanguageCheckPart.objects.filter(created_at__lt=timezone.now() - STALE_PARTS).delete()
        parts = {language: LanguageCheckPart.objects.create(
                     language=language, sources=[_storable(s) for s in sources])
                 for language, sources in requests.items()}
        unsent = {language for language, part in parts.items()
                  if not send_language_check(part_id=part.pk, language=language)}
        answers.update({
            language: f"the {display_name(language)} language check could not be sent to "
                      "the broker" for language in unsent})
        waiting = {part.pk: language for language, part in parts.items()
                   if language not in unsent}
        try:
            while waiting:
                for part in LanguageCheckPart.objects.filter(
                        pk__in=list(waiting), answered_at__isnull=False):
                    language = waiting.pop(part.pk)
                    answers[language] = (_answers(part.answers, len(requests[language]))
                                         if not part.error else part.error)
                if not waiting or time.monotonic() >= self.deadline:
                    break
                time.sleep(POLL_SECONDS)
            for language in waiting.values():
                answers[language] = not_answered(language, self.wait_seconds)
        finally:
            LanguageCheckPart.objects.filter(pk__in=[p.pk for p in parts.values()]).delete()
        return answers


def language_check_part_run(*, part_id: int, worker: str = "") -> bool:
    """Parse one part's sources in this worker's sandbox and store the answers; False
    when the part is gone (its request gave up and deleted it) or already answered."""
    part = LanguageCheckPart.objects.filter(pk=part_id, answered_at__isnull=True).first()
    if part is None:
        return False
    sources = [str(source) for source in part.sources]
    said = sandboxed_parsers(settings.EVALUATOR_SANDBOX).parse(part.language, sources)
    fields = ({"error": said} if isinstance(said, str) else {"answers": said})
    updated = LanguageCheckPart.objects.filter(pk=part_id, answered_at__isnull=True).update(
        answered_at=timezone.now(), worker=worker[:200], **fields)
    if isinstance(said, str):
        logger.warning("the %s language check could not parse: %s", part.language, said)
    return updated == 1


def _answers(stored: object, count: int) -> list[Answer] | str:
    if not isinstance(stored, list) or len(stored) != count:
        return "the worker gave a wrong number of answers"
    return [answer if isinstance(answer, bool) else None for answer in stored]


def _storable(source: str) -> str:
    """`source` as text every database can hold: no lone surrogate, no NUL."""
    return source.encode("utf-8", "surrogatepass").decode("utf-8", "replace").replace(
        "\x00", "\ufffd")
