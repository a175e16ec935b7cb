"""The live events of a run, as sent over the websocket of `run-<id>`.

Every event is a `TypedDict` with a `type`, built here and sent by `live.emit_run_event`.
`progress` in an event is the run's state right after the change it reports, read in the
same transaction, so `progress.done` only grows from one event of a run to the next that
is emitted after it; a page keeps the counts of the event with the largest `done`.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from evaluator.records import SampleResult, TestOutcome, cap_text

MAX_TESTS_IN_EVENT = 50


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


class LogEntry(TypedDict):
    sample_id: int
    task_id: str
    completion_id: int
    status: str
    duration_ms: float
    cached: bool
    first_failure: FirstFailure | None
    url: str


class PassAtKValue(TypedDict):
    k: int
    value: float
    low: float
    high: float


class RunStatusEvent(TypedDict):
    type: Literal["run_status"]
    run_id: int
    status: str
    progress: RunProgress


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


class SampleFinishedEvent(TypedDict):
    type: Literal["sample_finished"]
    run_id: int
    entry: LogEntry
    tests: list[TestSummary]
    tests_total: int
    progress: RunProgress


class RunFinishedEvent(TypedDict):
    type: Literal["run_finished"]
    run_id: int
    status: str
    error: str
    progress: RunProgress
    pass_at_k: list[PassAtKValue]


class SnapshotEvent(TypedDict):
    """Sent first on every connection: the state in the database when the socket joined."""

    type: Literal["snapshot"]
    run_id: int
    status: str
    progress: RunProgress
    log: list[LogEntry]
    pass_at_k: list[PassAtKValue]


RunEvent = (
    RunStatusEvent | SampleStartedEvent | TestReportedEvent | SampleFinishedEvent
    | RunFinishedEvent
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
