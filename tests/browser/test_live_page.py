"""The live run page in Chromium, on the embedded stack that `make run` starts: the
websocket opens before Plotly's (partial) bundle is fetched; the per-problem table, the
pass@k curve and the failure bars follow the samples as they finish; the Sandbox line fills
in when the worker has chosen; Duration counts while the run runs; and when the web server
dies mid-run (the socket really drops), the page reconnects by itself and catches up every
sample it missed, in the table and the curve as in the log, without a reload."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import (
    SignedUpStack,
    embedded_stack,
    kill_web_server,
    screenshot,
    signed_in_page,
)
from tests.webapp.services.live_stack import api
from tests.webapp.support import RIGHT_0, WRONG_0, write_jsonl

pytestmark = pytest.mark.browser

# Each sample waits for its gate (a file: the programs run in the `none` sandbox), then
# leaves a file saying it ran. Each is distinct, so none is deduplicated or cached.
GATED = ("    import os, time\n"
         "    while not os.path.exists({gate!r}):\n"
         "        time.sleep(0.05)\n"
         "    open({ran!r}, 'w').close()\n"
         "    _sample = {n}\n")
RIGHT_2 = "    return number % 1.0\n"
WRONG_2 = "    return number\n"
# HumanEval/0: 2 of 4 pass; HumanEval/2: 3 of 4 pass. The first sample opens on its own gate.
ANSWERS = [("HumanEval/0", RIGHT_0), ("HumanEval/0", WRONG_0), ("HumanEval/0", RIGHT_0),
           ("HumanEval/0", WRONG_0), ("HumanEval/2", RIGHT_2), ("HumanEval/2", WRONG_2),
           ("HumanEval/2", RIGHT_2), ("HumanEval/2", RIGHT_2)]


@pytest.fixture(scope="module")
def stack(chromium: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SignedUpStack]:
    with embedded_stack(
        # One chunk per run, so the samples run in the order the tests open their gates.
        # Chunks queued within one millisecond reach the worker in random order (kombu's
        # filesystem broker names a message by the millisecond and a random uuid); with one
        # worker process, a chunk of samples waiting for a later gate, taken first, would
        # hold it while the test waits for a sample of another chunk.
        tmp_path_factory.mktemp("live-page"), WORKBENCH_CHUNK_SAMPLES="16",
        # Room for a gated sample to wait while the test looks (the wall-clock backstop is
        # 3 x this + 5 s).
        EVALUATOR_TIMEOUT_SECONDS="40",
    ) as stack:
        yield stack


def _text(page: Any, selector: str) -> str:
    return str(page.locator(selector).inner_text()).strip()


def _row(page: Any, task_id: str) -> dict[str, str]:
    cells = page.locator(f'#problem-table tr[data-task="{task_id}"] [data-cell]')
    return dict(zip(cells.evaluate_all("cells => cells.map(c => c.dataset.cell)"),
                    [text.strip() for text in cells.all_inner_texts()], strict=True))


def _cell(task_id: str, cell: str) -> str:
    row = f'#problem-table tr[data-task="{task_id}"]'
    return f"document.querySelector('{row} [data-cell={cell}]')"


def _curve(page: Any) -> list[float]:
    """The y values of the pass@k chart's line, as Plotly holds them."""
    values = page.evaluate("""() => {
        const node = document.getElementById('pass-at-k-chart');
        const line = node && node.data && node.data.find((trace) => trace.mode !== 'lines');
        return line ? Array.from(line.y) : [];
    }""")
    return [round(float(value), 4) for value in values]


