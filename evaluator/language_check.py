"""Which programming language a file of generations is written in, decided by parsing.

Python generations uploaded against a C++ dataset all fail to compile, and the run then
scores 0 % in the wrong column of a leaderboard. `check_language` takes a small spread of
the samples (`SAMPLE_SIZE`, over as many tasks as there are) and asks real front ends
whether each parses:

- in the program the dataset language's harness builds (`Language.checked_program`:
  prompt, completion, tests), and, failing that, in the generic contexts below;
- only when too few parse as the dataset's language, in generic contexts of the other
  languages (`Language.syntax_contexts`): the completion alone (a whole program), and
  the completion as the body of a function the prompt would have opened (with or
  without the closing brace).

Front ends, all syntax-only, none of which runs a line of the sample. Each lives in its
language's module (`Language.check_syntax`); this module keeps what they share: the
limits, the sandbox, and reading a parser's answer (`evaluator.languages.syntax_check`).
The built-in languages':

- Python: `ast.parse`, in process.
- JavaScript: V8's parser through `vm.compileFunction` in one `node` process (what
  `node --check` does, for many sources at once, with CommonJS's module wrapper).
- Go: `gofmt -e`, which is `go/parser`, on all files in one process.
- Rust: `rustfmt --check`, which is rustc's own parser (`rustc -Z parse-only` needs a
  nightly compiler); rustfmt neither expands macros nor resolves names.
- Java: `javac -proc:none` told to stop after parsing (`-XDshould-stop.*=PARSE`), one
  process for all files; a missing class or symbol is not a parse error.
- C++: `g++ -fsyntax-only` with a precompiled `<bits/stdc++.h>`. g++ has no parse-only
  mode, so its diagnostics are sorted: only grammar errors (`expected ...`, `stray ...`,
  `does not name a type`, ...) count, not an undeclared name, which the generic
  contexts (no prompt, so no parameters) always produce.

Every front end, Python's included, runs as a job in the evaluator's sandbox, with the
limits any program gets (`CHECK_LIMITS`: CPU time, memory, processes, file size, a
private scratch directory, none of the host's files but the toolchain's): a C++ upload's
`#include` of a host file finds nothing, and a template or `constexpr` bomb is stopped at
its limit and answered "could not decide" (None). `check_language` takes its parsers as
`parse`: `SandboxedParsers` here (the command line), or the web app's, which sends each
language's part to a worker of that language (`webapp.runs.upload_checks.language_checks`).

Each answer is only yes, no or could not decide (no compiler output reaches the user),
and decided answers are cached by source text, so checking the same file twice (upload,
then confirmation) parses nothing again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

from evaluator.languages import get_language
from evaluator.languages.base import LanguageError
from evaluator.languages.registry import (
    canonical_name,
    display_name,
    language_class,
    language_names,
)
from evaluator.languages.syntax_check import CHECK_LIMITS, Answer, RunJob
from evaluator.languages.toolchains import ToolchainError
from evaluator.records import Problem, RunOptions, Sample
from evaluator.sandbox.base import Backend, SandboxError
from evaluator.sandbox.session import RunnerDied, RunnerSession

__all__ = ["CHECK_LIMITS", "SAMPLE_SIZE", "Answer", "LanguageCheck", "Parse", "RunJob",
           "SampleSpread", "SandboxedParsers", "check_language", "close_sandboxed_parsers",
           "front_end", "sandboxed_parsers"]

SAMPLE_SIZE = 20
MAX_SOURCE_CHARS = 64_000
"""Longer completions are left out of the sample: no model writes a 64 KB function."""

Parse = Callable[[Mapping[str, list[str]]], Mapping[str, "list[Answer] | str"]]
"""Asks each language's parser about its sources: for each language the answers in the
sources' order, or, as text, why that language was not asked."""


_CACHE_LIMIT = 50_000
_cache: dict[tuple[str, str], bool] = {}
_cache_lock = Lock()


