"""The run page (summary, curves, failure breakdown, per-problem table), the sample list,
the sample page and the score permalink."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluator.records import HARNESS_VERSION
from tests.webapp.support import client_for
from webapp.runs.models import Sample
from webapp.runs.reads.char_diffs import char_diff


def _chart_data(body: str) -> dict[str, Any]:
    found = re.search(r'<script id="run-chart-data" type="application/json">(.*?)</script>',
                      body, re.DOTALL)
    assert found is not None
    return json.loads(found.group(1))


def test_run_page_summarises_the_run(personas, runs):
    body = client_for(personas.owner).get(f"/runs/{runs.c.pk}/").content.decode()
    start = body.index('id="run-summary"')
    summary = body[start:body.index("</dl>", start)]
    for text in ("gamma", "humaneval/python/en", "n = 2 per task", "none", "wall_seconds",
                 "memory_mb", HARNESS_VERSION, " s</dd>"):
        assert text in summary, text


def test_run_page_hands_the_curve_with_its_band_and_overlays_to_the_chart(personas, runs):
    client = client_for(personas.owner)
    data = _chart_data(client.get(f"/runs/{runs.c.pk}/").content.decode())
    (curve,) = data["curves"]
    assert curve["k"] == [1, 2]
    assert all(low <= value <= high for low, value, high in
               zip(curve["low"], curve["value"], curve["high"], strict=True))
    overlaid = _chart_data(client.get(
        f"/runs/{runs.c.pk}/?overlay={runs.a.pk},{runs.b.pk}").content.decode())
    assert [c["run_id"] for c in overlaid["curves"]] == [runs.c.pk, runs.a.pk, runs.b.pk]


def test_overlay_picker_lists_the_runs_only_when_asked(personas, runs):
    """The picker's list of runs the viewer may see is drawn on request (a link that works
    without JavaScript) or while overlays are drawn, not on every view of the page."""
    client = client_for(personas.owner)
    option = f'<option value="{runs.a.pk}"'
    plain = client.get(f"/runs/{runs.c.pk}/").content.decode()
    assert 'id="overlay-choose"' in plain
    assert 'href="?pick=overlays#curve-title"' in plain
    assert option not in plain
    assert 'id="overlay-select"' not in plain
    for query in ("?pick=overlays", f"?overlay={runs.b.pk}"):
        picking = client.get(f"/runs/{runs.c.pk}/{query}").content.decode()
        assert 'id="overlay-select"' in picking, query
        assert option in picking, query
        assert 'id="overlay-choose"' not in picking
    assert client.get(f"/runs/{runs.c.pk}/?pick=everything").status_code == 400


def test_failure_bars_link_to_the_samples_behind_them(personas, runs):
    client = client_for(personas.owner)
    bars = _chart_data(client.get(f"/runs/{runs.a.pk}/").content.decode())["failures"]
    assert [(bar["label"], bar["count"]) for bar in bars] == [("error: ValueError", 1)]
    listing = client.get(bars[0]["url"]).content.decode()
    assert re.findall(r'<a href="/runs/\d+/samples/\d+/">(HumanEval/\d+)</a>', listing) == [
        "HumanEval/1"]


def test_problem_table_sorts_and_filters(personas, runs):
    client = client_for(personas.owner)

    def tasks(query: str) -> list[str]:
        body = client.get(f"/runs/{runs.a.pk}/?{query}").content.decode()
        table = body[body.index('id="problem-table"'):]
        return re.findall(r"\?task=HumanEval/(\d+)\"", table[:table.index("</table>")])

    assert tasks("") == ["0", "1", "2"]
    assert tasks("sort=task&order=desc") == ["2", "1", "0"]
    assert tasks("sort=pass1&order=asc") == ["1", "0", "2"]
    assert tasks("show=failing") == ["1"]
    assert tasks("status=error") == ["1"]
    assert tasks("q=ValueError") == ["1"]


def test_problem_table_shows_pass_at_n_when_n_is_small(personas, runs):
    body = client_for(personas.owner).get(f"/runs/{runs.c.pk}/").content.decode()
    assert ">pass@2</a></th>" in body


@pytest.mark.parametrize("query", ["sort=evil", "order=sideways", "show=<b>", "status=weird",
                                   "overlay=x", "overlay=999999"])
def test_bad_run_page_parameters_get_a_clear_400(personas, runs, query):
    response = client_for(personas.owner).get(f"/runs/{runs.a.pk}/?{query}")
    assert response.status_code == 400
    assert "<b>" not in response.content.decode()


@pytest.mark.parametrize("path", ["/runs/{a}/", "/runs/{a}/samples/", "/problems/",
                                  "/leaderboard/"])
def test_a_parameter_the_page_does_not_take_gets_a_400_naming_it(personas, runs, path):
    client = client_for(personas.owner)
    url = path.format(a=runs.a.pk)
    assert client.get(url).status_code == 200
    response = client.get(url + "?sotr=task")  # a typo of sort
    assert response.status_code == 400
    assert "sotr" in response.content.decode()


def test_run_page_queries_do_not_grow_with_the_run(personas, runs, make_run):
    from tests.webapp.support import RIGHT_0

    big = make_run([{"task_id": f"HumanEval/{n}", "completion": RIGHT_0}
                    for n in range(12) for _ in range(3)], name="bigger")
    client = client_for(personas.owner)
    counts = []
    for run in (runs.a, big):
        client.get(f"/runs/{run.pk}/")  # warm the session
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"/runs/{run.pk}/").status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_sample_list_filters_and_pages(personas, runs):
    client = client_for(personas.owner)
    body = client.get(f"/runs/{runs.c.pk}/samples/?task=HumanEval/2&status=passed").content
    assert body.decode().count('class="status-row-passed"') == 1
    assert client.get(f"/runs/{runs.c.pk}/samples/?error_type=-").status_code == 200
    for query in ("status=nope", "task=HumanEval/x", "page=0", "page=2", "page=abc",
                  "error_type=" + "e" * 150):
        assert client.get(f"/runs/{runs.c.pk}/samples/?{query}").status_code == 400, query


def test_sample_page_marks_the_differing_characters_of_a_failure(personas, runs):
    sample = Sample.objects.get(run=runs.b, task_id="HumanEval/0")
    body = client_for(personas.owner).get(sample.get_absolute_url()).content.decode()
    assert body.count('class="char-diff"') == 4, "four of seven asserts fail"
    first = body[body.index('class="char-diff"'):]
    assert "<del>Tru</del>e" in first
    assert "<ins>Fals</ins>e" in first
    assert 'id="provenance"' in body
    assert sample.program_hash in body
    assert "humaneval/python/en" in body
    assert HARNESS_VERSION in body
    # The prompt is shown muted before the highlighted completion.
    assert '<span class="prompt"><span class="k">from</span>' in body


def test_sample_page_shows_the_exception_and_raw_generation(personas, make_run):
    run = make_run([{"task_id": "HumanEval/1",
                     "completion": "```python\n    raise ValueError('no')\n```"}], name="fenced",
                   sanitize=True)
    sample = run.samples.get()
    assert sample.sanitized
    body = client_for(personas.owner).get(sample.get_absolute_url()).content.decode()
    assert "ValueError" in body
    assert 'id="raw"' in body
    assert "```python" in body
    assert "As executed (sanitized)" in body


def test_score_permalink(personas, runs):
    client = client_for(personas.owner)
    body = client.get(f"/runs/{runs.c.pk}/scores/pass-at-2/").content.decode()
    assert "pass@2" in body
    assert "verified" in body
    assert runs.c.dataset.version in body
    assert client.get(f"/runs/{runs.c.pk}/scores/pass-at-3/").status_code == 404


def test_char_diff_marks_only_what_differs():
    diff = char_diff("[1, 2, 3]", "[1, 5, 3]")
    assert [(s.text, s.changed) for s in diff.expected] == [("[1, ", False), ("2", True),
                                                             (", 3]", False)]
    assert [(s.text, s.changed) for s in diff.actual] == [("[1, ", False), ("5", True),
                                                           (", 3]", False)]
    long = char_diff("a" * 10_000, "b")
    assert long.truncated
