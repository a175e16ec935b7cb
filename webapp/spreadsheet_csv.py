"""CSV that is safe to open in a spreadsheet. Every CSV the app writes goes through
`SpreadsheetCsvWriter`.

Exported cells hold text from tested code (exception messages, printed values). A
spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` as a formula, and tab or
carriage return can hide such a start, so `=HYPERLINK(...)` in a message could leak data
or run commands. OWASP's remedy (its "CSV Injection" page) is a leading `'`, which makes the
spreadsheet show the text as it is. Numbers written as numbers are left alone: `-0.5`
from a float is data, not a formula.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
"""Text that is one number and nothing else: a spreadsheet reads it as that number, never
as a formula, so an expected value of `-1` stays `-1` for the researcher."""


def spreadsheet_cell(value: object) -> object:
    """`value` as a cell a spreadsheet reads as data: text that could start a formula gets a
    leading `'`."""
    if value is None:
        return ""
    if isinstance(value, int | float):  # bool too, which the csv module writes as True/False
        return value
    text = str(value)
    if text.startswith(FORMULA_STARTS) and not PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


class SpreadsheetCsvWriter:
    """`csv.writer` whose every row goes through `spreadsheet_cell`."""

    def __init__(self, stream: SupportsWrite[str]) -> None:
        self._writer = csv.writer(stream)

    def writerow(self, row: Iterable[object]) -> None:
        self._writer.writerow([spreadsheet_cell(value) for value in row])
