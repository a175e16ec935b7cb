"""Find function names in prompts, for layouts that do not say what the entry point is.

HumanEval-X has no `entry_point` field at all, and MultiPL-E's ids keep HumanEval's
Python name while the prompt may rename it (`strlen` is `string_length` in C++,
`check_dict_case` is `checkDictCase` in Java).
"""

from __future__ import annotations

import re

# A function definition at the start of a line; the first non-empty group is its name.
# C++ and Java need a return type before the name, which also keeps `if (` out.
_FUNCTION_PATTERNS: dict[str, re.Pattern[str]] = {
    "python": re.compile(r"^\s*def\s+(\w+)\s*\(", re.MULTILINE),
    "cpp": re.compile(r"^[A-Za-z_][\w:<>,*& ]*[\s*&>](\w+)\s*\([^;]*$", re.MULTILINE),
    "java": re.compile(
        r"^\s*(?:public|private|protected)\s+(?:static\s+)?[\w<>\[\],.? ]+\s(\w+)\s*\(",
        re.MULTILINE,
    ),
    "js": re.compile(
        r"^\s*(?:const\s+(\w+)\s*=\s*(?:\(|function)|function\s+(\w+)\s*\()", re.MULTILINE
    ),
    "go": re.compile(r"^func\s+(?:\([^)]*\)\s*)?(\w+)\s*\(", re.MULTILINE),
    "rust": re.compile(r"^\s*(?:pub\s+)?fn\s+(\w+)\s*[<(]", re.MULTILINE),
}
_KEYWORDS = frozenset({"if", "for", "while", "switch", "return", "catch"})


def function_names(language: str, code: str) -> list[str]:
    """Names of the functions defined in `code`, in order of appearance."""
    pattern = _FUNCTION_PATTERNS.get(language)
    if pattern is None:
        return []
    names: list[str] = []
    for match in pattern.finditer(code):
        name = next((group for group in match.groups() if group), "")
        if name and name not in _KEYWORDS:
            names.append(name)
    return names


def comparable_name(name: str) -> str:
    """`has_close_elements`, `hasCloseElements` and `HasCloseElements` compare equal."""
    return name.replace("_", "").lower()


def entry_point_in(language: str, open_code: str, wanted: str, *more_code: str) -> str | None:
    """The function in `open_code` (or `more_code`) named like `wanted`; failing that, the
    last one defined in `open_code`, which is the signature left open for the model."""
    declared = function_names(language, open_code)
    target = comparable_name(wanted)
    candidates = declared + [n for code in more_code for n in function_names(language, code)]
    for name in candidates:
        if comparable_name(name) == target:
            return name
    return declared[-1] if declared else None
