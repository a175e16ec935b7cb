"""Turn raw model output into a completion that can be executed after the prompt.

Chat models rarely return a bare continuation of the prompt. They wrap code in markdown
fences, repeat the prompt or the whole `def`, indent with tabs, double-escape newlines,
and add prose around the function. `sanitize` undoes those artifacts and says, in words,
what it changed.

It is off unless asked for: the reference harnesses run the text as the model wrote it
(`REFERENCE_CLEANUP` records, per dataset layout, what each one does), and a verdict on
sanitized text is not comparable with theirs.

For Python two rules bound it:

- Text that already compiles after the prompt is returned unchanged. (`compile`, unlike
  `ast.parse`, also catches `'return' outside function`.)
- No line of code of the function body is deleted. The body is the indented block that
  continues the prompt, or else the body of the first `def <entry point>`, at any
  indentation. A repair that would drop one of its statements is not made; if nothing
  else helps, the text is left as the model wrote it.

Other languages only lose markdown fences and the prose around them. A language says
which of these applies to it (`Language.sanitizer`, a key of `SANITIZERS`).
"""

from __future__ import annotations

import ast
import io
import re
import textwrap
import tokenize
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from evaluator.languages.registry import canonical_name, fence_tags, language_class
from evaluator.records import Problem

__all__ = ["REFERENCE_CLEANUP", "SANITIZER_VERSION", "SANITIZERS", "ReferenceCleanup",
           "sanitize", "sanitize_by_default"]

SANITIZER_VERSION = "1"
"""Recorded in every run's manifest (`evaluator.manifest`). Bump it with any change that can
make `sanitize` return other text for some input (a new repair, a rule that now fires or no
longer fires, another fence or prose pattern), since a sanitized sample's verdict follows its
text. Refactors that give the same text for every input, and changes to the notes only, do
not bump it."""


@dataclass(frozen=True)
class ReferenceCleanup:
    """What the reference harness of a dataset layout does to raw output before running it."""

    harness: str
    cleanup: str
    sanitize: bool
    """Whether sanitizing is on when the user does not say: only where the reference
    harness cleans raw output the way `sanitize` does."""


# The one place where the default is decided, per dataset layout (`evaluator.datasets.LAYOUTS`).
# Sources: ../shared/research/harnesses.md, "Raw-output cleanup" and D.6.
REFERENCE_CLEANUP: dict[str, ReferenceCleanup] = {
    "humaneval": ReferenceCleanup(
        "openai/human-eval", "none: the completion is appended to the prompt as it is", False),
    "humanevalplus": ReferenceCleanup(
        "EvalPlus", "none in `evalplus.evaluate`; `evalplus.sanitize` is a separate step the "
        "user runs on the file first", False),
    "humaneval-x": ReferenceCleanup(
        "CodeGeeX", "`cleanup_code`: stop words and brace matching, a Python body cut at the "
        "first non-indented line; a different cleanup from this one", False),
    "humaneval-xl": ReferenceCleanup(
        "human-eval style", "none (not among the surveyed harnesses; treated as human-eval)",
        False),
    "mhumaneval": ReferenceCleanup(
        "human-eval style", "none (not among the surveyed harnesses; treated as human-eval)",
        False),
    "multipl-e": ReferenceCleanup(
        "MultiPL-E", "none at evaluation; stop tokens are applied at generation time", False),
    "mera-ruhumaneval": ReferenceCleanup(
        "MERA", "strips a markdown fence only when the generation starts with one "
        "(`preprocess_generation`); this sanitizer does more, so it stays off", False),
    "babelcode": ReferenceCleanup(
        "human-eval style", "none (its questions are read as a human-eval Python dataset; "
        "BabelCode's own harness was not surveyed)", False),
}


