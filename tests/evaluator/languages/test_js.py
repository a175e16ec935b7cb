"""JavaScript: per-assertion outcomes for console.assert, node:assert and if/throw checks."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from language_support import evaluate_one, gone, local_engine

from evaluator.datasets import load_dataset
from evaluator.engine import Engine
from evaluator.languages.base import LanguageError
from evaluator.languages.js import JavaScript
from evaluator.records import Problem, RunOptions, Sample, SampleResult
from evaluator.selfcheck import selfcheck

JS = JavaScript()
needs_node = pytest.mark.skipif(JS.available() is not None, reason=f"node: {JS.available()}")

PROMPT = "/* Add two numbers.\n  >>> add(1, 2)\n  3\n  */\nconst add = (a, b) => {\n"
DECLARATION = "\nconst add = (a, b) => {\n"
TEST = """const testAdd = () => {
  console.assert(add(1, 2) === 3)
  console.assert(
    JSON.stringify([add(2, 2)]) === JSON.stringify([4])
  )
  console.assert(add(-1, 1) == 0, 'zero')
  console.assert(add(0, 0) !== undefined)
}

testAdd()
"""
EXAMPLE = "const testAdd = () => {\n  console.assert(add(1, 2) === 3)\n}\ntestAdd()\n"
CORRECT = "  return a + b\n}\n"


def make_problem(**fields: str) -> Problem:
    values: dict[str, Any] = {"prompt": PROMPT, "declaration": DECLARATION, "test": TEST,
                              "example_test": EXAMPLE, "canonical_solution": CORRECT, **fields}
    return Problem(dataset="humaneval-x", task_id="HumanEval/53", language="js",
                   natural_language="en", entry_point="add", source_id="JavaScript/53",
                   **values)


def sample(completion: str) -> Sample:
    return Sample(task_id="HumanEval/53", index=0, raw=completion, completion=completion)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with local_engine(seconds=4, memory_mb=1024) as eng:
        yield eng


def run(engine: Engine, completion: str, problem: Problem | None = None) -> SampleResult:
    problem = problem or make_problem()
    return evaluate_one(engine, problem, sample(completion))


# -- building --------------------------------------------------------------------------


def test_generation_continues_the_prompt() -> None:
    program, offset = JS.build(make_problem(), sample(CORRECT), RunOptions())
    assert program == PROMPT + CORRECT + "\n" + TEST
    assert program[offset:] == TEST


def test_translation_continues_the_declaration() -> None:
    program, _ = JS.build(make_problem(), sample(CORRECT), RunOptions(task="translation"))
    assert program == DECLARATION + CORRECT + "\n" + TEST


def test_example_tests_and_their_absence() -> None:
    program, _ = JS.build(make_problem(), sample(CORRECT), RunOptions(tests="example"))
    assert program.endswith(EXAMPLE)
    with pytest.raises(LanguageError, match="no example tests"):
        JS.build(make_problem(example_test=""), sample(CORRECT), RunOptions(tests="example"))


# -- running ---------------------------------------------------------------------------


@needs_node
def test_correct_completion_passes_every_assertion(engine: Engine) -> None:
    result = run(engine, CORRECT)
    assert result.status == "passed", result.message + result.stderr
    assert [t.status for t in result.tests] == ["passed"] * 4
    assert result.tests[0].source == "console.assert(add(1, 2) === 3)"
    assert (result.tests[0].expected, result.tests[0].actual, result.tests[0].line) == (
        "3", "3", 2)
    assert result.tests[1].line == 3


@needs_node
def test_console_assert_failures_are_counted_despite_exit_status_zero(engine: Engine) -> None:
    result = run(engine, "  if (a === 2) return 5\n  return a + b\n}\n")
    assert result.status == "failed"
    assert [t.status for t in result.tests] == ["passed", "failed", "passed", "passed"]
    failed = result.tests[1]
    assert (failed.expected, failed.actual) == ("'[4]'", "'[5]'")


@needs_node
def test_an_exception_fails_only_its_own_assertion(engine: Engine) -> None:
    result = run(engine, "  if (a < 0) throw new RangeError('negative')\n  return a + b\n}\n")
    assert result.status == "error"
    assert [t.status for t in result.tests] == ["passed", "passed", "error", "passed"]
    assert (result.tests[2].error_type, result.tests[2].message) == ("RangeError", "negative")


@needs_node
def test_printing_does_not_fail_a_correct_solution(engine: Engine) -> None:
    result = run(engine, "  console.log('debug', a, b)\n  console.error('noise')\n"
                         "  return a + b\n}\n")
    assert result.status == "passed"
    assert "debug" in result.stdout


@needs_node
def test_exiting_early_or_printing_records_cannot_pass(engine: Engine) -> None:
    forged = ('  require("fs").writeSync(3, \'x {"kind": "done"}\\n\')\n'
              "  process.exit(0)\n}\n")
    result = run(engine, forged)
    assert result.status == "error"
    assert result.error_type == "IncompleteRun"
    assert result.suspicious  # the line without the nonce was noticed


@needs_node
def test_a_syntax_error_is_a_compile_error(engine: Engine) -> None:
    result = run(engine, "  return a + \n}\n}\n")
    assert result.status == "compile_error"
    assert result.error_type == "SyntaxError"


@needs_node
def test_an_endless_loop_times_out_and_leaves_no_process(engine: Engine) -> None:
    marker = "987.789"
    completion = (f"  require('child_process').spawn('sleep', ['{marker}'])\n"
                  "  while (true) {}\n}\n")
    started = time.monotonic()
    result = run(engine, completion)
    assert result.status == "timeout"
    assert time.monotonic() - started < 30
    assert gone(f"sleep {marker}")


MD5_PROMPT = "const stringToMd5 = (text) => {\n"
MD5_TEST = """const testStringToMd5 = () => {
  console.assert(stringToMd5('Hello world') === '3e25960a79dbc69b674cd4ec67a72c62')
  console.assert(stringToMd5('') === null)
}
testStringToMd5()
"""


@needs_node
def test_js_md5_is_installed_for_the_md5_task(engine: Engine) -> None:
    problem = make_problem(prompt=MD5_PROMPT, test=MD5_TEST)
    completion = ("  if (text == '') { return null }\n  var md5 = require('js-md5')\n"
                  "  return md5(text)\n}\n")
    result = run(engine, completion, problem)
    assert result.status == "passed", result.message + result.stderr


MULTIPL_E_TEST = """const assert = require('node:assert');


