"""The word-level diff of two variants' docstrings: words marked, whitespace ignored, and
hostile text escaped."""

from __future__ import annotations

from webapp.suites.fidelity.selectors import MAX_WORDS, word_diff


def test_marks_only_the_words_that_differ() -> None:
    diff = word_diff("Return the sum of a and b.", "Return the  product\nof a and b.")
    assert diff.a_html.count('<mark class="diff-del">') == 1
    assert '<mark class="diff-del">sum</mark>' in diff.a_html
    assert '<mark class="diff-ins">product</mark>' in diff.b_html
    assert (diff.changed_a, diff.changed_b) == (1, 1)


def test_identical_text_has_no_marks_even_when_rewrapped() -> None:
    diff = word_diff("a  b\nc", "a b c")
    assert diff.identical
    assert "<mark" not in diff.a_html


def test_arabic_words_compare_as_words() -> None:
    diff = word_diff("أعد الجزء العشري", "أعد الجزء الصحيح")
    assert '<mark class="diff-del">العشري</mark>' in diff.a_html
    assert "أعد" in diff.a_html
    assert "<mark class=\"diff-del\">أعد" not in diff.a_html


def test_hostile_text_is_escaped() -> None:
    diff = word_diff('<script>alert("x")</script>', "<b>bold</b>")
    assert "<script" not in diff.a_html
    assert "&lt;" in diff.a_html
    assert "&quot;" in diff.a_html
    assert "<b>" not in diff.b_html


def test_very_long_text_falls_back_to_lines() -> None:
    long_a = "word " * (MAX_WORDS + 10) + "\nlast line a\n"
    long_b = "word " * (MAX_WORDS + 10) + "\nlast line b\n"
    diff = word_diff(long_a, long_b)
    assert (diff.changed_a, diff.changed_b) == (1, 1)
