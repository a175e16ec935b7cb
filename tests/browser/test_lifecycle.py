"""Managing a run in Chromium, against the real stack: its owner changes its visibility,
retracts it from the leaderboards, deletes it after confirming, and restores it, with each
step in the run's history; an outsider sees the public run without any of the controls."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import LiveSite, _upload, _wait_finished, screenshot
from tests.webapp.services.live_stack import add_user, api
from tests.webapp.support import CRASH_1, RIGHT_0, write_jsonl

pytestmark = pytest.mark.browser

OUTSIDER = "oscar-lifecycle"
OUTSIDER_PASSWORD = "another-long-browser-password"


@pytest.fixture(scope="module")
def managed_run(site: LiveSite) -> int:
    path = write_jsonl(site.work / "lifecycle.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0 + "    # lifecycle\n"},
        {"task_id": "HumanEval/1", "completion": CRASH_1 + "    # lifecycle\n"},
    ])
    run_id = _upload(site.stack, site.token, path, dataset="humaneval/python/en",
                     name="lifecycle", model_name="lifecycle-model", visibility="public")
    _wait_finished(site.stack, site.token, [run_id])
    return run_id


def _history(page: Any) -> str:
    return str(page.locator("#run-history").inner_text())


def test_outsider_sees_the_public_run_without_edit_controls(
        browser: Any, site: LiveSite, managed_run: int):
    add_user(site.stack, OUTSIDER, OUTSIDER_PASSWORD)
    context = browser.new_context(base_url=site.url)
    context.set_default_timeout(20_000)
    try:
        page = context.new_page()
        page.goto("/accounts/login/")
        page.fill("#id_username", OUTSIDER)
        page.fill("#id_password", OUTSIDER_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url("**/")
        response = page.goto(f"/runs/{managed_run}/")
        assert response is not None
        assert response.status == 200
        assert page.locator("h1").inner_text() == "lifecycle"
        for control in ("#lifecycle-actions", "#edit-link", "#retract-button", "#delete-link",
                        "#visibility-form", "#run-actions"):
            assert page.locator(control).count() == 0, control
        refused = page.goto(f"/runs/{managed_run}/edit/")
        assert refused is not None
        assert refused.status == 403
    finally:
        context.close()


def test_owner_changes_visibility_retracts_deletes_and_restores(
        page: Any, site: LiveSite, managed_run: int):
    page.goto(f"/runs/{managed_run}/")
    assert "public" in page.locator(".run-head .meta:not(#run-what)").inner_text()

    # Visibility, from the small form on the run page.
    page.locator("#quick-edit summary").click()
    page.select_option("#visibility-select", "team")
    page.click("#visibility-form button[type=submit]")
    page.wait_for_url(re.compile(rf"/runs/{managed_run}/$"))
    assert "Saved 1 change" in page.locator(".messages").inner_text()
    assert "team" in page.locator(".run-head .meta:not(#run-what)").inner_text()
    assert re.search(r"Visibility\s+public\s+team", _history(page))

    # Retract from the leaderboards.
    page.goto("/leaderboard/")
    assert "lifecycle-model" not in page.content(), "a team run is not on the public board"
    page.goto(f"/runs/{managed_run}/")
    page.click("#retract-button")
    page.wait_for_selector("#relist-button")
    assert "Retracted" in page.locator("#leaderboard-state").inner_text()
    assert re.search(r"Leaderboards\s+listed\s+retracted", _history(page))

    # Delete: a confirmation page first, then the list of deleted runs.
    page.click("#delete-link")
    page.wait_for_url(re.compile(rf"/runs/{managed_run}/delete/$"))
    assert "Delete “lifecycle”?" in page.locator("h1").inner_text()
    screenshot(page, "run_delete_confirm")
    page.click("#confirm-delete")
    page.wait_for_url(re.compile(r"/runs/deleted/$"))
    row = page.locator(f"#deleted-run-{managed_run}")
    assert "lifecycle" in row.inner_text()
    gone = page.goto(f"/runs/{managed_run}/")
    assert gone is not None
    assert gone.status == 404
    page.goto("/")
    assert page.locator(f"a[href='/runs/{managed_run}/']").count() == 0

    # Restore, from the list of deleted runs.
    page.goto("/runs/deleted/")
    page.locator(f"#deleted-run-{managed_run} button").click()
    page.wait_for_url(re.compile(rf"/runs/{managed_run}/$"))
    assert "was restored" in page.locator(".messages").inner_text()
    history = _history(page)
    assert re.search(r"Deleted\s+no\s+yes", history)
    assert re.search(r"Deleted\s+yes\s+no", history)
    screenshot(page, "run_manage")

    # Back on its team's leaderboard; it stays a team run, off the public board that
    # other tests of this site read.
    page.click("#relist-button")
    page.wait_for_selector("#retract-button")
    _, body = api(site.url, site.token, f"/api/runs/{managed_run}?problems=0")
    assert (body["visibility"], body["on_leaderboards"]) == ("team", True)
    page.goto(f"/teams/{body['team']}/leaderboard/")
    assert "lifecycle-model" in page.content()
