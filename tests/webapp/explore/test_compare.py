"""Comparing runs: the paired 2×2 table and its statistics, filters, one problem side by
side with a code-aware diff, and a baseline against several runs."""

from __future__ import annotations

import re

import pytest

from tests.webapp.support import client_for
from webapp.benchmarks.diffs import code_diff


def test_pair_page_counts_the_paired_table_and_tests_it(personas, runs):
    body = client_for(personas.owner).get(f"/compare/{runs.a.pk}/{runs.b.pk}/").content.decode()
    cells = dict(re.findall(r'data-cell="(\w+)">(\d+)</a>', body))
    assert cells == {"both": "1", "only_a": "1", "only_b": "0", "neither": "1"}
    stats = body[body.index('id="paired-stats"'):]
    assert "1.0000" in stats, "one discordant problem: McNemar p = 1"
    assert "0.3333" in stats, "pass@1 difference (1 - 0 + 0) / 3"
    assert "compare-chart-data" in body


@pytest.mark.parametrize(("query", "expected"), [
    ("", ["0", "1", "2"]),
    ("cell=only_a", ["0"]),
    ("cell=neither", ["1"]),
    ("differ=1", ["0"]),
    ("failures=1", ["0", "1"]),
    ("status=error", ["1"]),
])
def test_pair_page_filters(personas, runs, query, expected):
    body = client_for(personas.owner).get(
        f"/compare/{runs.a.pk}/{runs.b.pk}/?{query}").content.decode()
    table = body[body.index('id="pair-rows"'):]
    assert re.findall(r'/problems/(\d+)/">open</a>', table) == expected


@pytest.mark.parametrize("query", ["cell=all_of_them", "differ=maybe", "status=<x>"])
def test_pair_page_refuses_bad_filters(personas, runs, query):
    response = client_for(personas.owner).get(f"/compare/{runs.a.pk}/{runs.b.pk}/?{query}")
    assert response.status_code == 400


def test_pair_page_explains_runs_that_cannot_be_paired(personas, runs, make_run, variants):
    other = make_run([{"task_id": "HumanEval/6", "completion": "    return []\n"}],
                     name="elsewhere", dataset=variants["ru"])
    body = client_for(personas.owner).get(f"/compare/{runs.a.pk}/{other.pk}/").content.decode()
    assert "cannot be paired" in body
    assert "share no task ids" in body


def test_side_by_side_diffs_the_failed_generations(personas, runs):
    client = client_for(personas.owner)
    body = client.get(f"/compare/{runs.a.pk}/{runs.b.pk}/problems/0/").content.decode()
    assert 'class="diff-del"' in body
    assert 'class="diff-ins"' in body
    assert body.count('class="pane"') == 2
    with_canonical = client.get(
        f"/compare/{runs.a.pk}/{runs.b.pk}/problems/0/?canonical=1").content.decode()
    assert 'class="pane canonical"' in with_canonical


def test_side_by_side_shows_tests_row_by_row_and_only_the_differing_ones(personas, runs):
    client = client_for(personas.owner)
    url = f"/compare/{runs.a.pk}/{runs.b.pk}/problems/0/"
    every = client.get(url).content.decode()
    differing = client.get(url + "?tests=differ").content.decode()
    count = lambda body: len(re.findall(r"<tr class=\"(?:differs)?\"><td class=\"num\">", body))  # noqa: E731
    assert count(every) == 7
    assert count(differing) == 4, "A passes all 7 tests, B fails 4 of them"


def test_side_by_side_refuses_a_sample_that_is_not_there(personas, runs):
    client = client_for(personas.owner)
    url = f"/compare/{runs.a.pk}/{runs.b.pk}/problems/0/"
    assert client.get(url + "?sa=5").status_code == 400
    assert client.get(url + "?sa=-1").status_code == 400
    assert client.get(url + "?tests=some").status_code == 400
    assert client.get(f"/compare/{runs.a.pk}/{runs.b.pk}/problems/9999/").status_code == 404


def test_baseline_against_several(personas, runs):
    client = client_for(personas.owner)
    body = client.get(
        f"/compare/baseline/{runs.a.pk}/?with={runs.b.pk},{runs.c.pk}").content.decode()
    table = body[body.index('id="baseline-table"'):]
    assert f'href="/compare/{runs.b.pk}/{runs.a.pk}/?cell=only_b#problems">1</a>' in table
    assert table.count("<tr>") == 3
    assert client.get(f"/compare/baseline/{runs.a.pk}/?with=1,2,3,4,5,6,7,8,9").status_code == 400


def test_index_sends_to_the_stable_urls(personas, runs):
    client = client_for(personas.owner)
    response = client.get(f"/compare/?a={runs.a.pk}&b={runs.b.pk}")
    assert response.status_code == 302
    assert response["Location"] == f"/compare/{runs.a.pk}/{runs.b.pk}/"
    response = client.get(f"/compare/?a={runs.a.pk}&with={runs.b.pk}&with={runs.c.pk}")
    assert response["Location"] == f"/compare/baseline/{runs.a.pk}/?with={runs.b.pk}%2C{runs.c.pk}"
    assert client.get("/compare/").status_code == 200
    assert client.get("/compare/?a=x").status_code == 400


def test_code_diff_can_ignore_whitespace_and_comments():
    a = "def f(x):\n    return x + 1  # add\n"
    b = "def f(x):\n        return x + 1\n"
    plain = code_diff(a, "python", b, "python", ignore_whitespace=False, ignore_comments=False)
    assert not plain.identical
    assert code_diff(a, "python", b, "python", ignore_whitespace=True,
                     ignore_comments=True).identical
    renamed = code_diff("return total\n", "python", "return count\n", "python",
                        ignore_whitespace=True, ignore_comments=True)
    assert (renamed.changed_a, renamed.changed_b) == (1, 1)
    assert '<mark class="diff-del"><span class="">' not in str(renamed.a_html)
    assert "<mark class=\"diff-del\">total</mark>" in str(renamed.a_html)
