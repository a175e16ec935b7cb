"""Which programming language a file of generations is written in, decided by parsing.

Python generations uploaded against a C++ dataset all fail to compile, and the run then
scores 0 % in the wrong column of a leaderboard. `check_language` takes a small spread of
the samples (`SAMPLE_SIZE`, over as many tasks as there are) and asks real front ends
whether each parses:

- in the program the dataset language's harness builds (`Language.build`: prompt,
  completion, tests), and, failing that, in the generic contexts below;
- only when too few parse as the dataset's language, in generic contexts of the other
  five: the completion alone (a whole program), and the completion as the body of a
  function the prompt would have opened (with or without the closing brace).

Front ends, all syntax-only, none of which runs a line of the sample:

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
language's part to a worker of that language (`webapp.runs.language_checks`).

Each answer is only yes, no or could not decide (no compiler output reaches the user),
and decided answers are cached by source text, so checking the same file twice (upload,
then confirmation) parses nothing again.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import shlex
import shutil
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from threading import Lock
from typing import Any, Protocol

from evaluator.languages import get_language, lexing
from evaluator.languages.base import LanguageError
from evaluator.languages.java import FAST_JVM
from evaluator.languages.registry import (
    canonical_name,
    display_name,
    language_class,
    language_names,
)
from evaluator.languages.toolchains import (
    ToolchainError,
    executable,
    prebuilt,
    run_tool,
    version_key,
)
from evaluator.records import Problem, RunOptions, Sample
from evaluator.sandbox.base import Backend, SandboxError, SandboxLimits
from evaluator.sandbox.session import RunnerDied, RunnerSession

__all__ = ["CHECK_LIMITS", "FRONT_ENDS", "SAMPLE_SIZE", "Answer", "LanguageCheck", "Parse",
           "SampleSpread", "SandboxedParsers", "check_language", "front_end",
           "close_sandboxed_parsers", "sandboxed_parsers"]

SAMPLE_SIZE = 20
MAX_SOURCE_CHARS = 64_000
"""Longer completions are left out of the sample: no model writes a 64 KB function."""

Answer = bool | None
"""Whether a source parses; None when its parser could not tell (it hit a limit)."""
Parse = Callable[[Mapping[str, list[str]]], Mapping[str, "list[Answer] | str"]]
"""Asks each language's parser about its sources: for each language the answers in the
sources' order, or, as text, why that language was not asked."""


class RunJob(Protocol):
    """Runs one runner job in a sandbox (`evaluator.sandbox.runtime.runner`)."""

    python: str
    """The interpreter inside that sandbox."""

    def __call__(self, job: dict[str, Any]) -> dict[str, Any]: ...


FrontEnd = Callable[[list[str], RunJob], list[Answer]]

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
                if lang != expected and front_end(lang) in _SLOW_FRONT_ENDS]
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
        runner = get_language(language)
        if language == "rust":
            # Rust's build instruments the tests; this is the program before that.
            head = sample.completion if sample.is_full_program else (
                runner.prefix(problem, options) + sample.completion)
            return head + "\n" + runner.test_text(problem, options)
        built = runner.build(problem, sample, options)  # type: ignore[attr-defined]
    except (LanguageError, ValueError, KeyError, IndexError, AttributeError):
        return None
    if isinstance(built, tuple):
        return str(built[0])
    # Go's build instruments the tests; `plain` is the program CodeGeeX assembles.
    text = getattr(built, "plain", "") or getattr(built, "program", "")
    return str(text) or None