@dataclass(frozen=True)
class LanguageCheck:
    """How many of the sampled completions parse as each language."""

    expected: str
    """The dataset's language."""
    checked: int
    """Samples parsed (0 when the dataset's language could not be checked here)."""
    parses: Mapping[str, int] = field(default_factory=dict)
    """Language -> samples that parse as it. The dataset's language is always counted;
    the others only when too few samples parse as the dataset's language."""
    unavailable: Mapping[str, str] = field(default_factory=dict)
    """Language -> why it was not asked (a missing toolchain, no worker answered)."""
    undecided: int = 0
    """Sampled completions left out of `checked`: their parser hit its limits (a template
    bomb), so whether they parse as the dataset's language could not be decided."""

    @property
    def fits(self) -> bool:
        """True unless fewer than half of the checked samples parse as the dataset's language."""
        return self.checked == 0 or 2 * self.parses.get(self.expected, 0) >= self.checked

    @property
    def detected(self) -> str | None:
        """The other language most samples parse as, when the dataset's does not fit and
        more than half of them parse as that one."""
        if self.fits:
            return None
        own = self.parses.get(self.expected, 0)
        best = max((lang for lang in _checkable() if lang != self.expected
                    and lang in self.parses),
                   key=lambda lang: self.parses[lang], default=None)
        if best is None or self.parses[best] <= own or 2 * self.parses[best] <= self.checked:
            return None
        return best

    @property
    def mismatch(self) -> bool:
        return self.detected is not None

    def message(self) -> str:
        """One sentence for the user; "" when the file fits its dataset's language."""
        want = display_name(self.expected)
        own = self.parses.get(self.expected, 0)
        detected = self.detected
        if detected is not None:
            name = display_name(detected)
            return (
                f"These generations look like {name}, not {want}: {self.parses[detected]} "
                f"of {self.checked} sampled completions parse as {name}, and {own} as "
                f"{want} in the program the {want} harness builds."
            )
        if not self.fits:
            return (
                f"Only {own} of {self.checked} sampled completions parse as {want}, and no "
                "other language fits them better; most samples will fail before any test runs."
            )
        return ""


def _checkable_text(sample: Sample) -> bool:
    """Whether a completion tells anything about its language: not one too long for any
    model to write, nor one holding a NUL, which Python's parser refuses whatever the
    language (and javac takes for a blank), so that it would read as another language."""
    return len(sample.completion) <= MAX_SOURCE_CHARS and "\x00" not in sample.completion


def check_language(
    problems: Mapping[str, Problem] | Sequence[Problem],
    samples: Sequence[Sample],
    *,
    language: str | None = None,
    sample_size: int = SAMPLE_SIZE,
    options: RunOptions | None = None,
    parse: Parse | None = None,
) -> LanguageCheck:
    """Parse a spread of `samples` as the problems' language, and as the others if needed.

    `language` defaults to the problems' (first) language; `parse` to this process's
    sandboxed parsers (`sandboxed_parsers()`, `auto` backend). Never raises for bad input.
    """
    by_id = problems if isinstance(problems, Mapping) else {p.task_id: p for p in problems}
    expected = language or next((p.language for p in by_id.values()), "python")
    options = options or RunOptions()
    parse = parse or sandboxed_parsers()
    chosen = _spread([s for s in samples if s.task_id in by_id and _checkable_text(s)],
                     sample_size)
    if not chosen or front_end(expected) is None:
        return LanguageCheck(expected=expected, checked=0)
    unavailable: dict[str, str] = {}
    # The dataset's language first: a file that fits needs no other parser at all.
    harness = [_harness_program(expected, by_id[s.task_id], s, options) for s in chosen]
    first = _parse_many(parse, {expected: [[h] if h is not None else [] for h in harness]},
                        unavailable)
    if expected not in first:
        return LanguageCheck(expected=expected, checked=0, unavailable=unavailable)
    own = first[expected]
    parses: dict[str, int] = {}
    if 2 * own.count(True) < len(own) - own.count(None):
        # Too few fit the harness's program. The generic contexts of the dataset's own
        # language may still save it; the other languages are parsed at the same time.
        misses = [i for i, ok in enumerate(own) if not ok]
        slow = [lang for lang in _checkable()
                if lang != expected and language_class(lang).slow_syntax_check]
        others = [lang for lang in _checkable() if lang != expected and lang not in slow]
        requests = {lang: [_generic(lang, s.completion) for s in chosen] for lang in others}
        requests[expected] = [_generic(expected, chosen[i].completion) for i in misses]
        answered = _parse_many(parse, requests, unavailable)
        for i, ok in zip(misses, answered.get(expected) or [], strict=False):
            own[i] = True if ok or own[i] else (None if ok is None else own[i])
        kept = [i for i, ok in enumerate(own) if ok is not None]
        parses = {lang: sum(1 for i in kept if answered[lang][i])
                  for lang in others if lang in answered}
        # A slow parser (g++) is asked only when no other language already accounts
        # for every sample.
        for lang in slow:
            if max([own.count(True), *parses.values()]) < len(kept):
                more = _parse_many(parse, {lang: [_generic(lang, s.completion)
                                                  for s in chosen]}, unavailable)
                if lang in more:
                    parses[lang] = sum(1 for i in kept if more[lang][i])
    parses[expected] = own.count(True)
    undecided = own.count(None)
    return LanguageCheck(expected=expected, checked=len(own) - undecided,
                         parses={expected: parses.pop(expected), **parses},
                         unavailable=unavailable, undecided=undecided)


