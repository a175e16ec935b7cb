"""Translation fidelity in Chromium: a suite whose Arabic variant fails a problem the
English passes, the forest plot drawn by Plotly, the flagged problem side by side with its
Arabic prose right to left, and filing it from the dataset page into the review queue after
seeing the exact registry entry."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.browser.conftest import RIGHT_2, LiveSite, _upload, _wait_finished, screenshot
from tests.webapp.services.live_stack import api
from tests.webapp.support import RIGHT_0, WRONG_0, write_jsonl

pytestmark = pytest.mark.browser


def _direction(page: Any, selector: str) -> str:
    return page.locator(selector).first.evaluate("node => getComputedStyle(node).direction")


def test_fidelity_flags_the_arabic_variant_and_files_it_for_review(page: Any, site: LiveSite):
    runs = [
        _upload(site.stack, site.token, write_jsonl(site.work / "fidelity-en.jsonl", [
            {"task_id": "HumanEval/0", "completion": RIGHT_0 + "    # fidelity en\n"},
            {"task_id": "HumanEval/2", "completion": RIGHT_2 + "    # fidelity en\n"},
        ]), dataset="humaneval/python/en", name="fidelity en", model_name="fidelity-1b",
            visibility="private"),
        _upload(site.stack, site.token, write_jsonl(site.work / "fidelity-ar.jsonl", [
            {"task_id": "HumanEval/0", "completion": WRONG_0 + "    # fidelity ar\n"},
            {"task_id": "HumanEval/2", "completion": RIGHT_2 + "    # fidelity ar\n"},
        ]), dataset="mhumaneval/python/ar/expert", name="fidelity ar",
            model_name="fidelity-1b", visibility="private"),
    ]
    _wait_finished(site.stack, site.token, runs)
    status, suite = api(site.url, site.token, "/api/suites", fields={
        "model_name": "fidelity-1b", "name": "fidelity suite", "visibility": "private"})
    assert status == 201, suite
    status, body = api(site.url, site.token, f"/api/suites/{suite['id']}/runs",
                       fields={"run": ",".join(str(pk) for pk in runs)})
    assert status == 201, body

    page.goto(suite["url"])
    page.click("#fidelity-link")
    page.wait_for_url(f"**/suites/{suite['id']}/fidelity/")
    page.wait_for_selector("#fidelity-forest .main-svg")
    flags = page.locator("#fidelity-flags tbody tr")
    assert flags.evaluate_all("rows => rows.map(r => [r.dataset.task, r.dataset.variant])") == [
        ["HumanEval/0", "mhumaneval/python/ar/expert"]]
    assert "n = 1" in flags.first.inner_text()
    page.locator("#fidelity-flags a[href='#flag-1']").click()
    detail = page.locator("#flag-1")
    assert detail.is_visible()
    harder = "#flag-1 [data-side=harder]"
    assert _direction(page, f"{harder} .doc-prose") == "rtl"
    assert _direction(page, f"{harder} pre.doc-example") == "ltr"
    assert _direction(page, "#flag-1 [data-side=reference] .doc-prose") == "ltr"
    assert page.locator(f"{harder} mark.diff-del").count() > 0
    screenshot(page, "fidelity")

    page.goto("/datasets/")
    page.locator("a", has_text="mhumaneval/python/ar/expert").first.click()
    page.wait_for_selector("#defect-candidates")
    row = page.locator("#candidate-list tr[data-task='HumanEval/0']")
    assert row.count() == 1
    screenshot(page, "fidelity_candidates")
    row.locator("a", has_text="Propose a defect").click()
    page.wait_for_url(re.compile(r"/suites/fidelity/propose/\d+/0/$"))
    page.select_option("#id_kind", "prompt_contradiction")
    page.fill("#id_defect", "The Arabic docstring drops the threshold's strictness.")
    page.click("#preview-proposal")
    page.wait_for_selector("#entry-preview")
    entry = json.loads(page.locator("#entry-preview").inner_text())
    assert entry["task_id"] == "HumanEval/0"
    assert entry["dataset"] == "mhumaneval"
    assert entry["defect"] == "The Arabic docstring drops the threshold's strictness."
    assert "fidelity-1b" in entry["evidence"]
    screenshot(page, "fidelity_propose")
    page.click("#confirm-proposal")
    page.wait_for_url("**/suites/fidelity/queue/")
    filed = page.locator(f"#proposal-list li[data-entry='{entry['id']}'] pre").inner_text()
    assert json.loads(filed) == entry, "the queue holds exactly the entry that was shown"
