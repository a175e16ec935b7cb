"""`datasets build-plus` as a researcher drives it: rebuilding some problems of an earlier
build, files that survive an interrupted write, a broken cache of expected outputs,
progress while validating, and the help text."""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
from pathlib import Path
from typing import Any, cast

import pytest

from evaluator.__main__ import main
from evaluator.datasets import load_dataset
from evaluator.plus.build import build_plus, load_sources, record_flags
from evaluator.plus.command import add_datasets_parser

# -- a fixture of our own: three problems, one of them left out of the JavaScript file --

PLUS = [
    {"task_id": "HumanEval/53", "entry_point": "add", "atol": 0, "contract": "",
     "prompt": "def add(x: int, y: int):\n    \"\"\"Add two numbers.\"\"\"\n",
     "canonical_solution": "    return x + y\n",
     "base_input": [[1, 2], [5, 7]], "plus_input": [[-7, 3]]},
    {"task_id": "HumanEval/27", "entry_point": "flip_case", "atol": 0, "contract": "",
     "prompt": "def flip_case(string: str) -> str:\n    \"\"\"Flip.\"\"\"\n",
     "canonical_solution": "    return string.swapcase()\n",
     "base_input": [["Hello"]], "plus_input": [["aBc"]]},
    # A str where the prompt declares a list: JavaScript cannot take it, so the problem
    # has no kept input and is left out of the file (named in each record's `omitted`).
    {"task_id": "HumanEval/12", "entry_point": "longest", "atol": 0, "contract": "",
     "prompt": "from typing import List\n\n\ndef longest(strings: List[str]):\n"
               "    \"\"\"Longest.\"\"\"\n",
     "canonical_solution": "    return max(strings, key=len) if strings else None\n",
     "base_input": [["ab"]], "plus_input": []},
]

JS = [
    {"task_id": "JavaScript/53", "example_test": "", "test": "",
     "declaration": "\nconst add = (x, y) => {\n", "canonical_solution": "  return x + y;\n};\n"},
    {"task_id": "JavaScript/27", "example_test": "", "test": "",
     "declaration": "\nconst flipCase = (string) => {\n",
     "canonical_solution": "  return string.split('').map((x) => (x.toUpperCase() == x ? "
                           "x.toLowerCase() : x.toUpperCase())).join('');\n};\n"},
    {"task_id": "JavaScript/12", "example_test": "", "test": "",
     "declaration": "\nconst longest = (strings) => {\n",
     "canonical_solution": "  return strings.length ? strings[0] : null;\n};\n"},
]

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        for record in records:
            if "declaration" in record:
                record = {**record, "prompt": record["declaration"]}
            stream.write(json.dumps(record) + "\n")


