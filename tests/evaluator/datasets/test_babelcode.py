"""BabelCode's HumanEval questions: the prompt, the per-assertion tests, the fixes file,
layout detection, the catalogue download of both files, and the real 164 problems."""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from evaluator.datasets import DatasetError, detect_layout, load_dataset
from evaluator.datasets.babelcode import load_babelcode
from evaluator.datasets.catalogue import HashMismatch, download_entry, load_catalogue
from evaluator.engine import Engine, EngineConfig
from evaluator.records import Problem, Sample
from evaluator.selfcheck import selfcheck
from tests.dataset_mirror import FIXTURES, fixture_mirror, serving, write_catalogue

FOLDER = FIXTURES / "babelcode"
QUESTIONS = FOLDER / "human_eval_questions.jsonl"
FIXES = FOLDER / "human_eval.jsonl"


def _alone(tmp_path: Path) -> Path:
    """The fixture questions in a folder of their own, without the fixes beside them."""
    target = tmp_path / "alone" / QUESTIONS.name
    target.parent.mkdir()
    shutil.copyfile(QUESTIONS, target)
    return target


def _docstring(problem: Problem) -> str | None:
    tree = ast.parse(problem.prompt + "    pass\n")
    function = next(node for node in tree.body
                    if isinstance(node, ast.FunctionDef) and node.name == problem.entry_point)
    return ast.get_docstring(function)


def _outcomes(problem: Problem, completion: str) -> list[tuple[str, str | None]]:
    """(status, message) of each test the real evaluator reports for `completion`."""
    sample = Sample(task_id=problem.task_id, index=0, raw=completion, completion=completion)
    with Engine(EngineConfig(backend="none", workers=1, cache=None, dedup=False)) as engine:
        results = [event["result"] for event in engine.evaluate({problem.task_id: problem},
                                                                [sample])
                   if event["type"] == "sample_finished"]
    return [(test.status, test.message) for test in results[0].tests]


def test_prompt_is_the_header_with_the_text_as_docstring():
    dataset = load_dataset(path=QUESTIONS)
    assert (dataset.key, dataset.layout, len(dataset)) == ("babelcode/python/en", "babelcode", 3)
    first = dataset.get("HumanEval/0")
    assert first is not None
    assert first.prompt == (
        "from typing import List\n\n\n"
        "def count_upper(word: str) -> int:\n"
        '    """\n'
        "    Count the capital letters of word.\n"
        "    >>> count_upper('aBC')\n"
        "    2\n"
        '    """\n')
    assert first.canonical_solution == "    return sum(1 for letter in word if letter.isupper())\n"
    assert (first.entry_point, first.source_id, first.language) == ("count_upper", "0", "python")
    # A helper before the entry function stays in the prompt; a signature over two lines
    # is kept whole; backslashes and triple quotes in the text are escaped, so the
    # docstring's value is the text itself.
    second = dataset.get("HumanEval/1")
    assert second is not None
    assert second.prompt.startswith('def width(text):\n    """Length of text."""\n')
    assert "def pad_to(text: str,\n           size: int) -> str:\n" in second.prompt
    assert _docstring(second) == (
        'Pad text with spaces to size; a backslash \\ and """ stay as written.')
    assert second.canonical_solution == "    return text + ' ' * (size - width(text))\n"


def test_tests_are_check_functions_reporting_each_assertion():
    dataset = load_dataset(path=QUESTIONS)
    first = dataset.get("HumanEval/0")
    assert first is not None
    assert first.test == ("def check(candidate):\n"
                          "    assert count_upper('aBC') == 2\n"
                          "    assert count_upper('') == 0\n"
                          "    assert count_upper(\n"
                          "        'XYZ') == 3\n")
    # Through the real evaluator: one outcome per assertion, and a wrong body fails
    # exactly the assertions it gets wrong.
    assert [status for status, _ in _outcomes(first, first.canonical_solution)] == [
        "passed"] * 3
    wrong = _outcomes(first, "    return len(word)\n")
    assert [status for status, _ in wrong] == ["failed", "passed", "passed"]
    # A multi-line string of the test keeps its text: only code lines move in.
    second = dataset.get("HumanEval/1")
    assert second is not None
    assert "    note = '''two\nlines'''\n" in second.test
    assert all(status == "passed" for status, _ in _outcomes(second, second.canonical_solution))


def test_the_fixes_beside_the_questions_are_applied_and_recorded():
    dataset = load_dataset(path=QUESTIONS)
    fixed = dataset.get("HumanEval/2")
    assert fixed is not None
    # The fix renames the function (as BabelCode's do for four problems) and replaces its
    # wrong test; the file lists the id twice, merged in order.
    assert fixed.entry_point == "double"
    assert fixed.prompt.startswith("def double(n):\n")
    assert _docstring(fixed) == "Return n doubled.\n>>> double(3)\n6"
    assert fixed.test == (
        "def check(candidate):\n    assert double(2) == 4\n    assert double(-1) == -2\n")
    assert fixed.extra["babelcode_fix"] == {
        "fields": ["entry_fn_name", "solution", "testing_code", "text"],
        "file": "human_eval.jsonl",
        "version": hashlib.sha256(FIXES.read_bytes()).hexdigest()[:16]}
    assert fixed.extra["fixes"]
    assert "fixes" not in dataset.problems[0].extra
    assert [status for status, _ in _outcomes(fixed, fixed.canonical_solution)] == [
        "passed", "passed"]
    # The version is the questions file's own, the one the catalogue pins.
    assert dataset.version == hashlib.sha256(QUESTIONS.read_bytes()).hexdigest()[:16]


