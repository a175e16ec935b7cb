"""Whether anyone is watching a run: its workers send the live page a sample's events (its
start, each test as it runs, its result) only while someone has the page open.

Streaming a program's tests one by one cost a worker about 3 ms of CPU a sample (HumanEval's
Python, about eight tests each, CodeGen's file: `bench/web_vs_cli.py`), each test handed
between its threads and on to the channel layer. That was most of what the web path spent
beyond the command line's own work, and with nobody watching it bought nothing. The web
processes' live feeds mark the run watched when its first viewer joins and renew the mark
while any viewer stays (`RunFeed`); a worker reads the mark when it starts a chunk and
then at most once a `CHECK_SECONDS` as results come. Results, counts and the durable
events' numbers are the same either way, all in the database: a page that opens reads the
state from there, and the results it was not sent as after any gap (`RunFeed`). Unwatched,
sending each result still cost a worker a round of the channel layer and a wait for it:
about 0.6 ms of CPU a sample, with nobody in the run's group to receive it.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from webapp.runs.models import Run

logger = logging.getLogger(__name__)

CHECK_SECONDS = 1.0
"""How often, at most, a worker evaluating a chunk asks whether its run is watched."""


def watch_seconds() -> float:
    """How long a mark lasts: three of the feed's renewals (`LIVE_RECONCILE_SECONDS`), so
    one late renewal does not stop the stream."""
    return 3 * float(settings.LIVE_RECONCILE_SECONDS)


def run_watch(*, run_id: int) -> None:
    """Someone has run `run_id`'s live page open: stream its tests for `watch_seconds`."""
    until = timezone.now() + dt.timedelta(seconds=watch_seconds())
    Run.objects.filter(pk=run_id, status__in=Run.ACTIVE).update(watched_until=until)


def run_watched(*, run_id: int) -> bool:
    return Run.objects.filter(pk=run_id, watched_until__gt=timezone.now()).exists()


class WatchCheck:
    """Whether run `run_id` is watched, read from the database at most once a
    `CHECK_SECONDS`; a read that fails keeps the last answer."""

    def __init__(self, *, run_id: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.run_id = run_id
        self.clock = clock
        self.checked = -float("inf")
        self.watched = False

    def __call__(self) -> bool:
        now = self.clock()
        if now - self.checked >= CHECK_SECONDS:
            self.checked = now
            try:
                self.watched = run_watched(run_id=self.run_id)
            except DatabaseError as exc:
                logger.warning("run %s: could not tell whether anyone watches it: %s",
                               self.run_id, exc)
        return self.watched
