"""The lifecycle actions and roles that `test_lifecycle.py` does not drive in Chromium: a
team member and an anonymous visitor meet a team run; the owner renames a run on its edit
page, cancels it after confirming and resumes it, and confirms a run held off the
leaderboards for review. Each action ends in the run's history."""

from __future__ import annotations

import contextlib
import re
import time
from typing import Any

import pytest

from tests.browser.conftest import LiveSite, _upload, _wait_finished, screenshot, signed_in_page
from tests.webapp.services.live_stack import add_user, api
from tests.webapp.support import RIGHT_0, write_jsonl
from webapp.runs.reads.verified import DEFINITION

pytestmark = pytest.mark.browser

TEAM = "Roles lab"
MEMBER, OUTSIDER = "mia-roles", "oscar-roles"
PASSWORD = "yet-another-long-browser-password"
# Slow enough that the owner cancels while it runs; short, as it holds the only worker.
SLOW = "    import time\n    time.sleep(1)\n    return False\n"


def _history(page: Any) -> str:
    return str(page.locator("#run-history").inner_text())


@pytest.fixture(scope="module")
def team(browser: Any, site: LiveSite) -> str:
    """A team of the site's user with MEMBER in it, made through the pages."""
    add_user(site.stack, MEMBER, PASSWORD)
    add_user(site.stack, OUTSIDER, PASSWORD)
    with signed_in_page(browser, site.url) as page:
        page.goto("/teams/")
        page.fill("#id_name", TEAM)
        page.click("form.stacked button[type=submit]")
        page.wait_for_url(re.compile(r"/teams/[\w-]+/$"))
        slug = page.url.rstrip("/").rsplit("/", 1)[-1]
        page.fill("#id_username", MEMBER)
        page.select_option("#id_role", "member")
        page.click(f"form[action='/teams/{slug}/members/'] button[type=submit]")
        page.wait_for_selector(f"text={MEMBER}")
    return slug


