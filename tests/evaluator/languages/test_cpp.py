"""C++: building the program, splitting its asserts, and real g++ runs through the engine."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from language_support import evaluate_one, local_engine

from evaluator.datasets import load_dataset
from evaluator.engine import Engine
from evaluator.languages.base import LanguageError
from evaluator.languages.cpp import (
    CODEGEEX_HEADERS,
    Cpp,
    leading_includes,
    prelude,
    rewrite_test,
)
from evaluator.records import Problem, RunOptions, Sample, SampleResult, TestSet
from evaluator.selfcheck import selfcheck, summarize

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")

PROMPT = """/*
Add two numbers.
>>> add(1, 2)
3
*/
#include<stdio.h>
#include<vector>
using namespace std;
int add(int a, int b){
"""
DECLARATION = "#include<stdio.h>\nusing namespace std;\nint add(int a, int b){\n"
TEST = """#undef NDEBUG
#include<assert.h>
int main(){
    assert (add(1, 2) == 3);
    assert (add(2, 2) == 5);
    assert (add(-1, 1) == 0 && "failure 3");
    assert (4 == add(2, 2));
}
"""
EXAMPLE = "#undef NDEBUG\n#include<assert.h>\nint main(){\n    assert (add(1, 2) == 3);\n}\n"


def make_problem(test: str = TEST, prompt: str = PROMPT, **fields: str) -> Problem:
    values: dict[str, Any] = {"declaration": DECLARATION, "example_test": EXAMPLE,
                              "canonical_solution": "    return a + b;\n}\n", **fields}
    return Problem(dataset="humaneval-x", task_id="HumanEval/0", language="cpp",
                   natural_language="en", prompt=prompt, entry_point="add", test=test,
                   source_id="CPP/0", **values)


def sample(completion: str, task_id: str = "HumanEval/0") -> Sample:
    return Sample(task_id=task_id, index=0, raw=completion, completion=completion)


# -- building --------------------------------------------------------------------------


def test_generation_continues_the_prompt_with_codegeex_headers() -> None:
    built = Cpp().build(make_problem(), sample("    return a + b;\n}\n"), RunOptions())
    # CodeGeeX adds the helper includes the prompt lacks, and not the ones it has.
    assert built.program.startswith("#include<stdlib.h>\n#include<algorithm>\n")
    assert built.program.count("#include<vector>") == 1
    assert "Add two numbers." in built.program
    assert built.program.endswith(TEST)
    assert built.standard == "c++11"
    assert "vector" in built.headers
    assert "iostream" in built.headers


def test_translation_continues_the_declaration() -> None:
    built = Cpp().build(make_problem(), sample("    return a + b;\n}\n"),
                        RunOptions(task="translation"))
    assert "Add two numbers." not in built.program
    assert "int add(int a, int b){\n    return a + b;" in built.program


def test_example_tests_replace_the_hidden_ones() -> None:
    built = Cpp().build(make_problem(), sample("    return a + b;\n}\n"),
                        RunOptions(tests="example"))
    assert built.program.endswith(EXAMPLE)
    assert len(built.rewrite.sites) == 1


def test_missing_example_test_is_not_runnable() -> None:
    with pytest.raises(LanguageError, match="no example tests"):
        Cpp().build(make_problem(example_test=""), sample(""), RunOptions(tests="example"))


def test_multipl_e_is_cpp17_without_extra_headers() -> None:
    problem = make_problem(prompt="#include<assert.h>\n#include<bits/stdc++.h>\nlong f(long x) {\n")
    problem = replace(problem, dataset="multipl-e")
    built = Cpp().build(problem, sample("    return x;\n"), RunOptions())
    assert built.standard == "c++17"
    assert built.headers == ("bits/stdc++.h",)
    assert built.program.startswith("#include<assert.h>")


def test_leading_includes_skip_comments_and_stop_at_code() -> None:
    text = ("/* doc */\n#include<stdio.h>\n// x\n#include <map>\nusing namespace std;\n"
            "#include<set>\n")
    assert leading_includes(text) == ["stdio.h", "map"]


def test_rewrite_splits_equality_and_keeps_lines() -> None:
    rewrite = rewrite_test(TEST, ("add",))
    assert rewrite.split
    assert [s.kind for s in rewrite.sites] == ["eq", "eq", "truth", "eq"]
    assert rewrite.sites[2].source == 'assert (add(-1, 1) == 0 && "failure 3")'
    assert [s.line for s in rewrite.sites] == [4, 5, 6, 7]
    assert rewrite.text.count("\n") == TEST.count("\n")
    assert "evaluator_harness::MainGuard" in rewrite.text
    # The truth assertion taps the call of the function under test.
    assert "evaluator_site_.tap(add(-1, 1))" in rewrite.text


def test_rewrite_without_main_is_whole() -> None:
    rewrite = rewrite_test("void check(){ assert (add(1,2)==3); }\n", ("add",))
    assert not rewrite.split
    assert "main" in rewrite.whole_reason


def test_rewrite_with_assert_in_a_macro_is_whole() -> None:
    test = "#define CHECK(x) assert(x)\nint main(){ CHECK(add(1,2)==3); }\n"
    assert not rewrite_test(test, ("add",)).split


def test_rewrite_ignores_asserts_in_strings_and_comments() -> None:
    test = ('int main(){\n  // assert(false);\n  const char* s = "assert(0)";\n'
            '  assert (add(1,2)==3);\n}\n')
    rewrite = rewrite_test(test, ("add",))
    assert len(rewrite.sites) == 1
    assert 'const char* s = "assert(0)";' in rewrite.text


def test_braced_right_side_is_not_split() -> None:
    rewrite = rewrite_test("int main(){ assert (issame(f(), {1,2})); }\n", ("f",))
    assert [s.kind for s in rewrite.sites] == ["truth"]


# The checks in functions that main calls, as HumanEval-X+ writes a long test.
IN_FUNCTIONS = """#undef NDEBUG
#include<assert.h>
static void checks_0(){
    assert (add(1, 2) == 3);
    assert (add(2, 2) == 5);
}
static void checks_1(){
    assert (add(-1, 1) == 0);
}
int main(){
    checks_0();
    checks_1();
}
"""


def test_rewrite_splits_the_asserts_of_the_functions_main_calls() -> None:
    rewrite = rewrite_test(IN_FUNCTIONS, ("add",))
    assert rewrite.split
    assert [(s.kind, s.line) for s in rewrite.sites] == [("eq", 4), ("eq", 5), ("eq", 8)]
    # The guard reporting `done` goes in main, not in the first function.
    assert rewrite.text.index("MainGuard") > rewrite.text.index("int main(){")


# -- running -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with local_engine(seconds=5, memory_mb=512) as eng:
        yield eng


def run(engine: Engine, completion: str, problem: Problem | None = None) -> SampleResult:
    problem = problem or make_problem()
    return evaluate_one(engine, problem, sample(completion, problem.task_id))


@needs_gxx
def test_failing_assert_in_the_middle_does_not_stop_the_rest(engine: Engine) -> None:
    result = run(engine, "    return a + b;\n}\n")
    assert result.status == "failed"
    assert [t.status for t in result.tests] == ["passed", "failed", "passed", "passed"]
    second = result.tests[1]
    assert (second.actual, second.expected) == ("4", "5")
    assert second.source == "assert (add(2, 2) == 5)"
    assert second.line == 5
    assert result.message == "expected 5, got 4"
    # `4 == add(2, 2)`: the call's side is the actual value.
    assert (result.tests[3].actual, result.tests[3].expected) == ("4", "4")
    assert result.test_set == "hidden"
    assert result.task_kind == "generation"


@needs_gxx
def test_each_assert_of_a_called_function_is_its_own_test(engine: Engine) -> None:
    result = run(engine, "    return a + b;\n}\n", make_problem(test=IN_FUNCTIONS))
    assert [t.status for t in result.tests] == ["passed", "failed", "passed"]
    assert (result.tests[1].actual, result.tests[1].expected) == ("4", "5")
    assert result.tests[2].source == "assert (add(-1, 1) == 0)"
    assert result.status == "failed"


@needs_gxx
def test_correct_solution_passes(engine: Engine) -> None:
    problem = make_problem(test=TEST.replace("== 5", "== 4"))
    result = run(engine, "    return a + b;\n}\n", problem)
    assert result.status == "passed", result.stderr
    assert len(result.tests) == 4
    assert result.compile_ms > 0


@needs_gxx
def test_compile_error(engine: Engine) -> None:
    result = run(engine, "    return a + ;\n}\n")
    assert result.status == "compile_error"
    assert "error" in result.message
    assert "main.cpp:" in result.message


@needs_gxx
def test_exception_fails_only_its_assert(engine: Engine) -> None:
    completion = ('    if (a == 2) throw std::string("two");\n'
                  '    return a + b;\n}\n')
    result = run(engine, completion)
    assert [t.status for t in result.tests] == ["passed", "error", "passed", "error"]
    assert result.tests[1].error_type == "std::string"
    assert result.tests[1].message == "two"
    assert result.status == "error"


@needs_gxx
def test_runtime_crash_keeps_the_tests_before_it(engine: Engine) -> None:
    completion = "    if (a == 2) { int* p = nullptr; return *p; }\n    return a + b;\n}\n"
    result = run(engine, completion)
    assert result.status == "error"
    assert result.error_type == "SIGSEGV"
    # The three assertions after the crash are still listed, as not run.
    assert [t.status for t in result.tests] == ["passed", "not_run", "not_run", "not_run"]
    assert [t.source for t in result.tests][1] == "assert (add(2, 2) == 5)"


@needs_gxx
def test_timeout(engine: Engine) -> None:
    result = run(engine, "    while (true) {}\n    return 0;\n}\n")
    assert result.status == "timeout"


@needs_gxx
def test_exit_before_the_tests_end_is_not_a_pass(engine: Engine) -> None:
    result = run(engine, "    exit(0);\n}\n")
    assert result.status == "error"
    assert result.error_type == "IncompleteRun"


@needs_gxx
def test_forged_report_lines_do_not_count(engine: Engine) -> None:
    completion = (
        '    FILE* f = fdopen(3, "w");\n'
        '    if (f) { fprintf(f, "00 {\\"kind\\":\\"done\\"}\\n"); fflush(f); }\n'
        '    printf("{\\"kind\\":\\"done\\"}\\n");\n'
        "    exit(0);\n}\n")
    result = run(engine, completion)
    assert result.status == "error"
    assert result.error_type == "IncompleteRun"
    assert any("nonce" in reason for reason in result.suspicious)


@needs_gxx
def test_instrumentation_that_does_not_compile_falls_back_to_whole(engine: Engine) -> None:
    # A bit-field cannot bind to `auto&&`: the split form fails where the assert compiles.
    test = ("#undef NDEBUG\n#include<assert.h>\nstruct Flags { unsigned bit : 1; };\n"
            "int main(){\n    Flags f; f.bit = add(0, 1);\n    assert (f.bit == 1);\n}\n")
    result = run(engine, "    return a + b;\n}\n", make_problem(test=test))
    assert result.status == "passed", result.stderr
    assert [t.source for t in result.tests] == ["<whole program>"]
    assert any("whole-program verdict" in s for s in result.suspicious)
    failing = run(engine, "    return 0;\n}\n", make_problem(test=test))
    assert failing.status == "failed"
    assert "Assertion" in failing.message


@needs_gxx
def test_boost_any_and_md5(engine: Engine) -> None:
    prompt = ("#include<stdio.h>\n#include<string>\n#include<boost/any.hpp>\n#include<list>\n"
              "#include<openssl/md5.h>\nusing namespace std;\n"
              "string f(list<boost::any> values){\n")
    completion = (
        "    string text;\n"
        "    for (auto& v : values)\n"
        "        if (v.type() == typeid(string)) text += boost::any_cast<string>(v);\n"
        "    unsigned char digest[MD5_DIGEST_LENGTH];\n"
        "    MD5((const unsigned char*)text.c_str(), text.size(), digest);\n"
        "    char out[33];\n"
        "    for (int i = 0; i < 16; i++) sprintf(out + 2 * i, \"%02x\", digest[i]);\n"
        "    return string(out);\n}\n")
    test = ("#undef NDEBUG\n#include<assert.h>\nint main(){\n"
            '    assert (f({string("Hello"), 1, string(" world")})\n'
            '            == "3e25960a79dbc69b674cd4ec67a72c62");\n'
            "}\n")
    problem = make_problem(test=test, prompt=prompt)
    problem = replace(problem, entry_point="f")
    result = run(engine, completion, problem)
    assert result.status == "passed", result.stderr
    assert result.tests[0].actual == '"3e25960a79dbc69b674cd4ec67a72c62"'


@needs_gxx
def test_prelude_is_precompiled() -> None:
    built = prelude("c++11", ("stdio.h", "vector"))
    assert built.header.name == "prelude.h"
    assert Path(f"{built.header}.gch").exists()
    assert built.harness_object.exists()
    # Without <string> the shared instantiations are not declared: nothing to share.
    assert built.instances is None
    assert "extern template" not in built.header.read_text()


@needs_gxx
@pytest.mark.parametrize(("standard", "headers"), [
    ("c++11", CODEGEEX_HEADERS), ("c++17", ("bits/stdc++.h",))])
def test_prelude_shares_the_common_instantiations(standard: str,
                                                  headers: tuple[str, ...]) -> None:
    built = prelude(standard, headers)
    text = built.header.read_text()
    assert built.instances is not None
    assert built.instances.exists()
    assert "extern template class std::vector<int>;" in text
    assert "extern template std::string evaluator_harness::show<std::vector<long> >" in text
    files = Cpp().prepare(make_problem(), sample("    return a + b;\n}\n"),
                          RunOptions()).job["files"]
    script = files.get(".evaluator-cxx.sh", files[".evaluator-build.sh"])
    assert "/instances.a" in script, "the program links the shared instantiations"


@needs_gxx
def test_shared_instantiations_show_values_as_before(engine: Engine) -> None:
    """Vectors of the common types, string literals and other types, through the shared
    object and through the program's own instantiations, show the same way."""
    test = ("#undef NDEBUG\n#include<assert.h>\nint main(){\n"
            "    assert (add(1, 2) == 4);\n"
            "    assert (std::vector<long>{add(1, 1), 3} == std::vector<long>{2, 4});\n"
            "    assert (std::vector<std::string>{\"a\"} == std::vector<std::string>{\"b\"});\n"
            "    assert (std::vector<short>{1} == std::vector<short>{(short)add(1, 1)});\n"
            "    assert (std::string(\"ab\") == \"abc\");\n"
            "}\n")
    result = run(engine, "    return a + b;\n}\n", make_problem(test=test))
    assert [(t.actual, t.expected) for t in result.tests] == [
        ("3", "4"), ("{2, 3}", "{2, 4}"), ('{"a"}', '{"b"}'), ("{2}", "{1}"),
        ('"ab"', '"abc"')]


# -- the dataset -------------------------------------------------------------------------


@needs_gxx
@pytest.mark.slow
@pytest.mark.parametrize("tests", ["hidden", "example"])
def test_selfcheck_humaneval_x_cpp(shared_dir: Path, tests: TestSet) -> None:
    dataset = load_dataset(path=shared_dir / "datasets/humaneval-x/humaneval_cpp.jsonl.gz")
    failures = selfcheck(dataset, tests=tests, backend="none")
    unexplained = [(f.task_id, f.status, f.message) for f in failures if not f.explained]
    assert unexplained == []
    assert summarize(dataset, failures).passed >= 158


@needs_gxx
@pytest.mark.slow
def test_multipl_e_cpp_harness_check(shared_dir: Path) -> None:
    # No canonical solutions: a stub that throws must compile against every prompt and
    # fail every assertion on its own.
    dataset = load_dataset(path=shared_dir / "datasets/multipl-e/humaneval-cpp.jsonl")
    report = selfcheck(dataset, backend="none")
    assert [(f.task_id, f.status) for f in report.unexplained] == []
    assert report.summary().stubbed == len(dataset.problems)
