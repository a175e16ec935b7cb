"""BabelCode's HumanEval questions (google-research/babelcode), read as a Python dataset.

`human_eval_questions.jsonl` holds one record per problem: `id`, `title` (`HumanEval/N`),
`solution` (a whole Python module), `text` (the English docstring), `entry_fn_name` and
`testing_code` (bare module-level asserts that call the function by its name). A problem
is made from it as human-eval would have it:

- the prompt is the solution up to the entry function's `def` line (its imports and any
  helper it relies on), then `text` as that function's docstring;
- the canonical solution is the rest: the function's body (and whatever follows it);
- the test is the testing code inside `def check(candidate):`, so the Python harness
  reports each assertion on its own, as for HumanEval.

BabelCode ships fixes for some problems in `human_eval.jsonl` (its `data/dataset_fixes`):
records with an `id` and the question fields it corrects (`testing_code`, `solution`,
`text`, `entry_fn_name`; some ids renamed their function). When that file sits beside the
questions (or is named with `fixes=`), each record's fields replace the question's, in
file order; a fixed problem lists them in `extra["babelcode_fix"]` (with the fixes file's
version) and says so in `extra["fixes"]`. The dataset's version stays the questions
file's, the one the catalogue pins; questions read without fixes are the variant
`unfixed` (`babelcode/python/en/unfixed`), so the two are never taken for each other.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path
from typing import Any

from evaluator.datasets.dataset import Dataset, DatasetError
from evaluator.datasets.humaneval import humaneval_number, task_id
from evaluator.datasets.reading import SourceFile, SourceRecord, read_path
from evaluator.records import Problem

QUESTIONS_FILE = "human_eval_questions.jsonl"
FIXES_FILE = "human_eval.jsonl"
"""BabelCode's fixes to some questions, looked for beside the questions file."""
QUESTION_FIELDS = frozenset({"id", "title", "testing_code", "solution", "text",
                             "entry_fn_name"})
FIXABLE_FIELDS = frozenset({"testing_code", "solution", "text", "entry_fn_name"})
"""The question fields a record of the fixes file may replace."""


def is_babelcode_file(path: Path) -> bool:
    return path.name == QUESTIONS_FILE


def load_babelcode(path: Path, *, max_expanded_bytes: int | None = None,
                   fixes: Path | None = None) -> Dataset:
    """The questions at `path`, with the fixes of `fixes` applied (by default
    `human_eval.jsonl` beside them, when it is there)."""
    source = read_path(path, max_expanded_bytes=max_expanded_bytes)
    if fixes is None and path.with_name(FIXES_FILE).is_file() and path.name != FIXES_FILE:
        fixes = path.with_name(FIXES_FILE)
    fixed, fixes_version = ({}, "") if fixes is None else _read_fixes(
        fixes, max_expanded_bytes)
    problems = tuple(_problem(record, source, fixed, fixes_version)
                     for record in source.records)
    known = {problem.source_id for problem in problems}
    unused = sorted(set(fixed) - known, key=_numeric)
    if unused:
        raise DatasetError(f"{fixes}: fixes for ids {unused}, which {path} does not have")
    return source.dataset(layout="babelcode", language="python", natural_language="en",
                          problems=problems, variant="" if fixes is not None else "unfixed")


def _numeric(value: str) -> tuple[int, str]:
    return (int(value), "") if value.isdigit() else (-1, value)


def _read_fixes(path: Path, max_expanded_bytes: int | None
                ) -> tuple[dict[str, dict[str, str]], str]:
    """{question id: {field: corrected value}}, merged in file order (BabelCode's file
    lists id 8 twice), and the fixes file's version."""
    fixes: dict[str, dict[str, str]] = {}
    source = read_path(path, max_expanded_bytes=max_expanded_bytes)
    for record in source.records:
        unknown = sorted(set(record.data) - FIXABLE_FIELDS - {"id"})
        if unknown:
            raise record.error(f"a fix may replace {sorted(FIXABLE_FIELDS)}, not {unknown}")
        fields = {name: record.text(name) for name in sorted(FIXABLE_FIELDS & set(record.data))}
        if not fields:
            raise record.error(f"the fix replaces none of {sorted(FIXABLE_FIELDS)}")
        fixes.setdefault(_id_text(record), {}).update(fields)
    return fixes, source.version


def _id_text(record: SourceRecord) -> str:
    value = record.value("id")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise record.error(f"field 'id' must be a string or an integer, got {value!r}")
    return str(value)