def sanitize_by_default(layout: str) -> bool:
    """Whether to sanitize a dataset of `layout` when the user does not say: what its
    reference harness does (off for every layout known today, and for unknown ones)."""
    reference = REFERENCE_CLEANUP.get(layout)
    return reference.sanitize if reference is not None else False

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.-]*)")
_TOP_LEVEL_CODE = re.compile(
    r"^(?:async\s+def\s|def\s|class\s|import\s|from\s+[\w.]+\s+import\s|@)"
)
_FUTURE = re.compile(r"^from\s+__future__\s+import\s")
_ESCAPES = re.compile(r"\\(?:r\\n|[ntr\"'\\])")
_ESCAPE_VALUES = {
    "\\r\\n": "\n", "\\n": "\n", "\\t": "\t", "\\r": "", '\\"': '"', "\\'": "'", "\\\\": "\\",
}


def sanitize(
    raw: str, problem: Problem, *, full_program: bool = False
) -> tuple[str, tuple[str, ...]]:
    """Return `(completion, notes)`: the text to execute and what was changed to get it.

    `full_program` is for layouts whose text is the whole program (EvalPlus `solution`,
    BabelCode `code`): it is checked on its own instead of after the prompt.
    """
    known = canonical_name(problem.language)
    way = language_class(known).sanitizer if known is not None else "fences"
    return SANITIZERS[way](raw, problem, full_program)


def _python(raw: str, problem: Problem, full_program: bool) -> tuple[str, tuple[str, ...]]:
    prompt = "" if full_program else problem.prompt
    return _PythonSanitizer(prompt, problem.entry_point).run(raw)


def _fences(raw: str, problem: Problem, full_program: bool) -> tuple[str, tuple[str, ...]]:
    return _strip_fences_and_chatter(raw, fence_tags(problem.language))


Sanitizer = Callable[[str, Problem, bool], tuple[str, tuple[str, ...]]]

SANITIZERS: dict[str, Sanitizer] = {"fences": _fences, "python": _python}
"""The ways of cleaning raw output, by the name a language gives as its `sanitizer`."""


@dataclass(frozen=True)
class _Fenced:
    tag: str
    body: str
    closed: bool


def _fenced_blocks(text: str) -> tuple[list[str], list[_Fenced]] | None:
    """Split text on fence lines: (the text outside fences, the fenced blocks), or None."""
    lines = text.split("\n")
    outside: list[str] = []
    blocks: list[_Fenced] = []
    current: list[str] = []
    tag: str | None = None
    seen = False
    for line in lines:
        match = _FENCE.match(line)
        if match is None:
            current.append(line)
            continue
        seen = True
        if tag is None:
            outside.append("\n".join(current))
            tag = match.group(2).lower()
        else:
            blocks.append(_Fenced(tag, "\n".join(current), closed=True))
            tag = None
        current = []
    if not seen:
        return None
    if tag is None:
        outside.append("\n".join(current))
    else:
        blocks.append(_Fenced(tag, "\n".join(current), closed=False))
    return outside, blocks


def _strip_fences_and_chatter(raw: str, tags: frozenset[str]) -> tuple[str, tuple[str, ...]]:
    """For languages other than Python: keep one fenced block, drop the prose around it."""
    split = _fenced_blocks(raw)
    if split is None:
        return raw, ()
    outside, blocks = split
    nonempty = [block for block in blocks if block.body.strip()]
    if not nonempty:
        # Only a closing fence after the code: keep what came before it.
        return outside[0], ("removed a trailing markdown fence and the text after it",)
    tagged = [block for block in nonempty if block.tag in tags]
    chosen = (tagged or [block for block in nonempty if not block.tag] or nonempty)[0]
    if chosen.closed:
        return chosen.body + "\n", ("extracted the code from a markdown fence",)
    return chosen.body, ("extracted the code after an unclosed markdown fence",)


