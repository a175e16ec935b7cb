"""Read generation files into `Sample`s, reporting each problem with its line and field.

A generation file is JSON Lines, plain or gzip-compressed (recognised by its magic bytes),
read one line at a time. `SampleReader` hands the samples on as it reads them and keeps
only counters and a bounded index, so that an upload of any size costs the same memory;
`read_samples` collects them for callers that want the whole file. Its layout
is decided by the first record that has a recognisable shape:

- `completion`: human-eval (and MERA-style) `{task_id, completion[, completion_id]}`
- `generation`: CodeGeeX's HumanEval-X `{task_id, generation[, completion_id]}`
- `solution`: EvalPlus `{task_id, solution}`, a whole program
- `codet`: CodeT `{prompt, samples: [...]}`, matched to a problem by its signature
- `babelcode`: BabelCode `{qid, language, code}`, a whole function

Every later record is checked against that layout. Problems are reported, never raised:
`read_samples` returns what it could read together with the issues and the coverage.
"""

from __future__ import annotations

import contextlib
import json
import re
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Generic, Literal, Protocol, TypeVar

from evaluator.gzip_limit import (
    DEFAULT_MAX_EXPANDED_BYTES,
    GZIP_MAGIC,
    ExpansionLimitExceeded,
    LimitedGzipReader,
)
from evaluator.languages.registry import canonical_name, display_name
from evaluator.records import Problem, Sample
from evaluator.sanitize import sanitize
from evaluator.surrogates import find_lone_surrogate, might_hold_lone_surrogate

__all__ = [
    "LAYOUTS",
    "Coverage",
    "FileIssue",
    "SampleFile",
    "SampleReader",
    "iter_records",
    "match_signature",
    "read_samples",
    "sanitize",
]

Severity = Literal["error", "warning"]

LAYOUTS = ("completion", "generation", "solution", "codet", "babelcode")
_CONTENT_FIELD = {"completion": "completion", "generation": "generation", "solution": "solution"}
_LAYOUT_NAMES = {
    "completion": "human-eval (`task_id`, `completion`)",
    "generation": "CodeGeeX (`task_id`, `generation`)",
    "solution": "EvalPlus (`task_id`, `solution`)",
    "codet": "CodeT (`prompt`, `samples`)",
    "babelcode": "BabelCode (`qid`, `language`, `code`)",
}
_SKIP_CHUNK = 1 << 16
_SANITIZED_CACHE_CHARS = 8_000_000
"""Text the sanitizing cache may hold before it starts again: it saves work on repeated
completions, and must not grow with the file."""
# `HumanEval/3`, `CPP/3`, `python/4`, `HumanEval_3_below_zero`, `3`.
_ID_FORM = re.compile(r"(?:(?P<prefix>[A-Za-z][A-Za-z0-9+#]*)[/_-])?(?P<number>\d+)(?:[_/-].*)?")
_DEF_HEADER = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", re.M)


@dataclass(frozen=True)
class FileIssue:
    line: int | None
    """1-based line in the file; None for whole-file problems."""
    field: str | None
    """The JSON field concerned."""
    code: str
    """bad_json, not_object, missing_field, wrong_type, unknown_task, language_mismatch,
    empty_file, corrupt_gzip, too_large (expanded size, or samples of one task),
    not_utf8, lone_surrogate, line_too_long,
    duplicate_sample, no_match, unknown_layout, duplicate_task (a warning),
    too_many_issues."""
    message: str
    severity: Severity = "error"
    column: int | None = None
    """1-based column (in characters) of the line, where it is known."""


@dataclass(frozen=True)
class Coverage:
    tasks_total: int
    tasks_with_samples: int
    missing_tasks: tuple[str, ...]
    samples_total: int
    samples_per_task: dict[str, int]
    min_n: int
    max_n: int
    max_k: int
    """The largest k that every attempted task supports (= min_n); 0 if none."""
    unequal_n: bool


class GradedIssue(Protocol):
    @property
    def severity(self) -> str: ...


IssueT = TypeVar("IssueT", bound=GradedIssue)


class HasIssues(Generic[IssueT]):
    """The errors and the warnings among a checked file's `issues` (here, and in the web
    app's checks, whose issues are of its own type)."""

    issues: tuple[IssueT, ...]

    @property
    def errors(self) -> tuple[IssueT, ...]:
        return tuple(issue for issue in self.issues if issue.severity == "error")

    @property
    def warnings(self) -> tuple[IssueT, ...]:
        return tuple(issue for issue in self.issues if issue.severity == "warning")


@dataclass(frozen=True)
class SampleFile(HasIssues[FileIssue]):
    layout: str
    """One of LAYOUTS, or `unknown` when no record had a recognisable shape."""
    samples: tuple[Sample, ...]
    issues: tuple[FileIssue, ...]
    coverage: Coverage

    @property
    def ok(self) -> bool:
        return not self.errors


