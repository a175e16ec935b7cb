"""The live events of a run, as sent over the websocket of `run-<id>`.

Every event is a `TypedDict` with a `type`, built here and sent by `live.emit_run_event`.
`progress` in an event is the run's state right after the change it reports, read in the
same transaction, so `progress.done` only grows from one event of a run to the next that
is emitted after it; a page keeps the counts of the event with the largest `done`.

Durable events (`run_status`, `sample_finished`, `run_recovering`, `run_finished`) carry
`seq`, the run's event sequence number, drawn in the transaction that made the change: the
numbers of a run have no gaps, so a viewer that reconnects with the last `seq` it saw gets
exactly what it missed, rebuilt from the database (`selectors.run_events_after`).
`sample_started` and `test_reported` are ephemeral: no `seq`, and nothing is lost with them
that `sample_finished` does not carry again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict

from django.template.loader import render_to_string
from django.urls import reverse

from evaluator.records import SampleResult, TestOutcome, cap_text
from evaluator.sandbox.levels import level_of_backend

MAX_TESTS_IN_EVENT = 50
LOG_ENTRY_TEMPLATE = "runs/_log_entry.html"


class RunProgress(TypedDict):
    done: int
    total: int
    by_status: dict[str, int]
    cached: int
    pass1: float | None
    """passed / done: the running pass@1 (equal to the final one when every task has the
    same number of samples)."""


class FirstFailure(TypedDict):
    index: int | None
    source: str
    status: str
    expected: str | None
    actual: str | None
    message: str


class TestSummary(TypedDict):
    index: int
    status: str
    source: str
    duration_ms: float
    message: str | None


class SandboxShown(TypedDict):
    """The sandbox a worker chose for a sample (`evaluator.records.SandboxInfo`): the page's
    "Sandbox" line, known once the first sample finishes."""

    level: str
    backend: str
    chosen: str


class LogEntry(TypedDict):
    sample_id: int
    task_id: str
    completion_id: int
    status: str
    error_type: str
    duration_ms: float
    cached: bool
    first_failure: FirstFailure | None
    url: str
    sandbox: SandboxShown | None
    html: NotRequired[str]
    """The entry drawn by `runs/_log_entry.html`, the log's one template, added as the event
    is sent to a page (`with_log_html`)."""


class ProblemCount(TypedDict):
    """One problem's finished samples (n) and passing ones (c): a row of the live table."""

    task_id: str
    number: int
    n: int
    c: int


class PassAtKValue(TypedDict):
    k: int
    value: float
    low: float
    high: float


class RunStatusEvent(TypedDict):
    type: Literal["run_status"]
    run_id: int
    seq: int
    status: str
    progress: RunProgress


class RunRecoveringEvent(TypedDict):
    """Work of the run was lost (a worker died, or the broker lost its messages) and has
    been sent again; the run goes on by itself."""

    type: Literal["run_recovering"]
    run_id: int
    seq: int
    message: str
    recoveries: int


class SampleStartedEvent(TypedDict):
    type: Literal["sample_started"]
    run_id: int
    sample_id: int
    task_id: str
    completion_id: int


class TestReportedEvent(TypedDict):
    """One test of a sample that is still running, as soon as the program reports it.

    Sent before that sample's `sample_finished`; a page that misses some loses nothing,
    since `sample_finished` carries every test again.
    """

    type: Literal["test_reported"]
    run_id: int
    sample_id: int
    task_id: str
    completion_id: int
    test: TestSummary


class SampleEndedEvent(TypedDict):
    """Sent by the websocket consumer, not the emitter: a `sample_finished` the page already
    got from the database arrived again live. Its `sample_started` may have been forwarded
    after it (events sent from the database overtake those still in the channel), so the
    page is told again that the sample no longer runs."""

    type: Literal["sample_ended"]
    run_id: int
    sample_id: int


class SampleFinishedEvent(TypedDict):
    type: Literal["sample_finished"]
    run_id: int
    seq: int
    entry: LogEntry
    tests: list[TestSummary]
    tests_total: int
    progress: RunProgress


class RunFinishedEvent(TypedDict):
    type: Literal["run_finished"]
    run_id: int
    seq: int
    status: str
    error: str
    progress: RunProgress
    pass_at_k: list[PassAtKValue]