def _first_code_line(text: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return line
    return ""


class _PythonSanitizer:
    def __init__(self, prompt: str, entry_point: str) -> None:
        self.prompt = prompt
        self.entry_point = entry_point
        # Line of the assembled program on which the completion's first line sits.
        self.first_line = prompt.count("\n") + 1
        self.shares_line = bool(prompt) and not prompt.endswith("\n")
        # At any indentation: a method or a nested def is still the model's solution.
        self.entry_def = re.compile(
            rf"^[ \t]*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", re.M
        )
        self.notes: list[str] = []
        # Stripped lines of the function body that no repair may delete.
        self.protected: frozenset[str] = frozenset()

    # -- checking -------------------------------------------------------------------
    def error(self, text: str) -> SyntaxError | ValueError | None:
        try:
            with warnings.catch_warnings():
                # Models write `"\d"` and `1(2)`: the warnings say nothing about layout.
                warnings.simplefilter("ignore")
                tree = ast.parse(self.prompt + text)
                compile(tree, "<completion>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            return exc
        except (RecursionError, MemoryError):
            return ValueError("too deeply nested to compile")
        return None

    def error_line(self, exc: SyntaxError | ValueError, text: str) -> int | None:
        """0-based line of the completion where compiling failed, None if not inside it."""
        lineno = exc.lineno if isinstance(exc, SyntaxError) else None
        if lineno is None:
            return None
        index = lineno - self.first_line
        last = len(text.split("\n")) - 1
        return index if 0 <= index <= last else (last if index > last else None)

    def progress(self, before: str, after: str, shift: int = 0) -> bool:
        """True when `after` compiles, or fails later in the text than `before` does.

        `shift` is the number of lines the repair removed from the start of the text.
        """
        err_after = self.error(after)
        if err_after is None:
            return True
        err_before = self.error(before)
        if not isinstance(err_before, SyntaxError) or not isinstance(err_after, SyntaxError):
            return False
        return (err_after.lineno or 0) + shift > (err_before.lineno or 0)

    def keeps_body(self, text: str) -> bool:
        """Whether `text` still holds every protected line of the function body."""
        return self.protected <= {line.strip() for line in text.split("\n")}

    # -- pipeline -------------------------------------------------------------------
    def run(self, raw: str) -> tuple[str, tuple[str, ...]]:
        if self.error(raw) is None:
            return raw, ()
        self.protected = _body_code_lines(raw, self.entry_point)
        # Stage one undoes formatting; stage two cuts text away and is kept only if it
        # yields valid Python, so a genuinely broken solution is shown as the model wrote it.
        # Each stage stops as soon as the text compiles: valid Python is not touched.
        text = raw
        for repair in (
            self.extract_fence,
            self.decode_escapes,
            self.expand_tabs,
            self.strip_wrapping_quotes,
            self.strip_reemitted_prompt,
            self.dedent_nested_def,
        ):
            text = repair(text)
            if self.error(text) is None:
                break
        formatted, formatted_notes = text, list(self.notes)
        # Escaped or fenced code shows its body only now.
        self.protected |= _body_code_lines(formatted, self.entry_point)
        for repair in (
            self.drop_leading_chatter,
            self.drop_trailing_chatter,
            self.strip_json_tail,
            self.drop_future_imports,
            self.fill_empty_body,
        ):
            if self.error(text) is None:
                break
            text = repair(text)
        if self.error(text) is None and self.keeps_body(text):
            return text, tuple(self.notes)
        self.notes = formatted_notes
        if not self.keeps_body(formatted):
            return raw, ()
        exc = self.error(formatted)
        if exc is not None and self.notes:
            self.notes.append(f"still not valid Python after sanitizing: {_describe(exc)}")
        return formatted, tuple(self.notes)

    def extract_fence(self, text: str) -> str:
        split = _fenced_blocks(text)
        if split is None:
            return text
        outside, blocks = split
        candidates: list[tuple[int, str, str]] = []
        for block in blocks:
            if block.tag not in fence_tags("python") or not block.body.strip():
                continue
            score = (4 if self.entry_def.search(block.body) else 0) + (2 if block.closed else 0)
            how = "a markdown fence" if block.closed else "an unclosed markdown fence"
            candidates.append((score, block.body, f"extracted the code from {how}"))
        before = outside[0]
        # Code followed by only a closing fence: the text before the first fence is the code.
        if before.strip() and (
            self.entry_def.search(before) or _first_code_line(before)[:1] in (" ", "\t")
        ):
            score = 5 if self.entry_def.search(before) else 3
            candidates.append((score, before, "removed a closing markdown fence and what followed"))
        # A block that would leave out code of the function body is not the code.
        candidates = [c for c in candidates if self.keeps_body(c[1])]
        if not candidates:
            return text
        score, body, note = max(candidates, key=lambda c: c[0])
        self.notes.append(note)
        return body.strip("\n") + "\n"

    def decode_escapes(self, text: str) -> str:
        if "\\n" not in text:
            return text
        if "\n" in text.strip():
            # Real line breaks too: `"\n".join` is legitimate, so decode only if that compiles.
            decoded = _decode(text)
            if self.error(decoded) is not None:
                return text
        else:
            # One line holding literal `\n` sequences, sometimes escaped twice over.
            decoded = text
            for _ in range(3):
                if "\n" in decoded.strip() or "\\n" not in decoded:
                    break
                decoded = _decode(decoded)
        self.notes.append("decoded literal \\n escape sequences into line breaks")
        return decoded

    def strip_wrapping_quotes(self, text: str) -> str:
        stripped = text.strip()
        match = re.match(r"(\"{1,2}|'{1,2})(?=[A-Za-z_#@\s])", stripped)
        if match is None:
            return text
        quote = match.group(1)
        inner = stripped[len(quote):]
        # Leave a closing triple quote alone: it ends a docstring, not the wrapper.
        if len(inner) - len(inner.rstrip(quote[0])) == len(quote):
            inner = inner[: -len(quote)]
        if self.progress(text, inner):
            self.notes.append("removed quotes wrapped around the code")
            return inner
        return text

    def strip_json_tail(self, text: str) -> str:
        # `return x" }"`: the end of a JSON object the model meant to wrap the code in.
        start = _closing_braces_start(text)
        if start is None:
            return text
        candidate = text[:start].rstrip() + "\n"
        if self.progress(text, candidate):
            self.notes.append("removed stray closing braces or quotes after the code")
            return candidate
        return text

    def expand_tabs(self, text: str) -> str:
        lines = text.split("\n")
        changed = False
        for i, line in enumerate(lines):
            indent = len(line) - len(line.lstrip(" \t"))
            if "\t" in line[:indent]:
                lines[i] = line[:indent].expandtabs(4) + line[indent:]
                changed = True
        if not changed:
            return text
        self.notes.append("expanded tab indentation to 4 spaces")
        return "\n".join(lines)

    def strip_reemitted_prompt(self, text: str) -> str:
        wanted = [line.rstrip() for line in self.prompt.split("\n") if line.strip()]
        if not wanted:
            return text
        lines = text.split("\n")
        i = j = 0
        while i < len(lines) and j < len(wanted):
            if not lines[i].strip():
                i += 1
            elif lines[i].rstrip() == wanted[j]:
                i += 1
                j += 1
            else:
                return text
        if j < len(wanted):
            return text
        rest = "\n".join(lines[i:])
        if self.error(rest) is not None and self.error(text) is None:
            return text
        self.notes.append("removed the re-emitted prompt")
        return rest

    def dedent_nested_def(self, text: str) -> str:
        # An indented `def entry_point` after the prompt defines a local function inside the
        # prompt's function, which then returns None: the model meant a top-level def.
        first = _first_code_line(text)
        if first[:1] not in (" ", "\t") or not self.entry_def.match(first.lstrip()):
            return text
        # Only the indented block: prose after it is flush left and would stop `dedent`.
        lines = text.split("\n")
        end = next((k for k, line in enumerate(lines) if line.strip() and line[0] not in " \t"),
                   len(lines))
        dedented = textwrap.dedent("\n".join(lines[:end]))
        dedented = "\n".join([dedented, *lines[end:]])
        if dedented == text or (self.error(dedented) is not None and self.error(text) is None):
            return text
        self.notes.append(f"dedented the `def {self.entry_point}` nested in the prompt's function")
        return dedented

    def drop_leading_chatter(self, text: str) -> str:
        lines = text.split("\n")
        first = next((k for k, line in enumerate(lines) if line.strip()), None)
        # An indented first line continues the prompt's function: never leading chatter.
        if first is None or lines[first][0] in " \t#" or _TOP_LEVEL_CODE.match(lines[first]):
            return text
        start = next(
            (k for k in range(first + 1, len(lines)) if _TOP_LEVEL_CODE.match(lines[k])), None
        )
        head = lines[first:start]
        # Prose is flush left; indented lines mean code is mixed in, and valid Python (a
        # constant, say) is kept.
        if start is None or _parses("\n".join(head)):
            return text
        if any(line.strip() and line[0] in " \t" for line in head):
            return text
        if any(_is_statement(line) for line in head):
            return text  # `return [...]` or `x = 1` among the prose is code, not chatter
        self.notes.append(f"removed {start - first} line(s) of text before the code")
        return "\n".join(lines[start:])

    def drop_trailing_chatter(self, text: str) -> str:
        had_entry = self.entry_def.search(text) is not None
        dropped = 0
        for _ in range(20):
            exc = self.error(text)
            if exc is None:
                break
            where = self.error_line(exc, text)
            lines = text.split("\n")
            if where is None:
                break
            # Cut at the top-level statement that holds the error, never inside a function.
            cut = next(
                (k for k in range(where, -1, -1) if lines[k].strip() and lines[k][0] not in " \t"),
                None,
            )
            while cut is not None and cut > 0 and lines[cut - 1].startswith("@"):
                cut -= 1
            if cut is None or cut == 0 or (cut == 1 and self.shares_line):
                break
            # Prose ends where top-level code starts again: a helper defined after it stays.
            resume = next(
                (k for k in range(cut + 1, len(lines)) if _TOP_LEVEL_CODE.match(lines[k])),
                len(lines),
            )
            kept = "\n".join(lines[:cut] + lines[resume:]).rstrip() + "\n"
            if had_entry and not self.has_solution(kept):
                break  # the broken part is the solution itself: not a formatting problem
            if not self.keeps_body(kept):
                break  # the cut would take code of the function body with it
            dropped += sum(1 for line in lines[cut:resume] if line.strip())
            text = kept
        if dropped:
            self.notes.append(f"removed {dropped} line(s) of text or broken code after the code")
        return text

    def drop_future_imports(self, text: str) -> str:
        # Legal only at the top of a file, which the prompt occupies; all are no-ops in Python 3
        # except `annotations`, and a completion that needs it is rare enough to accept.
        if not self.prompt.strip():
            return text
        kept = [line for line in text.split("\n") if not _FUTURE.match(line)]
        if len(kept) == text.count("\n") + 1:
            return text
        self.notes.append("removed a `from __future__` import, which cannot follow the prompt")
        return "\n".join(kept)

    def has_solution(self, text: str) -> bool:
        """Whether `text` still defines the entry point or continues the prompt's body."""
        code = [
            line for line in text.split("\n") if line.strip() and not line.lstrip().startswith("#")
        ]
        return bool(self.entry_def.search(text)) or bool(code and code[0][0] in " \t")

    def fill_empty_body(self, text: str) -> str:
        # A prompt that ends on the `def` line needs a body before top-level code follows.
        if not self.prompt or self.error("") is None or _first_code_line(text)[:1] in (" ", "\t"):
            return text
        candidate = "    pass\n" + text
        if self.progress(text, candidate):
            self.notes.append("added `pass` as the prompt function's body")
            return candidate
        return text


def _closing_braces_start(text: str) -> int | None:
    """Where a run of `}` (with quotes and spaces between) ending the text starts, if any."""
    i = len(text.rstrip())

    def skip_quote_and_blanks(i: int) -> int:
        while i > 0 and text[i - 1] in " \t":
            i -= 1
        if i > 0 and text[i - 1] in "\"'":
            i -= 1
        while i > 0 and text[i - 1] in " \t":
            i -= 1
        return i

    i = skip_quote_and_blanks(i)
    braces = 0
    while i > 0 and text[i - 1] == "}":
        braces += 1
        i = skip_quote_and_blanks(i - 1)
    return i if braces else None


def _decode(text: str) -> str:
    return _ESCAPES.sub(lambda m: _ESCAPE_VALUES[m.group(0)], text)


def _parses(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _describe(exc: SyntaxError | ValueError) -> str:
    if isinstance(exc, SyntaxError):
        return f"{exc.msg} (program line {exc.lineno})"
    return str(exc)


# -- the function body, which sanitizing never cuts into ------------------------------------
_COMPOUND_SHAPES = ("{}\n    pass", "if x:\n    pass\n{}\n    pass", "try:\n    pass\n{}\n    pass")


def _body_code_lines(text: str, entry_point: str) -> frozenset[str]:
    """The stripped lines of code of the function body that `text` writes.

    The body is the indented block that continues the prompt when the text starts indented,
    else the block under the first `def <entry_point>` at any indentation (a method, a
    nested def). A statement counts as code when it parses on its own, or is the header of
    a compound statement; a bare string (a docstring) does not count.
    """
    lines = [_expand_indent(line) for line in text.split("\n")]
    statements = _statement_spans(lines)
    if not statements:
        return frozenset()

    def indent(span: tuple[int, int]) -> int:
        line = lines[span[0]]
        return len(line) - len(line.lstrip(" "))

    if indent(statements[0]) > 0:
        body = statements[: next((k for k, span in enumerate(statements) if indent(span) == 0),
                                 len(statements))]
    else:
        header = re.compile(rf"(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(")
        found = next((k for k, span in enumerate(statements)
                      if header.match(lines[span[0]].lstrip(" "))), None)
        if found is None:
            return frozenset()
        level = indent(statements[found])
        rest = statements[found + 1:]
        body = rest[: next((k for k, span in enumerate(rest) if indent(span) <= level),
                           len(rest))]
    code: set[str] = set()
    for first, last in body:
        chunk = lines[first : last + 1]
        source = textwrap.dedent("\n".join(chunk)).strip()
        if _is_code(source) and not _is_bare_string(source):
            code.update(line.strip() for line in chunk if line.strip())
    return frozenset(code)


def _expand_indent(line: str) -> str:
    indent = len(line) - len(line.lstrip(" \t"))
    return line[:indent].expandtabs(4) + line[indent:]


def _statement_spans(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) 0-based lines of each statement, comments and blank lines left out.

    Statements are the tokenizer's logical lines; where it gives up (broken code), each
    remaining non-blank line stands for itself.
    """
    spans: list[tuple[int, int]] = []
    start: int | None = None
    done = 0
    skipped = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
               tokenize.ENDMARKER)
    try:
        tokens = tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
        for token in tokens:
            if token.type in skipped:
                continue
            if start is None:
                start = token.start[0] - 1
            if token.type == tokenize.NEWLINE:
                spans.append((start, token.start[0] - 1))
                done, start = token.start[0], None
    except (tokenize.TokenError, SyntaxError, RecursionError, MemoryError):
        pass
    spans.extend((i, i) for i in range(done, len(lines))
                 if lines[i].strip() and not lines[i].lstrip().startswith("#"))
    return spans


def _is_code(source: str) -> bool:
    if not source:
        return False
    if _parses(source):
        return True
    return source.endswith(":") and any(_parses(shape.format(source)) for shape in _COMPOUND_SHAPES)


def _is_bare_string(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return (len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr)
            and isinstance(tree.body[0].value, ast.Constant)
            and isinstance(tree.body[0].value.value, str))


def _is_statement(line: str) -> bool:
    """A flush-left line that is a Python statement, not a word or a `Label: value` that
    happen to parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse("def _():\n    " + line.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    body = function.body
    if len(body) != 1:
        return True
    node = body[0]
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Name | ast.Constant):
        return False
    return not (isinstance(node, ast.AnnAssign) and node.value is None)
