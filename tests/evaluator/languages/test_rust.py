"""Rust: building programs like CodeGeeX, shadowed assertion macros, real rustc runs."""

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
from evaluator.languages.rust import Rust
from evaluator.records import Problem, RunOptions, Sample, SampleResult
from evaluator.selfcheck import selfcheck

RUST = Rust()
needs_rust = pytest.mark.skipif(RUST.available() is not None,
                                reason=f"Rust: {RUST.available()}")

USES = ("use std::{slice::Iter, cmp::{max, self}, mem::replace, "
        "collections::{HashSet, HashMap}, ops::Index, ascii::AsciiExt};")
DECLARATION = "\n" + USES + """
use rand::Rng;
use regex::Regex;
use md5;
use std::any::{Any, TypeId};

fn add(a: i32, b: i32) -> i32 {
"""
PROMPT = "\n/*\n Add two numbers.\n*/\n"
TEST = """
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_add() {
        assert_eq!(add(1, 2), 3);
        assert_eq!(add(2, 2), 4);
        assert!(add(-1, 1) == 0);
        assert!(add(0, 0) >= 0, "not negative: {}", add(0, 0));
    }

}
"""
CORRECT = "    return a + b;\n}\n"


def make_problem(**fields: str) -> Problem:
    values: dict[str, Any] = {"prompt": PROMPT, "declaration": DECLARATION, "test": TEST,
                              "canonical_solution": CORRECT, **fields}
    return Problem(dataset="humaneval-x", task_id="HumanEval/53", language="rust",
                   natural_language="en", entry_point="add", source_id="Rust/53", **values)


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


def test_generation_puts_the_declaration_before_the_docstring_prompt() -> None:
    built = RUST.build(make_problem(), sample(CORRECT), RunOptions())
    assert built.source.index("fn add(a: i32, b: i32)") < built.source.index("Add two numbers")
    assert built.crates
    assert 'evaluator_harness::run(&[("test_add", tests::test_add as fn())])' in built.source


def test_translation_continues_the_declaration_alone() -> None:
    built = RUST.build(make_problem(), sample(CORRECT), RunOptions(task="translation"))
    assert "Add two numbers" not in built.source
    assert "fn add(a: i32, b: i32) -> i32 {\n    return a + b;" in built.source


def test_example_tests_are_refused_because_rust_has_none() -> None:
    with pytest.raises(LanguageError, match="ship none"):
        RUST.build(make_problem(), sample(CORRECT), RunOptions(tests="example"))


def test_instrumenting_keeps_line_numbers_and_splits_comparisons() -> None:
    problem = make_problem()
    built = RUST.build(problem, sample(CORRECT), RunOptions())
    driver = built.source.rindex("\nfn main()")
    plain = DECLARATION + PROMPT + CORRECT + "\n" + TEST
    assert built.source[:driver].count("\n") == plain.count("\n")
    assert "__evaluator_assert_eq!(add(-1, 1) , 0)" in built.source
    assert "#[test]" not in built.source
    assert "pub fn test_add" in built.source
    # The code under test keeps the standard assert!: the macros start at the tests.
    assert built.source.index("macro_rules! assert ") > built.source.index("return a + b")


# -- running ---------------------------------------------------------------------------


@needs_rust
def test_correct_completion_passes_every_assertion(engine: Engine) -> None:
    result = run(engine, CORRECT)
    assert result.status == "passed", result.message + result.stderr
    assert [t.status for t in result.tests] == ["passed"] * 4
    first = result.tests[0]
    assert first.source == "assert_eq!(add(1, 2), 3)"
    assert (first.expected, first.actual) == ("3", "3")
    assert first.line == 8


@needs_rust
def test_a_failing_assertion_does_not_stop_the_later_ones(engine: Engine) -> None:
    result = run(engine, "    if a == 2 { return 5; }\n    a + b\n}\n")
    assert result.status == "failed"
    assert [t.status for t in result.tests] == ["passed", "failed", "passed", "passed"]
    assert (result.tests[1].expected, result.tests[1].actual) == ("4", "5")
    wrong_sign = run(engine, "    if a < 0 { return 9; }\n    a + b\n}\n")
    split = wrong_sign.tests[2]
    assert (split.status, split.expected, split.actual) == ("failed", "0", "9")


@needs_rust
def test_a_panic_fails_only_its_own_assertion(engine: Engine) -> None:
    completion = ("    if a == 2 { let v: Vec<i32> = vec![]; return v[a as usize]; }\n"
                  "    a + b\n}\n")
    result = run(engine, completion)
    assert result.status == "error"
    assert [t.status for t in result.tests] == ["passed", "error", "passed", "passed"]
    assert "index out of bounds" in (result.tests[1].message or "")


@needs_rust
def test_the_message_of_a_failing_assert_is_kept(engine: Engine) -> None:
    result = run(engine, "    if a == 0 { return -1; }\n    a + b\n}\n")
    assert result.tests[3].status == "failed"
    assert result.tests[3].message == "not negative: -1"


