"""The one lexer of the curly-brace languages: what hides a bracket in each of them, and
its two views (tokens, blanked text) agreeing with each other."""

from __future__ import annotations

import pytest

from evaluator.languages import lexing
from evaluator.languages.lexing import ScanError


def code_brackets(text: str, dialect: lexing.Dialect) -> str:
    """The brackets `blank` leaves as code, checked against `tokenize`'s."""
    blanked = lexing.blank(text, dialect)
    assert len(blanked) == len(text)
    assert [i for i, c in enumerate(text) if c == "\n"] == [
        i for i, c in enumerate(blanked) if c == "\n"]
    from_blank = "".join(c for c in blanked if c in "()[]{}")
    tokens = lexing.tokenize(text, dialect)
    assert "".join(t.text for t in tokens if t.kind == "punct" and t.text in "()[]{}") \
        == from_blank
    return from_blank


@pytest.mark.parametrize(("dialect", "text", "brackets"), [
    # C++: raw strings (the delimiters' parentheses too), prefixed literals, chars,
    # digit separators, a comment inside a preprocessor line.
    ("cpp", 'f(R"x(a)" ) ")x", u8"}", L\'{\', 1\'000); // )', "()"),
    ("cpp", '#define OPEN "{" /* ( */\nint main() { return \'}\'; }', "(){}"),
    # Java: text blocks with quotes and escapes, chars.
    ("java", 'g("""\n  a " } \\""" (\n  """, \'(\');', "()"),
    # JavaScript: template literals, with code (and a nested template) inside ${...},
    # which is one operand: its brackets are the literal's.
    ("js", 'h(`a ${ {k: `)`}.k } (`, \'[\', "]");', "()"),
    # Go: raw strings span lines and keep backslashes; runes.
    ("go", 'm(`\\`, "(", \'"\', `\n}`)', "()"),
    # Rust: nested comments, raw strings with hashes, byte literals, chars and lifetimes.
    ("rust", "fn f<'a>(x: &'a str) { /* ( /* ) */ { */ let c = '('; "
             "let s = r#\"(\"#; let b = b'}'; let t = br\"[\"; }", "(){}"),
    ("rust", 'assert_eq!(s, "a\nb)");', "()"),
])
def test_brackets_inside_literals_and_comments_are_not_code(dialect, text, brackets):
    assert code_brackets(text, dialect) == brackets


def test_tokens_keep_their_text_and_kind():
    tokens = lexing.tokenize('auto s = R"(x)"; char c = \'a\'; x >>= 1\'0;', "cpp")
    assert [(t.kind, t.text) for t in tokens] == [
        ("ident", "auto"), ("ident", "s"), ("punct", "="), ("string", 'R"(x)"'),
        ("punct", ";"), ("ident", "char"), ("ident", "c"), ("punct", "="), ("char", "'a'"),
        ("punct", ";"), ("ident", "x"), ("punct", ">>="), ("number", "1'0"), ("punct", ";")]
    # Java's `>>>` is one operator; in C++ it is `>>` then `>` (templates close so).
    assert [t.text for t in lexing.tokenize("a >>> b", "java")] == ["a", ">>>", "b"]
    assert [t.text for t in lexing.tokenize("a >>> b", "cpp")] == ["a", ">>", ">", "b"]


@pytest.mark.parametrize(("dialect", "text"), [
    ("cpp", "int x; /* open"),
    ("cpp", 'auto s = R"d(never closed)";'),
    ("java", 's = """\nopen'),
    ("js", "s = `open ${x}"),
    ("go", "s := `open"),
    ("rust", "/* /* */ still open"),
    ("java", 's = "a\nb";'),
])
def test_an_open_literal_or_comment_stops_tokenizing_but_not_blanking(dialect, text):
    with pytest.raises(ScanError):
        lexing.tokenize(text, dialect)
    assert len(lexing.blank(text, dialect)) == len(text)


def test_a_literal_left_open_ends_at_its_line_where_the_language_ends_it():
    # A string cannot span lines in C++, Java, JavaScript or Go: the next line is code.
    assert lexing.blank('s = "open {\n}', "cpp") == 's = "      \n}'
    # A Rust string can.
    assert lexing.blank('s = "open {\n}', "rust") == 's = "      \n '
