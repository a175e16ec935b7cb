"""The live run page through faults, in Chromium, on the embedded stack that `make run`
starts: the web server is killed and started again, then the worker is; the page says
"reconnecting…" while it is, catches up by itself, says the run is resuming, and ends with
every sample in its log once, without a reload."""

from __future__ import annotations

import os
import signal
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
from tests.webapp.support import write_jsonl

pytestmark = pytest.mark.browser

SAMPLES = 16
# Every sample after the first two waits for a gate (a file: the programs run in the
# `none` sandbox) that the test opens once both faults have happened, so that they land
# mid-run however long a busy machine takes to restart the web server. Each sample is
# distinct, so none is deduplicated.
GATED = ("    import os, time\n"
         "    while {n} >= 2 and not os.path.exists({gate!r}):\n"
         "        time.sleep(0.05)\n"
         "    time.sleep(0.2)\n    _sample = {n}\n"
         "    return number % 1.0\n")


@pytest.fixture(scope="module")
def stack(chromium: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SignedUpStack]:
    with embedded_stack(
        tmp_path_factory.mktemp("live-recovery"),
        # One chunk, so the two samples that do not wait run first: chunks queued within
        # one millisecond reach the worker in random order (kombu's filesystem broker names
        # a message by the millisecond and a random uuid), and a chunk of gated samples
        # taken first would hold the one worker process before the page saw any sample.
        WORKBENCH_CHUNK_SAMPLES=str(SAMPLES),
        # A short lease and sweep, so that the worker's loss is noticed within the test.
        WORKBENCH_LEASE_SECONDS="6", WORKBENCH_SWEEP_SECONDS="1",
        # Room for a gated sample to wait through both faults (the wall-clock backstop is
        # 3 x this + 5 s).
        EVALUATOR_TIMEOUT_SECONDS="30",
    ) as stack:
        yield stack


@pytest.fixture
def live_page(browser: Any, stack: SignedUpStack) -> Iterator[Any]:
    with signed_in_page(browser, stack.url, timeout_ms=60_000) as page:
        yield page


def _log_count(page: Any) -> int:
    return int(page.locator("#log .log-entry").count())


def test_the_live_page_rides_out_a_web_restart_and_a_lost_worker(live_page: Any,
                                                                  stack: SignedUpStack):
    page = live_page
    gate = stack.work / "faults-done"
    samples = [{"task_id": "HumanEval/2", "completion": GATED.format(n=n, gate=str(gate))}
               for n in range(SAMPLES)]
    path = write_jsonl(stack.work / "slow.jsonl", samples)
    status, created = api(stack.url, stack.token, "/api/runs", file=path,
                          fields={"dataset": "humaneval/python/en", "name": "faults"})
    assert status == 201, created
    page.goto(f"/runs/{created['id']}/")
    page.evaluate("window.__sameDocument = true")
    page.wait_for_function("document.getElementById('live-state').textContent.includes('live')")
    page.wait_for_function("document.querySelectorAll('#log .log-entry').length >= 2")

    # The web server dies: the page says so, and says nothing else until it is back.
    kill_web_server(stack, page)
    stack.start_web()
    stack.wait_ready(timeout=120)
    page.wait_for_function("document.getElementById('live-state').textContent.includes('live')"
                           " && !document.getElementById('live-state').textContent"
                           ".includes('reconnecting')")

    # The worker dies mid-run (with its pool, as a lost machine); a new one is started.
    before = _log_count(page)
    worker = stack.processes["worker"]
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    stack.start_worker()
    notice = page.locator("#recovery-notice")
    notice.wait_for(state="visible")
    assert "taken back" in notice.inner_text()
    screenshot(page, "run_recovering", full_page=False)
    gate.touch()  # both faults are behind us: let the gated samples finish

    page.wait_for_function(
        f"document.getElementById('progress-text').textContent.trim() === '{SAMPLES} / {SAMPLES}'")
    page.wait_for_function("document.getElementById('run-status').textContent === 'Finished'")
    assert page.evaluate("window.__sameDocument") is True, "caught up without a reload"
    ids = page.locator("#log .log-entry").evaluate_all(
        "items => items.map(item => item.dataset.sample)")
    assert len(ids) == len(set(ids)) == SAMPLES, "every sample once"
    assert before < SAMPLES, "the worker was lost mid-run"
    assert page.locator('#counts [data-status="passed"]').inner_text().strip() == str(SAMPLES)