@pytest.fixture(scope="module")
def team_run(site: LiveSite, team: str) -> int:
    path = write_jsonl(site.work / "roles.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0 + "    # roles\n"}])
    run_id = _upload(site.stack, site.token, path, dataset="humaneval/python/en",
                     name="roles run", model_name="roles-model", team=team, visibility="team")
    _wait_finished(site.stack, site.token, [run_id])
    return run_id


def test_team_member_sees_the_run_and_its_history_but_cannot_act(
        browser: Any, site: LiveSite, team_run: int):
    with signed_in_page(browser, site.url, username=MEMBER, password=PASSWORD) as page:
        response = page.goto(f"/runs/{team_run}/")
        assert response is not None
        assert response.status == 200
        assert page.locator("h1").inner_text() == "roles run"
        for control in ("#lifecycle-actions", "#edit-link", "#retract-button", "#delete-link",
                        "#visibility-form", "#confirm-listing-button", "#cancel-link"):
            assert page.locator(control).count() == 0, control
        for action in ("edit", "delete", "cancel"):
            refused = page.goto(f"/runs/{team_run}/{action}/")
            assert refused is not None
            assert refused.status == 403, action
        # A form posted anyway (say, from an old tab) is refused and changes nothing.
        page.goto(f"/runs/{team_run}/")
        csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
        answer = page.request.post(f"/runs/{team_run}/leaderboards/", form={"listed": "0"},
                                   headers={"X-CSRFToken": csrf,
                                            "Referer": f"{site.url}/runs/{team_run}/"})
        assert answer.status == 403
        assert "CSRF" not in answer.text(), "refused for the right reason"
        _, body = api(site.url, site.token, f"/api/runs/{team_run}/changes")
        assert body["changes"] == []


@pytest.mark.parametrize("who", ["outsider", "anonymous"])
def test_outsider_and_anonymous_do_not_find_a_team_run(
        browser: Any, site: LiveSite, team: str, team_run: int, who: str):
    opened: contextlib.AbstractContextManager[Any]
    if who == "outsider":
        opened = signed_in_page(browser, site.url, username=OUTSIDER, password=PASSWORD)
    else:
        opened = contextlib.nullcontext(browser.new_context(base_url=site.url).new_page())
    with opened as page:
        response = page.goto(f"/runs/{team_run}/")
        assert response is not None
        assert response.status == 404
        edit = page.goto(f"/runs/{team_run}/edit/")
        assert edit is not None
        if who == "anonymous":
            assert "/accounts/login/" in page.url, "sent to sign in first"
        else:
            assert edit.status == 404
        board = page.goto(f"/teams/{team}/leaderboard/")
        assert board is not None
        assert board.status == 404 or "/accounts/login/" in page.url
        page.goto("/leaderboard/")
        assert "roles-model" not in page.content()


def test_owner_renames_on_the_edit_page(page: Any, site: LiveSite, team_run: int):
    page.goto(f"/runs/{team_run}/")
    page.click("#edit-link")
    page.wait_for_url(re.compile(rf"/runs/{team_run}/edit/"))
    page.fill("#id_name", "roles run, renamed")
    page.fill("#id_model_name", "roles-model-v2")
    page.click("#run-edit-form button[type=submit]")
    page.wait_for_url(re.compile(rf"/runs/{team_run}/$"))
    assert page.locator("h1").inner_text() == "roles run, renamed"
    history = _history(page)
    assert re.search(r"Name\s+roles run\s+roles run, renamed", history)
    assert re.search(r"Model\s+roles-model\s+roles-model-v2", history)


def test_owner_cancels_after_confirming_and_resumes(page: Any, site: LiveSite):
    path = write_jsonl(site.work / "slow.jsonl", [
        {"task_id": f"HumanEval/{number}", "completion": SLOW + f"    # {number}\n"}
        for number in range(4)])
    run_id = _upload(site.stack, site.token, path, dataset="humaneval/python/en",
                     name="slow run", visibility="private")
    page.goto(f"/runs/{run_id}/")
    page.click("#cancel-link")
    page.wait_for_url(re.compile(rf"/runs/{run_id}/cancel/$"))
    assert "Cancel “slow run”?" in page.locator("h1").inner_text()
    page.click("#confirm-cancel")
    page.wait_for_url(re.compile(rf"/runs/{run_id}/$"))
    page.wait_for_selector("#resume-button")
    assert re.search(r"Status \(cancel, resume\)\s+(queued|running)\s+cancelled",
                     _history(page))
    screenshot(page, "run_cancelled")
    # The worker finishes the sample it was running first; until then Resume says so.
    deadline = time.monotonic() + 60
    while True:
        page.click("#resume-button")
        page.wait_for_url(re.compile(rf"/runs/{run_id}/$"))
        message = page.locator(".messages").inner_text()
        if "resuming" in message or time.monotonic() > deadline:
            break
        assert "still stopping part of this run" in message
        time.sleep(0.2)
    assert "resuming" in message
    assert re.search(r"Status \(cancel, resume\)\s+cancelled\s+queued", _history(page))
    # Let it end here: the site has one worker, and the other tests need it.
    _wait_finished(site.stack, site.token, [run_id], timeout=180)


def test_owner_confirms_a_run_held_for_review(page: Any, site: LiveSite, team: str):
    _, listing = api(site.url, site.token, "/api/datasets")
    go = next(d["key"] for d in listing["datasets"] if d["language"] == "go")
    path = write_jsonl(site.work / "python-as-go.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0}])
    run_id = _upload(site.stack, site.token, path, dataset=go, name="python as go",
                     model_name="held-model", team=team, visibility="team",
                     allow_language_mismatch="true")
    _wait_finished(site.stack, site.token, [run_id])

    page.goto(f"/teams/{team}/leaderboard/")
    held = page.locator("#held-runs")
    assert "python as go" in held.inner_text()
    assert page.locator(f"#cell-{run_id}-1").count() == 0

    page.goto(f"/runs/{run_id}/")
    assert "Held off the leaderboards for review" in page.locator(
        "#leaderboard-state").inner_text()
    page.click("#confirm-listing-button")
    page.wait_for_url(re.compile(rf"/runs/{run_id}/$"))
    assert "Confirmed" in page.locator(".messages").inner_text()
    assert re.search(r"Leaderboards\s+held for review\s+confirmed", _history(page))

    page.goto(f"/teams/{team}/leaderboard/")
    cell = page.locator(f"#cell-{run_id}-1")
    mark = cell.locator(".badge.unverified")
    mark.focus()  # reachable from the keyboard, where its title shows
    title = mark.get_attribute("title")
    assert title is not None
    assert title.startswith(DEFINITION)
    assert "Confirmed by its owner although" in title
    assert page.locator("#held-runs").count() == 0
    screenshot(page, "leaderboard_verified_tooltip")


def test_the_api_page_is_one_click_from_the_header(page: Any, site: LiveSite):
    page.goto("/")
    page.click("nav[aria-label=Main] >> text=API")
    page.wait_for_url(re.compile(r"/api/$"))
    assert page.locator("h1").inner_text().startswith("Workbench API")
    assert page.locator("section.api-endpoint").count() >= 10
    upload = page.locator("#post-api-runs")
    assert "curl -X POST" in upload.locator("pre").inner_text()
    schema = page.request.get("/api/openapi.json")
    assert schema.ok
    assert "/api/runs/{run_id}/leaderboards" in schema.json()["paths"]
    screenshot(page, "api_page")
