"""Which lines of a model's output are code of the function body: the yardstick of the
"sanitizing never deletes code" tests, written independently of the sanitizer."""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings


def _parses(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def is_code_line(line: str) -> bool:
    """The line alone is a Python statement, or the header of a compound one; a string
    literal on its own (a docstring) is not code."""
    text = line.strip()
    if not text or text.startswith("#"):
        return False
    if _parses(text):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            body = ast.parse(text).body
        return not (len(body) == 1 and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str))
    if not text.endswith(":"):
        return False
    return any(_parses(shape.format(text)) for shape in (
        "{}\n    pass", "if x:\n    pass\n{}\n    pass", "try:\n    pass\n{}\n    pass",
    ))


def lines_inside_strings(text: str) -> set[int]:
    """0-based numbers of the lines that continue a multi-line string (docstrings)."""
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass  # broken code: the strings seen so far are enough
    return inside


def expanded(text: str) -> list[str]:
    lines = text.split("\n")
    return [line[: len(line) - len(line.lstrip(" \t"))].expandtabs(4) + line.lstrip(" \t")
            for line in lines]


def function_body_code(raw: str, entry_point: str) -> list[str]:
    """Code lines of the function the text writes: the indented block that continues the
    prompt, or else the body of the first `def <entry_point>` (at any indentation)."""
    lines = expanded(raw)
    strings = lines_inside_strings("\n".join(lines))
    structural = [i for i, line in enumerate(lines)
                  if line.strip() and not line.lstrip().startswith("#") and i not in strings]
    body: list[int] = []
    if structural and lines[structural[0]][:1] == " ":
        for i in structural:
            if lines[i][:1] != " ":
                break
            body.append(i)
    else:
        header = re.compile(rf"^( *)(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(")
        for k, i in enumerate(structural):
            match = header.match(lines[i])
            if match is None:
                continue
            for j in structural[k + 1:]:
                if len(lines[j]) - len(lines[j].lstrip()) <= len(match.group(1)):
                    break
                body.append(j)
            break
    return [lines[i] for i in body if is_code_line(lines[i])]


def lost_code(raw: str, completion: str, entry_point: str) -> list[str]:
    kept = {line.strip() for line in expanded(completion)}
    return [line.strip() for line in function_body_code(raw, entry_point)
            if line.strip() not in kept]
