"""Lone surrogates: code points U+D800–U+DFFF that are not characters.

JSON may spell one (`"\\ud800"`) and Python's `json` decodes it into a `str`, but no such
string can be encoded as UTF-8: writing it to a file, a database or an HTTP response
raises `UnicodeEncodeError`. Files we are given are refused at the line that holds one
(`find_lone_surrogate`); text a tested program produced is kept, with each one spelled
out as `\\udXXX` (`escape_lone_surrogates`).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


def might_hold_lone_surrogate(raw_json: bytes) -> bool:
    """False when JSON text cannot decode to a lone surrogate: it has no `\\uD800`-`\\uDFFF`
    escape (as bytes they would not have been valid UTF-8). A cheap test before a walk."""
    return _SURROGATE_ESCAPE.search(raw_json) is not None


class SurrogateAt(NamedTuple):
    path: str
    """Where in the value: `field`, `field.inner` or `field[2]`."""
    code_point: str
    """The first lone surrogate there, spelled `\\udXXX`."""


def find_lone_surrogate(value: Any) -> SurrogateAt | None:
    """The first string (or key) of a decoded JSON value that holds a lone surrogate.

    Iterative, because decoded JSON can be nested as deep as the decoder allows.
    """
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            found = _LONE_SURROGATE.search(item)
            if found is not None:
                return SurrogateAt(path, escape_text(found.group()))
        elif isinstance(item, dict):
            children: list[tuple[str, Any]] = []
            for key, child in item.items():
                name = escape_text(str(key))
                child_path = f"{path}.{name}" if path else name
                children.extend([(child_path, child), (child_path, str(key))])
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(reversed([(f"{path}[{i}]", child) for i, child in enumerate(item)]))
    return None


def escape_text(text: str) -> str:
    """`text` with each lone surrogate written as the six characters `\\udXXX`."""
    if _LONE_SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def escape_lone_surrogates(value: Any) -> Any:
    """A copy of a decoded JSON value with `escape_text` applied to every string and key."""
    if isinstance(value, str):
        return escape_text(value)
    if isinstance(value, dict):
        return {escape_text(str(key)): escape_lone_surrogates(item)
                for key, item in value.items()}
    if isinstance(value, list):
        return [escape_lone_surrogates(item) for item in value]
    return value