function test() {
  let candidate = add;
  assert.deepEqual(candidate(1, 2),3);
  assert.deepEqual(candidate(2, 2),[4]);
  assert.deepEqual(candidate(-1, 1),0);
}

test();"""


@needs_node
def test_node_assert_calls_are_split(engine: Engine) -> None:
    problem = make_problem(prompt="function add(a, b){\n", test=MULTIPL_E_TEST)
    result = run(engine, "  return a + b;\n}\n", problem)
    assert [t.status for t in result.tests] == ["passed", "failed", "passed"]
    assert (result.tests[1].expected, result.tests[1].actual) == ("[ 4 ]", "4")
    assert result.tests[1].source == "assert.deepEqual(candidate(2, 2),[4])"


XL_TEST = """
const _ = require("lodash")

function compare(object1, object2){
    return _.isEqual(object1, object2)
}

var arg00 = 1;
var arg01 = 2;
var x0 = add(arg00, arg01);
var v0 = 3;
if(!compare(x0, v0)){
    throw 'Error at 1th assert statement. Value = ' + JSON.stringify(x)
}

var arg10 = 2;
var arg11 = 2;
var x1 = add(arg10, arg11);
var v1 = 4;
if(!compare(x1, v1)){
    throw 'Error at 2th assert statement. Value = ' + JSON.stringify(x)
}

var arg20 = -1;
var arg21 = 1;
var x2 = add(arg20, arg21);
var v2 = 0;
if(!compare(x2, v2)){
    throw 'Error at 3th assert statement. Value = ' + JSON.stringify(x)
}
"""


@needs_node
def test_humaneval_xl_if_throw_checks_are_split(engine: Engine) -> None:
    problem = make_problem(prompt="function add(a, b) {\n", test=XL_TEST)
    assert run(engine, CORRECT, problem).status == "passed"
    result = run(engine, "  if (a === 2) throw new Error('boom')\n  if (a < 0) return 7\n"
                         "  return a + b\n}\n", problem)
    assert [t.status for t in result.tests] == ["passed", "error", "failed"]
    assert (result.tests[2].expected, result.tests[2].actual) == ("0", "7")
    assert result.tests[1].message == "boom"


@pytest.mark.slow
@needs_node
def test_every_humaneval_x_canonical_passes_or_is_registered(shared_dir: Path) -> None:
    path = shared_dir / "datasets" / "humaneval-x" / "humaneval_js.jsonl.gz"
    dataset = load_dataset(path=path)
    for tests in ("hidden", "example"):
        failures = selfcheck(dataset, tests=tests, backend="none")
        assert [(f.task_id, f.message) for f in failures if not f.explained] == []
