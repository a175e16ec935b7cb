"""The natural-language part of a prompt: its docstring or leading comment, split into
prose and examples, so that an Arabic docstring can run right to left while its code
examples stay left to right."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Literal

_PY_DOC = re.compile(r'("""|\'\'\')(.*?)\1', re.DOTALL)
_BLOCK_COMMENT = re.compile(r"/\*(.*?)\*/", re.DOTALL)
_CALL_EXAMPLE = re.compile(
    r"^(?:for\s+|e\.g\.\s*)?[\w.]+\s*\(.*\)\s*(==>?|=>|➞|->|➠|returns?\b|should return\b)"
)


@dataclass(frozen=True)
class DocBlock:
    kind: Literal["prose", "code"]
    text: str


def docstring_of(prompt: str, language: str) -> str:
    """The first docstring (Python) or comment (other languages) of a prompt, dedented."""
    if language == "python":
        found = _PY_DOC.search(prompt)
        return _dedent(found.group(2)) if found else ""
    found = _BLOCK_COMMENT.search(prompt)
    if found:
        lines = [re.sub(r"^\s*\*\s?", "", line) for line in found.group(1).splitlines()]
        return _dedent("\n".join(lines))
    comment_lines = [line.strip()[2:] for line in prompt.splitlines()
                     if line.strip().startswith("//")]
    return _dedent("\n".join(comment_lines))


def _dedent(text: str) -> str:
    lines = text.strip("\n").splitlines()
    if not lines:
        return ""
    # The first line follows the opening quotes directly, so it has no indentation of its
    # own; dedent the rest and put it back.
    first, rest = lines[0].strip(), textwrap.dedent("\n".join(lines[1:]))
    return "\n".join(filter(None, [first, rest])).strip()


def _is_code(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(">>>") or bool(_CALL_EXAMPLE.match(stripped))


def doc_blocks(doc: str) -> list[DocBlock]:
    """Prose paragraphs and example blocks, in order.

    An example starts at a `>>> call` line or a `f(x) == y` style line; the lines after a
    `>>>` line up to a blank line are its expected output.
    """
    blocks: list[DocBlock] = []
    prose: list[str] = []
    code: list[str] = []
    in_example = False

    def flush_prose() -> None:
        # Source docstrings wrap lines at a fixed width; a paragraph is re-flowed so the
        # page wraps it (in either direction), and blank lines still separate paragraphs.
        paragraphs = re.split(r"\n\s*\n", "\n".join(prose).strip())
        text = "\n\n".join(" ".join(line.strip() for line in paragraph.splitlines())
                           for paragraph in paragraphs if paragraph.strip())
        if text:
            blocks.append(DocBlock("prose", text))
        prose.clear()

    def flush_code() -> None:
        if code:
            blocks.append(DocBlock("code", textwrap.dedent("\n".join(code)).strip("\n")))
        code.clear()

    for line in doc.splitlines():
        if _is_code(line):
            flush_prose()
            code.append(line)
            in_example = line.strip().startswith(">>>")
        elif in_example and line.strip():
            code.append(line)
        else:
            in_example = False
            flush_code()
            prose.append(line)
    flush_prose()
    flush_code()
    return blocks
