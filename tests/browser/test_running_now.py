""""Running now" on the live run page holds no ghost rows: while a real run goes on (the
embedded stack, a worker running two programs at once), the page's websocket is routed
through Playwright, which delivers half the samples' `sample_started` and `test_reported`
after their `sample_finished`, and every `sample_finished` twice. The list never shows a
sample that has finished, never more rows than programs run at once, and every sample is
logged once."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import SignedUpStack, embedded_stack, signed_in_page
from tests.webapp.services.live_stack import api, frame_events
from tests.webapp.support import RIGHT_0, WRONG_0, write_jsonl

pytestmark = pytest.mark.browser

PROGRAMS_AT_ONCE = 2
SAMPLES = 16
# Each waits for the gate (a file; the programs run in the `none` sandbox), so that the
# page is watching before the first starts, then runs a little while, so rows are seen.
GATED = ("    import os, time\n"
         "    while not os.path.exists({gate!r}):\n"
         "        time.sleep(0.05)\n"
         "    time.sleep(0.3)\n"
         "    _sample = {n}\n")

# Installed before the page's scripts: after every change to the page, the rows of
# "Running now" whose sample is already in the log (ghosts), and the most rows at once.
WATCH_RUNNING = """
window.__running = { ghosts: [], most: 0, seen: new Set() };
document.addEventListener("DOMContentLoaded", () => {
  const look = () => {
    const rows = [...document.querySelectorAll("#running li")];
    const logged = new Set([...document.querySelectorAll("#log [data-sample]")]
      .map((node) => "running-" + node.dataset.sample));
    window.__running.most = Math.max(window.__running.most, rows.length);
    for (const row of rows) {
      window.__running.seen.add(row.id);
      if (logged.has(row.id)) window.__running.ghosts.push(row.id);
    }
  };
  new MutationObserver(look).observe(document.body, { childList: true, subtree: true });
});
"""

# Every text the live state line shows, in order; watched from the document's start, since
# the socket opens (and may close) before DOMContentLoaded.
WATCH_LIVE_STATE = """
window.__liveStates = [];
new MutationObserver(() => {
  const line = document.getElementById("live-state");
  const shown = line ? line.textContent.trim() : "";
  const states = window.__liveStates;
  if (shown && states[states.length - 1] !== shown) states.push(shown);
}).observe(document, { childList: true, characterData: true, subtree: true });
"""


@pytest.fixture(scope="module")
def stack(chromium: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SignedUpStack]:
    with embedded_stack(tmp_path_factory.mktemp("running-now"),
                        EVALUATOR_WORKERS=str(PROGRAMS_AT_ONCE), WORKBENCH_CHUNK_SAMPLES="4",
                        EVALUATOR_TIMEOUT_SECONDS="40") as stack:
        yield stack


class OutOfOrder:
    """Routes a run page's websocket: for every second sample, its `sample_started` and
    `test_reported` are held back and delivered right after its `sample_finished`; every
    `sample_finished` is delivered twice."""

    def __init__(self) -> None:
        self.held: dict[int, list[str]] = {}
        self.late = 0
        self.doubled = 0

    def __call__(self, page_side: Any) -> None:
        server = page_side.connect_to_server()

        def from_server(frame: str | bytes) -> None:
            # A frame of several events (`"type": "events"`) is taken apart, each sent alone.
            for event in frame_events(frame):
                one_event(event, json.dumps(event))

        def one_event(event: dict[str, Any], message: str) -> None:
            kind = event["type"]
            if kind in ("sample_started", "test_reported") and event["sample_id"] % 2 == 0:
                self.held.setdefault(event["sample_id"], []).append(str(message))
                return
            page_side.send(message)
            if kind == "sample_finished":
                page_side.send(message)
                self.doubled += 1
                for late in self.held.pop(event["entry"]["sample_id"], []):
                    page_side.send(late)
                    self.late += 1

        server.on_message(from_server)


def test_running_now_has_no_ghost_rows_when_events_come_out_of_order(
        browser: Any, stack: SignedUpStack) -> None:
    gate = stack.work / "gate"
    answers = [RIGHT_0, WRONG_0]
    samples = [{"task_id": "HumanEval/0",
                "completion": GATED.format(gate=str(gate), n=n) + answers[n % 2]}
               for n in range(SAMPLES)]
    status, created = api(stack.url, stack.token, "/api/runs",
                          file=write_jsonl(stack.work / "gated.jsonl", samples),
                          fields={"dataset": "humaneval/python/en", "name": "running now"})
    assert status == 201, created

    routed = OutOfOrder()
    with signed_in_page(browser, stack.url, timeout_ms=120_000) as page:
        page.add_init_script(WATCH_RUNNING)
        page.route_web_socket(re.compile(r"/ws/runs/"), routed)
        page.goto(f"/runs/{created['id']}/")
        page.wait_for_function(
            "document.getElementById('live-state').textContent.includes('live')")
        gate.touch()

        # Mid-run: some sample is running and shown, never more than run at once.
        page.wait_for_function("document.querySelectorAll('#running li').length > 0")
        page.wait_for_function("document.getElementById('run-status').textContent === 'Finished'")

        watched = page.evaluate("({ghosts: window.__running.ghosts, most: window.__running.most,"
                                " seen: window.__running.seen.size})")
        assert routed.late > 0, "the route delivered events late"
        assert routed.doubled >= SAMPLES, "and every sample_finished twice"
        assert watched["ghosts"] == [], "a finished sample was shown as running"
        assert 1 <= watched["most"] <= PROGRAMS_AT_ONCE, watched
        # The first programs (one a lane) started, and said so, before the page was
        # watching, and their tests were not streamed to nobody: the page first hears of
        # them when they finish. Of the others, every one delivered in order was shown.
        assert watched["seen"] >= SAMPLES // 2 - PROGRAMS_AT_ONCE // 2, \
            "the samples delivered in order were shown"
        assert page.locator("#running li").count() == 0
        ids = page.locator("#log .log-entry").evaluate_all(
            "items => items.map(item => item.dataset.sample)")
        assert len(ids) == len(set(ids)) == SAMPLES, "every sample logged once"


def test_the_page_says_try_again_and_reconnects_when_the_server_asks(
        browser: Any, stack: SignedUpStack) -> None:
    """The server closes with 1013 ("try again later") while its channel layer is away
    (tests/webapp/services/test_live_layer_down.py): here the route closes the page's
    first socket so, and the page says so, then connects again by itself."""
    gate = stack.work / "gate-never"  # the run stays active while the page is looked at
    status, created = api(stack.url, stack.token, "/api/runs", file=write_jsonl(
        stack.work / "held.jsonl",
        [{"task_id": "HumanEval/0", "completion": GATED.format(gate=str(gate), n=99) + RIGHT_0}]),
        fields={"dataset": "humaneval/python/en", "name": "try again"})
    assert status == 201, created
    sockets: list[Any] = []

    def route(page_side: Any) -> None:
        sockets.append(page_side)
        if len(sockets) == 1:
            page_side.close(code=1013, reason="try again later")
        else:
            page_side.connect_to_server()

    with signed_in_page(browser, stack.url, timeout_ms=60_000) as page:
        page.add_init_script(WATCH_LIVE_STATE)
        page.route_web_socket(re.compile(r"/ws/runs/"), route)
        page.goto(f"/runs/{created['id']}/")
        page.wait_for_function(
            "document.getElementById('live-state').textContent.trim() === '· live'")
        said = page.evaluate("window.__liveStates")
        assert len(sockets) >= 2
        told = [text for text in said if "trying again" in text]
        assert told, said
        assert "reconnecting" in told[0]
        assert said.index(told[0]) < said.index("· live"), "said before it was live again"
