"""The problem list and the problem page: one HumanEval/N across translations and
programming languages, its defects, and the verdicts of the runs one may see."""

from __future__ import annotations

import re

import pytest

from evaluator.datasets import load_dataset
from tests.webapp.support import client_for
from webapp.benchmarks.docstrings import doc_blocks, docstring_of
from webapp.benchmarks.services import dataset_import


def _rows(body: str) -> list[str]:
    return re.findall(r'<a href="/problems/(\d+)/">HumanEval/\d+</a>', body)


def test_list_filters_by_natural_language_and_language(personas, variants):
    client = client_for(personas.owner)
    arabic = client.get("/problems/?nl=ar").content.decode()
    assert _rows(arabic) == ["0", "1", "2"], "the Arabic fixture has HumanEval/0-2"
    go = client.get("/problems/?language=go").content.decode()
    assert _rows(go) == ["0", "2"]
    both = client.get("/problems/?language=python&nl=ru&dataset=mera-ruhumaneval")
    assert _rows(both.content.decode()) == ["0", "2", "6", "13"]


def test_list_searches_numbers_names_and_prompts(personas, variants):
    client = client_for(personas.owner)
    assert _rows(client.get("/problems/?q=HumanEval/13").content.decode()) == ["13"]
    assert _rows(client.get("/problems/?q=truncate_number").content.decode()) == ["2"]
    assert "2" in _rows(client.get("/problems/?q=decimal part").content.decode())
    assert _rows(client.get("/problems/?q=no-such-text-anywhere").content.decode()) == []


def test_list_shows_pass_rates_of_chosen_runs(personas, runs):
    body = client_for(personas.owner).get(
        f"/problems/?runs={runs.a.pk},{runs.b.pk}").content.decode()
    row = body[body.index('href="/problems/0/"'):body.index('href="/problems/1/"')]
    assert re.findall(r">(\d/\d)</td>", row) == ["1/1", "0/1"], "A passes HumanEval/0, B not"


@pytest.mark.parametrize("query", ["nl=xx", "language=cobol", "dataset=<script>",
                                   "runs=abc", "runs=1,2,3,4,5,6,7,8,9,10,11,12,13",
                                   "q=" + "x" * 300])
def test_bad_list_parameters_get_a_clear_400(personas, humaneval, query):
    response = client_for(personas.owner).get(f"/problems/?{query}")
    assert response.status_code == 400
    body = response.content.decode()
    assert "<script>" not in body
    assert 'role="alert"' in body


def test_problem_page_aligns_translations_with_arabic_right_to_left(personas, variants):
    body = client_for(personas.owner).get("/problems/0/").content.decode()
    arabic = body[body.index('id="doc-ar"'):]
    arabic = arabic[:arabic.index("</article>")]
    assert 'lang="ar" dir="rtl"' in body
    assert "تحقق مما إذا كان" in arabic
    # The example inside the Arabic docstring stays left to right.
    example = r'<pre class="code doc-example" dir="ltr"[^>]*>&gt;&gt;&gt; has_close_elements'
    assert re.search(example, arabic)
    for code in ("en", "ru"):
        assert f'id="doc-{code}"' in body
    assert body.index('id="doc-en"') < body.index('id="doc-ru"') < body.index('id="doc-ar"')


def test_problem_page_has_a_tab_per_language_with_highlighted_code(personas, variants):
    body = client_for(personas.owner).get("/problems/0/").content.decode()
    assert re.findall(r'role="tab" id="tab-(\w+)"', body) == ["python", "go"]
    go_panel = body[body.index('id="lang-go"'):]
    assert '<span class="k">func</span>' in go_panel
    python_panel = body[body.index('id="lang-python"'):body.index('id="lang-go"')]
    for part in ("Prompt", "Canonical solution", "Tests"):
        assert f"<h4>{part}</h4>" in python_panel
    assert '<span class="k">def</span>' in python_panel


def test_problem_page_lists_registry_defects(personas, variants):
    body = client_for(personas.owner).get("/problems/0/").content.decode()
    # The registry records that every HumanEval-X Go test imports testify.
    assert "hx-go-testify" in body


def test_verdict_grid_shows_each_visible_model_per_variant(personas, runs, variants, make_run):
    from tests.webapp.support import RIGHT_0

    arabic = make_run([{"task_id": "HumanEval/0", "completion": "    return True\n"}],
                      name="alpha-ar", model="alpha", dataset=variants["ar"])
    assert arabic.passed_count == 0
    english = make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0}],
                       name="alpha-en-newer", model="alpha")
    body = client_for(personas.owner).get("/problems/0/").content.decode()
    start = body.index('id="verdict-grid"')
    grid = body[start:body.index("</table>", start)]
    alpha = grid[grid.index(">alpha</th>"):]
    alpha = alpha[:alpha.index("</tr>")]
    # Passes in English (its newest run), fails in Arabic.
    assert re.findall(r"verdict-(\w+)", alpha) == ["pass", "fail"]
    assert f"/runs/{english.pk}/samples/?task=HumanEval%2F0" in alpha
    assert "and 1 older run" in alpha


def test_unknown_problem_is_404(personas, humaneval):
    assert client_for(personas.owner).get("/problems/9999/").status_code == 404


def test_docstring_examples_are_split_from_prose():
    prompt = 'def f(x):\n    """ Double it,\n    please.\n\n    >>> f(2)\n    4\n    """\n'
    blocks = doc_blocks(docstring_of(prompt, "python"))
    assert [(b.kind, b.text) for b in blocks] == [("prose", "Double it, please."),
                                                 ("code", ">>> f(2)\n4")]
    go = "// Double it.\n// Double(2) ==> 4\nfunc Double(x int) int {\n"
    assert [b.kind for b in doc_blocks(docstring_of(go, "go"))] == ["prose", "code"]


def test_rust_prompt_shows_the_fn_header_the_solution_continues(personas, humaneval,
                                                                  fixtures_dir):
    # HumanEval-X Rust keeps the `fn` line in `declaration`, not in `prompt`.
    path = fixtures_dir / "datasets" / "humaneval_x" / "humaneval_rust.jsonl"
    dataset_import(loaded=load_dataset(path=path), source=str(path))
    body = client_for(personas.owner).get("/problems/27/").content.decode()
    panel = body[body.index('id="lang-rust"'):]
    prompt = panel[panel.index("<h4>Prompt</h4>"):panel.index("<h4>Canonical solution</h4>")]
    text = re.sub(r"<[^>]+>", "", prompt)
    assert "fn filp_case(s: String) -&gt; String{" in text
    assert "Swap the case of every letter." in text, "the docstring is still shown"
    assert "With the dataset's declaration" in prompt
    python = body[body.index('id="lang-python"'):body.index('id="lang-rust"')]
    assert "With the dataset's declaration" not in python
