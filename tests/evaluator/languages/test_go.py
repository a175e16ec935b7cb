"""Go: building programs like CodeGeeX, per-assertion outcomes, and real compiler runs."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from language_support import evaluate_one, gone, local_engine

from evaluator.datasets import load_dataset
from evaluator.engine import Engine
from evaluator.languages import lexing
from evaluator.languages.base import LanguageError
from evaluator.languages.go import Go
from evaluator.records import Problem, RunOptions, Sample, SampleResult
from evaluator.selfcheck import selfcheck

GO = Go()
needs_go = pytest.mark.skipif(GO.available() is not None, reason=f"Go: {GO.available()}")

IMPORT = 'import (\n    "strings"\n    "os/exec"\n)\n'
PROMPT = IMPORT + "\n// Add two numbers.\n// >>> Add(1, 2)\n// 3\nfunc Add(a int, b int) int {\n"
DECLARATION = "\nfunc Add(a int, b int) int {\n"
SETUP = 'package main\n\nimport (\n    "testing"\n    "github.com/stretchr/testify/assert"\n)\n'
TEST = """func TestAdd(t *testing.T) {
    assert := assert.New(t)
    assert.Equal(3, Add(1, 2))
    assert.Equal(4, Add(2, 2))
    assert.Equal(
        0,
        Add(-1, 1),
    )
}
"""
EXAMPLE = ("func TestAdd(t *testing.T) {\n    assert := assert.New(t)\n"
           "    assert.Equal(3, Add(1, 2))\n}\n")
CORRECT = "    return a + b\n}\n"


def make_problem(**fields: Any) -> Problem:
    values: dict[str, Any] = {
        "prompt": PROMPT, "declaration": DECLARATION, "test": TEST, "example_test": EXAMPLE,
        "canonical_solution": CORRECT, "extra": {"import": IMPORT, "test_setup": SETUP},
    }
    values.update(fields)
    return Problem(dataset="humaneval-x", task_id="HumanEval/53", language="go",
                   natural_language="en", entry_point="Add", source_id="Go/53",
                   **values)


def sample(completion: str, task_id: str = "HumanEval/53") -> Sample:
    return Sample(task_id=task_id, index=0, raw=completion, completion=completion)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with local_engine(seconds=4, memory_mb=1024) as eng:
        yield eng


def run(engine: Engine, completion: str, problem: Problem | None = None) -> SampleResult:
    problem = problem or make_problem()
    return evaluate_one(engine, problem, sample(completion, problem.task_id))


# -- building --------------------------------------------------------------------------


def test_generation_replaces_the_prompt_imports_with_the_used_ones() -> None:
    completion = '    return len(strings.Repeat("x", a)) + b\n}\n'
    built = GO.build(make_problem(), sample(completion), RunOptions())
    assert built.source.startswith("package main; import evaluatorreport")
    assert built.source.count('"strings"') == 1
    # Imported by the prompt but not used by the completion: dropped, as CodeGeeX does.
    assert '"os/exec"' not in built.source
    assert "// Add two numbers." in built.source
    assert built.layout == "testing"
    assert built.tests == ["TestAdd"]


def test_a_package_named_only_in_a_comment_is_not_imported() -> None:
    completion = "    // fmt.Println would be handy here\n    return a + b\n}\n"
    built = GO.build(make_problem(), sample(completion), RunOptions())
    assert '"fmt"' not in built.source


def test_translation_continues_the_declaration() -> None:
    built = GO.build(make_problem(), sample(CORRECT), RunOptions(task="translation"))
    assert "Add two numbers" not in built.source
    assert "func Add(a int, b int) int {\n    return a + b" in built.source


def test_example_tests_replace_the_hidden_ones() -> None:
    built = GO.build(make_problem(), sample(CORRECT), RunOptions(tests="example"))
    assert "Add(2, 2)" not in built.source
    assert "Add(1, 2)" in built.source


def test_missing_example_tests_are_refused_clearly() -> None:
    with pytest.raises(LanguageError, match="no example tests"):
        GO.build(make_problem(example_test=""), sample(CORRECT), RunOptions(tests="example"))


def test_each_assertion_statement_is_guarded_without_moving_lines() -> None:
    problem = make_problem()
    built = GO.build(problem, sample(CORRECT), RunOptions())
    head = GO.head(problem, sample(CORRECT), RunOptions())
    assert built.source.count("\n") == (head + TEST).count("\n")
    assert built.source.count("evaluatorreport.Guard(") == 3
    assert built.test_first_line == head.count("\n") + 1


def test_blanking_hides_brackets_in_strings_and_comments() -> None:
    text = 'f("a(b", `c)`, \'(\') // )\n/* ( */ g()'
    blanked = lexing.blank(text, "go")
    assert len(blanked) == len(text)
    assert lexing.matching_close(blanked, 1) == text.index(") //")
    rust = lexing.blank("let c = '('; let s = r#\"(\"#; fn f<'a>(x: &'a str) {}", "rust")
    assert rust.count("(") == rust.count(")")


# -- running ---------------------------------------------------------------------------


@needs_go
def test_correct_completion_passes_every_assertion(engine: Engine) -> None:
    result = run(engine, CORRECT)
    assert result.status == "passed", result.message + result.stderr
    assert [t.status for t in result.tests] == ["passed"] * 3
    first = result.tests[0]
    assert first.source == "assert.Equal(3, Add(1, 2))"
    assert (first.expected, first.actual, first.line) == ("3", "3", 3)
    assert result.compile_ms > 0
    assert result.language == "go"


@needs_go
def test_a_failing_assertion_does_not_stop_the_later_ones(engine: Engine) -> None:
    result = run(engine, "    if a == 2 {\n        return 5\n    }\n    return a + b\n}\n")
    assert result.status == "failed"
    assert [t.status for t in result.tests] == ["passed", "failed", "passed"]
    failed = result.tests[1]
    assert (failed.expected, failed.actual) == ("4", "5")
    assert failed.error_type == "AssertionError"


@needs_go
def test_a_panic_fails_only_its_own_assertion(engine: Engine) -> None:
    completion = ("    if a == 2 {\n        var xs []int\n        return xs[a]\n    }\n"
                  "    return a + b\n}\n")
    result = run(engine, completion)
    assert result.status == "error"
    assert [t.status for t in result.tests] == ["passed", "error", "passed"]
    assert "index out of range" in (result.tests[1].message or "")


@needs_go
def test_a_compile_error_is_reported_with_the_compiler_message(engine: Engine) -> None:
    result = run(engine, "    return a +\n}\n")
    assert result.status == "compile_error"
    assert "prog.go" in result.message
    assert result.tests == ()


@needs_go
def test_an_endless_loop_times_out_and_leaves_no_process(engine: Engine) -> None:
    marker = "987.123"
    completion = f'    exec.Command("sleep", "{marker}").Start()\n    for {{}}\n}}\n'
    started = time.monotonic()
    result = run(engine, completion)
    assert result.status == "timeout"
    assert time.monotonic() - started < 30
    assert gone(f"sleep {marker}")


@needs_go
def test_printing_or_exiting_early_cannot_pass(engine: Engine) -> None:
    forged = ('    print("PASS\\nok\\n{\\"kind\\": \\"done\\"}\\n")\n    os.Exit(0)\n'
              "    return 0\n}\n")
    problem = make_problem(prompt=PROMPT.replace('"os/exec"', '"os"'),
                           extra={"import": IMPORT.replace('"os/exec"', '"os"'),
                                  "test_setup": SETUP})
    result = run(engine, forged, problem)
    assert result.status == "error"
    assert result.error_type == "IncompleteRun"


XL_PROMPT = ('package main\n\nimport (\n\t"encoding/json"\n\t"reflect"\n)\n'
             "// Add two numbers.\nfunc add (a int, b int) int {\n")
XL_TEST = """