_FENCE = re.compile(r"^[ \t]*```[\w+#.-]*[ \t]*\n(.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE)


def _generic(language: str, completion: str) -> list[str]:
    """The completion as a whole program, and as the body of a function a prompt opened,
    in the grammar of the language's front end.

    A markdown fence around the code is taken off first: it says nothing about the
    language of the code inside, and three backquotes are valid JavaScript."""
    fenced = _FENCE.search(completion)
    c = fenced.group(1) if fenced else completion
    grammar = front_end(language)
    if grammar == "ast":
        return [c, "def _f():\n" + c, textwrap.dedent(c)]
    if grammar == "node":
        return [c, "function _f() {\n" + c, "function _f() {\n" + c + "\n}"]
    if grammar == "g++":
        # One context, not three: each costs a compiler front end. A body the prompt
        # opened closes one brace more than it opens.
        closed = c.count("}") > c.count("{")
        return ["auto _f() {\n" + c + ("" if closed else "\n}")]
    if grammar == "javac":
        # By the braces it closes: a method's body and its class, or the body alone,
        # or whole members or classes (javac's start-up is paid per run, its files not).
        blanked = lexing.blank(c, "java")
        closes = blanked.count("}") - blanked.count("{")
        method = "class _C {\nObject _f() {\n" + c
        if closes >= 2:
            return [method]
        if closes == 1:
            return [method + "\n}"]
        whole = c if re.search(r"\b(?:class|interface|enum|record)\b", blanked) else (
            "class _C {\n" + c + "\n}")
        return [whole, method + "\n}\n}"]
    if grammar == "gofmt":
        if re.match(r"\s*(//[^\n]*\n\s*)*package\b", c):
            return [c]
        return ["package p\n" + c, "package p\nfunc _f() {\n" + c,
                "package p\nfunc _f() {\n" + c + "\n}"]
    if grammar == "rustfmt":
        return [c, "fn _f() {\n" + c, "fn _f() {\n" + c + "\n}"]
    return [c]


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


# -- the front ends, each a job for a sandboxed runner ------------------------------------
CHECK_LIMITS = SandboxLimits.for_timeout(10.0, memory_mb=1024, processes=64,
                                         file_size_mb=16, scratch_mb=128)
"""Each parser's limits, as for any program: a front end that needs more than this on a
completion of at most `MAX_SOURCE_CHARS` (a template or `constexpr` bomb) is stopped, and
its sources are left undecided."""
STORED_OUTPUT = 60_000
"""A little under what the runner keeps of a step's output: more means it was cut."""
_LIMIT_WORDS = ("Killed signal|out of memory|memory exhausted|OutOfMemoryError|"
                "Cannot allocate memory|cannot allocate")
"""What a parser says when it ran out of memory rather than found an error."""

_TOOLS = {
    # tool: (the compiler the language module runs, its variable, its preferred paths)
    "g++": ("g++", "EVALUATOR_CXX", ("/usr/bin/g++",)),
    "javac": ("javac", "EVALUATOR_JAVAC", ("/usr/lib/jvm/java-17-openjdk-amd64/bin/javac",)),
    "node": ("node", "EVALUATOR_NODE", ("/usr/bin/node",)),
    "gofmt": ("go", "EVALUATOR_GO", ("/usr/bin/go", "/usr/lib/go/bin/go")),
    "rustfmt": ("rustc", "EVALUATOR_RUSTC", ("/usr/bin/rustc",)),
}


def _tool(name: str) -> str:
    """The parser that belongs to the toolchain the evaluator itself runs: gofmt beside
    the configured go, rustfmt beside rustc; else the first on PATH."""
    compiler, variable, preferred = _TOOLS[name]
    found = executable(compiler, variable, preferred)
    if found is not None:
        beside = Path(found).resolve().parent / name
        if name == compiler:
            return found
        if beside.is_file():
            return str(beside)
    path = shutil.which(name)
    if path is None:
        raise ToolchainError(f"{name} is not installed")
    return path


def _writable(source: str) -> str:
    """`source` as text a file can hold: a lone surrogate becomes U+FFFD."""
    return source.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _source_files(sources: list[str], suffix: str) -> dict[str, str]:
    return {f"s{i}{suffix}": _writable(source) for i, source in enumerate(sources)}


def _tool_step(argv: Sequence[str], pattern: str, *, address_space: bool = True
               ) -> dict[str, Any]:
    """A step that runs a parser and prints "status N", then only the lines of its output
    that match `pattern`: the runner keeps 64 KB of a step's output, and a parser that
    meets Python in a C++ file says far more than that, mostly notes."""
    script = (f"{shlex.join(argv)} >out.txt 2>err.txt; echo \"status $?\"; "
              f"cat out.txt err.txt | grep -E -e {shlex.quote(pattern + '|' + _LIMIT_WORDS)} "
              "| cut -c1-300; exit 0")
    return {"name": "parse", "argv": ["/bin/sh", "-c", script],
            "limits": CHECK_LIMITS.to_dict(), "address_space_limit": address_space,
            "continue_on_failure": True}


def _finished(step: Mapping[str, Any]) -> bool:
    """Whether the step ran to its end (no limit, no signal ended it)."""
    return not (step.get("timed_out") or step.get("cpu_timed_out") or step.get("oom_killed")
                or step.get("output_exceeded") or step.get("signal"))


def _tool_output(step: Mapping[str, Any] | None, *,
                 failure_says: str | None = None) -> str | None:
    """What a `_tool_step` printed after its status, or None when the parser did not
    finish: a limit stopped it, it ran out of memory, or what it said was cut.

    With `failure_says` (a parser whose every failure names a line, as g++'s `error:`
    does), a failing status with no such line is no answer either: the parser stopped
    for a reason it did not say, such as memory running out before it could print that
    it had (seen once in a few hundred template bombs, under load)."""
    if step is None or not _finished(step):
        return None
    status, _, rest = str(step.get("stdout") or "").partition("\n")
    matched = re.fullmatch(r"status (\d+)", status)
    if matched is None or int(matched.group(1)) >= 128 or len(rest) >= STORED_OUTPUT:
        return None
    if re.search(_LIMIT_WORDS, rest):
        return None
    if (failure_says is not None and int(matched.group(1)) != 0
            and not re.search(failure_says, rest)):
        return None
    return rest


def _steps(answer: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    steps = answer.get("steps")
    return [step for step in steps if isinstance(step, Mapping)] if isinstance(steps, list) else []


def _failing(output: str, pattern: str) -> set[int]:
    return {int(m.group(1)) for m in re.finditer(pattern, output, re.MULTILINE)}


def _each_alone(sources: list[str], run: RunJob, suffix: str,
                step_for: Callable[[str], dict[str, Any]],
                failed: Callable[[str, int], bool]) -> list[Answer]:
    """Parse every source in a step of its own, after a batch that hit a limit: one bomb
    is then left undecided, and the others are answered."""
    answer = run({"kind": "command", "files": _source_files(sources, suffix),
                  "steps": [step_for(f"s{i}{suffix}") for i in range(len(sources))]})
    steps = _steps(answer)
    answers: list[Answer] = []
    for i in range(len(sources)):
        output = _tool_output(steps[i]) if i < len(steps) else None
        answers.append(None if output is None else not failed(output, i))
    return answers


def _batched(sources: list[str], run: RunJob, *, suffix: str, argv: Callable[[list[str]],
             list[str]], pattern: str, failing: str, address_space: bool = True,
             extra_files: Mapping[str, str] | None = None) -> list[Answer]:
    """All sources in one parser run, each in its file; the files named by `failing`'s
    group in the matched output do not parse. Should that run hit a limit, each source
    is parsed alone."""
    files = {**_source_files(sources, suffix), **(extra_files or {})}
    names = [f"s{i}{suffix}" for i in range(len(sources))]
    answer = run({"kind": "command", "files": files,
                  "steps": [_tool_step(argv(names), pattern, address_space=address_space)]})
    steps = _steps(answer)
    output = _tool_output(steps[0]) if steps else None
    if output is not None:
        bad = _failing(output, failing)
        return [i not in bad for i in range(len(sources))]
    if len(sources) == 1:
        return [None]
    return _each_alone(
        sources, run, suffix,
        lambda name: _tool_step(argv([name]), pattern, address_space=address_space),
        lambda output, i: bool(_failing(output, failing.replace(r"(\d+)", f"({i})"))))


def python_parses(sources: list[str]) -> list[bool]:
    """Whether each source parses as Python, by `ast`: it runs no line of a source. The
    sandbox runs it as a script (`_PYTHON_SCRIPT`); the web process calls it itself."""
    import ast

    answers = []
    for source in sources:
        try:
            ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            answers.append(False)
        else:
            answers.append(True)
    return answers


_PYTHON_SCRIPT = "import json, sys\n" + inspect.getsource(python_parses) + """
with open("sources.json", encoding="utf-8") as handle:
    sys.stdout.write(json.dumps(python_parses(json.load(handle))))
"""


def _json_answers(answer: Mapping[str, Any], count: int) -> list[Answer]:
    """The list of booleans a script printed; every source undecided when it did not
    finish (a source that makes the parser hit a limit)."""
    steps = _steps(answer)
    if not steps or not _finished(steps[0]) or steps[0].get("exit_code") != 0:
        return [None] * count
    try:
        said = json.loads(str(steps[0].get("stdout") or ""))
    except json.JSONDecodeError:
        return [None] * count
    if not isinstance(said, list) or len(said) != count:
        return [None] * count
    return [bool(a) for a in said]


def _parse_by_script(sources: list[str], run: RunJob, argv: list[str], script_name: str,
                     script: str) -> list[Answer]:
    """A script that reads `sources.json` and prints whether each source parses; should
    it hit a limit on the whole list, it is asked about each source alone."""
    def job(part: list[str]) -> dict[str, Any]:
        return {"kind": "command",
                "files": {script_name: script, "sources.json": json.dumps(
                    [_writable(source) for source in part])},
                "steps": [{"name": "parse", "argv": [*argv, script_name],
                           "limits": CHECK_LIMITS.to_dict(), "address_space_limit": False}]}

    answers = _json_answers(run(job(sources)), len(sources))
    if len(sources) > 1 and None in answers:
        answers = [_json_answers(run(job([source])), 1)[0] for source in sources]
    return answers


def _parse_python(sources: list[str], run: RunJob) -> list[Answer]:
    return _parse_by_script(sources, run, [run.python, "-I", "-S"], "check.py",
                            _PYTHON_SCRIPT)


_NODE_SCRIPT = r"""
const fs = require("fs");
const vm = require("vm");
const params = ["exports", "require", "module", "__filename", "__dirname"];
const answers = JSON.parse(fs.readFileSync("sources.json", "utf8")).map((source) => {
  try { vm.compileFunction(source, params); return true; } catch (e) { return false; }
});
process.stdout.write(JSON.stringify(answers));
"""


def _parse_js(sources: list[str], run: RunJob) -> list[Answer]:
    return _parse_by_script(sources, run, [_tool("node")], "check.js", _NODE_SCRIPT)


def _parse_go(sources: list[str], run: RunJob) -> list[Answer]:
    gofmt = _tool("gofmt")
    return _batched(sources, run, suffix=".go", argv=lambda names: [gofmt, "-e", "-l", *names],
                    pattern=r"^s[0-9]+\.go:", failing=r"^s(\d+)\.go:")


def _parse_rust(sources: list[str], run: RunJob) -> list[Answer]:
    rustfmt = _tool("rustfmt")
    return _batched(sources, run, suffix=".rs",
                    argv=lambda names: [rustfmt, "--check", "--edition", "2021", "--color",
                                        "never", *names],
                    pattern=r"--> ", failing=r"--> .*?s(\d+)\.rs:")


def _parse_java(sources: list[str], run: RunJob) -> list[Answer]:
    javac = _tool("javac")
    fast = [f"-J{flag}" for flag in FAST_JVM]
    return _batched(sources, run, suffix=".java",
                    argv=lambda names: [javac, *fast, "-proc:none", "-encoding", "UTF-8",
                                        "-Xmaxerrs", "100000", "-XDshould-stop.ifError=PARSE",
                                        "-XDshould-stop.ifNoError=PARSE", "-d", "out", *names],
                    pattern=r"^s[0-9]+\.java:[0-9]+: error:",
                    failing=r"^s(\d+)\.java:\d+: error:", address_space=False)


# g++ reports grammar errors in these words; an undeclared name or a type mismatch does
# not make a sample some other language.
_CPP_SYNTAX = re.compile(
    r"expected|stray|missing terminating|unterminated|does not name a type|"
    r"invalid preprocessing directive|#include expects|extra qualification"
)
_CPP_ERROR = re.compile(r"^s(\d+)\.cpp:(\d+):(\d+): error: (.*)$", re.MULTILINE)
_CPP_PATTERN = r": (fatal )?error: "
_UNDECLARED = re.compile(r"^.(\w+). was not declared in this scope")
# After an undeclared name g++ skips the rest of the statement, hiding any grammar error
# there; a name followed by another word or by `!` (not `!=`) is prose, not C++.
_NOT_AFTER_A_NAME = re.compile(r"\s*(?:[A-Za-z_$@`#\\'\"]|!(?!=))")


def _cpp_header() -> Path:
    """The precompiled `<bits/stdc++.h>`, built once on the host from the compiler's own
    headers (no upload's text goes into it), in the cache the C++ sandbox mounts."""
    gxx = _tool("g++")
    version = run_tool([gxx, "-dumpfullversion"], timeout=60).strip()

    def build(work: Path) -> None:
        (work / "check.h").write_text("#include <bits/stdc++.h>\nusing namespace std;\n")
        run_tool([gxx, "-std=c++17", "-x", "c++-header", "check.h", "-o", "check.h.gch"],
                 cwd=work, timeout=600)

    return prebuilt("language-check-cpp", version_key(version, "c++17", "v1"), build,
                    keep=2) / "check.h"


def _parse_cpp(sources: list[str], run: RunJob) -> list[Answer]:
    """Sources in one translation unit, each in a namespace of its own under its own file
    name (`#line`), so the compiler starts once rather than once per source.

    A source must not leak into the next: braces it leaves open are closed after it, and
    one that could swallow what follows (an open comment, `#if`, a raw string) is parsed
    in a file of its own; so is every source when the batch fails as a whole."""
    gxx = _tool("g++")
    header = _cpp_header()
    sources = [_writable(_cpp_safe(source)) for source in sources]

    def step(files: list[str]) -> dict[str, Any]:
        return _tool_step([gxx, "-std=c++17", "-fsyntax-only", "-fdiagnostics-color=never",
                           "-fno-diagnostics-show-caret", "-w", "-include", str(header),
                           *files], _CPP_PATTERN)

    alone = [i for i, source in enumerate(sources) if _cpp_leaky(source)]
    together = [i for i in range(len(sources)) if i not in alone]
    answers: list[Answer] = [True] * len(sources)
    if together:
        answer = run({"kind": "command",
                      "files": {"batch.cpp": _cpp_batch(sources, together)},
                      "steps": [step(["batch.cpp"])]})
        steps = _steps(answer)
        batch = _tool_output(steps[0], failure_says=_CPP_PATTERN) if steps else None
        if (batch is None or "fatal error" in batch
                or re.search(r"^batch\.cpp:\d+:\d+: error", batch, re.M)):
            alone = list(range(len(sources)))  # the batch itself failed: ask one by one
        else:
            for i in _cpp_failures(batch, sources):
                answers[i] = False
    if alone:
        files = {f"s{i}.cpp": sources[i] for i in alone}
        answer = run({"kind": "command", "files": files,
                      "steps": [step([f"s{i}.cpp"]) for i in alone]})
        steps = _steps(answer)
        for k, i in enumerate(alone):
            output = (_tool_output(steps[k], failure_says=_CPP_PATTERN)
                      if k < len(steps) else None)
            answers[i] = None if output is None else not _cpp_failures(output, sources)
    return answers


_LOCAL_INCLUDE = re.compile(
    r'^[ \t]*#[ \t]*include[ \t]*(?:"[^"\n]*"|<[ \t]*/[^>\n]*>|<[^>\n]*\.\.[^>\n]*>)',
    re.MULTILINE)


def _cpp_safe(source: str) -> str:
    """The source without `#include "..."` or an absolute or `..` path: a completion has
    no business reading files (`#include "/dev/zero"` never ends). The sandbox is what
    keeps the host's files out of reach (a macro can name an include); this keeps the
    answer about the completion's own text."""
    return _LOCAL_INCLUDE.sub("", source)


def _cpp_leaky(source: str) -> bool:
    return (source.count("/*") != source.count("*/") or 'R"' in source
            or re.search(r"^\s*#\s*(?:if|ifdef|ifndef|define|line)\b", source,
                         re.MULTILINE) is not None)


def _cpp_batch(sources: list[str], indices: list[int]) -> str:
    """The chosen sources' `#include`s hoisted to the top (the precompiled header already
    holds the standard ones), each source's rest in `namespace _sN`, line numbers kept."""
    includes: list[str] = []
    parts: list[str] = []
    for i in indices:
        lines = sources[i].split("\n")
        for k, line in enumerate(lines):
            if re.match(r"\s*#\s*include\b", line):
                includes.append(line)
                lines[k] = ""
        text = "\n".join(lines)
        blanked = lexing.blank(text, "cpp")
        missing = blanked.count("{") - blanked.count("}")
        # A string or character literal left open ends at its line: a newline ends it.
        parts.append(f'namespace _s{i} {{\n#line 1 "s{i}.cpp"\n{text}\n'
                     + "}" * max(missing, 0) + "\n}\n")
    return "\n".join(dict.fromkeys(includes)) + "\n" + "".join(parts)


def _cpp_failures(errors: str, sources: list[str]) -> set[int]:
    return {int(m.group(1)) for m in _CPP_ERROR.finditer(errors)
            if _cpp_grammar_error(sources[int(m.group(1))], int(m.group(2)), m.group(4))}


def _cpp_grammar_error(source: str, line: int, message: str) -> bool:
    if _CPP_SYNTAX.search(message):
        return True
    undeclared = _UNDECLARED.match(message)
    if undeclared is None:
        return False
    lines = source.split("\n")
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    at = re.search(rf"\b{re.escape(undeclared.group(1))}\b", text)
    if at is not None and _NOT_AFTER_A_NAME.match(text, at.end()) is not None:
        return True
    # g++ skips to the next `;` after an undeclared name, so code without semicolons
    # (Python's `total = 0`) reports nothing more: a C++ line ends a statement, opens or
    # closes a block, or continues an expression.
    end = lexing.blank(text, "cpp").split("//")[0].rstrip()
    if not end or end[-1] in ";{},([=+-*/%&|^<>?:!~\\":
        return False
    return not (end.endswith(")") and re.match(r"\s*(?:}\s*)?(?:else\s+)?(?:if|for|while|"
                                              r"switch)\b", text))


FRONT_ENDS: dict[str, FrontEnd] = {
    "ast": _parse_python, "node": _parse_js, "gofmt": _parse_go, "rustfmt": _parse_rust,
    "javac": _parse_java, "g++": _parse_cpp,
}
"""The syntax-only parsers, by the name a language gives as its `syntax_check`. Each
answers, for many sources at once, whether each one parses (None: it could not tell),
running its parser only through the runner jobs it is given."""

_SLOW_FRONT_ENDS = frozenset({"g++"})
"""Parsers slow enough to be asked only when the others leave a sample unexplained."""


def front_end(language: str) -> str | None:
    """The name of the front end that parses `language` (its `syntax_check`); None for
    a language this check does not know how to parse."""
    key = canonical_name(language)
    name = language_class(key).syntax_check if key is not None else None
    return name if name in FRONT_ENDS else None


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


class SandboxedParsers:
    """`Parse` by the front ends in the evaluator's sandbox, as programs are run: one
    long-lived runner per language (its toolchain mounted as for a run), started on first
    use, every parser run a job with `CHECK_LIMITS`. Thread-safe; languages in parallel."""

    def __init__(self, backend: str | Backend = "auto") -> None:
        self._backend_name = backend if isinstance(backend, str) else backend.name
        self._backend = backend if isinstance(backend, Backend) else None
        self._runs: dict[str, _SessionRun] = {}
        self._lock = Lock()

    def __call__(self, requests: Mapping[str, list[str]]) -> dict[str, list[Answer] | str]:
        if not requests:
            return {}
        with ThreadPoolExecutor(max_workers=len(requests)) as pool:
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
            return FRONT_ENDS[name](sources, self._run(language))
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
        for run in runs:
            with run.lock:
                run.session.close()


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