def _wait_until(predicate: Any, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_the_table_curve_and_summary_follow_the_run_through_a_dropped_socket(
        browser: Any, stack: SignedUpStack):
    work: Path = stack.work
    first, rest = work / "gate-first", work / "gate-rest"
    samples = [{"task_id": task_id,
                "completion": GATED.format(gate=str(first if n == 0 else rest),
                                           ran=str(work / f"ran-{n}"), n=n) + answer}
               for n, (task_id, answer) in enumerate(ANSWERS)]
    path = write_jsonl(work / "gated.jsonl", samples)
    status, created = api(stack.url, stack.token, "/api/runs", file=path,
                          fields={"dataset": "humaneval/python/en", "name": "live table"})
    assert status == 201, created

    with signed_in_page(browser, stack.url, timeout_ms=60_000) as page:
        order: list[str] = []
        page.on("websocket", lambda socket: order.append("websocket"))
        page.on("request", lambda request: order.append(request.url.rsplit("/", 1)[-1])
                if "/vendor/plotly/" in request.url else None)
        page.goto(f"/runs/{created['id']}/")
        page.evaluate("window.__sameDocument = true")
        page.wait_for_function("document.getElementById('live-state').textContent.includes('live')")

        # Nothing has finished: the Sandbox line does not guess, the table has its rows.
        assert "not known yet" in _text(page, "#summary-sandbox")
        assert _row(page, "HumanEval/0")["n"] == "0"
        assert _row(page, "HumanEval/2")["pass1"] == "—"
        assert _text(page, "#pass1-label") == "running pass@1"

        # Running: Duration counts on by itself.
        duration = "document.getElementById('duration').textContent"
        page.wait_for_function(f"{duration}.startsWith('running for')")
        shown = _text(page, "#duration")
        page.wait_for_function(f"{duration} !== {shown!r}")

        # The first sample finishes: the line names the sandbox the worker chose, the
        # table's row and the curve take it in, live.
        first.touch()
        page.wait_for_function(f"{_cell('HumanEval/0', 'n')}.textContent === '1'")
        sandbox = _text(page, "#summary-sandbox")
        assert "not known yet" not in sandbox
        assert page.locator("#summary-sandbox strong").inner_text() == "none"
        assert _row(page, "HumanEval/0") | {"failure": ""} == {
            "n": "1", "c": "1", "pass1": "1.000", "passk": "—", "failure": ""}
        page.wait_for_function("document.getElementById('pass-at-k-chart').data !== undefined")
        assert _curve(page) == [1.0]

        # Plotly's partial bundle, and only after the websocket.
        assert "websocket" in order
        bundles = [name for name in order if name != "websocket"]
        assert bundles, order
        assert all(name.startswith("plotly-basic.min.") for name in bundles), order
        assert order.index("websocket") < order.index(bundles[0]), order

        # The web server dies: the socket drops. Every other sample finishes meanwhile.
        kill_web_server(stack, page)
        rest.touch()
        _wait_until(lambda: all((work / f"ran-{n}").exists() for n in range(len(ANSWERS))),
                    timeout=120, what="every sample to run")
        stack.start_web()
        stack.wait_ready(timeout=120)

        # Back: the page catches up the samples it missed, in every part of it.
        total = len(ANSWERS)
        page.wait_for_function(
            f"document.getElementById('progress-text').textContent.trim() === '{total} / {total}'")
        page.wait_for_function("document.getElementById('run-status').textContent === 'Finished'")
        page.wait_for_function(f"{_cell('HumanEval/2', 'n')}.textContent === '4'")
        assert page.evaluate("window.__sameDocument") is True, "caught up without a reload"
        zero, two = _row(page, "HumanEval/0"), _row(page, "HumanEval/2")
        assert (zero["n"], zero["c"], zero["pass1"], zero["passk"]) == ("4", "2", "0.500", "1.000")
        assert (two["n"], two["c"], two["pass1"], two["passk"]) == ("4", "3", "0.750", "1.000")
        assert two["failure"], "the failure of HumanEval/2's wrong sample is shown"
        # pass@k so far, the mean over both problems: k=1: (2/4 + 3/4) / 2; k=2:
        # (1 - C(2,2)/C(4,2) + 1) / 2; k=3 and 4: every problem has fewer failures than k.
        page.wait_for_function("document.getElementById('pass-at-k-chart').data[0].y.length === 4")
        assert _curve(page) == [0.625, round((1 - 1 / 6 + 1) / 2, 4), 1.0, 1.0]
        assert not page.locator("#failures-section").is_hidden()
        assert "failed" in _text(page, "#failure-links")
        ids = page.locator("#log .log-entry").evaluate_all(
            "items => items.map(item => item.dataset.sample)")
        assert len(ids) == len(set(ids)) == total, "every sample once"
        assert _text(page, "#pass1-label") == "pass@1"
        assert not _text(page, "#duration").startswith("running")
        screenshot(page, "run_live_caught_up")

        # The finished page as the server draws it agrees.
        page.reload()
        assert _text(page, "#pass1-label") == "pass@1"
        assert _text(page, "#duration").endswith(" s")
        assert page.locator("#summary-sandbox strong").inner_text() == "none"
        assert (_row(page, "HumanEval/0")["n"], _row(page, "HumanEval/2")["c"]) == ("4", "3")
        page.wait_for_function("document.getElementById('pass-at-k-chart').data !== undefined")


def test_the_status_filter_shows_the_rows_that_come_to_match_live(browser: Any,
                                                                   stack: SignedUpStack):
    work: Path = stack.work
    first, rest = work / "filter-first", work / "filter-rest"
    answers = [("HumanEval/0", RIGHT_0), ("HumanEval/0", WRONG_0), ("HumanEval/2", RIGHT_2)]
    samples = [{"task_id": task_id,
                "completion": GATED.format(gate=str(first if n == 0 else rest),
                                           ran=str(work / f"filter-ran-{n}"), n=n) + answer}
               for n, (task_id, answer) in enumerate(answers)]
    path = write_jsonl(work / "filtered.jsonl", samples)
    status, created = api(stack.url, stack.token, "/api/runs", file=path,
                          fields={"dataset": "humaneval/python/en", "name": "live filter"})
    assert status == 201, created
    zero, two = ('#problem-table tr[data-task="HumanEval/0"]',
                 '#problem-table tr[data-task="HumanEval/2"]')

    with signed_in_page(browser, stack.url, timeout_ms=60_000) as page:
        page.goto(f"/runs/{created['id']}/?status=failed")
        page.wait_for_function("document.getElementById('live-state').textContent.includes('live')")
        # Nothing failed yet: both rows are there, hidden, and the table says so.
        assert page.locator(zero).is_hidden()
        assert page.locator(two).is_hidden()
        assert page.locator("#problems-none").is_visible()
        assert _text(page, "#problems-title .hint") == "(0 of 2)"

        # A passing sample of HumanEval/0 counts in its row, which stays hidden.
        first.touch()
        page.wait_for_function(f"{_cell('HumanEval/0', 'n')}.textContent === '1'")
        assert page.locator(zero).is_hidden()

        # Its failing sample arrives: the row shows; HumanEval/2, which only passes, does not.
        rest.touch()
        page.wait_for_function("document.getElementById('run-status').textContent === 'Finished'")
        page.wait_for_function(f"{_cell('HumanEval/2', 'n')}.textContent === '1'")
        page.wait_for_function(f"!document.querySelector('{zero}').hidden")
        assert _row(page, "HumanEval/0")["n"] == "2"
        assert page.locator(two).is_hidden()
        assert page.locator("#problems-none").is_hidden()
        assert _text(page, "#problems-title .hint") == "(1 of 2)"
        assert page.url.endswith("?status=failed"), "the filter stays in the URL"
        screenshot(page, "run_live_status_filter")
