"""pass^k beside pass@k in Chromium (issue 25): the run page draws both curves, each with
its band, and the leaderboard's metric choice switches its headings and numbers."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import LiveSite, screenshot

pytestmark = pytest.mark.browser


def test_run_page_draws_pass_at_k_and_pass_hat_k_with_their_bands(page: Any, site: LiveSite):
    page.goto(f"/runs/{site.alpha}/")
    page.wait_for_selector("#pass-at-k-chart .main-svg")
    traces = page.evaluate("""() => document.getElementById('pass-at-k-chart').data
        .map((trace) => [trace.meta || 'band', trace.fill || '', Array.from(trace.y)])""")
    # Per metric: the band's upper edge, its lower edge filled up to it, then the line.
    assert [(meta, fill) for meta, fill, _ in traces] == [
        ("band", ""), ("band", "tonexty"), ("pass@k", ""),
        ("band", ""), ("band", "tonexty"), ("pass^k", "")]
    assert page.locator("#pass-at-k-chart .scatterlayer .trace").count() == 6
    # alpha: HumanEval/0 passes twice, /1 never, /2 once in two; pass^2 = 1/3, pass@2 = 2/3.
    pass_at, pass_hat = traces[2][2], traces[5][2]
    assert pass_at[0] == pytest.approx(pass_hat[0])
    assert pass_at[1] == pytest.approx(2 / 3, abs=1e-6)
    assert pass_hat[1] == pytest.approx(1 / 3, abs=1e-6)
    cells = page.locator("#pass-at-k tbody td[data-pass-hat]").all_inner_texts()
    assert cells == [f"{pass_hat[0]:.4f}", "0.3333"]
    screenshot(page, "run_page_pass_hat_k", full_page=False)


def test_leaderboard_metric_choice(page: Any, site: LiveSite):
    page.goto("/leaderboard/")
    before = page.locator("#leaderboard tbody td.score a").first.inner_text()
    page.select_option("#metric-select", "pass^k")
    page.click("#ways-selector button[type=submit]")
    page.wait_for_url(re.compile(r"metric=pass%5Ek&tests=base$"))
    assert page.locator("#leaderboard thead a[data-sort]").first.inner_text() == "pass^1"
    # pass^1 is pass@1: the same first number.
    assert page.locator("#leaderboard tbody td.score a").first.inner_text() == before
    assert "all k samples pass" in page.locator("#metric-note").text_content()
    screenshot(page, "leaderboard_pass_hat_k")