func deepCompare(a interface{}, b interface{}, msg string) bool {
	aJSON, _ := json.Marshal(a)
	bJSON, _ := json.Marshal(b)
	var a2, b2 interface{}
	json.Unmarshal(aJSON, &a2)
	json.Unmarshal(bJSON, &b2)
	if reflect.DeepEqual(a2, b2) {
		return true
	}
	panic(msg)
}

func main() {
	actual_1 := add(1, 2)
	expected_1 := 3
	deepCompare(actual_1, expected_1, "Exception --- test case 0 failed to pass")

	actual_2 := add(2, 2)
	expected_2 := 4
	deepCompare(actual_2, expected_2, "Exception --- test case 1 failed to pass")

	actual_3 := add(-1, 1)
	expected_3 := 0
	deepCompare(actual_3, expected_3, "Exception --- test case 2 failed to pass")

}
"""


def xl_problem() -> Problem:
    return Problem(dataset="humaneval-xl", task_id="HumanEval/53", language="go",
                   natural_language="ru", prompt=XL_PROMPT, entry_point="add",
                   canonical_solution="", test=XL_TEST, source_id="go/19")


@needs_go
def test_humaneval_xl_checks_in_main_are_split(engine: Engine) -> None:
    result = run(engine, CORRECT, xl_problem())
    assert result.status == "passed", result.message + result.stderr
    assert [t.status for t in result.tests] == ["passed"] * 3
    assert result.tests[0].source.startswith("deepCompare(actual_1, expected_1")
    wrong = run(engine, "    if a == 2 {\n        panic(\"boom\")\n    }\n"
                        "    if a < 0 {\n        return 7\n    }\n    return a + b\n}\n",
                xl_problem())
    assert [t.status for t in wrong.tests] == ["passed", "error", "failed"]
    assert (wrong.tests[2].expected, wrong.tests[2].actual) == ("0", "7")


ME_PROMPT = ('package add_test\n\nimport (\n    "testing"\n    "fmt"\n)\n\n'
             "// Add two numbers.\nfunc add(a int, b int) int {\n")
ME_TEST = """func TestAdd(t *testing.T) {
  candidate := add
	type test struct {
		actual   interface{}
		expected interface{}
	}
   tests := []test{
     { actual: candidate(1, 2), expected: 3 },
     { actual: candidate(2, 2), expected: 4 },
     { actual: candidate(-1, 1), expected: 0 },
   }

	for i, tc := range tests {
		t.Run(fmt.Sprintf("test num % d", i), func(t *testing.T) {
			if fmt.Sprintf("%v", tc.actual) != fmt.Sprintf("%v", tc.expected) {
				t.Errorf("expected '%s', got '%s'", tc.expected, tc.actual)
			}
		})
	}
}
"""


def multipl_e_problem() -> Problem:
    return Problem(dataset="multipl-e", task_id="HumanEval/53", language="go",
                   natural_language="en", prompt=ME_PROMPT, entry_point="add",
                   canonical_solution="", test=ME_TEST, source_id="HumanEval_53_add")


@needs_go
def test_multipl_e_table_rows_are_split(engine: Engine) -> None:
    result = run(engine, CORRECT, multipl_e_problem())
    assert result.status == "passed", result.message + result.stderr
    assert [t.status for t in result.tests] == ["passed"] * 3
    wrong = run(engine, "    if a == 2 {\n        panic(\"boom\")\n    }\n"
                        "    if a < 0 {\n        return 7\n    }\n    return a + b\n}\n",
                multipl_e_problem())
    assert [t.status for t in wrong.tests] == ["passed", "error", "failed"]
    assert "boom" in (wrong.tests[1].message or "")
    assert (wrong.tests[2].expected, wrong.tests[2].actual) == ("0", "7")


@needs_go
def test_the_toolchain_is_usable_read_only() -> None:
    tools = GO._toolchain()
    for directory in (tools.lib_dir, tools.std_dir):
        assert directory.is_dir()
        assert os.stat(directory).st_mode & 0o005 == 0o005  # others may read and enter


@pytest.mark.slow
@needs_go
def test_every_humaneval_x_canonical_passes_or_is_registered(shared_dir: Path) -> None:
    dataset = load_dataset(path=shared_dir / "datasets" / "humaneval-x" / "humaneval_go.jsonl.gz")
    for tests in ("hidden", "example"):
        failures = selfcheck(dataset, tests=tests, backend="none")
        unexplained = [(f.task_id, f.status, f.message) for f in failures if not f.explained]
        assert unexplained == []