def _records(path: Path) -> dict[str, dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return {json.loads(line)["task_id"]: json.loads(line) for line in stream if line.strip()}


@pytest.fixture
def sources(tmp_path: Path) -> tuple[Path, Path]:
    plus_dir, x_dir = tmp_path / "plus", tmp_path / "x"
    plus_dir.mkdir()
    x_dir.mkdir()
    for name in ("HumanEvalPlus-Mini.jsonl.gz", "HumanEvalPlus.jsonl.gz"):
        _write(plus_dir / name, PLUS)
    _write(x_dir / "humaneval_js.jsonl.gz", JS)
    return plus_dir, x_dir


def _command(sources: tuple[Path, Path], out: Path, *more: str) -> int:
    plus_dir, x_dir = sources
    return main(["datasets", "build-plus", "--languages", "js", "--out", str(out),
                 "--humanevalplus", str(plus_dir), "--humaneval-x", str(x_dir),
                 "--workers", "1", *more])


def _add_inputs(plus_dir: Path, *inputs: list[int]) -> None:
    """HumanEval+ grows: HumanEval/53 gets more plus inputs, in both sets."""
    known = cast(list[list[int]], PLUS[0]["plus_input"])
    grown = [dict(PLUS[0], plus_input=[*known, *inputs]), *PLUS[1:]]
    for name in ("HumanEvalPlus-Mini.jsonl.gz", "HumanEvalPlus.jsonl.gz"):
        _write(plus_dir / name, grown)


# -- rebuilding some problems ------------------------------------------------------------

def test_rebuilding_some_problems_replaces_them_and_keeps_the_rest(
        sources: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    plus_dir, _ = sources
    out = tmp_path / "out"
    assert _command(sources, out) == 0
    before = _records(out / "humaneval_js.jsonl.gz")
    assert sorted(before) == ["JavaScript/27", "JavaScript/53"]
    assert before["JavaScript/53"]["plus"]["omitted"] == {"HumanEval/12": {"wrong_type": 1}}
    capsys.readouterr()

    _add_inputs(plus_dir, [10, 20], [0, 0])
    assert _command(sources, out, "--tasks", "53") == 0
    assert "js: merged 1 problems into the 3 of " in capsys.readouterr().err
    after = _records(out / "humaneval_js.jsonl.gz")
    assert sorted(after) == ["JavaScript/27", "JavaScript/53"]
    assert after["JavaScript/27"] == before["JavaScript/27"]
    assert after["JavaScript/53"]["plus"]["kept"] == [0, 1, 2, 3, 4]
    assert "add(10, 20)" in after["JavaScript/53"]["test"]
    # The problem left out before is still named as left out, in the file and the report.
    assert after["JavaScript/53"]["plus"]["omitted"] == {"HumanEval/12": {"wrong_type": 1}}
    report = json.loads((out / "report.json").read_text())
    [row] = report["languages"]
    assert (row["problems"], row["covered"], row["kept"]) == (3, 2, 7)
    assert row["merged"] == {"problems": ["HumanEval/53"], "into": 3}
    by_task = {p["task_id"]: p for p in row["per_problem"]}
    assert by_task["HumanEval/53"]["kept"] == 5
    assert by_task["HumanEval/27"]["kept"] == 2
    assert "str where the Python prompt declares List" in \
        by_task["HumanEval/12"]["examples"]["wrong_type"]
    assert load_dataset(path=out / "humaneval_js.jsonl.gz").variant == "plus-mini"


def test_the_cache_keeps_the_answers_of_the_problems_not_rebuilt(
        sources: tuple[Path, Path], tmp_path: Path) -> None:
    plus_dir, x_dir = sources
    out = tmp_path / "out"
    build_plus(plus_dir, x_dir, out, "mini", ["js"], workers=1)
    cache = out / "expected-mini.json.gz"
    written = cache.stat().st_ino
    build_plus(plus_dir, x_dir, out, "mini", ["js"], task_ids=["HumanEval/53"], workers=1)
    # Nothing new was computed: the file (tens of MB for the full set) is not written again.
    assert cache.stat().st_ino == written
    _add_inputs(plus_dir, [10, 20])  # another HumanEval+ file: its answers are computed
    build_plus(plus_dir, x_dir, out, "mini", ["js"], workers=1)
    assert cache.stat().st_ino != written
    with gzip.open(cache, "rt") as stream:
        assert sorted(json.load(stream)["answers"]) == [
            "HumanEval/12", "HumanEval/27", "HumanEval/53"]
    build_plus(plus_dir, x_dir, out, "mini", ["js"], task_ids=["HumanEval/27"], workers=1)
    with gzip.open(cache, "rt") as stream:
        answers = json.load(stream)["answers"]
    assert sorted(answers) == ["HumanEval/12", "HumanEval/27", "HumanEval/53"]
    assert len(answers["HumanEval/53"]) == 4


def test_a_rebuild_of_another_set_or_into_an_empty_directory_holds_those_problems_only(
        sources: tuple[Path, Path], tmp_path: Path) -> None:
    plus_dir, x_dir = sources
    out = tmp_path / "out"
    build_plus(plus_dir, x_dir, out, "mini", ["js"], workers=1)
    [full] = build_plus(plus_dir, x_dir, out, "full", ["js"], task_ids=["HumanEval/53"],
                        workers=1)
    assert full.merged is None
    assert sorted(_records(out / "humaneval_js.jsonl.gz")) == ["JavaScript/53"]
    assert json.loads((out / "report.json").read_text())["set"] == "full"
    [fresh] = build_plus(plus_dir, x_dir, tmp_path / "empty", "mini", ["js"],
                         task_ids=["HumanEval/27"], workers=1)
    assert fresh.merged is None
    assert sorted(_records(tmp_path / "empty" / "humaneval_js.jsonl.gz")) == ["JavaScript/27"]


@needs_node
def test_validating_a_rebuild_checks_those_problems_and_keeps_the_others_results(
        sources: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    plus_dir, x_dir = sources
    # flip_case shouts: both of its inputs fail, and stay flagged when add() is rebuilt.
    shouting = dict(JS[1], canonical_solution="  return string.toUpperCase();\n};\n")
    _write(x_dir / "humaneval_js.jsonl.gz", [JS[0], shouting, JS[2]])
    out = tmp_path / "out"
    assert _command(sources, out, "--validate", "--json") == 0
    first = capsys.readouterr()
    assert json.loads(first.out)["languages"][0]["validation"]["passed"] == 3
    # Progress on stderr, one line per program; stdout stays one JSON document.
    lines = [line for line in first.err.splitlines() if line.startswith("js: validated")]
    assert len(lines) == 2
    assert "js: validated 2/2 problems (HumanEval/" in lines[-1]
    assert any("(HumanEval/53: 3/3 pass)" in line for line in lines)
    assert lines[-1].endswith(" s elapsed")

    # add() breaks for a negative x, and HumanEval/53 gains an input: rebuilt alone.
    _add_inputs(plus_dir, [-1, 1])
    _write(x_dir / "humaneval_js.jsonl.gz",
           [dict(JS[0], canonical_solution="  return x < 0 ? x : x + y;\n};\n"), shouting,
            JS[2]])
    assert _command(sources, out, "--validate", "--tasks", "53") == 0
    second = capsys.readouterr()
    assert "js: validated 1/1 problems (HumanEval/53: 2/4 pass)" in second.err
    assert "HumanEval/27" not in second.err
    validation = json.loads((out / "report.json").read_text())["languages"][0]["validation"]
    assert (validation["problems"], validation["tests"], validation["passed"]) == (2, 6, 2)
    assert validation["by_problem"]["HumanEval/27"]["passed"] == 0
    assert [(f["task_id"], f["input"]) for f in validation["failures"]] == [
        ("HumanEval/27", 0), ("HumanEval/27", 1), ("HumanEval/53", 2), ("HumanEval/53", 3)]
    assert "2/6 33.33%" in second.out  # the table shows the whole build's figures
    records = _records(out / "humaneval_js.jsonl.gz")
    assert [f["input"] for f in records["JavaScript/27"]["plus"]["flagged"]] == [0, 1]
    assert [f["input"] for f in records["JavaScript/53"]["plus"]["flagged"]] == [2, 3]


def test_the_report_keeps_the_rows_of_languages_not_built_again(
        sources: tuple[Path, Path], tmp_path: Path) -> None:
    plus_dir, x_dir = sources
    cpp = {"task_id": "CPP/53", "example_test": "", "test": "",
           "declaration": "#include<stdio.h>\nusing namespace std;\nint add(int x,int y){\n",
           "canonical_solution": "    return x+y;\n}\n"}
    _write(x_dir / "humaneval_cpp.jsonl.gz", [cpp])
    out = tmp_path / "out"
    build_plus(plus_dir, x_dir, out, "mini", ["cpp", "js"], workers=1)
    before = json.loads((out / "report.json").read_text())["languages"]
    build_plus(plus_dir, x_dir, out, "mini", ["js"], task_ids=["HumanEval/27"], workers=1)
    after = json.loads((out / "report.json").read_text())["languages"]
    assert [row["language"] for row in after] == ["js", "cpp"]
    assert after[1] == before[0]


def test_an_older_report_s_validation_is_dropped_with_a_warning_not_mixed(
        sources: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    plus_dir, x_dir = sources
    out = tmp_path / "out"
    build_plus(plus_dir, x_dir, out, "mini", ["js"], workers=1)
    report = json.loads((out / "report.json").read_text())
    # A validation written before the per-problem figures: nothing to take 53's out of.
    report["languages"][0]["validation"] = {
        "problems": 2, "tests": 5, "passed": 5, "passed_patched": 5, "explained": 0,
        "unexplained": 0, "patched_problems": [], "patch_errors": {}, "causes": {},
        "failures": []}
    (out / "report.json").write_text(json.dumps(report))
    capsys.readouterr()
    [js] = build_plus(plus_dir, x_dir, out, "mini", ["js"], task_ids=["HumanEval/53"],
                      workers=1)
    assert js.validation is None
    assert "has no per-problem figures" in capsys.readouterr().err
    assert json.loads((out / "report.json").read_text())["languages"][0]["validation"] is None


# -- files are replaced whole --------------------------------------------------------------

def test_an_interrupted_write_leaves_the_earlier_file_whole(sources: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    plus_dir, x_dir = sources
    out = tmp_path / "out"
    build_plus(plus_dir, x_dir, out, "mini", ["js"], workers=1)
    path = out / "humaneval_js.jsonl.gz"
    before = path.read_bytes()
    # A value JSON cannot write fails the rewrite half-way.
    validation = {"failures": [{"task_id": "HumanEval/53", "input": object(),
                                "cause": "unexplained", "explained_by": []}]}
    with pytest.raises(TypeError):
        record_flags(path, validation)
    assert path.read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == [
        "expected-mini.json.gz", "humaneval_js.jsonl.gz", "report.json"]


# -- a broken cache of expected outputs ----------------------------------------------------

def _broken_caches(version: str) -> dict[str, bytes]:
    whole = gzip.compress(json.dumps({"version": version, "answers": {
        "HumanEval/53": [[True, 3, ""], [True, 12, ""], [True, -4, ""]]}}).encode())
    return {
        "truncated": whole[: len(whole) // 2],
        "not gzip": b"expected outputs, surely",
        "not json": gzip.compress(b'{"version": '),
        "a list": gzip.compress(b"[1, 2]"),
        "answers of another shape": gzip.compress(json.dumps(
            {"version": version, "answers": {"HumanEval/53": [[True]]}}).encode()),
        "answers as a list": gzip.compress(json.dumps(
            {"version": version, "answers": [1, 2]}).encode()),
    }


@pytest.mark.parametrize("kind", ["truncated", "not gzip", "not json", "a list",
                                  "answers of another shape", "answers as a list"])
def test_a_broken_cache_is_no_cache_said_once_and_rewritten(
        sources: tuple[Path, Path], tmp_path: Path, kind: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    plus_dir, _ = sources
    version = load_dataset(path=plus_dir / "HumanEvalPlus-Mini.jsonl.gz").version
    cache = tmp_path / "expected-mini.json.gz"
    cache.write_bytes(_broken_caches(version)[kind])
    found = load_sources(plus_dir, "mini", cache=cache, workers=1)
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 1
    assert str(cache) in warnings[0]
    add = next(s for s in found if s.problem.task_id == "HumanEval/53")
    assert [answer.value for answer in add.answers] == [3, 12, -4]
    with gzip.open(cache, "rt") as stream:
        rewritten = json.load(stream)
    assert rewritten["version"] == version
    assert sorted(rewritten["answers"]) == ["HumanEval/12", "HumanEval/27", "HumanEval/53"]
    # Read back, it is a cache again: no warning the second time.
    load_sources(plus_dir, "mini", cache=cache, workers=1)
    assert "warning" not in capsys.readouterr().err


# -- the help text ---------------------------------------------------------------------------

def test_every_option_has_a_help_line_with_its_default() -> None:
    parser = argparse.ArgumentParser(prog="evaluator")
    add_datasets_parser(parser.add_subparsers())
    datasets = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    build = next(a for a in datasets.choices["datasets"]._actions
                 if isinstance(a, argparse._SubParsersAction)).choices["build-plus"]
    for action in build._actions:
        assert action.help, action.option_strings
        if action.default not in (None, argparse.SUPPRESS) and not action.required:
            assert "default" in action.help, action.option_strings
    text = build.format_help()
    assert "cpp, java, js, go, rust, python" in text
    assert "(default: mini)" in text
    assert "(default: 2)" in text