class SampleSpread:
    """Of samples seen one at a time, the few that `check_language` could choose among
    them all: giving it `samples` instead of the whole file chooses the same ones.

    `_spread` takes a task's sample at depth d (its (d+1)th) only while the depths before
    hold fewer than `size` samples in all. So once sum(min(n_t, d) over tasks) reaches
    `size`, no task's sample at depth d or deeper is ever needed, whatever comes later:
    at most `size` + one per task samples are kept.
    """

    def __init__(self, size: int = SAMPLE_SIZE) -> None:
        self.size = size
        self.depth = size
        """Samples kept per task: the depths that may still be chosen."""
        self.kept: dict[str, list[Sample]] = {}
        self.seen: dict[str, int] = {}
        self.below = 0
        """sum(min(n_t, depth - 1)): what the depths above the deepest kept one hold."""

    def offer(self, sample: Sample) -> None:
        if not _checkable_text(sample):
            return  # never chosen (`check_language` leaves them out first)
        count = self.seen.get(sample.task_id, 0) + 1
        self.seen[sample.task_id] = count
        if count <= self.depth:
            self.kept.setdefault(sample.task_id, []).append(sample)
        if count <= self.depth - 1:
            self.below += 1
        while self.depth > 1 and self.below >= self.size:
            # Depth `self.depth - 1` can no longer be reached: drop it.
            self.depth -= 1
            self.below -= sum(1 for n in self.seen.values() if n >= self.depth)
            for kept in self.kept.values():
                del kept[self.depth:]

    @property
    def samples(self) -> list[Sample]:
        """The kept samples, task by task in the order the tasks first came."""
        return [sample for kept in self.kept.values() for sample in kept]


