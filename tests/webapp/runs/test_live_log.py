"""The run page's log has one template, `runs/_log_entry.html`: the page draws its entries
with it, and every event sent to a page carries the entry drawn by it, which the page's
script only inserts. Text that came out of a program is escaped and isolated there."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from django.conf import settings

from evaluator.records import SampleResult
from evaluator.records import TestOutcome as Outcome
from tests.webapp.support import client_for
from webapp.runs.domain.events import (
    log_entry,
    log_entry_html,
    sample_finished_event,
    with_log_html,
)
from webapp.runs.models import Sample
from webapp.runs.reads.selectors import run_events_after, run_snapshot
from webapp.runs.worker.execution import sample_record_result

HOSTILE = "<script>alert('x')</script>\u202egnirts desrever & \"quoted\" "
RUN_ID, SAMPLE_ID = 7, 11


class Elements(HTMLParser):
    """The elements of a fragment, with their attributes and the text directly in them."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None], str]] = []
        self.open: list[int] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs), ""))
        self.open.append(len(self.found) - 1)

    def handle_endtag(self, tag: str) -> None:
        if self.open:
            self.open.pop()

    def handle_data(self, data: str) -> None:
        if self.open:
            tag, attrs, text = self.found[self.open[-1]]
            self.found[self.open[-1]] = (tag, attrs, text + data)


def elements(html: str) -> list[tuple[str, dict[str, str | None], str]]:
    parser = Elements()
    parser.feed(html)
    parser.close()
    return parser.found


def failed_result(*, source: str, message: str, task_id: str = "HumanEval/3") -> SampleResult:
    return SampleResult(
        task_id=task_id, completion_id=2, status="failed", program_hash="h",
        tests=(Outcome(index=0, source="assert f(1) == 1", status="passed"),
               Outcome(index=1, source=source, status="failed", message=message)),
        message=message, run_ms=12.4,
    )


def drawn(result: SampleResult) -> str:
    return log_entry_html(log_entry(run_id=RUN_ID, sample_id=SAMPLE_ID, result=result))


def test_hostile_text_is_escaped_and_kept_from_reordering_the_line():
    html = drawn(failed_result(source=HOSTILE, message=HOSTILE))
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    found = elements(html)
    assert [tag for tag, _, _ in found].count("script") == 0
    code = next(text for tag, attrs, text in found if tag == "code")
    assert code.startswith("<script>alert('x')</script>\u202e"), "shown as text"
    assert next(attrs for tag, attrs, _ in found if tag == "code") == {"dir": "ltr"}
    isolated = [text for tag, _, text in found if tag == "bdi"]
    assert isolated[0] == "HumanEval/3"
    # The message, with its bidi override, sits in its own <bdi>.
    assert isolated[1].startswith("<script>")
    assert "\u202e" in isolated[1]


def test_hostile_task_id_cannot_break_out_of_the_link():
    result = failed_result(source="x", message="m", task_id='"><img src=x onerror=alert(1)>')
    html = drawn(result)
    assert "<img" not in html
    assert [tag for tag, _, _ in elements(html)].count("img") == 0


def test_huge_lines_are_cut_to_the_template_lengths():
    huge = "y" * 1_000_000
    html = drawn(failed_result(source=huge, message=huge))
    found = elements(html)
    code = next(text for tag, _, text in found if tag == "code")
    message = [text for tag, _, text in found if tag == "bdi"][1]
    assert (len(code), code[-1]) == (120, "…")
    assert (len(message), message[-1]) == (160, "…")
    assert len(html) < 4000


def test_a_live_entry_draws_its_test_dots_and_a_snapshot_entry_does_not():
    result = failed_result(source="assert f(2) == 3", message="AssertionError")
    event = with_log_html(sample_finished_event(
        run_id=RUN_ID, sample_id=SAMPLE_ID, seq=5, result=result,
        progress={"done": 1, "total": 1, "by_status": {}, "cached": 0, "pass1": 0.0}))
    dots = [(attrs.get("class"), attrs.get("title")) for tag, attrs, _ in
            elements(event["entry"]["html"]) if "dot" in (attrs.get("class") or "").split()]
    assert dots == [("dot status-passed", "#0 passed: assert f(1) == 1"),
                    ("dot status-failed", "#1 failed: assert f(2) == 3 — AssertionError")]
    assert 'aria-label="1 of 2 tests passed"' in event["entry"]["html"]
    assert "tests-dots" not in drawn(result)


def test_the_page_and_the_events_draw_the_same_entry(unstarted_run, personas):
    run = unstarted_run("one template")
    sample = Sample.objects.filter(run=run).order_by("position").first()
    assert sample is not None
    result = failed_result(source="assert <b>", message="boom \u202e", task_id=sample.task_id)
    result = SampleResult(**{**result.__dict__, "completion_id": sample.index})
    finished = sample_record_result(run_id=run.pk, sample_id=sample.pk, result=result)
    assert finished is not None
    assert "html" not in finished["entry"], "the worker draws nothing; the page's socket does"

    page = client_for(personas.owner).get(f"/runs/{run.pk}/").content.decode()
    log = re.search(r'<ol id="log"[^>]*>(.*?)</ol>', page, re.S)
    assert log is not None
    snapshot = with_log_html(run_snapshot(run=run))
    assert snapshot["log"][-1]["sample_id"] == sample.pk
    assert snapshot["log"][-1]["html"].strip() in log.group(1), "the page draws it alike"
    caught_up = with_log_html((run_events_after(run=run, after=0, limit=100) or [])[-1])
    live = with_log_html(finished)
    # The live event and the one rebuilt for a reconnecting page are drawn alike.
    assert caught_up["entry"]["html"] == live["entry"]["html"]
    assert "&lt;b&gt;" in live["entry"]["html"]
    assert "tests-dots" in live["entry"]["html"]


def test_the_page_script_draws_no_log_entry_itself():
    script = (Path(settings.BASE_DIR) / "static" / "runs" / "run_live.js").read_text()
    assert "entry.html" in script
    assert "function logEntry" not in script
    assert not re.search(r"slice\(0, (120|160)\)", script), "no second set of lengths"
