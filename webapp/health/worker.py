"""Inside a Celery worker: a canary before work.

At start-up (`celeryd_after_setup`, before the consumer starts) the worker stops short of
its language queues; once it is up (`worker_ready`) a thread of its main process runs the
canary of each language it serves, one after another, and the worker consumes a
language's queue only once that language's canary has passed. The thread runs them again
every `CANARY_SECONDS`, and soon after an infrastructure failure: a task of a language
queue that fails, or anyone sending the `canary_check` control command
(`services.canary_request`). A language whose canary fails is released, its work left to
healthy workers, and taken again when a later canary passes.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from celery.signals import celeryd_after_setup, task_failure, worker_ready, worker_shutdown
from celery.worker.control import control_command
from django.conf import settings
from django.db import close_old_connections, connections

from webapp.health.doctor_process import doctor_processes_stop
from webapp.health.queues import language_queue, served_languages
from webapp.health.services import (
    CANARY_COMMAND,
    canary_request,
    canary_run,
    worker_register,
    worker_stopped,
)

logger = logging.getLogger(__name__)

MIN_GAP_SECONDS = 5.0
"""The least time between two rounds, however many failures ask for one."""
RETRY_SECONDS = 10.0
"""How soon a round that could not finish (the database or the broker away) is tried again."""

T = TypeVar("T")


class CanaryLoop(threading.Thread):
    """The canary rounds of one worker, in its main process."""

    def __init__(self, *, worker: str, queues: list[str]) -> None:
        super().__init__(name="canary", daemon=True)
        self.worker = worker
        self.queues = queues
        self.pid = os.getpid()
        self.wake = threading.Event()
        self.stopping = threading.Event()

    def run(self) -> None:
        registered = False
        while not self.stopping.is_set():
            self.wake.clear()
            delay = float(settings.CANARY_SECONDS)
            try:
                if not registered:
                    _with_database(lambda: worker_register(
                        name=self.worker, queues=self.queues,
                        sandbox=settings.EVALUATOR_SANDBOX))
                    registered = True
                _with_database(lambda: canary_run(worker=self.worker, cancel=self.stopping))
            except Exception:
                # Until a round finishes, a language queue may stay held: try again soon.
                logger.exception("the canary round of %s did not finish", self.worker)
                delay = RETRY_SECONDS
            finished = time.monotonic()
            self.wake.wait(delay)
            if not self.stopping.is_set():
                self.stopping.wait(max(0.0, MIN_GAP_SECONDS - (time.monotonic() - finished)))

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        doctor_processes_stop()
        self.join(timeout=30)


def _with_database(action: Callable[[], T]) -> T:
    """`action` on fresh database connections of this thread, closed afterwards: the
    loop sleeps for minutes, longer than a server keeps an idle connection."""
    close_old_connections()
    try:
        return action()
    finally:
        connections.close_all()


@dataclass
class _Node:
    """What this process knows of the worker it belongs to."""

    name: str | None = None
    queues: list[str] = field(default_factory=list)
    loop: CanaryLoop | None = None


_node = _Node()


@celeryd_after_setup.connect
def hold_language_queues(sender: str, instance: Any, **_kwargs: Any) -> None:
    """Start without the language queues; each is added once its canary passes."""
    if not settings.CANARY_ENABLED:
        return
    queues = instance.app.amqp.queues
    configured = list(queues.consume_from)
    _node.name, _node.queues = sender, configured
    for language in served_languages(configured):
        queues.deselect(language_queue(language))


@worker_ready.connect
def start_canaries(**_kwargs: Any) -> None:
    if not settings.CANARY_ENABLED or _node.name is None:
        return
    _node.loop = CanaryLoop(worker=_node.name, queues=_node.queues)
    _node.loop.start()


@worker_shutdown.connect
def stop_canaries(**_kwargs: Any) -> None:
    loop, _node.loop = _node.loop, None
    if loop is None:
        return
    loop.stop()
    try:
        _with_database(lambda: worker_stopped(name=loop.worker))
    except Exception:
        logger.exception("could not record that worker %s stopped", loop.worker)


@control_command(name=CANARY_COMMAND)
def canary_check(state: Any, **_kwargs: Any) -> dict[str, str]:
    """Remote control: run the canaries again soon."""
    if not _wake():
        return {"error": "this worker runs no canaries"}
    return {"ok": "canaries will run again"}


@task_failure.connect
def canary_after_failure(sender: Any = None, **_kwargs: Any) -> None:
    """A task of a language queue failed: check that the language still works here."""
    request = getattr(sender, "request", None)
    queue = str((getattr(request, "delivery_info", None) or {}).get("routing_key") or "")
    if not served_languages([queue]):
        return
    if _wake():
        return
    worker = getattr(request, "hostname", None)
    if worker:
        try:
            # In a pool process: the loop is in the worker's main process.
            canary_request(worker=worker)
        except Exception:
            logger.exception("could not ask %s for a canary", worker)


def _wake() -> bool:
    """Wake this process's canary loop; False when it has none (a pool process)."""
    loop = _node.loop
    if loop is None or loop.pid != os.getpid() or not loop.is_alive():
        return False
    loop.wake.set()
    return True