class _LineSource(Protocol):
    def readline(self, size: int = -1, /) -> bytes: ...


def iter_records(
    path: str | Path | IO[bytes], *, max_line_bytes: int = 1_000_000,
    max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
) -> Iterator[tuple[int, dict[str, Any] | FileIssue]]:
    """Yield `(line, record)` for each JSON object, or `(line, issue)` for a line that is not one.

    `path` is a file name, or a binary file open at its start (left open). Blank lines
    are skipped. Whole-file issues (an empty file) come with line 0. A line longer than
    `max_line_bytes` is skipped unread: it is never decoded or parsed. A gzip file that
    expands past `max_expanded_bytes` ends with a `too_large` issue where reading stopped.
    """
    with _opened(path) as handle:
        compressed = handle.read(2) == GZIP_MAGIC
        handle.seek(0)
        stream: _LineSource = (
            LimitedGzipReader(handle, max_expanded_bytes) if compressed else handle
        )
        line = 0
        nonblank = 0
        try:
            while True:
                chunk = stream.readline(max_line_bytes + 1)
                if not chunk:
                    break
                line += 1
                if len(chunk) > max_line_bytes and not chunk.endswith(b"\n"):
                    nonblank += 1
                    length = len(chunk) + _skip_rest_of_line(stream)
                    yield line, FileIssue(
                        line, None, "line_too_long",
                        f"Line {line} is {length:,} bytes long, over the limit of "
                        f"{max_line_bytes:,} bytes; it was not read.",
                    )
                    continue
                item = _decode_line(chunk, line)
                if item is None:
                    continue
                nonblank += 1
                yield line, item
        except ExpansionLimitExceeded as exc:
            yield line + 1, FileIssue(
                None, None, "too_large",
                f"The file {exc}, over the limit; reading stopped at line {line + 1}. "
                f"Split it into smaller files (at most {exc.limit:,} bytes each when "
                "decompressed), one run each.",
            )
            return
        except (OSError, EOFError, zlib.error) as exc:
            if not compressed:
                raise
            yield line + 1, FileIssue(
                line + 1, None, "corrupt_gzip",
                f"The gzip data is corrupt or truncated: reading stopped at line {line + 1} "
                f"({exc}).",
            )
            return
    if nonblank == 0:
        what = "is empty" if line == 0 else "holds only blank lines"
        yield 0, FileIssue(None, None, "empty_file", f"The file {what}: it has no records.")


@contextlib.contextmanager
def _opened(path: str | Path | IO[bytes]) -> Iterator[IO[bytes]]:
    if isinstance(path, str | Path):
        with Path(path).open("rb") as handle:
            yield handle
    else:
        yield path


def _skip_rest_of_line(stream: _LineSource) -> int:
    skipped = 0
    while True:
        more = stream.readline(_SKIP_CHUNK)
        skipped += len(more)
        if not more or more.endswith(b"\n"):
            return skipped


def _decode_line(chunk: bytes, line: int) -> dict[str, Any] | FileIssue | None:
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        column = len(chunk[: exc.start].decode("utf-8", "replace")) + 1
        return FileIssue(
            line, None, "not_utf8",
            f"Line {line}, column {column}: byte 0x{chunk[exc.start]:02x} (byte offset "
            f"{exc.start}) is not valid UTF-8; a generation file must be UTF-8 text.",
            column=column,
        )
    if line == 1:
        text = text.removeprefix("\ufeff")
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        column, what = _json_error(text, exc)
        return FileIssue(line, None, "bad_json", f"Line {line}, column {column}: {what}",
                         column=column)
    except RecursionError:
        return FileIssue(line, None, "bad_json", f"Line {line} is JSON nested too deeply to read.")
    if not isinstance(value, dict):
        return FileIssue(
            line, None, "not_object",
            f"Line {line} holds a JSON {_json_type(value)}, but each line must be a JSON object.",
        )
    # Checked here, before any field is used: such a string cannot be stored, written out,
    # or even shown back in an issue's message.
    surrogate = find_lone_surrogate(value) if might_hold_lone_surrogate(chunk) else None
    if surrogate is not None:
        return FileIssue(
            line, surrogate.path, "lone_surrogate",
            f"Line {line}, field `{surrogate.path}`: holds {surrogate.code_point}, a lone "
            "surrogate escape, which is not a character and cannot be stored or written as "
            "UTF-8 (often text cut between the two halves of an emoji).",
        )
    return value


