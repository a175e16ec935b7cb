"""The one lexer of the curly-brace languages (C++, Java, JavaScript, Go, Rust): it tells
code from comments and string and character literals, so that rewriting a dataset's
test never mistakes a bracket or an operator inside a literal for code.

The harnesses we instrument are fixed dataset text, not arbitrary programs, so the lexer
only needs to be exact about what can hide a bracket or an operator: comments (nested in
Rust), string and character literals with each language's own forms (C++ raw strings
and prefixes, Java text blocks, JavaScript template literals, Go raw strings and runes,
Rust raw and byte strings, chars and lifetimes) and C++ preprocessor lines. It never
parses declarations.

It has two views of the same scan:
- `tokenize`: the code as tokens, comments left out (the C++ and Java assert rewriters
  work on bracket depth and a few operators, `c_family`); a literal or comment left open
  raises `ScanError`;
- `blank`: the text with comments and the insides of literals replaced by spaces, every
  offset and line number kept, so regular expressions and bracket matching can run on
  the blanked copy and edits be applied to the original at the same offsets (Go, Rust,
  and the language check, which reads any text and never raises: a literal left open
  ends where its language ends it, at its line's end or the text's).
JavaScript's regular-expression literals are not recognised (a `/` is an operator).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Dialect = Literal["cpp", "java", "js", "go", "rust"]
TokenKind = Literal["ident", "number", "string", "char", "punct", "directive"]

_PUNCTUATORS = (
    ">>>=", "<<=", ">>=", "...", "->*", "<=>", ">>>",
    "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*",
)
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
# C++ separates digit groups with `'` (1'000); elsewhere a `'` after a number opens a char.
_NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.])*")
_CPP_NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.'])*")
_CPP_RAW = re.compile(r"(?:u8|u|U|L)?R\"([^()\\ \t\n]{0,16})\(")
_CPP_PREFIX = re.compile(r"(?:u8|u|U|L)(?=[\"'])")
_RUST_RAW = re.compile(r'b?r(#*)"')
_RUST_PREFIX = re.compile(r"b(?=[\"'])")
_RUST_CHAR = re.compile(r"'(?:\\u\{[0-9a-fA-F]{1,6}\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'\n])'")

_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}


class ScanError(ValueError):
    """The text cannot be tokenized safely (an unterminated literal or comment)."""


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class _Lexeme:
    """A token or a comment, with the part of it `blank` wipes (`inner`)."""

    kind: TokenKind | Literal["comment"]
    start: int
    end: int
    inner: tuple[int, int]


def tokenize(text: str, dialect: Dialect) -> list[Token]:
    """The tokens of `text`, comments left out; `ScanError` for a literal or comment
    left open."""
    return [Token(lexeme.kind, text[lexeme.start:lexeme.end], lexeme.start, lexeme.end)
            for lexeme in _Scanner(text, dialect, strict=True).scan()
            if lexeme.kind != "comment"]


def blank(text: str, dialect: Dialect) -> str:
    """`text` with comments and the insides of literals replaced by spaces.

    Newlines are kept so line numbers do not move; the quotes of a literal are kept so a
    blanked string still reads as an (empty-looking) operand. A preprocessor line is
    blanked as code.
    """
    out = list(text)
    for lexeme in _Scanner(text, dialect, strict=False).scan():
        start, end = lexeme.inner
        if lexeme.kind == "directive":
            # The `#` is kept; what follows it is code with literals of its own.
            out[start:end] = blank(text[start:end], dialect)
            continue
        for k in range(start, end):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


class _Scanner:
    def __init__(self, text: str, dialect: Dialect, *, strict: bool) -> None:
        self.text = text
        self.dialect = dialect
        self.strict = strict
        self.number = _CPP_NUMBER if dialect == "cpp" else _NUMBER
        self.found: list[_Lexeme] = []

    def scan(self) -> list[_Lexeme]:
        self._code(0, until_brace=False)
        return self.found

    def _open(self, message: str) -> int:
        """Where a literal or comment left open ends: nowhere (strict) or at the end."""
        if self.strict:
            raise ScanError(message)
        return len(self.text)

    def _code(self, i: int, *, until_brace: bool) -> int:
        """Scan code from `i`; with `until_brace`, stop after the `}` that closes a
        template literal's `${` (returning where it ends)."""
        text, n = self.text, len(self.text)
        line_start = True
        depth = 0
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
                end = n if end < 0 else end
                self.found.append(_Lexeme("comment", i, end, (i, end)))
                i = end
                continue
            if text.startswith("/*", i):
                end = self._comment_end(i)
                self.found.append(_Lexeme("comment", i, end, (i, end)))
                i = end
                continue
            if c == "#" and line_start and self.dialect == "cpp":
                i = self._directive(i)
                continue
            line_start = False
            literal = self._literal(i)
            if literal is not None:
                self.found.append(literal)
                i = literal.end
                continue
            if until_brace and c in "{}":
                depth += 1 if c == "{" else -1
                if depth < 0:
                    return i + 1
            i = self._plain(i)
        return n

    def _plain(self, i: int) -> int:
        """An identifier, a number or an operator at `i`; where it ends."""
        text = self.text
        patterns: tuple[tuple[TokenKind, re.Pattern[str]], ...] = (
            ("ident", _IDENT), ("number", self.number))
        for kind, pattern in patterns:
            match = pattern.match(text, i)
            if match is not None:
                self.found.append(_Lexeme(kind, i, match.end(), (i, i)))
                return match.end()
        for punctuator in _PUNCTUATORS:
            if text.startswith(punctuator, i):
                if punctuator == ">>>" and self.dialect == "cpp":
                    continue
                self.found.append(_Lexeme("punct", i, i + len(punctuator), (i, i)))
                return i + len(punctuator)
        self.found.append(_Lexeme("punct", i, i + 1, (i, i)))
        return i + 1

    def _comment_end(self, start: int) -> int:
        """The end of the block comment at `start`; Rust's nest."""
        text, n = self.text, len(self.text)
        if self.dialect != "rust":
            end = text.find("*/", start + 2)
            return self._open("unterminated /* comment") if end < 0 else end + 2
        depth, i = 0, start
        while i < n:
            pair = text[i:i + 2]
            if pair == "/*":
                depth += 1
                i += 2
            elif pair == "*/":
                depth -= 1
                i += 2
                if depth == 0:
                    return i
            else:
                i += 1
        return self._open("unterminated /* comment")

    def _directive(self, i: int) -> int:
        """A preprocessor line (with its `\\` continuations) at `i`; where it ends."""
        text, n = self.text, len(self.text)
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
        self.found.append(_Lexeme("directive", i, end, (i + 1, end)))
        return end

    def _literal(self, i: int) -> _Lexeme | None:
        """The string or character literal that starts at `i`, if one does."""
        text, dialect = self.text, self.dialect
        if dialect == "cpp" and (raw := _CPP_RAW.match(text, i)):
            quote = raw.end() - len(raw.group(1)) - 2
            terminator = ")" + raw.group(1) + '"'
            end = text.find(terminator, raw.end())
            if end < 0:
                return _Lexeme("string", i, self._open("unterminated raw string literal"),
                               (quote + 1, len(text)))
            # `blank` wipes the delimiters too: their parentheses are not code.
            end += len(terminator)
            return _Lexeme("string", i, end, (quote + 1, end - 1))
        if dialect == "java" and text.startswith('"""', i):
            end = text.find('"""', i + 3)
            while end >= 0 and _escaped(text, end):
                end = text.find('"""', end + 1)
            if end < 0:
                return _Lexeme("string", i, self._open("unterminated text block"),
                               (i + 3, len(text)))
            return _Lexeme("string", i, end + 3, (i + 3, end))
        if dialect == "js" and text.startswith("`", i):
            return self._template(i)
        if dialect == "go" and text.startswith("`", i):
            return self._delimited(i, i + 1, "`", "unterminated raw string literal")
        if dialect == "rust":
            return self._rust_literal(i)
        prefix = _CPP_PREFIX.match(text, i) if dialect == "cpp" else None
        at = prefix.end() if prefix else i
        return self._quoted(i, at) if text.startswith(('"', "'"), at) else None

    def _rust_literal(self, i: int) -> _Lexeme | None:
        text = self.text
        if (raw := _RUST_RAW.match(text, i)) is not None:
            return self._delimited(i, raw.end(), '"' + raw.group(1),
                                   "unterminated raw string literal")
        prefix = _RUST_PREFIX.match(text, i)
        at = prefix.end() if prefix else i
        if text.startswith("'", at):
            # A char literal, or a lifetime or label (`'a`), which is code.
            char = _RUST_CHAR.match(text, at)
            return _Lexeme("char", i, char.end(), (at + 1, char.end() - 1)) if char else None
        return self._quoted(i, at) if text.startswith('"', at) else None

    def _delimited(self, start: int, body: int, terminator: str, open_message: str) -> _Lexeme:
        """A literal whose body, from `body`, runs to `terminator` (escapes are text)."""
        end = self.text.find(terminator, body)
        if end < 0:
            return _Lexeme("string", start, self._open(open_message), (body, len(self.text)))
        return _Lexeme("string", start, end + len(terminator), (body, end))

    def _quoted(self, start: int, quote_at: int) -> _Lexeme:
        """A string or character literal in quotes, with backslash escapes. Only Rust's
        strings and JavaScript's continued lines go on past a line's end."""
        text, n = self.text, len(self.text)
        quote = text[quote_at]
        kind: TokenKind = "char" if quote == "'" and self.dialect != "js" else "string"
        multiline = self.dialect == "rust" and quote == '"'
        j = quote_at + 1
        while j < n and text[j] != quote:
            if text[j] == "\\":
                j += 1
            elif text[j] == "\n" and not multiline:
                if self.strict:
                    raise ScanError("newline in a string or character literal")
                return _Lexeme(kind, start, j, (quote_at + 1, j))
            j += 1
        if j >= n:
            return _Lexeme(kind, start, self._open("unterminated string or character literal"),
                           (quote_at + 1, n))
        return _Lexeme(kind, start, j + 1, (quote_at + 1, j))

    def _template(self, start: int) -> _Lexeme:
        """A JavaScript template literal; the code of its `${...}` parts is scanned (for
        literals and braces of its own) and counted as the literal's."""
        text, n = self.text, len(self.text)
        j = start + 1
        while j < n:
            if text[j] == "\\":
                j += 2
            elif text[j] == "`":
                return _Lexeme("string", start, j + 1, (start + 1, j))
            elif text.startswith("${", j):
                inner = _Scanner(text, self.dialect, strict=self.strict)
                j = inner._code(j + 2, until_brace=True)
            else:
                j += 1
        return _Lexeme("string", start, self._open("unterminated template literal"),
                       (start + 1, n))


def _escaped(text: str, at: int) -> bool:
    backslashes = 0
    while at - backslashes - 1 >= 0 and text[at - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


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