def test_questions_alone_are_the_unfixed_variant(tmp_path):
    alone = _alone(tmp_path)
    unfixed = load_dataset(path=alone)
    assert unfixed.key == "babelcode/python/en/unfixed"
    original = unfixed.get("HumanEval/2")
    assert original is not None
    assert original.entry_point == "twice"
    assert "babelcode_fix" not in original.extra
    # The shipped test of that problem is wrong (twice(2) == 5): the fix is needed.
    assert [status for status, _ in _outcomes(original, original.canonical_solution)] == [
        "failed"]
    # The fixes can be named wherever they are.
    named = load_babelcode(alone, fixes=FIXES)
    assert named.key == "babelcode/python/en"
    beside = load_dataset(path=QUESTIONS)
    assert [(p.prompt, p.test, p.entry_point, p.extra) for p in named.problems] == [
        (p.prompt, p.test, p.entry_point, p.extra) for p in beside.problems]


def test_fixes_that_do_not_fit_are_refused(tmp_path):
    alone = _alone(tmp_path)
    fixes = tmp_path / "fixes.jsonl"
    fixes.write_text(json.dumps({"id": "9", "testing_code": "assert True"}) + "\n")
    with pytest.raises(DatasetError, match=r"fixes for ids \['9'\]"):
        load_babelcode(alone, fixes=fixes)
    fixes.write_text(json.dumps({"id": "1", "prompt": "x"}) + "\n")
    with pytest.raises(DatasetError, match=r"fixes.jsonl:1: a fix may replace .*'prompt'"):
        load_babelcode(alone, fixes=fixes)


def test_a_solution_without_its_entry_function_is_refused(tmp_path):
    path = tmp_path / QUESTIONS.name
    record = json.loads(QUESTIONS.read_text().splitlines()[0])
    path.write_text(json.dumps({**record, "entry_fn_name": "missing"}) + "\n")
    with pytest.raises(DatasetError, match=r":1: solution defines no top-level function missing"):
        load_dataset(path=path)


def test_layout_is_detected_by_name_and_by_fields(tmp_path):
    assert detect_layout(QUESTIONS) == "babelcode"
    renamed = tmp_path / "questions.jsonl"
    shutil.copyfile(QUESTIONS, renamed)
    assert detect_layout(renamed) == "babelcode"
    assert load_dataset(path=renamed).key == "babelcode/python/en/unfixed"
    # The fixes file alone is no dataset.
    with pytest.raises(DatasetError, match="unknown dataset layout"):
        detect_layout(FIXES)


def test_catalogue_downloads_the_fixes_beside_the_questions(tmp_path):
    root = fixture_mirror(tmp_path / "mirror")
    entries = load_catalogue(write_catalogue(root, tmp_path / "catalogue.toml",
                                             upstream="https://example.invalid/data"))
    entry = next(e for e in entries if e.key == "babelcode/python/en")
    assert entry.importable
    assert [c.path for c in entry.companions] == ["babelcode/human_eval.jsonl"]
    assert entry.total_size == QUESTIONS.stat().st_size + FIXES.stat().st_size
    seen: list[tuple[int, int]] = []
    with serving(root) as mirror, download_entry(entry, base_url=mirror.url,
                                                 progress=lambda *a: seen.append(a)) as path:
        loaded = load_dataset(path=path, layout=entry.layout)
        assert (loaded.key, len(loaded), loaded.version) == (
            entry.key, entry.records, entry.version)
        assert loaded.problems[2].extra["babelcode_fix"]["fields"]
        assert mirror.requests == [entry.path, "babelcode/human_eval.jsonl"]
    assert seen[0] == (0, entry.total_size)
    assert seen[-1] == (entry.total_size, entry.total_size)
    assert [received for received, _ in seen] == sorted(received for received, _ in seen)
    # A companion that changed is refused like the main file.
    (root / "babelcode/human_eval.jsonl").write_text("{}\n")
    with serving(root) as mirror, pytest.raises(HashMismatch, match="human_eval.jsonl"), \
            download_entry(entry, base_url=mirror.url):
        pass


def test_the_real_questions_and_fixes(shared_dir):
    # The 164 questions with BabelCode's 38 fix records (37 problems): every canonical
    # solution passes its own tests once the registry's patches of six defects of the
    # fixes are applied, and without them only those six fail, each explained.
    path = shared_dir / "datasets" / "babelcode" / "human_eval_questions.jsonl"
    if not (path.is_file() and path.with_name("human_eval.jsonl").is_file()):
        pytest.skip(f"BabelCode's questions and fixes not found in {path.parent}")
    dataset = load_dataset(path=path)
    assert (dataset.key, len(dataset)) == ("babelcode/python/en", 164)
    assert [p.task_id for p in dataset.problems] == [f"HumanEval/{n}" for n in range(164)]
    assert sum("babelcode_fix" in p.extra for p in dataset.problems) == 37
    renamed = {p.task_id: p.entry_point for p in dataset.problems
               if "entry_fn_name" in p.extra.get("babelcode_fix", {}).get("fields", ())}
    assert renamed == {"HumanEval/23": "get_string_length", "HumanEval/120": "k_maximum_elements",
                       "HumanEval/121": "sum_odd_in_even_position",
                       "HumanEval/152": "compare_guess"}
    with Engine(EngineConfig(backend="none", workers=2, cache=None, dedup=False)) as engine:
        patched = selfcheck(dataset, engine, patched=True, retry=False)
        assert (len(patched), patched.summary().passed) == (0, 164), patched.text()
        shipped = selfcheck(dataset, engine, patched=False, retry=False)
    assert sorted(f.task_id for f in shipped) == [
        "HumanEval/107", "HumanEval/155", "HumanEval/20", "HumanEval/32", "HumanEval/8",
        "HumanEval/87"]
    assert shipped.unexplained == []
