"""Character-level diff of a failing test's expected and actual values."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

MAX_DIFF_CHARS = 4000
"""Longer values are cut before diffing: SequenceMatcher is quadratic in the worst case,
and a page must not stall on a program that printed a megabyte."""


@dataclass(frozen=True)
class Segment:
    text: str
    changed: bool


@dataclass(frozen=True)
class CharDiff:
    expected: list[Segment]
    actual: list[Segment]
    truncated: bool


def _merge(segments: list[Segment]) -> list[Segment]:
    merged: list[Segment] = []
    for segment in segments:
        if not segment.text:
            continue
        if merged and merged[-1].changed == segment.changed:
            merged[-1] = Segment(merged[-1].text + segment.text, segment.changed)
        else:
            merged.append(segment)
    return merged


def char_diff(expected: str, actual: str) -> CharDiff:
    """Both texts as runs of equal and differing characters: on the expected side a changed
    run is what the actual value lacks or has differently, on the actual side what it has
    instead."""
    truncated = len(expected) > MAX_DIFF_CHARS or len(actual) > MAX_DIFF_CHARS
    a, b = expected[:MAX_DIFF_CHARS], actual[:MAX_DIFF_CHARS]
    left: list[Segment] = []
    right: list[Segment] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        equal = op == "equal"
        left.append(Segment(a[a0:a1], not equal))
        right.append(Segment(b[b0:b1], not equal))
    return CharDiff(expected=_merge(left), actual=_merge(right), truncated=truncated)
