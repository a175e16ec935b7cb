"""Just enough lexing of Go and Rust to rewrite a dataset's test code safely.

The test harnesses we instrument are fixed dataset text, not model output, and their
shapes are regular (`assert.Equal(...)` statements, `assert_eq!(...)` macros). What a
regular expression cannot do on its own is skip brackets inside string literals and
comments; `blank` removes those, keeping every offset and line number, so searching
and bracket matching can run on the blanked copy and edits can be applied to the
original text at the same offsets.
"""

from __future__ import annotations

import re
from typing import Literal

Dialect = Literal["go", "rust"]

_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}
_RUST_CHAR = re.compile(r"'(?:\\u\{[0-9a-fA-F]{1,6}\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'\n])'")
_RUST_RAW = re.compile(r'b?r(#*)"')


def blank(text: str, dialect: Dialect) -> str:
    """`text` with comments and the insides of literals replaced by spaces.

    Newlines are kept so line numbers do not move; the quotes of a literal are kept so a
    blanked string still reads as an (empty-looking) operand.
    """
    out = list(text)
    i, n = 0, len(text)

    def wipe(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        ch = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if ch == "/" and nxt == "/":
            end = text.find("\n", i)
            end = n if end < 0 else end
            wipe(i, end)
            i = end
        elif ch == "/" and nxt == "*":
            end = _block_comment_end(text, i, nested=dialect == "rust")
            wipe(i, end)
            i = end
        elif ch == '"':
            end = _quoted_end(text, i, '"')
            wipe(i + 1, end - 1)
            i = end
        elif dialect == "go" and ch == "`":
            end = text.find("`", i + 1)
            end = n if end < 0 else end + 1
            wipe(i + 1, end - 1)
            i = end
        elif dialect == "go" and ch == "'":
            end = _quoted_end(text, i, "'")
            wipe(i + 1, end - 1)
            i = end
        elif dialect == "rust" and ch in "rb" and _starts_rust_raw(text, i):
            match = _RUST_RAW.match(text, i)
            assert match is not None
            closing = '"' + match.group(1)
            end = text.find(closing, match.end())
            end = n if end < 0 else end + len(closing)
            wipe(match.end(), end - len(closing))
            i = end
        elif dialect == "rust" and ch == "b" and nxt == "'" and not _ident_char_before(text, i):
            match = _RUST_CHAR.match(text, i + 1)
            if match:
                wipe(i + 2, match.end() - 1)
                i = match.end()
            else:
                i += 1
        elif dialect == "rust" and ch == "'":
            # A char literal, or a lifetime / label (`'a`), which is left alone.
            match = _RUST_CHAR.match(text, i)
            if match:
                wipe(i + 1, match.end() - 1)
                i = match.end()
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def _ident_char_before(text: str, i: int) -> bool:
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")


def _starts_rust_raw(text: str, i: int) -> bool:
    return not _ident_char_before(text, i) and _RUST_RAW.match(text, i) is not None


def _block_comment_end(text: str, start: int, *, nested: bool) -> int:
    depth, i, n = 0, start, len(text)
    while i < n:
        pair = text[i:i + 2]
        if pair == "/*":
            depth += 1
            i += 2
            if not nested:
                end = text.find("*/", i)
                return n if end < 0 else end + 2
        elif pair == "*/":
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return n


def _quoted_end(text: str, start: int, quote: str) -> int:
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            return i + 1
        if ch == "\n" and quote == "'":
            return i
        i += 1
    return n


def matching_close(blanked: str, open_index: int) -> int | None:
    """Index of the bracket closing the one at `open_index`, on blanked text."""
    stack: list[str] = []
    for i in range(open_index, len(blanked)):
        ch = blanked[i]
        if ch in _OPENERS:
            stack.append(ch)
        elif ch in _CLOSERS:
            if not stack or stack[-1] != _CLOSERS[ch]:
                return None
            stack.pop()
            if not stack:
                return i
    return None


def top_level_split(blanked: str, start: int, end: int, separators: tuple[str, ...]) -> list[
    tuple[int, str]
]:
    """Offsets in [start, end) where one of `separators` occurs outside any bracket."""
    found: list[tuple[int, str]] = []
    depth = 0
    i = start
    ordered = sorted(separators, key=len, reverse=True)
    while i < end:
        ch = blanked[i]
        if ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            depth -= 1
        elif depth == 0:
            for sep in ordered:
                if blanked.startswith(sep, i):
                    found.append((i, sep))
                    i += len(sep) - 1
                    break
        i += 1
    return found


def line_of(text: str, offset: int) -> int:
    """1-based line number of `offset` in `text`."""
    return text.count("\n", 0, offset) + 1
