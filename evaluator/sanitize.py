"""Turn raw model output into a completion that can be executed after the prompt.

Chat models rarely return a bare continuation of the prompt. They wrap code in markdown
fences, repeat the prompt or the whole `def`, indent with tabs, double-escape newlines,
and add prose or test code around the function. `sanitize` undoes those artifacts and
says, in words, what it changed.

For Python the result is checked with `compile` (which also catches `'return' outside
function`, unlike `ast.parse`): a raw completion that already compiles after the prompt
is only trimmed of top-level test code, and no step may turn compiling text into text
that does not compile. Other languages only lose markdown fences and the prose around
them.
"""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from dataclasses import dataclass

from evaluator.records import Problem

__all__ = ["sanitize"]

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.-]*)")
_PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3", "ipython", "pycon"})
_FENCE_TAGS = {
    "cpp": frozenset({"cpp", "c++", "cc", "cxx", "c"}),
    "java": frozenset({"java"}),
    "js": frozenset({"js", "javascript", "node", "jsx"}),
    "go": frozenset({"go", "golang"}),
    "rust": frozenset({"rust", "rs"}),
}
_TOP_LEVEL_CODE = re.compile(
    r"^(?:async\s+def\s|def\s|class\s|import\s|from\s+[\w.]+\s+import\s|@)"
)
# Callees whose module-level calls are test scaffolding, not part of a solution.
_TEST_CALLEES = frozenset(
    {"print", "pprint", "testmod", "main", "input", "exit", "quit", "check", "run_tests", "test"}
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
    if problem.language == "python":
        prompt = "" if full_program else problem.prompt
        return _PythonSanitizer(prompt, problem.entry_point).run(raw)
    return _strip_fences_and_chatter(raw, _FENCE_TAGS.get(problem.language, frozenset()))


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
        self.entry_def = re.compile(rf"^(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", re.M)
        self.notes: list[str] = []

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

    # -- pipeline -------------------------------------------------------------------
    def run(self, raw: str) -> tuple[str, tuple[str, ...]]:
        if self.error(raw) is None:
            text = self.strip_reemitted_prompt(raw)
            text = self.dedent_nested_def(text)
            text = self.drop_test_code(text)
            return text, tuple(self.notes)
        # Stage one undoes formatting; stage two cuts text away and is kept only if it
        # yields valid Python, so a genuinely broken solution is shown as the model wrote it.
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
        formatted, formatted_notes = text, list(self.notes)
        for repair in (
            self.drop_leading_chatter,
            self.drop_trailing_chatter,
            self.strip_json_tail,
            self.drop_future_imports,
            self.fill_empty_body,
        ):
            text = repair(text)
        if self.error(text) is None:
            return self.drop_test_code(text), tuple(self.notes)
        exc = self.error(formatted)
        self.notes = formatted_notes
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
            if block.tag not in _PYTHON_TAGS or not block.body.strip():
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
        dedented = textwrap.dedent(text)
        if self.error(dedented) is not None and self.error(text) is None:
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
            kept = "\n".join(lines[:cut]).rstrip() + "\n"
            if had_entry and not self.has_solution(kept):
                break  # the broken part is the solution itself: not a formatting problem
            dropped += len(lines) - cut
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

    def drop_test_code(self, text: str) -> str:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(self.prompt + text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return text
        start = self.first_line + (1 if self.shares_line else 0)
        doomed: list[tuple[int, int]] = []
        kinds: list[str] = []
        for node in tree.body:
            if node.lineno < start:
                continue
            kind = self.test_code_kind(node)
            if kind is not None:
                last = node.end_lineno or node.lineno
                doomed.append((node.lineno - self.first_line, last - self.first_line))
                if kind not in kinds:
                    kinds.append(kind)
        if not doomed:
            return text
        lines = text.split("\n")
        for first, last in reversed(doomed):
            del lines[first : last + 1]
        candidate = "\n".join(lines).rstrip() + "\n"
        if self.error(candidate) is not None:
            return text
        self.notes.append(f"removed top-level test code ({', '.join(kinds)})")
        return candidate

    def test_code_kind(self, node: ast.stmt) -> str | None:
        if isinstance(node, ast.If) and any(
            isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(node.test)
        ):
            return "`if __name__ == '__main__'` block"
        if isinstance(node, ast.Assert):
            return "assert"
        callees = {_callee(n) for n in ast.walk(node) if isinstance(n, ast.Call)}
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            name = _callee(node.value)
            # Other module-level calls may be setup (`sys.setrecursionlimit`, building a table).
            if name in _TEST_CALLEES or name == self.entry_point or name.startswith("test"):
                return f"{name}(...) call"
        if isinstance(node, ast.Assign | ast.AnnAssign) and self.entry_point in callees:
            return f"call of {self.entry_point}"
        if isinstance(node, ast.For | ast.While) and (
            "print" in callees or self.entry_point in callees
        ):
            return "loop over test calls"
        return None


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


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _describe(exc: SyntaxError | ValueError) -> str:
    if isinstance(exc, SyntaxError):
        return f"{exc.msg} (program line {exc.lineno})"
    return str(exc)
