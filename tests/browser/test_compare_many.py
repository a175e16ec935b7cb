"""Many runs compared in Chromium: three runs picked in the form, the heatmap drawn by
Plotly, the ranking with its ties, and a matrix cell that opens the two-run comparison."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import (
    RIGHT_2,
    LiveSite,
    _upload,
    _wait_finished,
    screenshot,
)
from tests.webapp.support import RIGHT_0, write_jsonl

pytestmark = pytest.mark.browser


def test_three_runs_get_a_heatmap_a_ranking_and_linked_cells(page: Any, site: LiveSite):
    gamma = _upload(site.stack, site.token, write_jsonl(site.work / "gamma-many.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0 + "    # gamma\n"},
        {"task_id": "HumanEval/1", "completion": "    return []\n"},
        {"task_id": "HumanEval/2", "completion": RIGHT_2 + "    # gamma\n"},
    ]), dataset="humaneval/python/en", name="gamma", model_name="gamma-1b",
       visibility="private")  # off the shared public leaderboard other tests read
    _wait_finished(site.stack, site.token, [gamma])
    chosen = [site.alpha, site.beta, gamma]

    page.goto("/compare/many/")
    page.select_option("#pick-runs", [str(pk) for pk in chosen])
    page.click("#many-form button[type=submit]")
    page.wait_for_url(re.compile(r"/compare/many/\?runs="))
    assert page.title().startswith("3 runs compared")
    # Plotly has drawn the heatmap: one cell per ordered pair, the diagonal left blank.
    page.wait_for_selector("#many-heatmap .main-svg")
    assert page.locator("#many-heatmap .shapelayer path").count() == 6
    ranks = page.locator("#ranking tbody tr")
    assert ranks.count() == 3
    assert sorted(int(pk) for pk in ranks.evaluate_all(
        "rows => rows.map(row => row.dataset.run)")) == sorted(chosen)
    assert set(page.locator("#ranking [data-rank]").all_inner_texts()) == {"1"}, (
        "three problems cannot separate anything")
    assert page.locator("#matrix a[data-cell]").count() == 6
    screenshot(page, "compare_many")

    permalink = page.url
    page.locator("#matrix a[data-cell]").first.click()
    page.wait_for_url(re.compile(r"/compare/\d+/\d+/$"))
    page.wait_for_selector("#contingency")
    page.goto(permalink)
    page.wait_for_selector("#many-heatmap .main-svg")
