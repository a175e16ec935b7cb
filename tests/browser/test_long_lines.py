"""Code panes at a narrow window: a long line scrolls inside its pane; the page itself
never gets wider than the window, so nothing is clipped out of reach."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import LiveSite, _upload, _wait_finished, screenshot
from tests.webapp.support import write_jsonl

pytestmark = pytest.mark.browser

LONG = ("    limit = threshold  # " + "a comment that goes on and on " * 12 + "\n"
        "    return any(abs(a - b) < limit for i, a in enumerate(numbers)"
        " for j, b in enumerate(numbers) if i != j)\n")

OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const panes = [...document.querySelectorAll("pre.code")].map((pre) => {
    const box = pre.getBoundingClientRect();
    return {right: box.right, scrolls: pre.scrollWidth > pre.clientWidth,
            overflow: getComputedStyle(pre).overflowX};
  });
  return {width, page: document.documentElement.scrollWidth, panes};
}"""


def _fits(page: Any, name: str) -> None:
    seen = page.evaluate(OVERFLOW)
    screenshot(page, name)
    assert seen["page"] <= seen["width"], seen
    assert seen["panes"], "the page shows code"
    for pane in seen["panes"]:
        assert pane["right"] <= seen["width"] + 1, seen


def test_a_long_line_scrolls_inside_its_pane_at_800_px(page: Any, site: LiveSite):
    path = write_jsonl(site.work / "long-line.jsonl",
                       [{"task_id": "HumanEval/0", "completion": LONG}])
    run = _upload(site.stack, site.token, path, dataset="humaneval/python/en",
                  name="long line", model_name="long-7b",
                  visibility="private")  # off the shared public leaderboard
    _wait_finished(site.stack, site.token, [run])
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(f"/compare/{site.alpha}/{run}/problems/0/?canonical=1")
    page.wait_for_selector("#panes")
    _fits(page, "side_by_side_long_line_800px")
    page.goto("/problems/0/")
    page.wait_for_selector("pre.code")
    _fits(page, "problem_800px")
    page.goto(f"/runs/{run}/samples/")
    page.locator("#sample-table tbody a").first.click()
    page.wait_for_selector("pre.code#executed")
    _fits(page, "sample_long_line_800px")
    long_pane = page.evaluate("() => { const p = document.getElementById('executed');"
                              " return [p.scrollWidth > p.clientWidth,"
                              " getComputedStyle(p).overflowX]; }")
    assert long_pane == [True, "auto"], long_pane
