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

Each answer is only yes or no (no compiler output reaches the user), every tool runs
under a time limit in its own session, and answers are cached by source text, so
checking the same file twice (upload, then confirmation) parses nothing again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import textwrap
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from threading import Lock

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

__all__ = ["FRONT_ENDS", "SAMPLE_SIZE", "LanguageCheck", "SampleSpread", "check_language",
           "front_end"]

SAMPLE_SIZE = 20
MAX_SOURCE_CHARS = 64_000
"""Longer completions are left out of the sample: no model writes a 64 KB function."""
TOOL_TIMEOUT = 30.0

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
    """Language -> why it could not be checked (a missing toolchain)."""

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


def check_language(
    problems: Mapping[str, Problem] | Sequence[Problem],
    samples: Sequence[Sample],
    *,
    language: str | None = None,
    sample_size: int = SAMPLE_SIZE,
    options: RunOptions | None = None,
) -> LanguageCheck:
    """Parse a spread of `samples` as the problems' language, and as the others if needed.

    `language` defaults to the problems' (first) language. Never raises for bad input.
    """
    by_id = problems if isinstance(problems, Mapping) else {p.task_id: p for p in problems}
    expected = language or next((p.language for p in by_id.values()), "python")
    options = options or RunOptions()
    chosen = _spread([s for s in samples if s.task_id in by_id
                      and len(s.completion) <= MAX_SOURCE_CHARS], sample_size)
    if not chosen or front_end(expected) is None:
        return LanguageCheck(expected=expected, checked=0)
    unavailable: dict[str, str] = {}
    # The dataset's language first: a file that fits needs no other parser at all.
    harness = [_harness_program(expected, by_id[s.task_id], s, options) for s in chosen]
    own = _parse_many(expected, [[h] if h is not None else [] for h in harness], unavailable)
    if own is None:
        return LanguageCheck(expected=expected, checked=0, unavailable=unavailable)
    parses = {expected: sum(own)}
    if 2 * parses[expected] < len(chosen):
        # Too few fit the harness's program. The generic contexts of the dataset's own
        # language may still save it; the other languages are parsed at the same time.
        misses = [i for i, ok in enumerate(own) if not ok]
        slow = [lang for lang in _checkable()
                if lang != expected and front_end(lang) in _SLOW_FRONT_ENDS]
        others = [lang for lang in _checkable() if lang != expected and lang not in slow]
        with ThreadPoolExecutor(max_workers=len(others) + 1) as pool:
            again = pool.submit(_parse_many, expected,
                                [_generic(expected, chosen[i].completion) for i in misses],
                                unavailable)
            futures = {
                lang: pool.submit(_parse_many, lang,
                                  [_generic(lang, s.completion) for s in chosen], unavailable)
                for lang in others
            }
            for i, ok in zip(misses, again.result() or [False] * len(misses), strict=True):
                own[i] = ok
            parses[expected] = sum(own)
            for lang, future in futures.items():
                answers = future.result()
                if answers is not None:
                    parses[lang] = sum(answers)
        # A slow parser (g++) is asked only when no other language already accounts
        # for every sample.
        for lang in slow:
            if max(parses.values()) < len(chosen):
                answers = _parse_many(lang, [_generic(lang, s.completion) for s in chosen],
                                      unavailable)
                if answers is not None:
                    parses[lang] = sum(answers)
    return LanguageCheck(expected=expected, checked=len(chosen), parses=parses,
                         unavailable=unavailable)


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
        if len(sample.completion) > MAX_SOURCE_CHARS:
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


# -- running the front ends ---------------------------------------------------------------
def _parse_many(language: str, groups: list[list[str]],
                unavailable: dict[str, str]) -> list[bool] | None:
    """For each group of alternative programs: does any of them parse? None when the
    language's parser is not installed here."""
    flat = list(dict.fromkeys(source for group in groups for source in group))
    known: dict[str, bool] = {}
    todo: list[str] = []
    with _cache_lock:
        for source in flat:
            hit = _cache.get((language, _digest(source)))
            if hit is None:
                todo.append(source)
            else:
                known[source] = hit
    if todo:
        try:
            answers = FRONT_ENDS[front_end(language) or ""](todo)
        except (ToolchainError, OSError) as exc:
            unavailable[language] = str(exc)
            return None
        with _cache_lock:
            if len(_cache) > _CACHE_LIMIT:
                _cache.clear()
            for source, ok in zip(todo, answers, strict=True):
                known[source] = ok
                _cache[(language, _digest(source))] = ok
    return [any(known[source] for source in group) for group in groups]


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


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


