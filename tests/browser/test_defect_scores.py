"""Defect-aware scores in Chromium, against the real stack and the real defect registry.

The data: three problems of the machine-translated Arabic mHumanEval, cut from the shared
copy. Its HumanEval/79 has a registered defect with a patch (`mhe-arb-machine-79-quote`: the
prompt's docstring does not close, so every sample is a syntax error). A right answer to
each of the three problems gives, by hand, pass@1 of 2/3 on the original data, 3/3 once
patched (79 is run again by the worker, patched) and 2/2 without 79.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.browser.conftest import RIGHT_2, LiveSite, _upload, _wait_finished, screenshot
from tests.conftest import shared_path
from tests.webapp.services.live_stack import api
from tests.webapp.support import RIGHT_0, write_jsonl

pytestmark = pytest.mark.browser

SOURCE = "datasets/mhumaneval/mHumanEval-arb_Arab-python.json"
TASKS = ("HumanEval/0", "HumanEval/2", "HumanEval/79")
RIGHT_79 = '    return "db" + bin(decimal)[2:] + "db"\n'


@pytest.fixture(scope="module")
def arabic_run(site: LiveSite) -> tuple[int, str]:
    source = shared_path() / SOURCE
    if not source.is_file():
        pytest.skip(f"{source} is missing: the shared mHumanEval data is not on this machine")
    problems = [p for p in json.loads(source.read_text(encoding="utf-8"))
                if p["task_id"] in TASKS]
    path = site.work / "defects" / source.name
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(problems, ensure_ascii=False), encoding="utf-8")
    site.stack.manage("import_dataset", str(path))
    samples = write_jsonl(site.work / "defects" / "answers.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0},
        {"task_id": "HumanEval/2", "completion": RIGHT_2},
        {"task_id": "HumanEval/79", "completion": RIGHT_79},
    ])
    # Team-visible: the public leaderboard of the other tests stays as they expect it.
    run_id = _upload(site.stack, site.token, samples, dataset="mhumaneval/python/ar/machine",
                     name="arabic machine", model_name="delta-1b", visibility="team")
    _wait_finished(site.stack, site.token, [run_id])
    _, body = api(site.url, site.token, f"/api/runs/{run_id}?problems=0")
    return run_id, str(body["team"])


def _cell(page: Any, run_id: int, way: str, k: int = 1) -> str:
    return str(page.locator(
        f"#defect-aware-table-{run_id} td[data-way={way}][data-k='{k}']").inner_text())


def test_three_way_scores_on_the_run_page_and_the_leaderboard(
    page: Any, site: LiveSite, arabic_run: tuple[int, str],
):
    run_id, team = arabic_run
    page.goto(f"/runs/{run_id}/")
    assert _cell(page, run_id, "original").startswith("66.7%")
    assert _cell(page, run_id, "excluding").startswith("100.0%")
    assert "not computed yet" in _cell(page, run_id, "patched")
    header = page.locator(f"#defect-aware-table-{run_id} th[data-way=excluding]")
    assert "HumanEval/79" in header.get_attribute("title")

    # Compute: the worker runs HumanEval/79's sample again, patched; the block fills in by
    # itself, without a reload.
    page.click(f"#compute-patched-{run_id}")
    page.wait_for_url(re.compile(rf"/runs/{run_id}/#defect-aware$"))
    page.evaluate("window.__sameDocument = true")
    page.wait_for_function(
        f"""() => {{
            const cell = document.querySelector(
                "#defect-aware-table-{run_id} td[data-way=patched][data-k='1'] .way-value");
            return cell && cell.textContent.trim() === "100.0%";
        }}""", timeout=120_000)
    assert page.evaluate("window.__sameDocument") is True, "the page was reloaded"
    assert _cell(page, run_id, "original").startswith("66.7%")

    # The legend names the patched problem and links to its registry entry.
    page.locator(f"#ways-legend-{run_id} summary").click()
    legend = page.locator(f"#ways-legend-{run_id}")
    assert "0/1 passed, 1/1 once patched" in legend.inner_text()
    link = legend.locator("ul[data-way=patched] a[href$='#defect-mhe-arb-machine-79-quote']")
    link.click()
    page.wait_for_url(re.compile(r"/problems/79/#defect-mhe-arb-machine-79-quote$"))
    assert page.locator("#defect-mhe-arb-machine-79-quote").is_visible()
    page.go_back()

    # The choice is a permalink, and follows the link to the leaderboard.
    page.click(f"#ways-choice-{run_id} a[data-way=patched]")
    page.wait_for_url(re.compile(rf"/runs/{run_id}/\?scores=patched#defect-aware$"))
    assert "chosen" in (page.locator(
        f"#defect-aware-table-{run_id} td[data-way=patched][data-k='1']").get_attribute("class"))
    screenshot(page, "run_defect_aware")

    page.goto(f"/teams/{team}/leaderboard/?scores=excluding")
    cell = page.locator(f"#cell-{run_id}-1")
    assert cell.inner_text().startswith("100.0%")
    assert "orig. 66.7%" in cell.inner_text()
    page.select_option("#scores-select", "original")
    page.click("#ways-selector button[type=submit]")
    # The form carries the metric too (pass@k unless changed).
    page.wait_for_url(re.compile(r"\?scores=original&metric=pass%40k&tests=base$"))
    assert page.locator(f"#cell-{run_id}-1").inner_text().startswith("66.7%")
    alternatives = page.locator(f"#cell-{run_id}-1 .way-alt")
    assert alternatives.count() == 2
    assert "patched 100.0%" in alternatives.nth(0).inner_text()
    assert "HumanEval/79" in alternatives.nth(1).get_attribute("title")
    screenshot(page, "leaderboard_defect_aware")
    page.locator(f"#cell-{run_id}-1 a").first.click()
    page.wait_for_url(re.compile(rf"/runs/{run_id}/scores/pass-at-1/$"))
    assert page.locator(f"#defect-aware-table-{run_id}").is_visible()
