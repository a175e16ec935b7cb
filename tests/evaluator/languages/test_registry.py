"""The language registry: every spelling of every language, and what it refuses."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evaluator.datasets.naming import programming_language
from evaluator.languages import (
    Language,
    LanguageError,
    PreparedJob,
    get_language,
    register,
    unregister,
)
from evaluator.languages.registry import (
    canonical_name,
    display_name,
    fence_tags,
    language_names,
    language_rank,
)
from evaluator.records import Problem, RunOptions, Sample
from evaluator.samples import read_samples

REPO_ROOT = Path(__file__).resolve().parents[3]


class _Unrunnable(Language):
    """A language with nothing to run, for what registration refuses."""

    name = "unrunnable"
    display_name = "Unrunnable"

    def prepare(self, problem: Problem, sample: Sample, options: RunOptions) -> PreparedJob:
        raise LanguageError("nothing runs here")


def test_built_in_languages_in_display_order():
    assert language_names() == ("python", "cpp", "java", "js", "go", "rust")
    assert [display_name(n) for n in language_names()] == [
        "Python", "C++", "Java", "JavaScript", "Go", "Rust"]


@pytest.mark.parametrize(("spelling", "name"), [
    ("python", "python"), ("Py", "python"), ("python3", "python"),
    ("C++", "cpp"), ("cc", "cpp"), ("cxx", "cpp"),
    ("Java", "java"),
    ("javascript", "js"), ("node", "js"), ("NodeJS", "js"),
    ("golang", "go"), (" Go ", "go"),
    ("rs", "rust"),
])
def test_every_alias_means_its_language_everywhere(spelling, name):
    assert canonical_name(spelling) == name
    assert get_language(spelling).name == name
    assert programming_language(spelling) == name
    assert spelling.strip().casefold() in fence_tags(name)


@pytest.mark.parametrize("spelling", ["c", "", "cobol", "pythonn", "jsx", "ру"])
def test_other_names_are_no_language(spelling):
    assert canonical_name(spelling) is None
    with pytest.raises(LanguageError, match="known: python, cpp, java, js, go, rust"):
        get_language(spelling)


def test_fence_tags_add_the_languages_own_tags():
    assert {"", "py3", "ipython", "pycon"} <= fence_tags("python")
    assert "c" in fence_tags("cpp")
    assert "jsx" in fence_tags("js")
    assert fence_tags("cobol") == frozenset()


def test_dataset_spellings_outside_the_registry_pass_through():
    assert programming_language("go_test.go") == "go", "MultiPL-E's Go records"
    assert programming_language("Lua") == "lua"


def test_unknown_languages_sort_after_known_ones():
    assert sorted(["zig", "rust", "lua", "python"], key=language_rank) == [
        "python", "rust", "lua", "zig"]


def _cpp_problem() -> Problem:
    return Problem(dataset="humaneval-x", task_id="HumanEval/0", language="cpp",
                   natural_language="en", prompt="int f() {\n", entry_point="f",
                   canonical_solution="", test="")


def test_task_ids_and_babelcode_records_read_every_alias(tmp_path):
    problem = _cpp_problem()
    ids = tmp_path / "ids.jsonl"
    ids.write_text('{"task_id": "CXX/0", "completion": "return 1;}"}\n', encoding="utf-8")
    babelcode = tmp_path / "babelcode.jsonl"
    babelcode.write_text(
        '{"qid": "HumanEval/0", "language": "C++", "code": "int f() { return 2; }"}\n',
        encoding="utf-8")
    for path in (ids, babelcode):
        parsed = read_samples(path, [problem])
        assert parsed.ok, parsed.issues
        assert [s.task_id for s in parsed.samples] == ["HumanEval/0"]


def test_a_wrong_language_in_a_task_id_is_named_by_its_display_name(tmp_path):
    problem = _cpp_problem()
    path = tmp_path / "samples.jsonl"
    path.write_text('{"task_id": "golang/0", "completion": "x"}\n', encoding="utf-8")
    [issue] = read_samples(path, [problem]).errors
    assert issue.code == "language_mismatch"
    assert "it is a Go task id, but the problems are in C++" in issue.message


def test_register_refuses_a_taken_alias():
    class Gopher(_Unrunnable):
        name = "gopher"
        aliases = ("golang",)

    with pytest.raises(ValueError, match="'golang' already names the language 'go'"):
        register(Gopher)
    assert canonical_name("gopher") is None, "nothing was half registered"


@pytest.mark.parametrize("name", ["", "Toy", "toy lang", "2toy", "toy-lang"])
def test_register_refuses_a_bad_name(name):
    bad = type("Bad", (_Unrunnable,), {"name": name})
    with pytest.raises(ValueError, match="name must be lower-case letters"):
        register(bad)


def test_register_refuses_a_class_without_display_name_or_not_a_language():
    nameless = type("Nameless", (_Unrunnable,), {"name": "nameless", "display_name": ""})
    with pytest.raises(ValueError, match="has no display_name"):
        register(nameless)
    with pytest.raises(ValueError, match="not a subclass"):
        register(object)  # type: ignore[arg-type]


def test_register_then_unregister_leaves_no_trace():
    register(_Unrunnable)
    try:
        assert language_names()[-1] == "unrunnable"
        assert isinstance(get_language("Unrunnable"), _Unrunnable)
    finally:
        unregister("unrunnable")
    assert "unrunnable" not in language_names()
    with pytest.raises(LanguageError):
        get_language("unrunnable")
    unregister("unrunnable")  # twice is harmless


def _plugin(tmp_path: Path, entry_points: str, *, decorator: str = "") -> dict[str, str]:
    """A package installed only by its metadata on PYTHONPATH, as pip would leave it."""
    (tmp_path / "toy_plugin.py").write_text(textwrap.dedent(f"""
        from evaluator.languages import Language, LanguageError, register
        {decorator}
        class Toy(Language):
            name = "toy"
            display_name = "Toy"
            aliases = ("toylang",)
            order = 15

            def prepare(self, problem, sample, options):
                raise LanguageError("nothing runs here")
    """), encoding="utf-8")
    info = tmp_path / "toy_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 0.1\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO_ROOT)])}


_SHOW = ("from evaluator.languages.registry import language_names, canonical_name;"
         "print(language_names(), canonical_name('TOYLANG'))")


def test_an_entry_point_adds_a_language_in_every_process(tmp_path):
    env = _plugin(tmp_path, "[evaluator.languages]\ntoy = toy_plugin:Toy\n")
    done = subprocess.run([sys.executable, "-c", _SHOW], env=env, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == (
        "('python', 'toy', 'cpp', 'java', 'js', 'go', 'rust') toy"), done.stderr


def test_a_broken_entry_point_is_logged_and_the_others_still_work(tmp_path):
    env = _plugin(tmp_path, "[evaluator.languages]\ntoy = toy_plugin:NoSuchClass\n")
    done = subprocess.run([sys.executable, "-c", _SHOW], env=env, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "('python', 'cpp', 'java', 'js', 'go', 'rust') None"
    assert "language entry point 'toy' (toy_plugin:NoSuchClass) could not be registered" \
        in done.stderr


def test_a_plugin_that_also_registers_itself_is_loaded_once(tmp_path):
    env = _plugin(tmp_path, "[evaluator.languages]\ntoy = toy_plugin:Toy\n",
                  decorator="@register")
    done = subprocess.run([sys.executable, "-c", _SHOW], env=env, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == (
        "('python', 'toy', 'cpp', 'java', 'js', 'go', 'rust') toy"), done.stderr
    assert "could not be registered" not in done.stderr