def _problem(record: SourceRecord, source: SourceFile, fixed: dict[str, dict[str, str]],
             fixes_version: str) -> Problem:
    source_id = _id_text(record)
    fields = {name: record.text(name) for name in FIXABLE_FIELDS}
    extra: dict[str, Any] = record.leftovers(QUESTION_FIELDS)
    if source_id in fixed:
        fields.update(fixed[source_id])
        replaced = sorted(fixed[source_id])
        extra["fixes"] = [f"BabelCode's dataset fix replaced {', '.join(replaced)}"]
        extra["babelcode_fix"] = {"fields": replaced, "file": FIXES_FILE,
                                  "version": fixes_version}
    entry_point = fields["entry_fn_name"]
    prompt, canonical = split_solution(fields["solution"], entry_point, fields["text"],
                                       record)
    return Problem(
        dataset="babelcode",
        task_id=task_id(humaneval_number(record, "title")),
        language="python",
        natural_language="en",
        prompt=prompt,
        entry_point=entry_point,
        canonical_solution=canonical,
        test=check_function(fields["testing_code"]),
        source_id=source_id,
        source=record.where,
        dataset_version=source.version,
        extra=extra,
    )


def split_solution(solution: str, entry_point: str, text: str,
                   record: SourceRecord | None = None) -> tuple[str, str]:
    """(prompt, canonical solution): the solution cut after the entry function's header,
    with `text` as its docstring in between."""

    def refuse(message: str) -> DatasetError:
        return record.error(message) if record is not None else DatasetError(message)

    try:
        tree = ast.parse(solution)
    except SyntaxError as exc:
        raise refuse(f"solution does not parse: {exc.msg} (line {exc.lineno})") from None
    function = next((node for node in tree.body
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                     and node.name == entry_point), None)
    if function is None:
        raise refuse(f"solution defines no top-level function {entry_point}()")
    row, column = _header_colon(solution, function.lineno)
    lines = solution.splitlines(keepends=True)
    colon_line = lines[row - 1]
    after = colon_line[column + 1:]
    first_body = lines[function.body[0].lineno - 1]
    indent = first_body[:len(first_body) - len(first_body.lstrip())]
    if row == function.body[0].lineno:
        # A body on the header's own line (`def f(x): return x`) moves to a line of its own.
        indent = " " * (function.col_offset + 4)
        head = "".join(lines[:row - 1]) + colon_line[:column + 1] + "\n"
        body = indent + after.lstrip()
    else:
        head = "".join(lines[:row])
        body = "".join(lines[row:])
    if not head.endswith("\n"):
        head += "\n"
    return head + docstring(text, indent), body


def _header_colon(solution: str, first_row: int) -> tuple[int, int]:
    """(row, column) of the colon that ends the `def` header starting on `first_row`."""
    depth = 0
    tokens = tokenize.generate_tokens(io.StringIO(solution).readline)
    for token in tokens:
        if token.start[0] < first_row or token.type != tokenize.OP:
            continue
        if token.string in "([{":
            depth += 1
        elif token.string in ")]}":
            depth -= 1
        elif token.string == ":" and depth == 0:
            return token.start
    raise DatasetError("the entry function's header has no closing colon")  # parsed, so never


def docstring(text: str, indent: str) -> str:
    """`text` as a triple-quoted docstring at `indent`, its value `text` itself once
    indentation is stripped (backslashes and triple quotes escaped)."""
    escaped = text.strip("\n").rstrip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    body = "".join(f"{indent}{line}\n" if line.strip() else "\n"
                   for line in escaped.split("\n"))
    return f'{indent}"""\n{body}{indent}"""\n'


def check_function(testing_code: str) -> str:
    """The testing code as the body of `check(candidate)`, the shape human-eval calls.

    Every line moves in by four spaces except those inside a multi-line string, whose
    text must not change. The asserts keep calling the function by its own name.
    """
    lines = testing_code.strip("\n").split("\n")
    inside = _lines_inside_strings(testing_code.strip("\n"))
    body = "".join(
        (line if number in inside or not line.strip() else "    " + line) + "\n"
        for number, line in enumerate(lines, start=1)
    )
    return "def check(candidate):\n" + (body if body.strip() else "    pass\n")


def _lines_inside_strings(code: str) -> set[int]:
    """Line numbers (1-based) that begin inside a string token started on an earlier line."""
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return set()
    return inside
