"""Find function names in prompts, for layouts that do not say what the entry point is.

HumanEval-X has no `entry_point` field at all, and MultiPL-E's ids keep HumanEval's
Python name while the prompt may rename it (`strlen` is `string_length` in C++,
`check_dict_case` is `checkDictCase` in Java).
"""

from __future__ import annotations

import re

from evaluator.languages.registry import canonical_name, language_class

_KEYWORDS = frozenset({"if", "for", "while", "switch", "return", "catch"})


def function_names(language: str, code: str) -> list[str]:
    """Names of the functions defined in `code`, in order of appearance."""
    pattern = _function_pattern(language)
    if pattern is None:
        return []
    names: list[str] = []
    for match in pattern.finditer(code):
        name = next((group for group in match.groups() if group), "")
        if name and name not in _KEYWORDS:
            names.append(name)
    return names


def _function_pattern(language: str) -> re.Pattern[str] | None:
    """The language's `function_pattern`, compiled (`re` keeps the compiled patterns);
    None for an unknown language."""
    name = canonical_name(language)
    source = language_class(name).function_pattern if name is not None else None
    return re.compile(source, re.MULTILINE) if source else None


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
