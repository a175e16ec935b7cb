"""Adding a language is one module: a toy language, defined and registered only here,
reaches the dataset import, the upload form, the problem browser, the sanitizer, the
code highlighting, the self-check's stub and the language check of uploads, and leaves
nothing behind when it is taken out again."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.test import Client

from evaluator import language_check
from evaluator.datasets import load_dataset
from evaluator.datasets.signatures import function_names
from evaluator.language_check import check_language
from evaluator.languages import Language, LanguageError, PreparedJob, register, unregister
from evaluator.languages.registry import language_names
from evaluator.languages.syntax_check import Answer, RunJob
from evaluator.records import Problem, RunOptions, Sample
from evaluator.samples import read_samples
from evaluator.sanitize import sanitize
from evaluator.selfcheck import _sample as selfcheck_sample
from tests.webapp.support import client_for
from webapp.benchmarks.highlight import code_tokens
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import


class Toy(Language):
    name = "toy"
    display_name = "Toy Lisp"
    aliases = ("toylang",)
    fence_tags = ("tl",)
    order = 5
    """Before Python, so that the lists below are in the registry's order, not by name."""
    pygments_lexer = "clojure"
    function_pattern = r"^\(defn\s+([\w-]+)"
    syntax_check = "toy-reader"
    selfcheck_body = "(throw \"selfcheck stub\"))\n"

    def prepare(self, problem: Problem, sample: Sample, options: RunOptions) -> PreparedJob:
        raise LanguageError("the toy language has no runner")

    def build(self, problem: Problem, sample: Sample, options: RunOptions) -> ToyProgram:
        return ToyProgram(self.prefix(problem, options) + sample.completion)

    def check_syntax(self, sources: list[str], run: RunJob) -> list[Answer]:
        return [_balanced(source) for source in sources]


@dataclass(frozen=True)
class ToyProgram:
    program: str


def _balanced(source: str) -> bool:
    """The toy language's whole grammar: its brackets close in order."""
    stack: list[str] = []
    for char in source:
        if char in "([":
            stack.append(")" if char == "(" else "]")
        elif char in ")]" and (not stack or stack.pop() != char):
            return False
    return not stack


def _toy_problem(number: int, name: str, canonical: str = "") -> Problem:
    return Problem(dataset="multipl-e", task_id=f"HumanEval/{number}", language="toy",
                   natural_language="en", prompt=f"(defn {name} [x]\n", entry_point=name,
                   canonical_solution=canonical, test="")


@pytest.fixture
def toy() -> Iterator[type[Toy]]:
    register(Toy)
    yield Toy
    unregister("toy")


