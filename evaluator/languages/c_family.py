"""A token scanner for C-family test harnesses (C++ and Java), enough to rewrite asserts.

The harnesses we instrument are dataset text, not arbitrary programs, so the scanner
only needs to be exact about what can hide a bracket or an operator: comments, string
and character literals (C++ raw strings, Java text blocks) and preprocessor lines. It
never parses declarations; the rewriters work on bracket depth and a few operators.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

TokenKind = Literal["ident", "number", "string", "char", "punct", "directive"]

_PUNCTUATORS = (
    ">>>=", "<<=", ">>=", "...", "->*", "<=>", ">>>",
    "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*",
)
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.'])*")
_RAW_PREFIX = re.compile(r"(?:u8|u|U|L)?R\"([^()\\ \t\n]{0,16})\(")
_STRING_PREFIX = re.compile(r"(?:u8|u|U|L)(?=[\"'])")
OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {")", "]", "}"}


class ScanError(ValueError):
    """The text cannot be tokenized safely (an unterminated literal or comment)."""


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str
    start: int
    end: int


def tokenize(text: str, *, language: Literal["cpp", "java"]) -> list[Token]:
    tokens: list[Token] = []
    i = 0
    n = len(text)
    line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ScanError("unterminated /* comment")
            i = end + 2
            continue
        if c == "#" and line_start and language == "cpp":
            end = i
            while True:
                nl = text.find("\n", end)
                if nl < 0:
                    end = n
                    break
                if text[nl - 1] == "\\" or text[nl - 2: nl] == "\\\r":
                    end = nl + 1
                    continue
                end = nl
                break
            tokens.append(Token("directive", text[i:end], i, end))
            i = end
            continue
        line_start = False
        if language == "cpp" and (raw := _RAW_PREFIX.match(text, i)):
            terminator = ")" + raw.group(1) + '"'
            end = text.find(terminator, raw.end())
            if end < 0:
                raise ScanError("unterminated raw string literal")
            end += len(terminator)
            tokens.append(Token("string", text[i:end], i, end))
            i = end
            continue
        if language == "java" and text.startswith('"""', i):
            end = text.find('"""', i + 3)
            while end >= 0 and _escaped(text, end):
                end = text.find('"""', end + 1)
            if end < 0:
                raise ScanError("unterminated text block")
            tokens.append(Token("string", text[i:end + 3], i, end + 3))
            i = end + 3
            continue
        prefix = _STRING_PREFIX.match(text, i) if language == "cpp" else None
        quote_at = prefix.end() if prefix else i
        if quote_at < n and text[quote_at] in "\"'":
            quote = text[quote_at]
            j = quote_at + 1
            while j < n and text[j] != quote:
                if text[j] == "\\":
                    j += 1
                elif text[j] == "\n":
                    raise ScanError("newline in a string or character literal")
                j += 1
            if j >= n:
                raise ScanError("unterminated string or character literal")
            kind: TokenKind = "string" if quote == '"' else "char"
            tokens.append(Token(kind, text[i:j + 1], i, j + 1))
            i = j + 1
            continue
        if (match := _IDENT.match(text, i)) is not None:
            tokens.append(Token("ident", match.group(), i, match.end()))
            i = match.end()
            continue
        if (match := _NUMBER.match(text, i)) is not None:
            tokens.append(Token("number", match.group(), i, match.end()))
            i = match.end()
            continue
        for punctuator in _PUNCTUATORS:
            if text.startswith(punctuator, i):
                if punctuator == ">>>" and language == "cpp":
                    continue
                tokens.append(Token("punct", punctuator, i, i + len(punctuator)))
                i += len(punctuator)
                break
        else:
            tokens.append(Token("punct", c, i, i + 1))
            i += 1
    return tokens


def _escaped(text: str, at: int) -> bool:
    backslashes = 0
    while at - backslashes - 1 >= 0 and text[at - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


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