def _json_error(text: str, exc: json.JSONDecodeError) -> tuple[int, str]:
    """The column (1-based, in characters of the line) and a sentence for a JSON error."""
    line = text.rstrip("\r\n")
    pos = min(exc.pos, len(line))
    column = pos + 1
    found = line[pos : pos + 12]
    near = f" at {json.dumps(found, ensure_ascii=False)}" if found else " at the end of the line"
    if exc.msg.startswith("Invalid control character") or exc.msg.startswith("Unterminated"):
        start = _string_start(line, pos)
        if pos >= len(line):
            return start + 1, (
                f"not valid JSON: the string that starts at column {start + 1} is not closed "
                "on this line; a line break inside a string must be written as \\n."
            )
        return column, (
            f"not valid JSON: a raw control character (U+{ord(line[pos]):04X}) inside a "
            "string; write it escaped (\\t for a tab, \\n for a line break)."
        )
    if exc.msg.startswith("Unexpected UTF-8 BOM"):
        return 1, "not valid JSON: the line starts with a byte order mark (U+FEFF)."
    hint = {
        "Expecting value": "expected a JSON value (a \"string\" in double quotes, a number, "
                           "true, false, null, an array or an object)",
        "Extra data": "unexpected text after the end of the JSON object; each line must hold "
                      "exactly one object",
        "Expecting property name enclosed in double quotes":
            "expected a field name in double quotes (or `}`; JSON has no trailing commas)",
    }.get(exc.msg, exc.msg[:1].lower() + exc.msg[1:])
    return column, f"not valid JSON{near}: {hint}."


def _string_start(line: str, pos: int) -> int:
    """The offset of the opening quote of the string that is open at `pos`."""
    inside, start, i = False, 0, 0
    while i < min(pos, len(line)):
        char = line[i]
        if inside and char == "\\":
            i += 2
            continue
        if char == '"':
            inside, start = not inside, i
        i += 1
    return start


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def match_signature(prompt: str, problems: Sequence[Problem]) -> Problem | list[Problem]:
    """The problem whose prompt declares the same function as `prompt`.

    Returns the problem, or the (possibly empty) list of candidates when there is no single
    one. Entry points repeat in HumanEval (`solve` is /84 and /161), so the whole `def`
    header is compared, and ties are broken by the words of the docstring that follows.
    """
    return _SignatureIndex(problems).match(prompt)


class _SignatureIndex:
    def __init__(self, problems: Sequence[Problem]) -> None:
        self.by_header: dict[str, list[tuple[Problem, str]]] = {}
        for problem in problems:
            found = _header_of(problem.prompt, problem.entry_point)
            if found is not None:
                header, after = found
                self.by_header.setdefault(header, []).append((problem, after))

    def match(self, prompt: str) -> Problem | list[Problem]:
        headers = [
            found
            for match in _DEF_HEADER.finditer(prompt)
            if (found := _header_of(prompt, match.group(1), match.start())) is not None
        ]
        # The function to complete is declared last; earlier ones are helpers.
        for header, after in reversed(headers):
            candidates = self.by_header.get(header, [])
            if len(candidates) == 1:
                return candidates[0][0]
            if candidates:
                words = _words(after)
                scored = [(_common_prefix(words, _words(text)), p) for p, text in candidates]
                best = max(score for score, _ in scored)
                winners = [p for score, p in scored if score == best]
                return winners[0] if len(winners) == 1 and best > 0 else winners
        return []


def _header_of(prompt: str, name: str, start: int = -1) -> tuple[str, str] | None:
    """The last `def name(...):` header in `prompt`, without whitespace, and the text after it."""
    if start < 0:
        matches = [m for m in _DEF_HEADER.finditer(prompt) if m.group(1) == name]
        if not matches:
            return None
        start = matches[-1].start()
    depth = 0
    for i in range(prompt.index("(", start), len(prompt)):
        char = prompt[i]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == ":" and depth == 0:
            return "".join(prompt[start : i + 1].split()), prompt[i + 1 :]
    return None


def _words(text: str) -> list[str]:
    return text.split()[:80]


def _common_prefix(left: list[str], right: list[str]) -> int:
    count = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        count += 1
    return count


