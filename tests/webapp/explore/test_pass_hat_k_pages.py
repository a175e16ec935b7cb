"""pass^k (all k of k samples pass) beside pass@k on the run page and the leaderboard
(issue 25): the same numbers as `run_pass_hat_k` and the estimator, ranked by pass^k when
asked, and a bad metric named in a 400."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from evaluator.metrics import pass_hat_k
from tests.webapp.explore.conftest import RIGHT_2, WRONG_2
from tests.webapp.support import RIGHT_0, WRONG_0, client_for
from webapp.explore.leaderboard import build_leaderboard
from webapp.runs.models import Run
from webapp.runs.reads.selectors import run_pass_hat_k

COLUMN = "humaneval/python/en"


def _chart_data(body: str) -> dict[str, Any]:
    found = re.search(r'<script id="run-chart-data" type="application/json">(.*?)</script>',
                      body, re.DOTALL)
    assert found is not None
    return json.loads(found.group(1))


def _models(body: str) -> list[str]:
    return re.findall(r'<th scope="row" class="model">([^<]+)</th>', body)


@pytest.fixture
def steady_and_flaky(make_run) -> tuple[Run, Run]:
    """Ten samples per task on HumanEval/0 and /2. "steady" solves /0 every time and /2
    never; "flaky" solves each nine times in ten. flaky leads on pass@1 and pass@10, steady
    on pass^10 (flaky's is 0: some draw of ten always holds its failure)."""
    steady = make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0}] * 10
                      + [{"task_id": "HumanEval/2", "completion": WRONG_2}] * 10,
                      name="steady", visibility=Run.Visibility.PUBLIC)
    flaky = make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0}] * 9
                     + [{"task_id": "HumanEval/0", "completion": WRONG_0}]
                     + [{"task_id": "HumanEval/2", "completion": RIGHT_2}] * 9
                     + [{"task_id": "HumanEval/2", "completion": WRONG_2}],
                     name="flaky", visibility=Run.Visibility.PUBLIC)
    return steady, flaky


def test_run_page_shows_pass_hat_k_as_the_selector_computes_it(personas, runs):
    # gamma: one of two samples passes on each problem, so pass@2 = 1 and pass^2 = 0.
    body = client_for(personas.owner).get(f"/runs/{runs.c.pk}/").content.decode()
    expected = run_pass_hat_k(run=runs.c, ks=(1, 2))
    assert [point["k"] for point in expected] == [1, 2]
    cells = re.findall(r'<td class="pass-hat" data-pass-hat="(\d+)">([^<]+)</td>'
                       r'<td class="pass-hat">([^<]+)</td>', body)
    assert cells == [(str(point["k"]), f"{point['value']:.4f}",
                      f"{point['low']:.4f} – {point['high']:.4f}") for point in expected]
    assert cells[1][1] == "0.0000"
    assert "the chance that all k samples pass" in body
    (curve,) = _chart_data(body)["curves"]
    hat = curve["pass_hat_k"]
    full = run_pass_hat_k(run=runs.c, ks=None)
    assert hat["k"] == [point["k"] for point in full] == [1, 2]
    assert hat["value"] == [round(point["value"], 6) for point in full]
    assert hat["low"] == [round(point["low"], 6) for point in full]
    assert hat["high"] == [round(point["high"], 6) for point in full]
    assert curve["value"][1] == 1.0
    assert hat["value"][1] == 0.0


def test_leaderboard_ranks_by_pass_hat_k_when_asked(personas, steady_and_flaky):
    steady, flaky = steady_and_flaky
    client = client_for(None)
    by_any = client.get(f"/leaderboard/?sort={COLUMN}:10").content.decode()
    assert _models(by_any) == ["flaky", "steady"]
    by_all = client.get(f"/leaderboard/?sort={COLUMN}:10&metric=pass%5Ek").content.decode()
    assert _models(by_all) == ["steady", "flaky"]
    # The headings say which metric.
    assert re.findall(r'data-sort="[^"]+">([^<]+)</a>', by_all) == ["pass^1", "pass^10"]
    assert re.findall(r'data-sort="[^"]+">([^<]+)</a>', by_any) == ["pass@1", "pass@10"]
    assert '<option value="pass^k" selected>' in by_all
    # Sorting by another column keeps the metric.
    links = re.findall(r'<a href="(\?[^"]+)" data-sort=', by_all)
    assert len(links) == 2
    assert all("metric=pass%5Ek" in link for link in links), links


def test_leaderboard_pass_hat_k_numbers_are_the_estimators(personas, steady_and_flaky):
    steady, flaky = steady_and_flaky
    board = build_leaderboard(runs=[flaky, steady], metric="pass^k", sort=f"{COLUMN}:10")
    cells = {row.label: row.cells for row in board.rows}
    for run, counts in ((steady, [(10, 10), (10, 0)]), (flaky, [(10, 9), (10, 9)])):
        for k in (1, 10):
            cell = cells[run.name][(COLUMN, k)]
            mean = sum(pass_hat_k(n, c, k) for n, c in counts) / len(counts)
            assert cell.value == pytest.approx(mean, abs=1e-12)
            # The same interval as the run's own pass^k (same counts, same bootstrap).
            (point,) = run_pass_hat_k(run=run, ks=(k,))
            assert (cell.low, cell.high) == pytest.approx((point["low"], point["high"]))
    assert cells["flaky"][(COLUMN, 10)].value == 0.0
    assert cells["steady"][(COLUMN, 10)].leader
    # 0.5 against 0 on two problems: the paired bootstrap of per-problem pass^10 cannot
    # exclude 0 (one problem differs), so the two are tied, as pass@k's rule says.
    flaky_cell = cells["flaky"][(COLUMN, 10)]
    assert flaky_cell.method == "paired"
    assert flaky_cell.diff_low is not None
    assert flaky_cell.diff_high is not None
    assert flaky_cell.diff_low <= 0.0 <= flaky_cell.diff_high
    # pass@k's board on the same runs leads with flaky instead.
    plain = build_leaderboard(runs=[flaky, steady], sort=f"{COLUMN}:10")
    assert {row.label: row.cells[(COLUMN, 10)].leader for row in plain.rows} == {
        "flaky": True, "steady": False}


@pytest.mark.parametrize("value", ["pass@1", "pass%5E", "all", "<b>"])
def test_a_bad_metric_is_a_400_naming_it(personas, runs, value):
    for path in ("/leaderboard/", "/teams/lab/leaderboard/"):
        response = client_for(personas.owner).get(f"{path}?metric={value}")
        assert response.status_code == 400
        body = response.content.decode()
        assert "metric" in body
        assert "<b>" not in body


def test_json_export_carries_pass_hat_k_beside_pass_at_k(personas, runs):
    response = client_for(personas.owner).get(f"/runs/{runs.c.pk}/export/matrix.json")
    assert response.status_code == 200
    streamed: Any = response
    header = json.loads(b"".join(streamed.streaming_content))["run"]
    assert [point["k"] for point in header["pass_at_k"]] == [1, 2]
    assert header["pass_hat_k"] == run_pass_hat_k(run=runs.c, ks=None)
    assert [point["value"] for point in header["pass_hat_k"]] == [0.5, 0.0]
