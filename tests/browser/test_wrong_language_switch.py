"""Go generations uploaded against the Python `humaneval` in Chromium: the language check
(run by the worker, in its sandbox) says they look like Go, the confirm page offers the
stored `humaneval-x/go/en` with one button, and one click makes the run there without
uploading the file again."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import LiveSite, screenshot
from tests.browser.test_upload_forms import GO_BODY
from tests.webapp.support import write_jsonl

pytestmark = pytest.mark.browser


def test_one_click_moves_a_go_upload_from_humaneval_to_humaneval_x_go(page: Any,
                                                                      site: LiveSite):
    path = write_jsonl(site.work / "go-against-python.jsonl", [
        {"task_id": "HumanEval/0", "completion": GO_BODY},
        {"task_id": "HumanEval/0", "completion": GO_BODY.replace("return false", "return !true")},
    ])
    page.goto("/runs/new/")
    page.set_input_files("#id_file", str(path))
    python = page.locator("#id_dataset option", has_text="humaneval/python/en").first
    page.select_option("#id_dataset", python.get_attribute("value"))
    page.fill("#id_name", "go by mistake")
    page.get_by_role("button", name="Check the file").click()

    # The check waits for the workers' parsers (each language's first start included).
    page.wait_for_selector("text=Wrong language?", timeout=180_000)
    button = page.locator("#use-suggested")
    assert button.inner_text() == "Evaluate against humaneval-x/go/en instead"
    assert "look like Go, not Python" in page.locator("section.issues").inner_text()
    screenshot(page, "wrong-language-switch")
    # The samples already stored are checked again against that dataset: no upload.
    with page.expect_navigation(url=re.compile(r"/runs/\d+/$"), timeout=180_000):
        button.click(no_wait_after=True)
    assert "humaneval-x/go/en" in page.locator("main").inner_text()
    assert "go by mistake" in page.locator("h1").inner_text()