class _TaskResolver:
    """Maps the ids found in files (`HumanEval/3`, `CPP/3`, `HumanEval_3_x`, 3) to problems."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.by_task_id: dict[str, Problem] = {}
        self.by_source_id: dict[str, Problem] = {}
        self.by_number: dict[tuple[str, int], Problem] = {}
        self.problems = list(problems)
        self.languages = sorted({problem.language for problem in problems})
        for problem in problems:
            self.by_task_id.setdefault(problem.task_id, problem)
            if problem.source_id:
                self.by_source_id.setdefault(problem.source_id, problem)
            # Ids that are not `Name/N` simply cannot be found by number.
            with contextlib.suppress(IndexError, ValueError):
                self.by_number.setdefault((problem.language, problem.number), problem)

    def describe(self) -> str:
        """`humaneval/python`: what the problems are, for messages."""
        names = sorted({f"{p.dataset}/{p.language}" for p in self.problems})
        return " and ".join(names[:2]) or "these problems"

    def example(self) -> str:
        first = self.problems[0] if self.problems else None
        if first is None:
            return "HumanEval/0"
        return first.source_id if first.source_id and first.source_id != first.task_id \
            and "/" in first.source_id else first.task_id

    def is_own(self, raw_id: str) -> bool:
        """True for an id exactly as the problems write it (their task or source id)."""
        return raw_id in self.by_task_id or raw_id in self.by_source_id

    def resolve(self, raw_id: str) -> Problem | tuple[str, str]:
        """The problem, or `(issue code, reason)`."""
        if "\x00" in raw_id:
            # The id is given back byte for byte, and PostgreSQL text cannot hold a NUL.
            return "unknown_task", "it contains a NUL character (\\u0000)"
        # Exact source ids first: HumanEval-XL's `python/4` is its own numbering (HumanEval/13),
        # while CodeGeeX's `Python/4` means HumanEval/4.
        found = self.by_task_id.get(raw_id) or self.by_source_id.get(raw_id)
        if found is not None:
            return found
        form = _ID_FORM.fullmatch(raw_id.strip())
        if form is None:
            return "unknown_task", "it matches no problem's id"
        prefix = (form.group("prefix") or "").casefold()
        number = int(form.group("number"))
        named = canonical_name(prefix)
        if prefix in ("", "humaneval"):
            if len(self.languages) != 1:
                return "unknown_task", "it names no language and the problems span several"
            language = self.languages[0]
        elif named is not None:
            language = named
            if language not in self.languages:
                ours = ", ".join(display_name(x) for x in self.languages)
                return "language_mismatch", (
                    f"it is a {display_name(language)} task id, but the problems are in "
                    f"{ours or 'no language'}"
                )
        else:
            return "unknown_task", "it matches no problem's id"
        problem = self.by_number.get((language, number))
        if problem is None:
            numbers = [n for (lang, n) in self.by_number if lang == language]
            span = f" (they run {min(numbers)}–{max(numbers)})" if numbers else ""
            return "unknown_task", f"there is no problem number {number}{span}"
        return problem


class _FirstLines:
    """The line on which each sample index of one task was first given, to name it when a
    later line repeats the index.

    Indices are nearly always 0, 1, 2, ... in some order, so they index a packed array of
    line numbers (0: not seen yet), 8 bytes a sample where a dict entry keyed by
    (task, index) took over 100. An index that would leave the array less than half
    used (a file's own sparse `completion_id`s, a negative one) goes to a dict instead, so
    the array never holds more than twice the samples seen, plus a little.
    """

    __slots__ = ("dense", "sparse", "count")

    SLACK = 64

    def __init__(self) -> None:
        self.dense = array("q")
        self.sparse: dict[int, int] = {}
        self.count = 0

    def get(self, index: int) -> int | None:
        if 0 <= index < len(self.dense):
            return self.dense[index] or None
        return self.sparse.get(index)

    def add(self, index: int, line: int) -> None:
        """Record `line` (1 or more) for an index not seen before."""
        self.count += 1
        if 0 <= index < len(self.dense):
            self.dense[index] = line
        elif len(self.dense) <= index < 2 * self.count + self.SLACK:
            self.dense.frombytes(bytes(self.dense.itemsize * (index - len(self.dense))))
            self.dense.append(line)
        else:
            self.sparse[index] = line


class SampleReader:
    """Reads a generation file against `problems` and hands its samples on one at a time
    (`read`), with every check of `read_samples`; `layout`, `issues` and `coverage()` then
    say what the file held.

    What it keeps between lines does not grow with the text of the file: counters per
    task, the line of each (task, index) seen (for duplicates), at most `max_issues`
    issues, and a sanitizing cache it empties when full. `max_samples_per_task` bounds
    the index too: past it, reading stops with a `too_large` error, so that neither a
    gzip bomb of valid lines nor a huge plain file is read to its end.
    """

    def __init__(
        self, problems: Sequence[Problem], *, sanitize: bool = False, max_issues: int = 200,
        max_samples_per_task: int | None = None,
    ) -> None:
        self.problems = problems
        self.sanitize = sanitize
        self.max_issues = max_issues
        self.max_samples_per_task = max_samples_per_task
        self.resolver = _TaskResolver(problems)
        self.signatures: _SignatureIndex | None = None
        self.layout: str | None = None
        self.layout_line = 0
        self.issues: list[FileIssue] = []
        self.has_errors = False
        """True once any error was found: the file cannot be used, whatever follows."""
        self.overflow = False
        self.stopped = False
        """True once a limit stopped the reading (`too_large`)."""
        self.ready: list[Sample] = []
        """Samples of the record just read, not yet handed on."""
        self.first_seen: dict[str, _FirstLines] = {}
        """Per task, the line of each sample index given, for duplicates (`_FirstLines`)."""
        self.per_task: Counter[str] = Counter()
        self.codet_tasks: dict[str, int] = {}
        self.sanitized: dict[tuple[str, str, bool], tuple[str, tuple[str, ...]]] = {}
        self.sanitized_chars = 0
        self.objects = 0
        self.unreadable = 0
        self.hidden: list[int] = []
        """Lines of unreadable lines not listed one by one (see `unreadable_line`)."""
        self.odd_id: tuple[int, str, str] | None = None
        """The first id that is not one of the problems' own: (line, as written, read as)."""
        self.odd_count = 0
        self.foreign: tuple[int, str, str, str] | None = None
        """The first task id of another language (`CPP/0` against Python problems): (line,
        field, as written, why); the file's ids of that kind get one issue, not one a line."""
        self.foreign_lines: list[int] = []
        self.foreign_language: str | None = None
        """The language of those ids, when every one names the same."""

    @property
    def ok(self) -> bool:
        return not self.has_errors

    def report(
        self, line: int | None, field: str | None, code: str, message: str,
        severity: Severity = "error", column: int | None = None,
    ) -> None:
        self.has_errors = self.has_errors or severity == "error"
        if len(self.issues) < self.max_issues:
            self.issues.append(FileIssue(line, field, code, message, severity, column))
        else:
            self.overflow = True

    def read(
        self, path: str | Path | IO[bytes], *, max_line_bytes: int = 1_000_000,
        max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
    ) -> Iterator[Sample]:
        """The file's samples, in its order, each as soon as its line is read. Issues are
        collected on the way; once the iterator is done, they and the coverage are final."""
        for line, item in iter_records(path, max_line_bytes=max_line_bytes,
                                       max_expanded_bytes=max_expanded_bytes):
            if isinstance(item, FileIssue) and item.code in _UNREADABLE:
                if not self.unreadable_line(item):
                    break
            elif isinstance(item, FileIssue):
                self.report(item.line, item.field, item.code, item.message, item.severity,
                            item.column)
            else:
                self.objects += 1
                self.summarize_unreadable()
                self.record(line, item)
            yield from self.hand_on()
            if self.overflow:
                # An upload of garbage should not cost a full read to say so.
                self.too_many_issues(line)
            if self.overflow or self.stopped:
                return

        self.summarize_unreadable()
        self.report_odd_ids()
        self.report_foreign_ids()

    def reread(self, samples: Iterable[Sample]) -> Iterator[Sample]:
        """Samples read before (against other problems: another variant of the dataset)
        read again against these problems, as `read` would read the file they came from:
        each id resolved again, the raw text sanitized again for its new problem.

        CodeT records are matched by the aligned id their first reading found, since the
        prompt that matched them is not kept."""
        for sample in samples:
            if self.layout is None:
                self.layout, self.layout_line = sample.layout, sample.line
            if sample.layout == "codet":
                problem = self.problem_for(sample.line, "prompt", sample.task_id)
                source_id = (problem.source_id or problem.task_id) if problem else ""
            else:
                field = "qid" if sample.layout == "babelcode" else "task_id"
                problem = self.problem_for(sample.line, field, sample.given_task_id)
                source_id = sample.given_task_id
            if problem is not None:
                self.add(sample.line, problem, sample.raw, sample.index, sample.layout,
                         full_program=sample.is_full_program, source_id=source_id)
            yield from self.hand_on()
            if self.overflow:
                self.too_many_issues(sample.line)
            if self.overflow or self.stopped:
                return
        self.report_odd_ids()
        self.report_foreign_ids()

    def too_many_issues(self, line: int) -> None:
        self.stop(FileIssue(
            line or None, None, "too_many_issues",
            f"Stopped reading at line {line}: more than {self.max_issues} issues. "
            "Fix these and check the file again to see the rest.",
        ))

    def hand_on(self) -> Iterator[Sample]:
        ready, self.ready = self.ready, []
        yield from ready

    def stop(self, issue: FileIssue) -> None:
        """Stop reading with `issue`, which is kept whatever the count of issues."""
        self.issues.append(issue)
        self.has_errors = self.has_errors or issue.severity == "error"
        self.stopped = True

    def unreadable_line(self, issue: FileIssue) -> bool:
        """Report a line that is not a JSON object; False to stop reading.

        Before the first JSON object only the first few are listed: a file of random
        bytes gets one summary, not a row per line."""
        self.unreadable += 1
        if self.objects or self.unreadable <= _LISTED_UNREADABLE:
            self.report(issue.line, issue.field, issue.code, issue.message, issue.severity,
                        issue.column)
            return True
        self.hidden.append(issue.line or 0)
        return len(self.hidden) < _MAX_HIDDEN_UNREADABLE

    def summarize_unreadable(self) -> None:
        if not self.hidden:
            return
        first, last, count = self.hidden[0], self.hidden[-1], len(self.hidden)
        self.hidden = []
        if self.objects == 0:
            total = self.unreadable
            stopped = count >= _MAX_HIDDEN_UNREADABLE
            what = (f"the first {total:,} lines are all unreadable, so reading stopped"
                    if stopped else f"{total:,} of {total:,} lines are unreadable")
            self.issues.insert(0, FileIssue(
                None, None, "not_jsonl",
                f"This is not a JSON Lines file: {what} (each line must be one JSON object "
                f"in UTF-8 text). The first {_LISTED_UNREADABLE} are listed.",
            ))
            return
        self.report(first, None, "bad_json",
                    f"Lines {first}–{last}: {count:,} more lines that are not JSON objects "
                    "(not listed one by one).")

    def foreign_id(self, line: int, field: str, raw_id: str, reason: str) -> None:
        self.has_errors = True
        form = _ID_FORM.fullmatch(raw_id.strip())
        named = canonical_name((form.group("prefix") or "").casefold()) if form else None
        if self.foreign is None:
            self.foreign = (line, field, raw_id, reason)
            self.foreign_language = named
        elif named != self.foreign_language:
            self.foreign_language = None
        self.foreign_lines.append(line)

    def report_foreign_ids(self) -> None:
        # One error for the whole file: 164 lines of `CPP/N` ids are one mistake.
        if self.foreign is None:
            return
        line, field, raw, reason = self.foreign
        lines = self.foreign_lines
        more = (f" So are the ids of {len(lines) - 1:,} more lines ({lines[1]}–{lines[-1]}); "
                "none of them was read." if len(lines) > 1 else "")
        self.report(
            line, field, "language_mismatch",
            f"Line {line}, field `{field}`: {_shown_id(raw)} is not a task of "
            f"{self.resolver.describe()}: {reason}.{more} Ids there look like "
            f"{_shown_id(self.resolver.example())}.",
        )
        self.foreign, self.foreign_lines = None, []

    def report_odd_ids(self) -> None:
        # One warning for the whole file: a file of 16,400 such ids is one mistake.
        if self.odd_id is None:
            return
        line, raw, task_id = self.odd_id
        more = (f" {self.odd_count - 1:,} more lines use ids that are not the dataset's own."
                if self.odd_count > 1 else "")
        example = _shown_id(self.resolver.example())
        self.report(
            line, "task_id", "nonstandard_task_id",
            f"Line {line}, field `task_id`: {_shown_id(raw)} is not a task id of "
            f"{self.resolver.describe()}, whose ids look like {example}; "
            f"it was read as {task_id}.{more}",
            "warning",
        )

    # -- one record ---------------------------------------------------------------------
    def record(self, line: int, data: dict[str, Any]) -> None:
        if self.layout is None:
            layout = _detect_layout(data)
            if layout is None:
                self.report_unrecognised(line, data)
                return
            self.layout, self.layout_line = layout, line
        if self.layout == "codet":
            self.codet_record(line, data)
        elif self.layout == "babelcode":
            self.babelcode_record(line, data)
        else:
            self.task_record(line, data, self.layout)

    def report_unrecognised(self, line: int, data: dict[str, Any]) -> None:
        if "task_id" in data:
            self.report(
                line, "completion", "missing_field",
                f"Line {line} has `task_id` but no `completion`, `generation` or `solution` "
                "field holding the model's output.",
            )
            return
        keys = ", ".join(f"`{key}`" for key in list(data)[:8]) or "no fields"
        self.report(
            line, None, "unknown_layout",
            f"Line {line} has {keys}, which matches no known layout: expected "
            f"{'; '.join(_LAYOUT_NAMES.values())}.",
        )

    def field(
        self, line: int, data: dict[str, Any], name: str, kind: type | tuple[type, ...],
        *, required: bool = True,
    ) -> Any:
        """The field's value, or None after reporting it missing or of the wrong type."""
        if name not in data:
            if required:
                other = [f"`{k}`" for k in (*_CONTENT_FIELD, "code", "samples") if k in data]
                hint = (
                    f" (it has {', '.join(other)}, but this file's layout, "
                    f"{_LAYOUT_NAMES[self.layout]}, was set by line {self.layout_line})"
                    if other and self.layout is not None
                    else ""
                )
                self.report(
                    line, name, "missing_field", f"Line {line} has no `{name}` field{hint}."
                )
            return None
        value = data[name]
        # bool is an int in Python, but `"completion_id": true` is a mistake.
        if isinstance(value, kind) and not isinstance(value, bool):
            return value
        expected = _expected_name(kind)
        self.report(
            line, name, "wrong_type",
            f"Line {line}, field `{name}`: expected {expected}, got a JSON {_json_type(value)}.",
        )
        return None

    def task_record(self, line: int, data: dict[str, Any], layout: str) -> None:
        task_id = self.field(line, data, "task_id", str)
        content = self.field(line, data, _CONTENT_FIELD[layout], str)
        index = self.completion_id(line, data)
        if task_id is None or content is None or index is False:
            return
        problem = self.problem_for(line, "task_id", task_id)
        if problem is not None:
            self.add(line, problem, content, index, layout, full_program=layout == "solution",
                     source_id=task_id)

    def completion_id(self, line: int, data: dict[str, Any]) -> int | None | Literal[False]:
        """The record's `completion_id`; None when absent; False after reporting it bad."""
        if "completion_id" not in data:
            return None
        value = self.field(line, data, "completion_id", int)
        if value is None:
            return False
        if value < 0:
            self.report(
                line, "completion_id", "wrong_type",
                f"Line {line}, field `completion_id`: expected a number of 0 or more, got {value}.",
            )
            return False
        return int(value)

    def babelcode_record(self, line: int, data: dict[str, Any]) -> None:
        qid = self.field(line, data, "qid", (str, int))
        code = self.field(line, data, "code", str)
        language = self.field(line, data, "language", str)
        index = self.completion_id(line, data)
        if qid is None or code is None or language is None or index is False:
            return
        problem = self.problem_for(line, "qid", str(qid))
        if problem is None:
            return
        if canonical_name(language) != problem.language:
            self.report(
                line, "language", "language_mismatch",
                f"Line {line}, field `language`: `{language}` does not match the problems' "
                f"language, {display_name(problem.language)}.",
            )
            return
        self.add(line, problem, code, index, "babelcode", full_program=True, source_id=str(qid))

    def codet_record(self, line: int, data: dict[str, Any]) -> None:
        prompt = self.field(line, data, "prompt", str)
        samples = self.field(line, data, "samples", list)
        if prompt is None or samples is None:
            return
        bad = next((i for i, s in enumerate(samples) if not isinstance(s, str)), None)
        if bad is not None:
            self.report(
                line, f"samples[{bad}]", "wrong_type",
                f"Line {line}, field `samples`: item {bad} is a JSON "
                f"{_json_type(samples[bad])}, but every sample must be a string.",
            )
            return
        problem = self.codet_problem(line, data, prompt)
        if problem is None:
            return
        if problem.task_id in self.codet_tasks:
            self.report(
                line, "prompt", "duplicate_task",
                f"Line {line} has the same function as line {self.codet_tasks[problem.task_id]} "
                f"({problem.task_id}); its samples are added after that line's.",
                "warning",
            )
        self.codet_tasks.setdefault(problem.task_id, line)
        given = data.get("task_id")
        # CodeT records name no task: the dataset's own id for the matched problem stands in.
        source_id = given if isinstance(given, str) else problem.source_id or problem.task_id
        for text in samples:
            self.add(line, problem, text, None, "codet", full_program=False, source_id=source_id)

    def codet_problem(self, line: int, data: dict[str, Any], prompt: str) -> Problem | None:
        if isinstance(data.get("task_id"), str):
            return self.problem_for(line, "task_id", data["task_id"])
        if self.signatures is None:
            self.signatures = _SignatureIndex(self.problems)
        found = self.signatures.match(prompt)
        if isinstance(found, Problem):
            return found
        header = next(iter(_DEF_HEADER.findall(prompt)[-1:]), None)
        if not found:
            what = f"`def {header}(...)`" if header else "no `def` line"
            reason = "matches no problem's function signature"
        else:
            what = f"`def {header}(...)`"
            reason = f"fits {', '.join(p.task_id for p in found)} equally well"
        self.report(
            line, "prompt", "no_match", f"Line {line}, field `prompt`: its {what} {reason}."
        )
        return None

    def problem_for(self, line: int, field: str, raw_id: str) -> Problem | None:
        found = self.resolver.resolve(raw_id)
        if isinstance(found, Problem):
            if field == "task_id" and not self.resolver.is_own(raw_id):
                self.odd_count += 1
                if self.odd_id is None:
                    self.odd_id = (line, raw_id, found.task_id)
            return found
        code, reason = found
        if code == "language_mismatch":
            self.foreign_id(line, field, raw_id, reason)
            return None
        shown = _shown_id(raw_id)
        self.report(
            line, field, code,
            f"Line {line}, field `{field}`: {shown} is not a task of "
            f"{self.resolver.describe()}: {reason}. Ids there look like "
            f"{_shown_id(self.resolver.example())}.",
        )
        return None

    def add(
        self, line: int, problem: Problem, raw: str, index: int | None, layout: str,
        *, full_program: bool, source_id: str,
    ) -> None:
        # `task_id` is the aligned id, the key for duplicates and coverage; `source_id` is
        # the file's own, kept byte for byte for the results the user gets back.
        task_id = problem.task_id
        if self.stopped:
            return
        limit = self.max_samples_per_task
        if limit is not None and self.per_task[task_id] >= limit:
            tasks = len({p.task_id for p in self.problems})
            self.stop(FileIssue(
                line, None, "too_large",
                f"Line {line}: more than {limit:,} samples of {task_id}, the most a file may "
                f"hold for one task ({limit * tasks:,} in all for the {tasks:,} tasks of "
                f"{self.resolver.describe()}); reading stopped here. Split the file into "
                f"files of at most {limit:,} samples per task, one run each.",
            ))
            return
        if index is None:
            index = self.per_task[task_id]
        seen = self.first_seen.setdefault(task_id, _FirstLines())
        first = seen.get(index)
        if first is not None:
            self.report(
                line, "completion_id", "duplicate_sample",
                f"Line {line} repeats sample {index} of {task_id}, already given on line "
                f"{first}.",
            )
            return
        seen.add(index, line)
        self.per_task[task_id] += 1
        completion, notes = raw, tuple[str, ...]()
        if self.sanitize:
            cache_key = (task_id, raw, full_program)
            if cache_key not in self.sanitized:
                if self.sanitized_chars > _SANITIZED_CACHE_CHARS:
                    self.sanitized.clear()
                    self.sanitized_chars = 0
                self.sanitized[cache_key] = sanitize(raw, problem, full_program=full_program)
                self.sanitized_chars += len(raw) + len(self.sanitized[cache_key][0])
            completion, notes = self.sanitized[cache_key]
        self.ready.append(Sample(
            task_id=task_id,
            index=index,
            raw=raw,
            completion=completion,
            line=line,
            layout=layout,
            is_full_program=full_program,
            sanitized=completion != raw,
            notes=notes,
            source_task_id=source_id,
        ))

    def coverage(self) -> Coverage:
        task_ids = list(dict.fromkeys(problem.task_id for problem in self.problems))
        counts = {task: self.per_task[task] for task in task_ids if self.per_task[task]}
        low = min(counts.values(), default=0)
        high = max(counts.values(), default=0)
        return Coverage(
            tasks_total=len(task_ids),
            tasks_with_samples=len(counts),
            missing_tasks=tuple(task for task in task_ids if task not in counts),
            samples_total=sum(counts.values()),
            samples_per_task=counts,
            min_n=low,
            max_n=high,
            max_k=low,
            unequal_n=low != high,
        )


_UNREADABLE = frozenset({"bad_json", "not_utf8", "not_object"})
_LISTED_UNREADABLE = 3
_MAX_HIDDEN_UNREADABLE = 10_000


def _shown_id(raw_id: str) -> str:
    """The id for a message: quoted, shortened, with no NUL or line break shown raw."""
    shown = raw_id if len(raw_id) <= 60 else raw_id[:57] + "..."
    return json.dumps(shown, ensure_ascii=False).replace("\\u0000", "\\u0000")


def _detect_layout(data: dict[str, Any]) -> str | None:
    if "samples" in data or ("prompt" in data and "task_id" not in data):
        return "codet"
    if "qid" in data:
        return "babelcode"
    if "task_id" in data:
        for layout, name in _CONTENT_FIELD.items():
            if name in data:
                return layout
    return None


def _expected_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "a whole number", list: "an array", dict: "an object"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def read_samples(
    path: str | Path,
    problems: Sequence[Problem],
    *,
    sanitize: bool = False,
    max_line_bytes: int = 1_000_000,
    max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
    max_issues: int = 200,
) -> SampleFile:
    """Read a generation file against `problems`; never raises for bad content.

    By default every `Sample.completion` is the file's text byte for byte, which is what
    human-eval and the other reference harnesses run (`sanitize.REFERENCE_CLEANUP`);
    `sanitize=True` cleans raw model output first. A gzip file may expand to
    `max_expanded_bytes`; past that, reading stops with a `too_large` error.
    """
    reader = SampleReader(problems, sanitize=sanitize, max_issues=max_issues)
    samples = tuple(reader.read(path, max_line_bytes=max_line_bytes,
                                max_expanded_bytes=max_expanded_bytes))
    return SampleFile(
        layout=reader.layout or "unknown",
        samples=samples,
        issues=tuple(reader.issues),
        coverage=reader.coverage(),
    )