def _run(argv: Sequence[str], *, cwd: Path, stdin: str | None = None) -> tuple[int, str, str]:
    """Run a parser in its own session; on timeout the whole group is killed."""
    with subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, errors="replace",
                          start_new_session=True) as child:
        try:
            out, err = child.communicate(stdin, timeout=TOOL_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise ToolchainError(f"{argv[0]} took over {TOOL_TIMEOUT:.0f} s") from None
    return child.returncode, out, err


def _files_failing(pattern: str, output: str) -> set[int]:
    return {int(m.group(1)) for m in re.finditer(pattern, output, re.MULTILINE)}


def _parse_python(sources: list[str]) -> list[bool]:
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


_NODE_SCRIPT = r"""
const vm = require("vm");
let data = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { data += chunk; });
process.stdin.on("end", () => {
  const params = ["exports", "require", "module", "__filename", "__dirname"];
  const answers = JSON.parse(data).map((source) => {
    try { vm.compileFunction(source, params); return true; } catch (e) { return false; }
  });
  process.stdout.write(JSON.stringify(answers));
});
"""


def _parse_js(sources: list[str]) -> list[bool]:
    node = _tool("node")
    with tempfile.TemporaryDirectory(prefix="langcheck-") as work:
        code, out, err = _run([node, "-e", _NODE_SCRIPT], cwd=Path(work),
                              stdin=json.dumps(sources))
    try:
        answers = json.loads(out)
    except json.JSONDecodeError:
        raise ToolchainError(f"node failed ({code}): {err[-300:]}") from None
    return [bool(a) for a in answers]


def _write_all(work: Path, sources: list[str], suffix: str) -> list[str]:
    names = []
    for i, source in enumerate(sources):
        name = f"s{i}{suffix}"
        (work / name).write_text(source, encoding="utf-8", errors="surrogatepass")
        names.append(name)
    return names


def _parse_go(sources: list[str]) -> list[bool]:
    gofmt = _tool("gofmt")
    with tempfile.TemporaryDirectory(prefix="langcheck-") as work:
        names = _write_all(Path(work), sources, ".go")
        _code, _out, err = _run([gofmt, "-e", "-l", *names], cwd=Path(work))
    bad = _files_failing(r"^s(\d+)\.go:", err)
    return [i not in bad for i in range(len(sources))]


def _parse_rust(sources: list[str]) -> list[bool]:
    rustfmt = _tool("rustfmt")
    with tempfile.TemporaryDirectory(prefix="langcheck-") as work:
        names = _write_all(Path(work), sources, ".rs")
        _code, _out, err = _run([rustfmt, "--check", "--edition", "2021", "--color", "never",
                                 *names], cwd=Path(work))
    bad = _files_failing(r"--> .*?s(\d+)\.rs:", err)
    return [i not in bad for i in range(len(sources))]


def _parse_java(sources: list[str]) -> list[bool]:
    javac = _tool("javac")
    with tempfile.TemporaryDirectory(prefix="langcheck-") as work:
        names = _write_all(Path(work), sources, ".java")
        fast = [f"-J{flag}" for flag in FAST_JVM]
        _code, _out, err = _run([javac, *fast, "-proc:none", "-encoding", "UTF-8", "-Xmaxerrs",
                                 "100000", "-XDshould-stop.ifError=PARSE",
                                 "-XDshould-stop.ifNoError=PARSE", "-d", "out", *names],
                                cwd=Path(work))
    bad = _files_failing(r"^s(\d+)\.java:\d+: error:", err)
    return [i not in bad for i in range(len(sources))]


# g++ reports grammar errors in these words; an undeclared name or a type mismatch does
# not make a sample some other language.
_CPP_SYNTAX = re.compile(
    r"expected|stray|missing terminating|unterminated|does not name a type|"
    r"invalid preprocessing directive|#include expects|extra qualification"
)
_CPP_ERROR = re.compile(r"^s(\d+)\.cpp:(\d+):(\d+): error: (.*)$", re.MULTILINE)
_UNDECLARED = re.compile(r"^.(\w+). was not declared in this scope")
# After an undeclared name g++ skips the rest of the statement, hiding any grammar error
# there; a name followed by another word or by `!` (not `!=`) is prose, not C++.
_NOT_AFTER_A_NAME = re.compile(r"\s*(?:[A-Za-z_$@`#\\'\"]|!(?!=))")


def _cpp_header() -> Path:
    gxx = _tool("g++")
    version = run_tool([gxx, "-dumpfullversion"], timeout=60).strip()

    def build(work: Path) -> None:
        (work / "check.h").write_text("#include <bits/stdc++.h>\nusing namespace std;\n")
        run_tool([gxx, "-std=c++17", "-x", "c++-header", "check.h", "-o", "check.h.gch"],
                 cwd=work, timeout=600)

    return prebuilt("language-check-cpp", version_key(version, "c++17", "v1"), build,
                    keep=2) / "check.h"


def _parse_cpp(sources: list[str]) -> list[bool]:
    """Sources in one translation unit, each in a namespace of its own under its own file
    name (`#line`), so the compiler starts once rather than once per source.

    A source must not leak into the next: braces it leaves open are closed after it, and
    one that could swallow what follows (an open comment, `#if`, a raw string) is parsed
    in a file of its own."""
    gxx = _tool("g++")
    header = _cpp_header()
    sources = [_cpp_safe(source) for source in sources]
    with tempfile.TemporaryDirectory(prefix="langcheck-") as folder:
        work = Path(folder)
        names = _write_all(work, sources, ".cpp")
        alone = [i for i, source in enumerate(sources) if _cpp_leaky(source)]
        together = [i for i in range(len(sources)) if i not in alone]
        (work / "batch.cpp").write_text(_cpp_batch(sources, together), encoding="utf-8",
                                        errors="surrogatepass")
        batch = _cpp_errors(gxx, header, work, ["batch.cpp"])
        if "fatal error" in batch or re.search(r"^batch\.cpp:\d+:\d+: error", batch, re.M):
            alone = list(range(len(sources)))  # the batch itself failed: ask one by one
            bad: set[int] = set()
        else:
            bad = _cpp_failures(batch, sources)
        if alone:
            chunks = max(1, min(len(alone), os.cpu_count() or 1))

            def one(part: list[int]) -> set[int]:
                return {i for i in part
                        if _cpp_failures(_cpp_errors(gxx, header, work, [names[i]]), sources)}

            with ThreadPoolExecutor(max_workers=chunks) as pool:
                bad |= set().union(*pool.map(one, [alone[i::chunks] for i in range(chunks)]))
    return [i not in bad for i in range(len(sources))]


_LOCAL_INCLUDE = re.compile(
    r'^[ \t]*#[ \t]*include[ \t]*(?:"[^"\n]*"|<[ \t]*/[^>\n]*>|<[^>\n]*\.\.[^>\n]*>)',
    re.MULTILINE)


def _cpp_safe(source: str) -> str:
    """The source without `#include "..."` or an absolute or `..` path: a completion has
    no business reading files on this host (`#include "/dev/zero"` never ends)."""
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


def _cpp_errors(gxx: str, header: Path, work: Path, files: list[str]) -> str:
    return _run([gxx, "-std=c++17", "-fsyntax-only", "-fdiagnostics-color=never",
                 "-fno-diagnostics-show-caret", "-w", "-include", str(header), *files],
                cwd=work)[2]


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


FRONT_ENDS: dict[str, Callable[[list[str]], list[bool]]] = {
    "ast": _parse_python, "node": _parse_js, "gofmt": _parse_go, "rustfmt": _parse_rust,
    "javac": _parse_java, "g++": _parse_cpp,
}
"""The syntax-only parsers, by the name a language gives as its `syntax_check`. Each
answers, for many sources at once, whether each one parses."""

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