@pytest.fixture
def toy_dataset(db: None, toy: type[Toy], tmp_path: Path) -> Dataset:
    """Two problems in MultiPL-E's layout, whose file and records spell it `toylang`."""
    path = tmp_path / "humaneval-toylang.jsonl"
    records = [
        {"name": "HumanEval_0_has_close_elements", "language": "toylang",
         "prompt": "(defn has_close_elements [numbers threshold]\n",
         "tests": "(assert (has_close_elements [1.0 1.1] 0.5))\n"},
        {"name": "HumanEval_2_truncate_number", "language": "toylang",
         "prompt": "(defn truncate_number [number]\n",
         "tests": "(assert (= (truncate_number 3.5) 0.5))\n"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return dataset_import(loaded=load_dataset(path=path), source=str(path)).dataset


def test_a_dataset_and_generations_in_the_toy_language_are_read(toy_dataset, tmp_path):
    assert (toy_dataset.key, toy_dataset.language) == ("multipl-e/toy/en", "toy")
    problems = list(load_dataset(path=Path(toy_dataset.source)).problems)
    path = tmp_path / "samples.jsonl"
    path.write_text('{"task_id": "TOYLANG/2", "completion": "(- number 3))"}\n',
                    encoding="utf-8")
    parsed = read_samples(path, problems)
    assert parsed.ok, parsed.issues
    assert [s.task_id for s in parsed.samples] == ["HumanEval/2"]


def test_the_upload_form_offers_the_toy_language(personas, humaneval, toy_dataset):
    body = client_for(personas.owner).get("/runs/new/").content.decode()
    groups = re.findall(r'<optgroup label="([^"]+)">(.*?)</optgroup>', body, re.S)
    assert [label for label, _ in groups] == ["Toy Lisp", "Python"]
    assert f'<option value="{toy_dataset.pk}"' in groups[0][1]
    assert "multipl-e/toy/en (2 problems" in groups[0][1]


def _language_options(client: Client) -> list[tuple[str, str]]:
    """(value, label) of each option of the problem list's language filter."""
    body = client.get("/problems/").content.decode()
    select = body[body.index('<select name="language">'):]
    select = select[:select.index("</select>")]
    return re.findall(r'<option value="(\w+)" >([^<]+)</option>', select)


def test_the_problem_browser_lists_the_toy_language(personas, humaneval, toy_dataset):
    client = client_for(personas.owner)
    assert _language_options(client) == [("toy", "Toy Lisp"), ("python", "Python")]
    chosen = client.get("/problems/?language=toy")
    assert chosen.status_code == 200
    rows = re.findall(r'<a href="/problems/(\d+)/">HumanEval/\d+</a>', chosen.content.decode())
    assert rows == ["0", "2"]


def test_the_sanitizer_keeps_the_toy_languages_fences(toy):
    problem = Problem(dataset="multipl-e", task_id="HumanEval/0", language="toy",
                      natural_language="en", prompt="(defn f []\n", entry_point="f",
                      canonical_solution="", test="")
    raw = "Some notes:\n```text\nnot code\n```\nThe code:\n```TL\n(+ 1 2))\n```\nDone."
    assert sanitize(raw, problem) == ("(+ 1 2))\n", ("extracted the code from a markdown fence",))
    unregister("toy")
    # Unknown again: no tag is the toy language's, and the first block is taken.
    assert sanitize(raw, problem)[0] == "not code\n"


def test_the_toy_language_finds_its_functions_and_is_highlighted(toy):
    assert function_names("toylang", "(defn has-close [xs]\n  (defn inner [] 1))\n") == [
        "has-close"]
    tokens = code_tokens('(defn f [x] "s")', "toy")
    assert "".join(t.text for t in tokens) == '(defn f [x] "s")'
    assert {"k", "s"} <= {t.css for t in tokens}, "Pygments' Clojure lexer coloured it"
    unregister("toy")
    assert function_names("toy", "(defn f [x]\n") == []
    assert {t.css for t in code_tokens('(defn f [x] "s")', "toy")} == {""}


def test_the_selfcheck_stubs_a_toy_problem_with_the_toy_body(toy):
    assert selfcheck_sample(_toy_problem(0, "f")).completion == '(throw "selfcheck stub"))\n'
    assert selfcheck_sample(_toy_problem(0, "f", canonical="x)\n")).completion == "x)\n"


def test_uploads_in_the_toy_language_are_checked_by_its_front_end(toy, monkeypatch):
    calls: list[int] = []
    own = Toy.check_syntax
    monkeypatch.setattr(Toy, "check_syntax", lambda self, sources, run: calls.append(
        len(sources)) or own(self, sources, run))
    monkeypatch.setattr(language_check, "_cache", {})
    assert language_check.front_end("TOYLANG") == "toy-reader"
    assert language_check._checkable()[0] == "toy"
    problems = [_toy_problem(0, "f"), _toy_problem(1, "g")]
    samples = [Sample(task_id=p.task_id, index=0, raw="", completion=completion)
               for p, completion in zip(problems, ["(+ x 1))\n", "(* x [2]))\n"],
                                        strict=True)]
    verdict = check_language(problems, samples)
    assert (verdict.checked, dict(verdict.parses), verdict.fits) == (2, {"toy": 2}, True)
    assert calls == [2]
    unregister("toy")
    assert language_check.front_end("toy") is None
    assert "toy" not in language_check._checkable()


def test_a_removed_language_leaves_nothing_behind(personas, humaneval, toy_dataset):
    unregister("toy")
    assert "toy" not in language_names()
    # Its dataset is still stored: shown by its bare name, after the known languages.
    assert _language_options(client_for(personas.owner)) == [
        ("python", "Python"), ("toy", "toy")]
