"""A code-aware diff of two generations: token by token, with whitespace and comments
optionally left out of the comparison.

Both programs are split into tokens by the language's lexer (the same tokens the pages
highlight), and the sequences of tokens that take part are compared. A renamed variable
is one changed token rather than a changed line, a re-indented block is no change when
whitespace is ignored, and an edited comment is no change when comments are ignored.
The programs are still shown whole: ignored tokens are drawn, just never marked.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from django.utils.safestring import SafeString

from webapp.benchmarks.highlight import Token, code_tokens, render_tokens

MAX_TOKENS = 20_000
"""Beyond this many tokens a side is compared as plain lines: a pathological generation
must not make the page quadratic."""


@dataclass(frozen=True)
class CodeDiff:
    a_html: SafeString
    b_html: SafeString
    changed_a: int
    """Tokens of A that B lacks or has differently."""
    changed_b: int
    identical: bool
    """Equal once the ignored tokens are left out."""


def _key(token: Token) -> str:
    # Keywords, names and literals compare by text; whitespace compares by text too when
    # it is not ignored (indentation matters in Python).
    return token.text


def _line_tokens(text: str) -> list[Token]:
    return [Token("", line, "ws" if not line.strip() else "code")
            for line in text.splitlines(keepends=True)]


def code_diff(a_text: str, a_language: str, b_text: str, b_language: str, *,
              ignore_whitespace: bool, ignore_comments: bool) -> CodeDiff:
    a_tokens = code_tokens(a_text, a_language)
    b_tokens = code_tokens(b_text, b_language)
    if len(a_tokens) > MAX_TOKENS or len(b_tokens) > MAX_TOKENS:
        a_tokens, b_tokens = _line_tokens(a_text), _line_tokens(b_text)
    return token_diff(a_tokens, b_tokens, ignore_whitespace=ignore_whitespace,
                      ignore_comments=ignore_comments)


def token_diff(a_tokens: list[Token], b_tokens: list[Token], *, ignore_whitespace: bool,
               ignore_comments: bool) -> CodeDiff:
    """Two token sequences drawn with their differences marked (any tokens: code, or the
    words of prose)."""

    def taking_part(tokens: list[Token]) -> list[int]:
        return [
            i for i, token in enumerate(tokens)
            if not (ignore_whitespace and token.kind == "ws")
            and not (ignore_comments and token.kind == "comment")
        ]

    a_index, b_index = taking_part(a_tokens), taking_part(b_tokens)
    a_marks: list[str | None] = [None] * len(a_tokens)
    b_marks: list[str | None] = [None] * len(b_tokens)
    if ignore_comments:
        for marks, tokens in ((a_marks, a_tokens), (b_marks, b_tokens)):
            for i, token in enumerate(tokens):
                if token.kind == "comment":
                    marks[i] = "diff-ignored"
    matcher = difflib.SequenceMatcher(
        None, [_key(a_tokens[i]) for i in a_index], [_key(b_tokens[i]) for i in b_index],
        autojunk=False,
    )
    changed_a = changed_b = 0
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        for position in range(a0, a1):
            a_marks[a_index[position]] = "diff-del"
            changed_a += 1
        for position in range(b0, b1):
            b_marks[b_index[position]] = "diff-ins"
            changed_b += 1
    return CodeDiff(
        a_html=render_tokens(a_tokens, a_marks), b_html=render_tokens(b_tokens, b_marks),
        changed_a=changed_a, changed_b=changed_b, identical=changed_a == changed_b == 0,
    )
