"""The upload forms in Chromium: the suite upload detects each file's variant from its
content and says why, a choice the content contradicts must be confirmed, and every
checkbox stands left of its label."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import LiveSite, screenshot
from tests.webapp.services.live_stack import api
from tests.webapp.support import write_jsonl

pytestmark = pytest.mark.browser

GO_BODY = ("    for i := range numbers {\n        for j := i + 1; j < len(numbers); j++ {\n"
           "            if math.Abs(numbers[i]-numbers[j]) < threshold {\n"
           "                return true\n            }\n        }\n    }\n    return false\n}\n")


def _suite(site: LiveSite) -> int:
    status, body = api(site.url, site.token, "/api/suites",
                       fields={"model_name": "detect-1b", "visibility": "private"})
    assert status == 201, body
    return int(body["id"])


def _chosen_key(page: Any, selector: str) -> str:
    return page.locator(selector).evaluate("s => s.options[s.selectedIndex].text.split(' ')[0]")


def test_suite_upload_detects_the_variant_from_the_content(page: Any, site: LiveSite):
    # Named for Python, but written for HumanEval-X's Go: `Go/N` ids, CodeGeeX's layout.
    misnamed = write_jsonl(site.work / "samples_python.jsonl", [
        {"task_id": "Go/0", "generation": GO_BODY}, {"task_id": "Go/2", "generation": GO_BODY},
    ])
    suite_id = _suite(site)
    page.goto(f"/suites/{suite_id}/runs/")
    page.set_input_files("#suite-files", [str(misnamed)])
    page.wait_for_selector('#file-rows tr[data-state="detected"]')
    assert _chosen_key(page, "#dataset-0") == "humaneval-x/go/en"
    assert page.locator("#detected-0").inner_text() == (
        "Detected: ids Go/0, Go/2 in the HumanEval-X (CodeGeeX) layout, Go code → "
        "humaneval-x/go/en.")
    mismatch = page.locator("#file-rows .variant-mismatch")
    assert not mismatch.is_visible()
    screenshot(page, "suite_upload_detected", full_page=False)

    # Choosing the variant the name suggests is possible, but must be confirmed.
    option = page.locator("#dataset-0 option", has_text="humaneval/python/en").first
    page.select_option("#dataset-0", option.get_attribute("value"))
    assert mismatch.is_visible()
    assert "points to humaneval-x/go/en, not to humaneval/python/en" in mismatch.inner_text()
    confirm = page.locator("#id_confirm_variants")
    assert confirm.evaluate("box => box.required")
    page.check("#id_dry_run")
    page.click("#upload-submit")
    # The browser keeps the form: the unticked confirmation box is invalid.
    assert confirm.evaluate("box => !box.validity.valid")
    assert re.search(rf"/suites/{suite_id}/runs/$", page.url)
    screenshot(page, "suite_upload_mismatch", full_page=False)

    # Back to the detected variant: nothing to confirm, and the file passes its checks.
    option = page.locator("#dataset-0 option", has_text="humaneval-x/go/en").first
    page.select_option("#dataset-0", option.get_attribute("value"))
    assert not mismatch.is_visible()
    assert not confirm.evaluate("box => box.required")
    page.click("#upload-submit")
    page.wait_for_selector("#outcome")
    assert page.locator("#outcome-title").inner_text() == "Every file passes its checks"


def _left_of_label(page: Any, box_id: str) -> None:
    box = page.locator(f"#{box_id}").bounding_box()
    label = page.locator(f"label[for={box_id}]").bounding_box()
    assert box is not None, box_id
    assert label is not None, box_id
    assert box["x"] + box["width"] <= label["x"], f"{box_id} is not left of its label"
    middle = box["y"] + box["height"] / 2
    assert label["y"] <= middle <= label["y"] + label["height"], \
        f"{box_id} is not on its label's line"


def test_checkboxes_stand_left_of_their_labels(page: Any, site: LiveSite):
    page.goto("/runs/new/")
    for box_id in ("id_sanitize", "id_allow_language_mismatch"):
        _left_of_label(page, box_id)
    screenshot(page, "upload_form", full_page=False)
    page.goto(f"/suites/{_suite(site)}/runs/")
    for box_id in ("id_sanitize", "id_allow_language_mismatch", "id_dry_run",
                   "id_confirm_variants"):
        _left_of_label(page, box_id)
