"""Java: building the program, splitting its checks, and real javac/java runs."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from language_support import evaluate_one, local_engine, processes_with

from evaluator.datasets import load_dataset
from evaluator.engine import Engine, EngineConfig
from evaluator.languages.base import LanguageError
from evaluator.languages.java import Java, class_names, javatuples, rewrite_test
from evaluator.records import Problem, RunOptions, Sample, SampleResult
from evaluator.selfcheck import selfcheck
from tests.backends import require_backend

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
    values: dict[str, Any] = {
        "declaration": DECLARATION, "example_test": EXAMPLE, "prompt": PROMPT,
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


# -- the warm compiler ---------------------------------------------------------------------

WARM_CASES = {
    "passes": "        return a + b;\n    }\n}\n",
    "fails": "        return a * b;\n    }\n}\n",
    "does not compile": "        return a + ;\n    }\n}\n",
    # Nested, local and anonymous classes: each its own class file.
    "many classes": ("        class Local { int v() { return a; } }\n"
                     "        Runnable r = new Runnable() { public void run() {} };\n"
                     "        r.run();\n        return new Local().v() + Inner.of(b);\n"
                     "    }\n    static class Inner { static int of(int x) { return x; } }\n"
                     "}\n"),
    # A class named like the harness's package hides it from the rewritten test, which
    # then does not compile: the unchanged program is built instead.
    "breaks the rewrite": "        return a + b;\n    }\n}\nclass evaluator_harness {}\n",
    "exits early": "        System.exit(0);\n        return 0;\n    }\n}\n",
    # Hostile input for the compiler itself: javac's stack overflows.
    "overflows javac": "        return " + "(" * 6000 + "a + b" + ")" * 6000 + ";\n    }\n}\n",
}


def _comparable(result: SampleResult) -> tuple[object, ...]:
    return (result.status, result.error_type, result.message, result.suspicious,
            [(t.status, t.source, t.expected, t.actual, t.line) for t in result.tests])


@needs_java
def test_the_warm_compiler_gives_the_verdicts_of_javac_itself() -> None:
    problem = make_problem(test=TEST.replace("== 5", "== 4"))
    samples = [Sample(task_id=problem.task_id, index=i, raw=text, completion=text)
               for i, text in enumerate(WARM_CASES.values())]
    verdicts = {}
    for warm_compilers in (True, False):
        config = EngineConfig(backend="none", workers=2, warm_compilers=warm_compilers)
        with Engine(config) as engine:
            results = sorted((e["result"] for e in engine.evaluate(
                {problem.task_id: problem}, samples) if e["type"] == "sample_finished"),
                key=lambda r: r.completion_id)
        verdicts[warm_compilers] = results
    for name, warm, cold in zip(WARM_CASES, verdicts[True], verdicts[False], strict=True):
        assert _comparable(warm) == _comparable(cold), name
        assert warm.compile_ms > 0, name
    by_name = dict(zip(WARM_CASES, verdicts[True], strict=True))
    assert by_name["passes"].status == "passed"
    assert by_name["fails"].status == "failed"
    assert by_name["does not compile"].status == "compile_error"
    assert by_name["does not compile"].message.startswith("Main.java:")
    assert by_name["many classes"].status == "passed", by_name["many classes"].stderr
    rebuilt = by_name["breaks the rewrite"]
    assert rebuilt.status == "passed"
    assert [t.source for t in rebuilt.tests] == ["<whole program>"]
    assert any("did not compile" in note for note in rebuilt.suspicious)
    assert by_name["exits early"].error_type == "IncompleteRun"
    assert by_name["overflows javac"].status == "compile_error"
    assert "StackOverflowError" in by_name["overflows javac"].message


@needs_java
def test_the_warm_compiler_is_kept_across_samples() -> None:
    problem = make_problem(test=TEST.replace("== 5", "== 4"))
    samples = [Sample(task_id=problem.task_id, index=i, raw=text,
                      completion=text.replace("a + b", f"a + b + {i} - {i}"))
               for i, text in enumerate([WARM_CASES["passes"]] * 6)]
    others = set(processes_with("evaluator_compiler.Server"))  # other tests' engines
    with Engine(EngineConfig(backend="none", workers=1)) as engine:
        results = [e["result"] for e in engine.evaluate({problem.task_id: problem}, samples)
                   if e["type"] == "sample_finished"]
        servers = set(processes_with("evaluator_compiler.Server")) - others
    assert [r.status for r in results] == ["passed"] * 6
    assert len(servers) == 1, "one warm javac for one worker"
    deadline = time.monotonic() + 3
    while servers & set(processes_with("evaluator_compiler.Server")):
        assert time.monotonic() < deadline, "closing the engine ends the compile service"
        time.sleep(0.05)


@needs_java
def test_a_broken_compile_service_falls_back_to_javac_in_the_job(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from evaluator.languages import java as java_module
    from evaluator.languages.base import CompileService

    def broken(self: Java, limits: object) -> CompileService:
        return CompileService(name="javac", argv=("/nonexistent/java",))

    monkeypatch.setattr(java_module.Java, "compile_service", broken)
    problem = make_problem(test=TEST.replace("== 5", "== 4"))
    samples = [Sample(task_id=problem.task_id, index=i, raw=WARM_CASES["passes"],
                      completion=WARM_CASES["passes"] + "//" + str(i)) for i in range(5)]
    with Engine(EngineConfig(backend="none", workers=1)) as engine:
        results = [e["result"] for e in engine.evaluate({problem.task_id: problem}, samples)
                   if e["type"] == "sample_finished"]
    assert [r.status for r in results] == ["passed"] * 5


@needs_java
@pytest.mark.parametrize("backend", ["bwrap", "gvisor"])
def test_programs_cannot_see_the_compile_service(backend: str) -> None:
    require_backend(backend)
    snoop = ("        ProcessHandle.allProcesses().forEach(p -> System.out.println(\n"
             "            \"PROC \" + p.info().commandLine().orElse(\"?\")));\n"
             "        return a + b;\n    }\n}\n")
    problem = make_problem(test=TEST.replace("== 5", "== 4"))
    with Engine(EngineConfig(backend=backend, workers=1)) as engine:
        result = evaluate_one(engine, problem, sample(snoop))
        # Two sandboxes were started: the program's, and the warm javac's. (Under gVisor
        # the host cannot see the service's process, so ask the engine.)
        sessions = engine._sessions
        assert len(sessions) == 2, "the warm javac was not used"
        assert all(session.starts == 1 for session in sessions)
        assert not engine._service_failures
    assert result.status == "passed", result.stderr
    assert "PROC " in result.stdout
    assert "evaluator_compiler" not in result.stdout
