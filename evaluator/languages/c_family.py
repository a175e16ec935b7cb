"""Working on the tokens of a C++ or Java test (`lexing.tokenize`), enough to rewrite its
asserts: the rewriters never parse declarations, only follow bracket depth and a few
operators.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluator.languages.lexing import ScanError, Token

OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {")", "]", "}"}


def matching(tokens: Sequence[Token], index: int) -> int:
    """The index of the bracket that closes the one at `index`."""
    depth = 0
    for j in range(index, len(tokens)):
        text = tokens[j].text
        if tokens[j].kind != "punct":
            continue
        if text in OPEN:
            depth += 1
        elif text in CLOSE:
            depth -= 1
            if depth == 0:
                return j
    raise ScanError(f"unbalanced {tokens[index].text!r}")


def top_level(tokens: Sequence[Token]) -> list[int]:
    """Indices of the tokens outside any (), [] or {} within `tokens`."""
    found: list[int] = []
    depth = 0
    for j, token in enumerate(tokens):
        if token.kind == "punct" and token.text in OPEN:
            if depth == 0:
                found.append(j)
            depth += 1
        elif token.kind == "punct" and token.text in CLOSE:
            depth -= 1
        elif depth == 0:
            found.append(j)
    return found


def split_arguments(tokens: Sequence[Token]) -> list[list[Token]]:
    """Split the inside of a call's parentheses at its top-level commas."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.kind == "punct" and token.text in OPEN:
            depth += 1
        elif token.kind == "punct" and token.text in CLOSE:
            depth -= 1
        if depth == 0 and token.kind == "punct" and token.text == ",":
            parts.append([])
        else:
            parts[-1].append(token)
    return parts if parts != [[]] else []


def span(text: str, tokens: Sequence[Token]) -> str:
    """The source text covered by `tokens` (comments and spacing inside kept)."""
    if not tokens:
        return ""
    return text[tokens[0].start: tokens[-1].end]


def one_line(text: str) -> str:
    """Source text collapsed onto one line, for display."""
    return " ".join(text.split())
