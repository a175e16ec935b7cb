"""A model suite in Chromium: made on its page, two files uploaded at once with the variant
of each detected (the content fits several, so the name decides), the grid coloured by
pass rate, sorted by disagreement, and a cell that opens that run's samples of that
problem."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import RIGHT_2, LiveSite, _wait_finished, screenshot
from tests.webapp.support import RIGHT_0, WRONG_0, write_jsonl

pytestmark = pytest.mark.browser


def _background(page: Any, selector: str) -> str:
    return page.locator(selector).evaluate("cell => getComputedStyle(cell).backgroundColor")


def test_suite_grid_upload_colours_sort_and_cell_links(page: Any, site: LiveSite):
    # English solves HumanEval/0 and /2; Arabic fails /0: /0 disagrees fully, /2 not at all.
    english = write_jsonl(site.work / "suite-humaneval-python-en.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0 + "    # suite en\n"},
        {"task_id": "HumanEval/2", "completion": RIGHT_2 + "    # suite en\n"},
    ])
    arabic = write_jsonl(site.work / "suite-mhumaneval-python-ar-expert.jsonl", [
        {"task_id": "HumanEval/0", "completion": WRONG_0 + "    # suite ar\n"},
        {"task_id": "HumanEval/2", "completion": RIGHT_2 + "    # suite ar\n"},
    ])

    page.goto("/suites/new/")
    page.fill("#id_model_name", "suite-model-1b")
    page.fill("#id_revision", "r7")
    page.fill("#id_decoding", '{"temperature": 0.2}')
    page.select_option("#id_visibility", "private")  # off the shared pages other tests read
    page.click("#suite-form button[type=submit]")
    page.wait_for_url(re.compile(r"/suites/\d+/runs/$"))
    assert page.locator("#all-or-nothing").is_visible()

    page.set_input_files("#suite-files", [str(english), str(arabic)])
    page.wait_for_selector("#dataset-1")
    chosen = page.locator("#file-rows select").evaluate_all(
        "selects => selects.map(s => s.options[s.selectedIndex].text.split(' ')[0])")
    assert chosen == ["humaneval/python/en", "mhumaneval/python/ar/expert"]
    page.click("#upload-submit")
    page.wait_for_url(re.compile(r"/suites/\d+/$"))
    suite_url = page.url
    run_ids = [int(pk) for pk in page.locator("#variant-scores tbody tr").evaluate_all(
        "rows => rows.map(row => row.dataset.run)")]
    assert len(run_ids) == 2
    _wait_finished(site.stack, site.token, run_ids)

    page.goto(suite_url)
    page.wait_for_selector("#suite-grid td.cell a")
    assert page.locator("#unfinished").count() == 0
    rows = page.locator("#suite-grid tbody tr")
    assert rows.evaluate_all("rows => rows.map(row => row.dataset.task)") == [
        "HumanEval/0", "HumanEval/2"], "most disagreement first by default"
    assert page.locator("#suite-grid thead th.group.outer").all_inner_texts() == [
        "English", "Arabic"]
    # Coloured: a passing cell and a failing cell get different, non-transparent colours.
    passing = '#suite-grid tr[data-task="HumanEval/0"] td.cell[data-rate="1.0"]'
    failing = '#suite-grid tr[data-task="HumanEval/0"] td.cell[data-rate="0.0"]'
    assert _background(page, passing) not in ("", "rgba(0, 0, 0, 0)")
    assert _background(page, passing) != _background(page, failing)
    assert page.locator("#legend .swatch").count() >= 5
    screenshot(page, "suite_grid")

    page.click("#sort-disagreement")  # already sorted by it: flips to least first
    page.wait_for_url(re.compile(r"sort=disagreement&order=asc"))
    assert rows.evaluate_all("rows => rows.map(row => row.dataset.task)") == [
        "HumanEval/2", "HumanEval/0"]
    page.click("#sort-disagreement")
    page.wait_for_url(re.compile(r"order=desc"))
    assert rows.first.get_attribute("data-task") == "HumanEval/0"

    page.locator(failing + " a").click()
    page.wait_for_url(re.compile(rf"/runs/{run_ids[1]}/samples/\?task=HumanEval(/|%2F)0$"))
    assert "HumanEval/0" in page.locator("main").inner_text()
    assert "HumanEval/2" not in page.locator("main table").inner_text()
