"""Code highlighting on the server, with Pygments' lexers and our own markup.

Pages get `<span class="…">` runs inside a `<pre class="code hl">`; the colours are in
static/css/code.css. The token stream is also what the comparison page diffs, so the
same function draws highlighted code with or without diff marks (`render_tokens`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    String,
    _TokenType,
    is_token_subtype,
)

from evaluator.languages.registry import canonical_name, language_class

# Token kinds drawn in their own colour; more specific first. Everything else is plain.
_CLASSES: tuple[tuple[_TokenType, str], ...] = (
    (String.Doc, "sd"),
    (Comment, "c"),
    (String, "s"),
    (Number, "m"),
    (Operator.Word, "k"),
    (Keyword, "k"),
    (Name.Function, "nf"),
    (Name.Class, "nc"),
    (Name.Decorator, "nd"),
    (Name.Builtin, "nb"),
    (Operator, "o"),
)


@dataclass(frozen=True)
class Token:
    css: str
    """Colour class, "" for plain text."""
    text: str
    kind: str
    """"ws" (whitespace only), "comment", or "code": what the diff may ignore."""


def _lexer(language: str) -> Lexer | None:
    """The lexer the language names (`Language.pygments_lexer`), if it names one."""
    key = canonical_name(language)
    name = language_class(key).pygments_lexer if key is not None else None
    return _lexer_named(name) if name else None


@functools.lru_cache(maxsize=16)
def _lexer_named(name: str) -> Lexer:
    # Keep the text exactly as given: no stripped or added newlines, tabs untouched.
    return get_lexer_by_name(name, stripnl=False, ensurenl=False, stripall=False)


@functools.lru_cache(maxsize=256)
def _css_class(ttype: _TokenType) -> str:
    for parent, css in _CLASSES:
        if is_token_subtype(ttype, parent):
            return css
    return ""


def code_tokens(text: str, language: str) -> list[Token]:
    """The text as tokens whose texts join back to exactly `text`."""
    lexer = _lexer(language)
    if lexer is None:
        return [Token("", text, "ws" if not text.strip() else "code")] if text else []
    tokens: list[Token] = []
    for ttype, value in lexer.get_tokens(text):
        if not value:
            continue
        if not value.strip():
            kind = "ws"
        elif is_token_subtype(ttype, Comment) or is_token_subtype(ttype, String.Doc):
            # Docstrings are prose too: "ignore comments" in a diff ignores them.
            kind = "comment"
        else:
            kind = "code"
        tokens.append(Token(_css_class(ttype), value, kind))
    joined = "".join(t.text for t in tokens)
    if joined != text:
        # A lexer that rewrote the text (it should not with these options) must not change
        # what is shown: fall back to plain text.
        return [Token("", text, "code")]
    return tokens


def render_tokens(tokens: Sequence[Token], marks: Iterable[str | None] | None = None) -> SafeString:
    """HTML for `tokens`, each optionally wrapped in `<mark class="…">` (diff marks)."""
    parts: list[str] = []
    mark_list = list(marks) if marks is not None else [None] * len(tokens)
    for token, mark in zip(tokens, mark_list, strict=True):
        body: str = escape(token.text)
        if token.css:
            body = f'<span class="{token.css}">{body}</span>'
        if mark:
            body = f'<mark class="{mark}">{body}</mark>'
        parts.append(body)
    return mark_safe("".join(parts))  # noqa: S308 (every text part is escaped above)


def highlight(text: str, language: str) -> SafeString:
    return render_tokens(code_tokens(text, language))
