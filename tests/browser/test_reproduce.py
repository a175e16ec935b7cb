"""Reproducibility in Chromium, against the real stack (uvicorn and a Celery worker): the
run page shows the manifest the worker recorded, its owner clicks "Reproduce…", confirms,
follows the progress, and sees every verdict reproduced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import SCREENSHOTS, LiveSite, _upload, _wait_finished, screenshot
from tests.webapp.support import CRASH_1, RIGHT_0, WRONG_0, write_jsonl

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def reproducible_run(site: LiveSite) -> int:
    path = write_jsonl(site.work / "reproduce.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0 + "    # reproduce\n"},
        {"task_id": "HumanEval/0", "completion": WRONG_0 + "    # reproduce\n"},
        {"task_id": "HumanEval/1", "completion": CRASH_1 + "    # reproduce\n"},
    ])
    run_id = _upload(site.stack, site.token, path, dataset="humaneval/python/en",
                     name="reproducible", model_name="repro-model", visibility="team")
    _wait_finished(site.stack, site.token, [run_id])
    return run_id


def test_reproduce_from_the_run_page(page: Any, site: LiveSite, reproducible_run: int):
    page.goto(f"/runs/{reproducible_run}/")
    table = page.locator("#manifest-table")
    assert "Toolchain" in table.inner_text()
    assert "Python 3." in table.inner_text()
    assert page.locator("#manifest-table button.copy-value").count() >= 3
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#manifest").screenshot(path=str(SCREENSHOTS / "run-manifest.png"))
    with page.expect_download() as download:
        page.click("#manifest-download")
    saved = download.value
    assert saved.suggested_filename == f"run-{reproducible_run}-manifest.json"
    manifest = json.loads(Path(saved.path()).read_text(encoding="utf-8"))["manifest"]
    assert manifest["sandbox"]["backend"] == "none"

    page.click("#reproduce-link")
    page.wait_for_url(f"**/runs/{reproducible_run}/reproduce/")
    page.click("#confirm-reproduce")
    page.wait_for_url(f"**/runs/{reproducible_run}/reproductions/*/")
    copy = int(page.url.rstrip("/").rsplit("/", 1)[1])
    # The page follows the job and is drawn again when it ends.
    page.wait_for_selector("#all-reproduced", timeout=120_000)
    assert page.locator("#all-reproduced").inner_text() == "All 3 verdicts reproduced."
    assert page.locator("#manifest-same").count() == 1
    assert page.locator("#reproduction-status").inner_text() == "Finished"
    screenshot(page, "reproduction")

    # The run page links to it; the list of runs does not show it.
    page.goto(f"/runs/{reproducible_run}/")
    assert page.locator("#reproductions li").count() == 1
    page.goto("/")
    assert page.locator(f'a[href="/runs/{reproducible_run}/"]').count() >= 1
    assert page.locator(f'a[href="/runs/{copy}/"]').count() == 0
