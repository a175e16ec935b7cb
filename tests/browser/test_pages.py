"""The pages in Chromium: an upload watched live to 100 %, the pass@k chart, a failing
sample's diff, a comparison and its side-by-side, the Arabic docstring's direction, and a
leaderboard that sorts. Each test saves a screenshot of its page."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import pytest

from evaluator.records import HARNESS_VERSION
from tests.browser.conftest import LiveSite, screenshot
from tests.webapp.support import RIGHT_0, write_jsonl

pytestmark = pytest.mark.browser

# A correct HumanEval/0 that waits until the test opens a gate (a file: the programs run in
# the `none` sandbox), then sleeps in every call, so that its tests are reported one by one
# while the page watches, however long a busy machine takes to load the page.
SLOW_RIGHT_0 = (
    "    import os, time\n"
    "    while not os.path.exists({gate!r}):\n"
    "        time.sleep(0.05)\n"
    "    time.sleep(0.25)\n"
    "    for i, a in enumerate(numbers):\n"
    "        for j, b in enumerate(numbers):\n"
    "            if i != j and abs(a - b) < threshold:\n"
    "                return True\n"
    "    return False\n"
)
# Records which test dots appeared under "Running now" while samples were still running.
WATCH_RUNNING = """
document.addEventListener("DOMContentLoaded", () => {
  const running = document.getElementById("running");
  if (!running) return;
  window.__liveTests = 0;
  new MutationObserver(() => {
    const dots = running.querySelectorAll(".live-tests .dot").length;
    window.__liveTests = Math.max(window.__liveTests, dots);
  }).observe(running, { childList: true, subtree: true });
});
"""


def _texts(page: Any, selector: str) -> list[str]:
    return [text.strip() for text in page.locator(selector).all_inner_texts()]


def test_upload_then_watch_live_progress_reach_100_percent(page: Any, site: LiveSite):
    gate = site.work / "watching"
    samples = [{"task_id": "HumanEval/0",
                "completion": SLOW_RIGHT_0.format(gate=str(gate)) + f"    # {n}\n"}
               for n in range(3)]
    path = write_jsonl(site.work / "slow.jsonl", samples)
    page.context.add_init_script(WATCH_RUNNING)
    page.goto("/runs/new/")
    page.set_input_files("#id_file", str(path))
    option = page.locator("#id_dataset option", has_text="humaneval/python/en (")
    page.select_option("#id_dataset", option.get_attribute("value"))
    page.fill("#id_name", "watched live")
    page.select_option("#id_visibility", "team")
    page.click("text=Check the file")
    page.wait_for_selector("text=Ready to evaluate")
    page.click("text=Start the run")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    # A marker that a reload would wipe out.
    page.evaluate("window.__sameDocument = true")
    page.wait_for_function("document.getElementById('live-state').textContent.includes('live')")
    gate.touch()  # the page watches: let the programs go on
    page.wait_for_selector(".live-tests .dot", timeout=60_000)
    screenshot(page, "run_live", full_page=False)
    # While it runs, the summary says so (never "not started") and the pass@1 is a
    # running one.
    assert page.locator("#duration").inner_text().startswith("running")
    assert page.locator("#pass1-label").inner_text() == "running pass@1"
    page.wait_for_function(
        "document.getElementById('progress-text').textContent.trim() === '3 / 3'",
        timeout=60_000)
    page.wait_for_function("document.getElementById('run-status').textContent === 'Finished'")
    assert page.evaluate("window.__sameDocument") is True, "the page was never reloaded"
    assert page.locator("#progress-bar").evaluate("bar => bar.value === bar.max")
    assert page.evaluate("window.__liveTests") >= 1, "a running sample's tests were shown"
    assert page.locator("#log .log-entry").count() == 3
    assert _texts(page, '#counts [data-status="passed"]') == ["3"]
    assert page.locator("#pass1-label").inner_text() == "pass@1"
    page.reload()
    assert page.locator("#pass1-label").inner_text() == "pass@1"
    assert page.locator("#duration").inner_text().endswith(" s")


def test_pass_at_k_chart_is_drawn(page: Any, site: LiveSite):
    page.goto(f"/runs/{site.alpha}/?overlay={site.beta}")
    page.wait_for_selector("#pass-at-k-chart .main-svg")
    traces = page.locator("#pass-at-k-chart .scatterlayer .trace")
    assert traces.count() >= 2, "the run and its overlay (each with its band)"
    assert page.locator("#pass-at-k-chart .xtick").count() >= 2
    legend = page.locator("#pass-at-k-chart .legendtext").all_text_contents()  # SVG text
    assert legend == [f"alpha (#{site.alpha})", f"alpha (#{site.alpha}) · pass^k",
                      f"beta (#{site.beta})", f"beta (#{site.beta}) · pass^k"]
    assert page.locator("#failure-chart .bars .point").count() >= 1
    screenshot(page, "run_page")


def test_failure_bar_leads_to_a_failing_sample_and_its_diff(page: Any, site: LiveSite):
    page.goto(f"/runs/{site.beta}/")
    page.click("#failure-links a:has-text('failed')")
    page.wait_for_url(re.compile(r"/samples/\?status=failed"))
    screenshot(page, "sample_list")
    page.locator("#sample-table tbody a").first.click()
    page.wait_for_selector(".char-diff")
    expected = page.locator(".char-diff .expected del").first
    actual = page.locator(".char-diff .actual ins").first
    assert expected.inner_text() == "Tru"
    assert actual.inner_text() == "Fals"
    assert page.locator("#sample-status").inner_text() == "failed"
    assert page.locator("#provenance").inner_text().count(HARNESS_VERSION) >= 1
    screenshot(page, "sample_failure")


def test_compare_two_runs_and_open_a_side_by_side(page: Any, site: LiveSite):
    page.goto("/compare/")
    page.select_option("#pick-a", str(site.alpha))
    page.select_option("#pick-b", str(site.beta))
    page.click("#pair-form button[type=submit]")
    page.wait_for_url(f"**/compare/{site.alpha}/{site.beta}/")
    page.wait_for_selector("#compare-chart .main-svg")
    cells = {cell: page.locator(f'[data-cell="{cell}"]').inner_text()
             for cell in ("both", "only_a", "only_b", "neither")}
    assert cells == {"both": "1", "only_a": "1", "only_b": "0", "neither": "1"}
    screenshot(page, "compare")
    page.click('[data-cell="only_a"]')
    page.wait_for_url(re.compile(r"cell=only_a"))
    assert page.locator("#pair-rows tbody tr").count() == 1
    page.click("#pair-rows .side-by-side-link")
    page.wait_for_selector("#panes")
    assert page.locator("#panes .pane").count() == 2
    # B's `return False` is all that is left of A's loop: A's side is marked as removed.
    assert page.locator("#panes mark.diff-del").count() > 0
    every = page.locator("#tests-pair tbody tr").count()
    page.check("#only-differing")
    page.check("input[name=canonical]")
    page.click("#side-options button[type=submit]")
    page.wait_for_url(re.compile(r"tests=differ"))
    differing = page.locator("#tests-pair tbody tr").count()
    assert 0 < differing < every
    assert page.locator("#panes .pane.canonical").count() == 1
    screenshot(page, "side_by_side")


def test_arabic_docstring_runs_right_to_left_with_code_left_to_right(page: Any, site: LiveSite):
    page.goto("/problems/0/")
    arabic = page.locator("#doc-ar .docstring").first
    assert arabic.evaluate("node => getComputedStyle(node).direction") == "rtl"
    assert arabic.get_attribute("lang") == "ar"
    example = page.locator("#doc-ar pre.doc-example").first
    assert example.evaluate("node => getComputedStyle(node).direction") == "ltr"
    english = page.locator("#doc-en .docstring").first
    assert english.evaluate("node => getComputedStyle(node).direction") == "ltr"
    # The verdict grid: alpha passes in English and fails in Arabic.
    row = page.locator("#verdict-grid tr", has_text="alpha-7b")
    assert row.locator("td.verdict-pass").count() == 1
    assert row.locator("td.verdict-fail").count() == 1
    # Language tabs work from the keyboard.
    page.focus("#tab-python")
    page.keyboard.press("ArrowRight")
    assert page.locator("#tab-go").get_attribute("aria-selected") == "true"
    assert page.locator("#lang-go").is_visible()
    assert not page.locator("#lang-python").is_visible()
    page.keyboard.press("ArrowLeft")
    screenshot(page, "problem")


def test_leaderboard_sorts(page: Any, site: LiveSite):
    page.goto("/leaderboard/")
    column = page.locator('a[data-sort="humaneval/python/en:1"]')
    best_first = _texts(page, "#leaderboard tbody th.model")
    assert best_first[0] == "alpha-7b"
    assert page.locator("#leaderboard td.leader").count() >= 1
    screenshot(page, "leaderboard")
    column.click()
    page.wait_for_url(re.compile(r"order=asc"))
    assert _texts(page, "#leaderboard tbody th.model") == list(reversed(best_first))
    page.click("#leaderboard thead a:text-is('Model')")
    page.wait_for_url(re.compile(r"sort=model"))
    names = _texts(page, "#leaderboard tbody th.model")
    assert names == sorted(names)


def test_problem_list_filters_by_translation(page: Any, site: LiveSite):
    page.goto("/problems/")
    assert "HumanEval/3" in _texts(page, "#problem-list tbody td:first-child a")
    page.select_option("select[name=nl]", "ar")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_url(re.compile(r"nl=ar"))
    tasks = _texts(page, "#problem-list tbody td:first-child a")
    # The site's Arabic fixtures hold HumanEval/0-2; other modules of this session may add
    # Arabic variants of their own (the defect-score test adds /79), never of /3.
    assert {"HumanEval/0", "HumanEval/1", "HumanEval/2"} <= set(tasks)
    assert "HumanEval/3" not in tasks
    assert tasks == sorted(tasks, key=lambda task: int(task.rpartition("/")[2]))
    screenshot(page, "problem_list")


def _staged_runs(site: LiveSite) -> list[tuple[int, int]]:
    """(run, samples stored) of each staged run, read from the site's database."""
    with sqlite3.connect(site.work / "var" / "db.sqlite3") as db:
        return db.execute("SELECT r.id, (SELECT count(*) FROM runs_sample s WHERE s.run_id = r.id)"
                          " FROM runs_run r WHERE r.status = 'staged'").fetchall()


def test_cancel_on_the_confirm_page_deletes_the_staged_upload_at_once(page: Any,
                                                                      site: LiveSite):
    """A flagged upload (Python against Go): its confirm form requires a tick, which
    Cancel does not."""
    path = write_jsonl(site.work / "cancelled.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0},
        {"task_id": "HumanEval/2", "completion": "    if number:\n        return 0.0\n"},
    ])
    page.goto("/runs/new/")
    page.set_input_files("#id_file", str(path))
    option = page.locator("#id_dataset option", has_text="humaneval-x/go/en (")
    page.select_option("#id_dataset", option.get_attribute("value"))
    page.fill("#id_name", "never started")
    page.click("text=Check the file")
    # Every other language's parser is asked: slow on a busy machine.
    page.wait_for_selector("text=These generations look like Python", timeout=90_000)
    assert [count for _, count in _staged_runs(site)] == [2], "held as a staged run"
    page.click("#cancel-upload")
    page.wait_for_url(re.compile(r"/runs/new/$"))
    assert "The upload was cancelled; nothing of it was kept." in page.content()
    assert _staged_runs(site) == []
    assert not [p for p in (site.work / "var" / "uploads").rglob("*") if p.is_file()]