@needs_rust
def test_a_compile_error_is_reported_with_the_compiler_message(engine: Engine) -> None:
    result = run(engine, "    a +\n}\n")
    assert result.status == "compile_error"
    assert "error" in result.message


@needs_rust
def test_an_endless_loop_times_out_and_leaves_no_process(engine: Engine) -> None:
    marker = "987.456"
    completion = (f'    std::process::Command::new("sleep").arg("{marker}").spawn().unwrap();\n'
                  "    loop {}\n}\n")
    started = time.monotonic()
    result = run(engine, completion)
    assert result.status == "timeout"
    assert time.monotonic() - started < 60
    assert gone(f"sleep {marker}")


RAND_TEST = """
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_add() {
        let mut rng = rand::thread_rng();
        for _ in 0..20 {
            let x: i32 = rng.gen_range(0, 100);
            let y = rand::random::<u8>() as i32;
            let c: char = rng.gen_range(b'a', b'z' + 1).into();
            assert!(c.is_ascii_lowercase());
            assert_eq!(add(x, y), x + y);
        }
    }
}
"""


@needs_rust
def test_the_dataset_rand_04_api_is_available(engine: Engine) -> None:
    result = run(engine, CORRECT, make_problem(test=RAND_TEST))
    assert result.status == "passed", result.message + result.stderr
    assert len(result.tests) == 40


@needs_rust
def test_rand_08_style_calls_fail_as_in_the_reference_harness(engine: Engine) -> None:
    completion = ("    let mut rng = rand::thread_rng();\n    let _ = rng.gen_range(0..10);\n"
                  "    a + b\n}\n")
    assert run(engine, completion).status == "compile_error"


@needs_rust
def test_regex_and_md5_crates_link(engine: Engine) -> None:
    completion = ('    let re = Regex::new(r"^\\d+$").unwrap();\n'
                  '    let digest = format!("{:x}", md5::compute(b"abc"));\n'
                  '    if !re.is_match("123") || digest != "900150983cd24fb0d6963f7d28e17f72" '
                  "{ return 0; }\n    a + b\n}\n")
    result = run(engine, completion)
    assert result.status == "passed", result.message + result.stderr


MULTIPL_E_PROMPT = "/// Add two numbers.\nfn add(a: isize, b: isize) -> isize {\n"
MULTIPL_E_TEST = """}

fn main() {
    let candidate = add;
    assert_eq!(candidate(1, 2), 3);
    assert_eq!(candidate(2, 2), 4);
    assert_eq!(candidate(-1, 1), 0);
}
"""


@needs_rust
def test_multipl_e_main_is_split_and_gets_no_extra_crates(engine: Engine) -> None:
    problem = Problem(dataset="multipl-e", task_id="HumanEval/53", language="rust",
                      natural_language="en", prompt=MULTIPL_E_PROMPT, entry_point="add",
                      canonical_solution="", test=MULTIPL_E_TEST, source_id="HumanEval_53_add")
    result = run(engine, "    if a == 2 { panic!(\"boom\") }\n    a + b\n", problem)
    assert [t.status for t in result.tests] == ["passed", "error", "passed"]
    assert "boom" in (result.tests[1].message or "")
    uses_regex = run(engine, '    let _ = regex::Regex::new("x");\n    a + b\n', problem)
    assert uses_regex.status == "compile_error"


@needs_rust
def test_commented_out_tests_pass_with_a_warning(engine: Engine) -> None:
    result = run(engine, CORRECT, make_problem(test="\n/*\n" + TEST + "*/\n"))
    assert result.status == "passed"
    assert result.tests == ()
    assert any("no test function" in reason for reason in result.suspicious)


RESULT_TEST = """
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_add() -> Result<(), String> {
        let three: i32 = "3".parse().map_err(|_| "bad".to_string())?;
        assert_eq!(add(1, 2), three);
        Ok(())
    }
}
"""


@needs_rust
def test_tests_the_rewrite_cannot_compile_fall_back_to_a_whole_program_verdict(
        engine: Engine) -> None:
    # A `#[test]` returning Result is fine for libtest, not for the generated main.
    problem = make_problem(test=RESULT_TEST)
    result = run(engine, CORRECT, problem)
    assert result.status == "passed", result.message + result.stderr
    assert any("whole-program verdict" in reason for reason in result.suspicious)
    wrong = run(engine, "    a - b\n}\n", problem)
    assert wrong.status in ("failed", "error")
    # An error in the completion itself is reported as it is, with no second build.
    broken = run(engine, "    a +\n}\n", problem)
    assert broken.status == "compile_error"
    assert "unchanged" not in broken.stderr


@pytest.mark.slow
@needs_rust
def test_every_humaneval_x_canonical_passes_or_is_registered(shared_dir: Path) -> None:
    path = shared_dir / "datasets" / "humaneval-x" / "humaneval_rust.jsonl.gz"
    failures = selfcheck(load_dataset(path=path), backend="none")
    assert [(f.task_id, f.message) for f in failures if not f.explained] == []