class SnapshotEvent(TypedDict):
    """Sent first on a connection that names no `after`: the state in the database when the
    socket joined. Every durable event up to `seq` is in it; later ones follow live."""

    type: Literal["snapshot"]
    run_id: int
    seq: int
    status: str
    progress: RunProgress
    log: list[LogEntry]
    pass_at_k: list[PassAtKValue]
    problems: list[ProblemCount]
    """Every problem of the run, counting the samples finished up to `seq`."""


DurableEvent = RunStatusEvent | SampleFinishedEvent | RunRecoveringEvent | RunFinishedEvent
RunEvent = DurableEvent | SampleStartedEvent | TestReportedEvent


def log_entry(*, run_id: int, sample_id: int, result: SampleResult) -> LogEntry:
    """A finished sample as the live log shows it, live or rebuilt from the database."""
    return LogEntry(
        sample_id=sample_id,
        task_id=result.task_id,
        completion_id=result.completion_id,
        status=result.status,
        error_type=cap_text(result.error_type or "", 90),
        duration_ms=round(result.compile_ms + result.run_ms, 1),
        cached=result.cached,
        first_failure=first_failure(result),
        url=reverse("runs:sample", args=[run_id, sample_id]),
        sandbox=sandbox_shown(result),
    )


def log_entry_html(entry: LogEntry, *, tests: Sequence[TestSummary] = (),
                   tests_total: int = 0) -> str:
    """`entry` drawn by the log's one template; with `tests`, its per-test dots too."""
    return render_to_string(LOG_ENTRY_TEMPLATE, {
        "entry": entry, "tests": tests, "tests_total": tests_total,
        "tests_passed": sum(1 for test in tests if test["status"] == "passed"),
    })


def with_log_html(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event as a run page receives it: each log entry in it carries its `html`, which
    the page inserts as it is (`static/runs/run_live.js`). Drawn for the viewers, when an
    event is sent to them, so a run that nobody watches spends nothing on it."""
    drawn = dict(event)
    if event["type"] == "sample_finished":
        entry: LogEntry = event["entry"]
        drawn["entry"] = {**entry, "html": log_entry_html(
            entry, tests=event["tests"], tests_total=event["tests_total"])}
    elif event["type"] == "snapshot":
        drawn["log"] = [{**entry, "html": log_entry_html(entry)} for entry in event["log"]]
    return drawn


def sandbox_shown(result: SampleResult) -> SandboxShown | None:
    sandbox = result.sandbox
    if sandbox is None:
        return None
    return SandboxShown(level=sandbox.level or level_of_backend(sandbox.backend),
                        backend=sandbox.backend, chosen=cap_text(sandbox.chosen, 300))


def sample_finished_event(
    *, run_id: int, sample_id: int, seq: int, result: SampleResult, progress: RunProgress
) -> SampleFinishedEvent:
    return SampleFinishedEvent(
        type="sample_finished", run_id=run_id, seq=seq,
        entry=log_entry(run_id=run_id, sample_id=sample_id, result=result),
        tests=test_summaries(result), tests_total=len(result.tests), progress=progress,
    )


def first_failure(result: SampleResult) -> FirstFailure | None:
    if result.status == "passed":
        return None
    failing = next((t for t in result.tests if t.status != "passed"), None)
    if failing is None:
        return FirstFailure(index=None, source="", status=result.status, expected=None,
                            actual=None, message=cap_text(result.message or "", 300))
    return FirstFailure(
        index=failing.index,
        source=cap_text(failing.source, 300),
        status=failing.status,
        expected=cap_text(failing.expected, 200) if failing.expected is not None else None,
        actual=cap_text(failing.actual, 200) if failing.actual is not None else None,
        message=cap_text(failing.message or result.message or "", 300),
    )


def test_summary(test: TestOutcome) -> TestSummary:
    return TestSummary(
        index=test.index,
        status=test.status,
        source=cap_text(test.source, 200),
        duration_ms=round(test.duration_ms, 2),
        message=cap_text(test.message, 200) if test.message else None,
    )


def test_summaries(result: SampleResult) -> list[TestSummary]:
    return [test_summary(test) for test in result.tests[:MAX_TESTS_IN_EVENT]]