def _spread(samples: Sequence[Sample], size: int) -> list[Sample]:
    """Up to `size` samples, first one per task over tasks spread evenly, then more."""
    by_task: dict[str, list[Sample]] = {}
    for sample in samples:
        by_task.setdefault(sample.task_id, []).append(sample)
    tasks = list(by_task)
    chosen: list[Sample] = []
    depth = 0
    while len(chosen) < size and any(len(v) > depth for v in by_task.values()):
        row = [by_task[t][depth] for t in tasks if len(by_task[t]) > depth]
        want = size - len(chosen)
        if len(row) > want:
            row = [row[i * len(row) // want] for i in range(want)]
        chosen.extend(row)
        depth += 1
    return chosen


# -- the contexts a completion is parsed in -----------------------------------------------
def _harness_program(language: str, problem: Problem, sample: Sample,
                     options: RunOptions) -> str | None:
    """The program the evaluator would build for this sample, or None if it cannot."""
    if problem.language != language:
        return None
    try:
        return get_language(language).checked_program(problem, sample, options)
    except (LanguageError, ValueError, KeyError, IndexError, AttributeError):
        return None


_FENCE = re.compile(r"^[ \t]*```[\w+#.-]*[ \t]*\n(.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE)


def _generic(language: str, completion: str) -> list[str]:
    """The completion as a whole program, and as the body of a function a prompt opened,
    in the grammar of the language's front end (`Language.syntax_contexts`).

    A markdown fence around the code is taken off first: it says nothing about the
    language of the code inside, and three backquotes are valid JavaScript."""
    fenced = _FENCE.search(completion)
    return get_language(language).syntax_contexts(fenced.group(1) if fenced else completion)


# -- asking the front ends, through a cache -----------------------------------------------
def _parse_many(parse: Parse, requests: Mapping[str, list[list[str]]],
                unavailable: dict[str, str]) -> dict[str, list[Answer]]:
    """For each language, for each group of alternative programs: does any of them parse
    (None: no source of the group parses, and one could not be decided)? A language that
    could not be asked is left out, its reason in `unavailable`."""
    flat = {language: list(dict.fromkeys(source for group in groups for source in group))
            for language, groups in requests.items()}
    known: dict[str, dict[str, Answer]] = {language: {} for language in requests}
    todo: dict[str, list[str]] = {}
    with _cache_lock:
        for language, sources in flat.items():
            for source in sources:
                hit = _cache.get((language, _digest(source)))
                if hit is None:
                    todo.setdefault(language, []).append(source)
                else:
                    known[language][source] = hit
    answered = parse(todo) if todo else {}
    with _cache_lock:
        if len(_cache) > _CACHE_LIMIT:
            _cache.clear()
        for language, sources in todo.items():
            answers = answered.get(language, "it was not asked")
            if isinstance(answers, str) or len(answers) != len(sources):
                unavailable[language] = (answers if isinstance(answers, str)
                                         else "its parser gave a wrong number of answers")
                continue
            for source, answer in zip(sources, answers, strict=True):
                known[language][source] = answer
                if answer is not None:  # only a decided answer is worth keeping
                    _cache[(language, _digest(source))] = answer
    return {language: [_any(known[language][source] for source in group) for group in groups]
            for language, groups in requests.items() if language not in unavailable}


def _any(answers: Iterable[Answer]) -> Answer:
    seen = list(answers)
    if any(seen):
        return True
    return None if None in seen else False


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()




def front_end(language: str) -> str | None:
    """The name of the front end that parses `language` (its `syntax_check`); None for
    a language this check does not know how to parse."""
    key = canonical_name(language)
    return language_class(key).syntax_check if key is not None else None


def _checkable() -> list[str]:
    """The languages a file can be checked against, in display order: those with a parser."""
    return [language for language in language_names() if front_end(language) is not None]


# -- the sandbox the front ends run in ----------------------------------------------------
@dataclass
class _SessionRun:
    """`RunJob` through one runner session (one language's, one thread at a time)."""

    session: RunnerSession
    python: str
    lock: Lock = field(default_factory=Lock)

    def __call__(self, job: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            try:
                return self.session.run(job)
            except RunnerDied:
                # The parser took its sandbox down with it (a memory bomb, say): every
                # source of the job is undecided; the next job gets a fresh runner.
                return {"steps": []}


POOL_THREADS = 16
"""Languages parsed at the same time, at most (each waits on its own sandbox)."""


class SandboxedParsers:
    """`Parse` by the front ends in the evaluator's sandbox, as programs are run: one
    long-lived runner per language (its toolchain mounted as for a run), started on first
    use, every parser run a job with `CHECK_LIMITS`. Thread-safe; languages in parallel."""

    def __init__(self, backend: str | Backend = "auto") -> None:
        self._backend_name = backend if isinstance(backend, str) else backend.name
        self._backend = backend if isinstance(backend, Backend) else None
        self._runs: dict[str, _SessionRun] = {}
        self._lock = Lock()
        self._pool: ThreadPoolExecutor | None = None

    def __call__(self, requests: Mapping[str, list[str]]) -> dict[str, list[Answer] | str]:
        if not requests:
            return {}
        with self._lock:
            # A runner is started by the thread that first asks its language, and bwrap
            # (`--die-with-parent`) ends it when that thread ends: the threads live as
            # long as the runners, not one call.
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=POOL_THREADS,
                                                thread_name_prefix="language-check")
            pool = self._pool
        futures = {language: pool.submit(self.parse, language, sources)
                   for language, sources in requests.items()}
        return {language: future.result() for language, future in futures.items()}

    def parse(self, language: str, sources: list[str]) -> list[Answer] | str:
        """Whether each source parses as `language`; why not asked, as text, when its
        parser or the sandbox is missing here."""
        name = front_end(language)
        if name is None:
            return f"{display_name(language)} has no parser here"
        try:
            return get_language(language).check_syntax(sources, self._run(language))
        except (ToolchainError, SandboxError, LanguageError, OSError) as exc:
            return str(exc) or type(exc).__name__

    def _run(self, language: str) -> _SessionRun:
        with self._lock:
            run = self._runs.get(language)
            if run is None:
                if self._backend is None:
                    from evaluator.calibration import resolve_backend

                    self._backend = resolve_backend(self._backend_name)
                runner = get_language(language)
                session = RunnerSession(self._backend, limits=CHECK_LIMITS,
                                        mounts=runner.mounts(), env=runner.environment())
                run = self._runs[language] = _SessionRun(session, self._backend.python())
            return run

    def close(self) -> None:
        with self._lock:
            runs = list(self._runs.values())
            self._runs.clear()
            pool, self._pool = self._pool, None
        for run in runs:
            with run.lock:
                run.session.close()
        if pool is not None:
            pool.shutdown(wait=False)


_local_parsers: dict[str, SandboxedParsers] = {}
_local_lock = Lock()


def sandboxed_parsers(backend: str = "auto") -> SandboxedParsers:
    """This process's `SandboxedParsers` for `backend`, kept for its runners."""
    with _local_lock:
        parsers = _local_parsers.get(backend)
        if parsers is None:
            parsers = _local_parsers[backend] = SandboxedParsers(backend)
        return parsers


def close_sandboxed_parsers() -> None:
    """End this process's parser runners (a worker's pool process, as it exits)."""
    with _local_lock:
        parsers = list(_local_parsers.values())
        _local_parsers.clear()
    for each in parsers:
        each.close()
