"""Comparing a run's harness profiles in Chromium, against the real stack: the button sends
the task to a Celery worker, and the section follows it by itself until the table of pass@k
per profile and the problems that depend on the profile appear."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import LiveSite, _upload, _wait_finished, screenshot
from tests.webapp.support import CRASH_1, RIGHT_0, write_jsonl

pytestmark = pytest.mark.browser


def _row(page: Any, selector: str) -> str:
    return str(page.locator(selector).inner_text())


def test_compare_harness_profiles_and_watch_the_section_fill_in(page: Any, site: LiveSite):
    # The second HumanEval/0 ends with a top-level line that fails: bigcode cuts it off.
    path = write_jsonl(site.work / "profiles.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0 + "    # profiles\n"},
        {"task_id": "HumanEval/0", "completion": RIGHT_0 + "print(undefined_junk)\n"},
        {"task_id": "HumanEval/1", "completion": CRASH_1 + "    # profiles\n"},
        {"task_id": "HumanEval/1", "completion": CRASH_1 + "    # profiles 2\n"},
    ])
    run_id = _upload(site.stack, site.token, path, dataset="humaneval/python/en",
                     name="profiles", visibility="team")
    _wait_finished(site.stack, site.token, [run_id])
    page.goto(f"/runs/{run_id}/")
    assert "humaneval 1" in _row(page, "#run-profile")
    page.click("#compare-profiles-form button")
    page.wait_for_url(re.compile(rf"/runs/{run_id}/#harness-profiles$"))
    page.evaluate("window.__sameDocument = true")
    # Drawn by the page's own polling if the worker had not finished when it loaded.
    page.wait_for_selector("#profile-scores", timeout=120_000)
    assert page.evaluate("window.__sameDocument") is True, "the page was never reloaded"
    assert "0.2500" in _row(page, "#profile-row-humaneval")
    assert "headline numbers" in _row(page, "#profile-row-humaneval")
    assert "0.5000" in _row(page, "#profile-row-bigcode")
    assert _row(page, "#profile-dependent-count").startswith("1 problem")
    dependent = page.locator("#profile-dependent li")
    assert dependent.count() == 1
    assert "undefined_junk" in dependent.inner_text()
    dependent.locator("a").click()
    page.wait_for_url(re.compile(r"/samples/\?task=HumanEval%2F0$"))
    page.go_back()
    page.wait_for_selector("#profile-scores")
    screenshot(page, "run_profiles")
    page.goto("/profiles/#profile-bigcode")
    assert page.locator("#profile-bigcode").is_visible()
    assert "\\nprint" in page.locator("#profile-bigcode").inner_text()
    screenshot(page, "profiles")
