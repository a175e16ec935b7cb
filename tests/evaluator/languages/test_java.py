"""Java: building the program, splitting its checks, and real javac/java runs."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from language_support import evaluate_one, local_engine

from evaluator.datasets import load_dataset
from evaluator.engine import Engine, EngineConfig
from evaluator.languages.base import LanguageError, RunOptions
from evaluator.languages.java import Java, class_names, javatuples, rewrite_test
from evaluator.records import Problem, Sample, SampleResult
from evaluator.selfcheck import selfcheck

needs_java = pytest.mark.skipif(shutil.which("javac") is None, reason="javac is not installed")

PROMPT = """import java.util.*;
import java.lang.*;

class Solution {
    /**
    Add two numbers.
     */
    public int add(int a, int b) {
"""
DECLARATION = ("import java.util.*;\nimport java.lang.*;\n\nclass Solution {\n"
               "    public int add(int a, int b) {\n")
TEST = """public class Main {
    public static void main(String[] args) {
        Solution s = new Solution();
        List<Boolean> correct = Arrays.asList(
                s.add(1, 2) == 3,
                s.add(2, 2) == 5,
                !(s.add(-1, 1) != 0),
                Objects.equals(s.add(2, 2), 4)
        );
        if (correct.contains(false)) {
            throw new AssertionError();
        }
    }
}
"""
EXAMPLE = """public class Main {
    public static void main(String[] args) {
        Solution s = new Solution();
        if (s.add(1, 2) != 3) {
            throw new AssertionError();
        }
    }
}
"""
MULTIPL_E_PROMPT = """import java.util.*;
import java.lang.reflect.*;
import org.javatuples.*;
import java.security.*;
import java.math.*;
import java.io.*;
import java.util.stream.*;
class Problem {
    // Pair up.
    public static Pair<Long, String> pairUp(long x) {
"""
MULTIPL_E_TEST = """    }
    public static void main(String[] args) {
    assert(pairUp((1l)).equals((Pair.with(1l, "1"))));
    assert(pairUp((2l)).equals((Pair.with(2l, "two"))));
    assert pairUp(3l).getValue0() == 3l;
    }

}
"""


def make_problem(test: str = TEST, **fields: str) -> Problem:
    values = {"declaration": DECLARATION, "example_test": EXAMPLE, "prompt": PROMPT,
              "canonical_solution": "        return a + b;\n    }\n}\n", **fields}
    return Problem(dataset="humaneval-x", task_id="HumanEval/0", language="java",
                   natural_language="en", entry_point="add", test=test, source_id="Java/0",
                   **values)


def multipl_e_problem() -> Problem:
    return Problem(dataset="multipl-e", task_id="HumanEval/1", language="java",
                   natural_language="en", prompt=MULTIPL_E_PROMPT, entry_point="pairUp",
                   canonical_solution="", test=MULTIPL_E_TEST, source_id="HumanEval_1_pair_up")


def sample(completion: str, task_id: str = "HumanEval/0") -> Sample:
    return Sample(task_id=task_id, index=0, raw=completion, completion=completion)


# -- building --------------------------------------------------------------------------


def test_generation_and_translation_prefixes() -> None:
    java = Java()
    body = sample("        return a + b;\n    }\n}\n")
    generation = java.build(make_problem(), body, RunOptions())
    translation = java.build(make_problem(), body, RunOptions(task="translation"))
    assert "Add two numbers." in generation.program
    assert "Add two numbers." not in translation.program
    assert generation.program.endswith(TEST)
    assert (generation.file_name, generation.main_class) == ("Main.java", "Main")


def test_example_tests() -> None:
    built = Java().build(make_problem(), sample(""), RunOptions(tests="example"))
    assert built.program.endswith(EXAMPLE)
    assert [s.source for s in built.rewrite.sites] == ["!(s.add(1, 2) != 3)"]
    with pytest.raises(LanguageError):
        Java().build(make_problem(example_test=""), sample(""), RunOptions(tests="example"))


def test_boolean_list_becomes_one_check_per_element() -> None:
    rewrite = rewrite_test(TEST, ("add",))
    assert rewrite.split
    assert [s.source for s in rewrite.sites] == [
        "s.add(1, 2) == 3", "s.add(2, 2) == 5", "!(s.add(-1, 1) != 0)",
        "Objects.equals(s.add(2, 2), 4)"]
    assert [s.kind for s in rewrite.sites] == ["eq", "eq", "list", "eq"]
    assert "correct.contains(false)" not in rewrite.text
    assert rewrite.text.count("\n") == TEST.count("\n")


def test_unchecked_boolean_list_runs_whole() -> None:
    unchecked = TEST.replace("        if (correct.contains(false)) {\n            throw new "
                             "AssertionError();\n        }\n", "")
    rewrite = rewrite_test(unchecked, ("add",))
    assert not rewrite.split
    assert "no check" in rewrite.whole_reason


def test_if_throw_checks_are_negated_and_split() -> None:
    test = ("class Main { public static void main(String[] a) {\n"
            "  for (int i = 0; i < 3; i++) {\n"
            "    if (!s.decode(s.encode(x)).equals(x)) { throw new AssertionError(); }\n"
            "    if (s.add(i, 1) != i + 1) throw new AssertionError(\"bad\");\n"
            "    if (Math.abs(s.poly(xs, 1)) > 1e-4) { throw new AssertionError(); }\n"
            "  }\n} }\n")
    rewrite = rewrite_test(test, ("decode", "add", "poly"))
    assert [s.kind for s in rewrite.sites] == ["eq", "eq", "truth"]
    assert "evaluator_left_.equals(evaluator_right_)" in rewrite.text
    assert "evaluator_left_ == evaluator_right_" in rewrite.text
    assert "!(Math.abs(evaluator_site_.tap(s.poly(xs, 1))) > 1e-4)" in rewrite.text


def test_multipl_e_asserts_and_class_names() -> None:
    built = Java().build(multipl_e_problem(), sample("        return null;\n"), RunOptions())
    assert (built.file_name, built.main_class) == ("Problem.java", "Problem")
    assert built.javatuples
    assert [s.kind for s in built.rewrite.sites] == ["eq", "eq", "eq"]
    assert [s.line for s in built.rewrite.sites] == [3, 4, 5]


def test_class_names_prefer_the_public_class() -> None:
    assert class_names("class Solution {}\n", "public class Main {\n static void main(") == \
        ("Main.java", "Main")


# -- running -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with local_engine(seconds=10, memory_mb=512) as eng:
        yield eng


def run(engine: Engine, completion: str, problem: Problem | None = None) -> SampleResult:
    problem = problem or make_problem()
    return evaluate_one(engine, problem, sample(completion, problem.task_id))


@needs_java
def test_failing_element_in_the_middle_does_not_stop_the_rest(engine: Engine) -> None:
    result = run(engine, "        return a + b;\n    }\n}\n")
    assert result.status == "failed", result.stderr
    assert [t.status for t in result.tests] == ["passed", "failed", "passed", "passed"]
    assert (result.tests[1].actual, result.tests[1].expected) == ("4", "5")
    assert result.tests[1].line == 6
    assert result.message == "expected 5, got 4"


@needs_java
def test_correct_solution_passes_and_example_tests(engine: Engine) -> None:
    problem = make_problem(test=TEST.replace("== 5", "== 4"))
    assert run(engine, "        return a + b;\n    }\n}\n", problem).status == "passed"
    example = Engine(EngineConfig(backend="none", workers=1,
                                  options=RunOptions(tests="example")))
    with example:
        results = [e["result"] for e in example.evaluate(
            {problem.task_id: problem}, [sample("        return a - b;\n    }\n}\n")])
            if e["type"] == "sample_finished"]
    assert results[0].status == "failed"
    assert results[0].test_set == "example"
    assert (results[0].tests[0].actual, results[0].tests[0].expected) == ("-1", "3")


@needs_java
def test_compile_error(engine: Engine) -> None:
    result = run(engine, "        return a + ;\n    }\n}\n")
    assert result.status == "compile_error"
    assert "Main.java:" in result.message


@needs_java
def test_exception_fails_only_its_check(engine: Engine) -> None:
    completion = ("        if (a == 2) throw new IllegalStateException(\"two\");\n"
                  "        return a + b;\n    }\n}\n")
    result = run(engine, completion)
    assert [t.status for t in result.tests] == ["passed", "error", "passed", "error"]
    assert result.tests[1].error_type == "IllegalStateException"
    assert result.tests[1].message == "two"


@needs_java
def test_timeout(engine: Engine) -> None:
    result = run(engine, "        while (true) {}\n    }\n}\n")
    assert result.status == "timeout"


@needs_java
def test_system_exit_is_not_a_pass(engine: Engine) -> None:
    result = run(engine, "        System.exit(0);\n        return 0;\n    }\n}\n")
    assert result.status == "error"
    assert result.error_type == "IncompleteRun"


@needs_java
@pytest.mark.skipif(javatuples() is None, reason="libjavatuples-java is not installed")
def test_multipl_e_with_javatuples(engine: Engine) -> None:
    problem = multipl_e_problem()
    completion = "        return Pair.with(x, String.valueOf(x));\n"
    result = run(engine, completion, problem)
    assert result.status == "failed", result.stderr
    assert [t.status for t in result.tests] == ["passed", "failed", "passed"]
    assert result.tests[1].expected == "[2, two]"


@needs_java
def test_whole_program_when_nothing_is_recognised(engine: Engine) -> None:
    test = ("public class Main {\n    public static void main(String[] args) {\n"
            "        if (new Solution().add(1, 1) == 2) return;\n"
            "        System.exit(3);\n    }\n}\n")
    good = run(engine, "        return a + b;\n    }\n}\n", make_problem(test=test))
    assert good.status == "passed"
    assert [t.source for t in good.tests] == ["<whole program>"]
    bad = run(engine, "        return 0;\n    }\n}\n", make_problem(test=test))
    assert bad.status == "error"


# -- the dataset -------------------------------------------------------------------------


@needs_java
@pytest.mark.slow
def test_selfcheck_humaneval_x_java(shared_dir: Path) -> None:
    dataset = load_dataset(path=shared_dir / "datasets/humaneval-x/humaneval_java.jsonl.gz")
    failures = selfcheck(dataset, backend="none")
    assert [(f.task_id, f.status) for f in failures if not f.explained] == []



@needs_java
@pytest.mark.slow
@pytest.mark.skipif(javatuples() is None, reason="libjavatuples-java is not installed")
def test_multipl_e_java_harness_check(shared_dir: Path) -> None:
    dataset = load_dataset(path=shared_dir / "datasets/multipl-e/humaneval-java.jsonl")
    report = selfcheck(dataset, backend="none")
    assert [(f.task_id, f.status) for f in report.unexplained] == []
