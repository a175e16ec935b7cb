"""Adding a public dataset from the Datasets page, in Chromium, on the embedded stack that
`make run` starts, with WORKBENCH_DATASET_BASE_URL pointing at a real local HTTP server:
the click starts a background import whose progress the page shows (the server holds the
file half-sent until the page has shown it), a changed file is refused with a clear
message, and so is a download from a server that is gone."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import PASSWORD, USER, SignedUpStack, embedded_stack, screenshot
from tests.browser.conftest import signed_in_page as signed_in
from tests.dataset_mirror import DatasetMirror, fixture_mirror, serving, write_catalogue
from tests.webapp.services.live_stack import add_user

pytestmark = pytest.mark.browser

HALF_SHOWN = re.compile(r"Downloading: .+ \(([1-9]\d?)%\)")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DatasetMirror]:
    root = fixture_mirror(tmp_path_factory.mktemp("catalogue-mirror"))
    with serving(root) as served:
        yield served


@pytest.fixture(scope="module")
def stack(chromium: Path, mirror: DatasetMirror,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[SignedUpStack]:
    work = tmp_path_factory.mktemp("catalogue-site")
    catalogue = write_catalogue(mirror.root, work / "catalogue.toml",
                                upstream="https://example.invalid/data")
    with embedded_stack(work, WORKBENCH_DATASET_CATALOGUE=str(catalogue),
                        WORKBENCH_DATASET_BASE_URL=mirror.url,
                        # No periodic messages: kombu's filesystem broker can hand the
                        # worker a message file that is still empty when one is written
                        # while it polls, and these tests need no sweeper nor canary.
                        WORKBENCH_SWEEP_SECONDS="3600", WORKBENCH_CANARY="0") as started:
        started.manage("ensure_user", USER, f"--password={PASSWORD}", "--staff")
        add_user(started, "bob", PASSWORD)
        yield started


def _row(page: Any, key: str) -> Any:
    return page.locator(f'#catalogue tr[data-key="{key}"]')


def _add(page: Any, key: str) -> None:
    page.goto("/datasets/")
    page.get_by_role("button", name=f"Add {key}").click()
    page.wait_for_url(re.compile(r"/datasets/#catalogue$"))


def test_click_to_add_shows_progress_then_the_dataset(browser, stack, mirror):
    hold = mirror.hold("humaneval-xl/java/Russian.jsonl")
    with signed_in(browser, stack.url, timeout_ms=60_000) as page:
        _add(page, "humaneval-xl/java/ru")
        row = _row(page, "humaneval-xl/java/ru")
        # The worker takes the job when it is ready: on a busy machine, a while after start.
        assert hold.half_sent.wait(timeout=300)
        # The server holds the second half back until the page has shown the first.
        page.wait_for_function(
            "(pattern) => new RegExp(pattern).test(document.querySelector("
            "'#catalogue tr[data-key=\"humaneval-xl/java/ru\"]').textContent)",
            arg=HALF_SHOWN.pattern)
        shown = HALF_SHOWN.search(row.inner_text())
        assert shown is not None
        assert 0 < int(shown.group(1)) < 100
        assert row.locator("progress").count() == 1
        screenshot(page, "catalogue-progress", full_page=False)
        hold.release.set()
        row.get_by_role("status").filter(has_text="Imported").wait_for()
        assert "3 problems" in row.inner_text()
        page.goto("/datasets/")
        assert page.locator("table").first.get_by_text("humaneval-xl/java/ru").count() == 1
        assert _row(page, "humaneval-xl/java/ru").count() == 0


def test_a_changed_file_is_refused_with_a_clear_message(browser, stack, mirror):
    served = mirror.root / "humaneval-x" / "humaneval_go.jsonl"
    data = bytearray(served.read_bytes())
    data[10] ^= 0x01
    served.write_bytes(bytes(data))
    with signed_in(browser, stack.url, timeout_ms=60_000) as page:
        _add(page, "humaneval-x/go/en")
        alert = _row(page, "humaneval-x/go/en").get_by_role("alert")
        alert.wait_for()
        text = alert.inner_text()
        assert "does not match the catalogue" in text
        assert "nothing was stored" in text
        assert _row(page, "humaneval-x/go/en").get_by_role(
            "button", name="Add humaneval-x/go/en").inner_text() == "Try again"
        screenshot(page, "catalogue-hash-refused", full_page=False)
        page.goto("/datasets/")
        assert page.locator("table").first.get_by_text("humaneval-x/go/en").count() == 0


def test_offline_is_said_clearly(browser, stack, mirror):
    # The mirror goes away: nothing listens on its port any more.
    mirror.stop()
    with signed_in(browser, stack.url, timeout_ms=60_000) as page:
        _add(page, "mhumaneval/python/ar/expert")
        alert = _row(page, "mhumaneval/python/ar/expert").get_by_role("alert")
        alert.wait_for()
        text = alert.inner_text()
        assert "Offline?" in text
        assert "connection refused" in text
        assert "WORKBENCH_DATASET_BASE_URL" in text
        assert "import_dataset PATH" in text
        screenshot(page, "catalogue-offline", full_page=False)


def test_non_staff_see_how_to_ask(browser, stack):
    with signed_in(browser, stack.url, username="bob") as page:
        page.goto("/datasets/")
        assert "Only an administrator can add these" in page.locator("#catalogue").inner_text()
        assert page.get_by_role("button", name=re.compile("^Add ")).count() == 0
