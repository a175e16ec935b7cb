"""`canary_run` runs the real doctor, records each language's canary for the worker, and
has the worker consume exactly the queues whose canary passed; `canary_healthy` says
whether a recent, passing canary vouches for a worker's language, and why not."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import call_command
from django.utils import timezone

from webapp.health import services
from webapp.health.models import CanaryCheck, Worker
from webapp.health.queues import language_queue, queue_language, served_languages
from webapp.health.selectors import canary_healthy
from webapp.health.services import canary_run, worker_register, worker_stopped
from webapp.runs.messaging import dispatch

WORKER = "worker-1@host"


@pytest.fixture
def control(monkeypatch):
    """The worker's answers to queue changes, without a worker: records what was asked."""
    asked: list[tuple[str, str, str]] = []
    answers = {"value": True}

    def consume(*, worker, queue):
        asked.append(("consume", worker, queue))
        return answers["value"]

    def release(*, worker, queue):
        asked.append(("release", worker, queue))
        return answers["value"]

    monkeypatch.setattr(services, "queue_consume", consume)
    monkeypatch.setattr(services, "queue_release", release)
    return asked, answers


def test_queue_names_are_the_dispatchers():
    for language in ("python", "cpp", "js"):
        assert language_queue(language) == dispatch.language_queue(language)
        assert queue_language(dispatch.language_queue(language)) == language
    assert queue_language("default") is None
    assert served_languages(["default", "eval-cpp", "eval-python", "eval-cobol"]) == [
        "cpp", "python"]


def test_a_broken_toolchain_releases_its_queue_and_keeps_the_others(db, control, monkeypatch):
    asked, _ = control
    monkeypatch.setenv("EVALUATOR_CXX", "/nonexistent/g++")  # the doctor's process inherits it
    worker = worker_register(name=WORKER, queues=["default", "eval-python", "eval-cpp"],
                             sandbox="none")
    assert worker.consuming == ["default"], "language queues wait for their canary"
    results = canary_run(worker=WORKER)
    assert list(results) == ["python", "cpp"]
    assert results["python"].ok
    assert not results["cpp"].ok
    assert "EVALUATOR_CXX is set to /nonexistent/g++" in results["cpp"].cause
    assert asked == [("consume", WORKER, "eval-python"), ("release", WORKER, "eval-cpp")]
    worker.refresh_from_db()
    assert worker.consuming == ["default", "eval-python"]
    assert worker.levels == ["none"]
    stored = {c.language: c for c in CanaryCheck.objects.filter(worker=worker)}
    assert stored["python"].ok
    assert stored["python"].last_ok_at is not None
    assert not stored["cpp"].ok
    assert stored["cpp"].last_ok_at is None
    assert stored["cpp"].error == results["cpp"].cause
    assert stored["cpp"].hint.startswith("point EVALUATOR_CXX at an installed tool")
    assert canary_healthy(worker=WORKER, language="python")[0] is True
    healthy, reason = canary_healthy(worker=WORKER, language="C++")
    assert healthy is False
    assert reason.startswith(f"the C++ canary failed on {WORKER} under none at ")
    assert reason.endswith(results["cpp"].cause)

    # Fixed: the next canary passes, and the worker takes the queue again.
    monkeypatch.delenv("EVALUATOR_CXX")
    asked.clear()
    assert canary_run(worker=WORKER, languages=["cpp"])["cpp"].ok
    assert asked == [("consume", WORKER, "eval-cpp")]
    worker.refresh_from_db()
    assert worker.consuming == ["default", "eval-python", "eval-cpp"]
    assert canary_healthy(worker=WORKER, language="cpp")[0] is True


def test_a_worker_that_does_not_answer_is_noted(db, control):
    _, answers = control
    answers["value"] = False
    worker_register(name=WORKER, queues=["eval-python"], sandbox="none")
    assert canary_run(worker=WORKER)["python"].ok
    worker = Worker.objects.get(name=WORKER)
    assert worker.consuming == []
    assert worker.note.startswith("it did not answer when asked to consume eval-python")


def test_a_node_without_a_canary_loop_gets_its_results_and_no_queue_changes(db, control):
    asked, _ = control
    results = canary_run(worker="celery@elsewhere", languages=["python"])
    assert results["python"].ok
    assert asked == []
    worker = Worker.objects.get(name="celery@elsewhere")
    assert (worker.queues, worker.consuming) == ([], [])
    assert CanaryCheck.objects.get(worker=worker).ok


def test_canary_healthy_gives_the_reason_it_is_not(db, control, settings):
    assert canary_healthy(worker=WORKER, language="python") == (
        False, f"worker {WORKER} has recorded no canary")
    worker_register(name=WORKER, queues=["eval-python"], sandbox="none")
    assert canary_healthy(worker=WORKER, language="python") == (
        False, f"no canary of Python has run on {WORKER} yet")
    canary_run(worker=WORKER)
    healthy, reason = canary_healthy(worker=WORKER, language="python")
    assert healthy, reason
    assert reason.startswith(f"the Python canary passed on {WORKER} under none at ")
    CanaryCheck.objects.update(checked_at=timezone.now() - dt.timedelta(
        seconds=settings.CANARY_STALE_SECONDS + 1))
    healthy, reason = canary_healthy(worker=WORKER, language="python")
    assert not healthy
    assert reason.endswith(f"more than {settings.CANARY_STALE_SECONDS} s ago")
    worker_stopped(name=WORKER)
    healthy, reason = canary_healthy(worker=WORKER, language="python")
    assert not healthy
    assert reason.startswith(f"worker {WORKER} stopped at ")


def test_the_command_records_the_local_node_and_fails_on_a_broken_language(
        db, control, capsys, monkeypatch):
    call_command("canary", "--worker", "celery@here", "--language", "python")
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "celery@here:"
    assert out.splitlines()[2].split()[:3] == ["Python", "none", "ok"]
    assert CanaryCheck.objects.get(worker__name="celery@here", language="python").ok
    monkeypatch.setenv("EVALUATOR_CXX", "/nonexistent/g++")
    with pytest.raises(SystemExit) as exited:
        call_command("canary", "--worker", "celery@here", "--language", "c++", "--json")
    assert exited.value.code == 1
    assert '"cause": "the C++ toolchain is missing' in capsys.readouterr().out
    assert not CanaryCheck.objects.get(worker__name="celery@here", language="cpp").ok
