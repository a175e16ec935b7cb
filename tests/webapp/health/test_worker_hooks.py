"""Inside a worker: the language queues are held back at start-up, and a failed task of a
language queue asks for a canary (the real worker is in tests/webapp/services)."""

from __future__ import annotations

import os
import threading
from types import SimpleNamespace

import pytest
from kombu import Queue

from webapp.health import worker as worker_hooks


class FakeQueues(dict[str, Queue]):
    """Celery's `app.amqp.queues` as far as the hook uses it."""

    def __init__(self, names):
        super().__init__({name: Queue(name) for name in names})
        self.consume_from = dict(self)

    def deselect(self, name):
        self.consume_from.pop(name)


@pytest.fixture
def node(monkeypatch):
    fresh = worker_hooks._Node()
    monkeypatch.setattr(worker_hooks, "_node", fresh)
    return fresh


def test_language_queues_wait_for_their_canary(node, settings):
    settings.CANARY_ENABLED = True
    queues = FakeQueues(["default", "eval-python", "eval-cpp", "eval-cobol"])
    instance = SimpleNamespace(app=SimpleNamespace(amqp=SimpleNamespace(queues=queues)))
    worker_hooks.hold_language_queues(sender="w@host", instance=instance)
    # An eval- queue of no known language is not ours to hold.
    assert list(queues.consume_from) == ["default", "eval-cobol"]
    assert (node.name, node.queues) == ("w@host", ["default", "eval-python", "eval-cpp",
                                                  "eval-cobol"])


def test_with_canaries_off_every_queue_is_taken_at_once(node, settings):
    settings.CANARY_ENABLED = False
    queues = FakeQueues(["default", "eval-python"])
    instance = SimpleNamespace(app=SimpleNamespace(amqp=SimpleNamespace(queues=queues)))
    worker_hooks.hold_language_queues(sender="w@host", instance=instance)
    assert list(queues.consume_from) == ["default", "eval-python"]
    assert node.name is None


def failed_task(queue: str) -> SimpleNamespace:
    return SimpleNamespace(request=SimpleNamespace(delivery_info={"routing_key": queue},
                                                   hostname="w@host"))


def test_a_failed_language_task_wakes_the_canary_loop(node):
    woken = threading.Event()
    node.loop = SimpleNamespace(pid=os.getpid(), wake=woken, is_alive=lambda: True)
    worker_hooks.canary_after_failure(sender=failed_task("default"))
    assert not woken.is_set(), "the fan-out queue has no language to check"
    worker_hooks.canary_after_failure(sender=failed_task("eval-cpp"))
    assert woken.is_set()
    assert worker_hooks.canary_check(state=None) == {"ok": "canaries will run again"}


def test_a_pool_process_asks_its_worker(node, monkeypatch):
    asked = []
    monkeypatch.setattr(worker_hooks, "canary_request", lambda *, worker: asked.append(worker))
    worker_hooks.canary_after_failure(sender=failed_task("eval-python"))
    assert asked == ["w@host"]
    assert worker_hooks.canary_check(state=None) == {"error": "this worker runs no canaries"}
