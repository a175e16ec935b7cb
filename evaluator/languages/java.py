"""Java: OpenJDK 17's `javac` and `java -ea`, with every check of the test reported alone.

Building. The program is the reference harness's: prompt (or declaration) + completion +
"\\n" + test. HumanEval-X's test is `public class Main`, so the file is `Main.java`;
MultiPL-E's closes the prompt's `class Problem` around its `main`, so the file is
`Problem.java`, and javatuples is on the class path when the program imports it.

Speed. Compilation dominates (javac ~0.8 s of CPU per sample, nearly all of it a cold
JVM loading and warming up the compiler). So the engine compiles with a warm javac: the
`evaluator_compiler.Server` runtime, the JDK's own compiler behind `javax.tools` in a
long-lived JVM, in a sandbox of its own that runs no program (javac with `-proc:none`
executes nothing it compiles). It gets the options the command line would get, and
answers with javac's exit status, its messages as the command line prints them, and
the class files, which the run's job then carries. The instrumented-else-unchanged
rule of the build script is applied by `build_remotely` the same way.

Without the service (`EngineConfig.warm_compilers` off, or its sandbox failing), each
job runs `javac` itself, with an AppCDS archive of the compiler's classes (built once,
in the cache directory), C1 only and the serial collector: the same compiler on the
same input, so the same verdict, at less than half the cold CPU.

Per-test outcomes. The test's checks are rewritten, each into a block that evaluates,
reports and goes on (the `evaluator_harness` runtime, compiled once):
- HumanEval-X: `List<Boolean> correct = Arrays.asList(e1, ..., en);` followed by
  `if (correct.contains(false)) throw new AssertionError();` becomes n checks;
- `if (cond) { throw new AssertionError(); }` becomes a check that `cond` is false;
- MultiPL-E: `assert expr;` becomes a check of `expr`.
`a.equals(b)`, `Objects.equals(a, b)` and `a == b` report expected and actual. The
launcher (`evaluator_harness.Launch`) runs the main class and reports `done` when main
returns. A test with no recognised check, or a rewrite that does not compile where the
original does, runs unchanged and is judged by its exit status, and the result says so.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.languages import c_family
from evaluator.languages.base import (
    AskCompiler,
    CompileService,
    Language,
    LanguageError,
    PreparedJob,
    RemoteBuild,
    RunOptions,
    program_hash,
)
from evaluator.languages.c_family import ScanError, Token
from evaluator.languages.reporting import (
    BUILD_FILE,
    FALLBACK_MARKER,
    LAUNCHER,
    LAUNCHER_FILE,
    Rewrite,
    Site,
    apply_edits,
    build_script,
    normalise_records,
    user_error_before,
)
from evaluator.languages.toolchains import (
    ToolchainError,
    cache_root,
    executable,
    prebuilt,
    run_tool,
    tree_key,
    version_key,
)
from evaluator.profiles import ASSERT_WORD, get_profile
from evaluator.records import Problem, Sample, SampleResult, SandboxInfo
from evaluator.sandbox.base import Mount, SandboxLimits

RUNTIME = Path(__file__).resolve().parent / "runtime" / "java"
JDK17_JAVAC = "/usr/lib/jvm/java-17-openjdk-amd64/bin/javac"

FAST_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData", "-Xshare:auto")
"""JVM flags for short runs: C1 only (no C2 warm-up cost), one GC thread, no perf file
in /tmp. They change speed, not behaviour."""

JVM_THREADS = 64
"""A JVM starts ~14 threads, and RLIMIT_NPROC counts threads: a Java step gets this many
more processes than its limits say, so a correct program cannot fail to start."""

JAVATUPLES = ("/usr/share/java/javatuples.jar",)

OUT_OF_MEMORY = 137
"""The compile service's status for javac running out of its heap (it then exits)."""

_WARM_UP = """\
import java.util.*;
import java.util.stream.*;
class Solution {
    public List<Integer> f(List<Integer> xs, String s) {
        Map<String, Integer> m = new HashMap<>();
        m.put(s.toLowerCase(), xs.stream().mapToInt(x -> x).sum());
        return xs.stream().filter(x -> x % 2 == 0).sorted().collect(Collectors.toList());
    }
}
public class Main {
    public static void main(String[] args) {
        Solution s = new Solution();
        List<Boolean> correct = Arrays.asList(
            s.f(new ArrayList<>(Arrays.asList(1, 2)), "a").equals(Arrays.asList(2)));
        { evaluator_harness.Site site = evaluator_harness.Site.open(0);
          site.truth(Objects.equals(site.tap(s.f(List.of(), "")), List.of())); }
        if (correct.contains(false)) { throw new AssertionError(); }
    }
}
"""


@dataclass(frozen=True)
class Jdk:
    javac: str
    java: str
    home: Path
    version: str
    harness: Path
    """Compiled `evaluator_harness` classes."""
    compiler: Path
    """Compiled `evaluator_compiler` classes (the warm compile service)."""
    javac_archive: Path | None
    """AppCDS archive of javac's classes, when it could be built."""


@functools.lru_cache(maxsize=1)
def jdk() -> Jdk:
    javac = executable("javac", "EVALUATOR_JAVAC", (JDK17_JAVAC,))
    if javac is None:
        raise ToolchainError("javac is not installed (apt-get install openjdk-17-jdk-headless)")
    home = Path(os.path.realpath(javac)).parent.parent
    java = str(home / "bin" / "java")
    version = run_tool([javac, "-version"], timeout=120).strip()
    sources = sorted((RUNTIME / "evaluator_harness").glob("*.java"))
    server = sorted((RUNTIME / "evaluator_compiler").glob("*.java"))
    key = version_key(version, tree_key(RUNTIME), *FAST_JVM)

    def build(work: Path) -> None:
        run_tool([javac, "-encoding", "UTF-8", "-d", str(work / "classes"),
                  *map(str, sources)], timeout=600)
        run_tool([javac, "-encoding", "UTF-8", "-d", str(work / "compiler"),
                  *map(str, server)], timeout=600)
        (work / "Main.java").write_text(_WARM_UP)
        try:
            run_tool([javac, *(f"-J{flag}" for flag in FAST_JVM),
                      f"-J-XX:ArchiveClassesAtExit={work / 'javac.jsa'}",
                      "-encoding", "UTF-8", "-proc:none", "-cp", str(work / "classes"),
                      "-d", str(work / "warm-up"), "Main.java"], cwd=work, timeout=600)
        except ToolchainError:
            (work / "javac.jsa").unlink(missing_ok=True)

    built = prebuilt("java-harness", key, build)
    archive = built / "javac.jsa"
    return Jdk(javac=javac, java=java, home=home, version=version,
               harness=built / "classes", compiler=built / "compiler",
               javac_archive=archive if archive.exists() else None)


def javatuples() -> str | None:
    configured = os.environ.get("EVALUATOR_JAVATUPLES")
    if configured:
        return configured if Path(configured).exists() else None
    return next((path for path in JAVATUPLES if Path(path).exists()), None)


# -- rewriting the test -------------------------------------------------------------------

_LOW_PRECEDENCE = frozenset({"&&", "||", "?", ":", "=", ",", "!=", "&", "|", "^", "->",
                             "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=",
                             ">>>="})
"""Operators binding no tighter than `==`: with one at the top level, `a == b` is not the
whole condition."""


def rewrite_test(test: str, callees: tuple[str, ...]) -> Rewrite:
    try:
        tokens = c_family.tokenize(test, language="java")
    except ScanError as exc:
        return Rewrite(test, whole_reason=f"the test text could not be scanned ({exc})")
    writer = _Writer(test, tokens, callees)
    try:
        writer.run()
    except ScanError as exc:
        return Rewrite(test, whole_reason=f"the test text could not be split ({exc})")
    if not writer.sites:
        return Rewrite(test, whole_reason="no check in the test was recognised")
    return Rewrite(apply_edits(test, writer.edits), sites=writer.sites)


class _Writer:
    def __init__(self, text: str, tokens: list[Token], callees: tuple[str, ...]) -> None:
        self.text = text
        self.tokens = tokens
        self.callees = callees
        self.edits: list[tuple[int, int, str]] = []
        self.sites: list[Site] = []

    def run(self) -> None:
        tokens = self.tokens
        i = 0
        while i < len(tokens):
            end = self._boolean_list(i)
            if end is None:
                end = self._if_throw(i)
            if end is None:
                end = self._assert(i)
            i = end if end is not None else i + 1

    # -- patterns -----------------------------------------------------------------------
    def _boolean_list(self, i: int) -> int | None:
        """`List<Boolean> x = Arrays.asList(...); if (x.contains(false)) throw ...;`"""
        t = self.tokens
        shape = ["List", "<", "Boolean", ">", None, "=", "Arrays", ".", "asList", "("]
        if not self._matches(i, shape):
            return None
        name = t[i + 4].text
        close = c_family.matching(t, i + 9)
        if close + 1 >= len(t) or t[close + 1].text != ";":
            return None
        check = close + 2
        if not self._matches(check, ["if", "(", name, ".", "contains", "(", "false", ")", ")"]):
            return None  # the list is never checked: leave it alone, as it is
        end = self._throw_body(check + 9)
        if end is None:
            return None
        blocks = []
        for element in c_family.split_arguments(t[i + 10: close]):
            blocks.append(self._check(element, negate=False, kind="list"))
        start, stop = t[i].start, t[end - 1].end
        self.edits.append((start, stop, " ".join(blocks) + self._newlines(start, stop)))
        return end

    def _if_throw(self, i: int) -> int | None:
        t = self.tokens
        if t[i].text != "if" or i + 1 >= len(t) or t[i + 1].text != "(":
            return None
        close = c_family.matching(t, i + 1)
        end = self._throw_body(close + 1)
        if end is None or (end < len(t) and t[end].text == "else"):
            return None
        condition = t[i + 2: close]
        if not condition:
            return None
        start, stop = t[i].start, t[end - 1].end
        block = self._check(condition, negate=True, kind="truth")
        self.edits.append((start, stop, block + self._newlines(start, stop)))
        return end

    def _assert(self, i: int) -> int | None:
        t = self.tokens
        if t[i].text != "assert" or t[i].kind != "ident":
            return None
        if i > 0 and t[i - 1].text not in (";", "{", "}", ")", "else", ":"):
            return None
        end = i + 1
        depth = 0
        while end < len(t):
            text = t[end].text
            if text in c_family.OPEN:
                depth += 1
            elif text in c_family.CLOSE:
                depth -= 1
            elif text == ";" and depth == 0:
                break
            end += 1
        if end >= len(t):
            return None
        expression = t[i + 1: end]
        top = c_family.top_level(expression)
        if any(expression[j].text == "?" for j in top):
            return None  # `assert a ? b : c : msg;` is left to Java itself
        colon = next((j for j in top if expression[j].text == ":"), None)
        if colon is not None:
            expression = expression[:colon]
        if not expression:
            return None
        start, stop = t[i].start, t[end].end
        block = self._check(expression, negate=False, kind="truth")
        self.edits.append((start, stop, block + self._newlines(start, stop)))
        return end + 1

    def _throw_body(self, j: int) -> int | None:
        """End (exclusive) of `throw new AssertionError(...);`, braced or not, at `j`."""
        t = self.tokens
        braced = j < len(t) and t[j].text == "{"
        k = j + 1 if braced else j
        if not self._matches(k, ["throw", "new", "AssertionError", "("]):
            return None
        close = c_family.matching(t, k + 3)
        if close + 1 >= len(t) or t[close + 1].text != ";":
            return None
        end = close + 2
        if braced:
            if end >= len(t) or t[end].text != "}":
                return None
            end += 1
        return end

    def _matches(self, i: int, shape: list[str | None]) -> bool:
        if i + len(shape) > len(self.tokens):
            return False
        return all(want is None or self.tokens[i + k].text == want
                   for k, want in enumerate(shape))

    def _newlines(self, start: int, stop: int) -> str:
        return "\n" * self.text.count("\n", start, stop)

    # -- one check ----------------------------------------------------------------------
    def _check(self, condition: list[Token], *, negate: bool, kind: str) -> str:
        site = len(self.sites)
        line = self.text.count("\n", 0, condition[0].start) + 1
        source = c_family.one_line(c_family.span(self.text, condition))
        if negate:
            source = f"!({source})"
        body, split = self._body(condition, negate=negate)
        self.sites.append(Site(source=source, line=line, kind="eq" if split else kind))
        return ("{ evaluator_harness.Site evaluator_site_ = evaluator_harness.Site.open("
                f"{site}); try {{ {body} }} catch (Throwable evaluator_error_) "
                "{ evaluator_site_.raised(evaluator_error_); } }")

    def _body(self, condition: list[Token], *, negate: bool) -> tuple[str, bool]:
        tokens = _unwrap(condition)
        if negate:
            if tokens and tokens[0].text == "!" and _is_postfix(tokens[1:]):
                tokens, negate = _unwrap(tokens[1:]), False
            else:
                top = c_family.top_level(tokens)
                unequal = [j for j in top if tokens[j].text == "!="]
                if len(unequal) == 1 and not any(
                        tokens[j].text in _LOW_PRECEDENCE - {"!="} or tokens[j].text == "=="
                        for j in top):
                    left, right = tokens[: unequal[0]], tokens[unequal[0] + 1:]
                    return self._compare(left, right, "=="), True
        if not negate:
            split = self._split(tokens)
            if split is not None:
                return split, True
        text = self._tapped(tokens)
        return f"evaluator_site_.truth({'!(' + text + ')' if negate else text});", False

    def _split(self, tokens: list[Token]) -> str | None:
        top = c_family.top_level(tokens)
        # Objects.equals(a, b)
        if len(tokens) >= 4 and [t.text for t in tokens[:3]] == ["Objects", ".", "equals"] \
                and tokens[3].text == "(" and c_family.matching(tokens, 3) == len(tokens) - 1:
            arguments = c_family.split_arguments(tokens[4:-1])
            if len(arguments) == 2 and all(arguments):
                return self._compare(arguments[0], arguments[1], "Objects.equals")
        # a.equals(b), where `a` is a primary expression
        if tokens and tokens[-1].text == ")":
            opening = _opening(tokens)
            if opening is not None and opening >= 3 and tokens[opening - 1].text == "equals" \
                    and tokens[opening - 2].text == "." and opening - 2 in top:
                left, right = tokens[: opening - 2], tokens[opening + 1: -1]
                if _is_postfix(left) and len(c_family.split_arguments(right)) == 1:
                    return self._compare(left, right, ".equals")
        # a == b
        equals = [j for j in top if tokens[j].text == "=="]
        if len(equals) == 1 and not any(tokens[j].text in _LOW_PRECEDENCE for j in top):
            left, right = tokens[: equals[0]], tokens[equals[0] + 1:]
            if left and right:
                return self._compare(left, right, "==")
        return None

    def _compare(self, left: list[Token], right: list[Token], how: str) -> str:
        if any(len(side) == 1 and side[0].text == "null" for side in (left, right)):
            # `var x = (null)` does not compile: fall back to a truth check.
            joined = {"==": " == ", ".equals": ".equals(", "Objects.equals": ", "}[how]
            text = c_family.span(self.text, left) + joined + c_family.span(self.text, right)
            if how == ".equals":
                text += ")"
            elif how == "Objects.equals":
                text = f"java.util.Objects.equals({text})"
            return f"evaluator_site_.truth({text});"
        a = c_family.span(self.text, left)
        b = c_family.span(self.text, right)
        test = {"==": "evaluator_left_ == evaluator_right_",
                ".equals": "evaluator_left_.equals(evaluator_right_)",
                "Objects.equals": "java.util.Objects.equals(evaluator_left_, evaluator_right_)"}
        # The side that calls the function under test is the actual value.
        actual, expected = "evaluator_left_", "evaluator_right_"
        if self._calls(right) and not self._calls(left):
            actual, expected = expected, actual
        return (f"var evaluator_left_ = ({a}); var evaluator_right_ = ({b}); "
                f"evaluator_site_.compare({test[how]}, {actual}, {expected});")

    def _calls(self, tokens: list[Token]) -> bool:
        return any(self._is_call(tokens, j) for j in range(len(tokens)))

    def _is_call(self, tokens: list[Token], j: int) -> bool:
        return (tokens[j].kind == "ident" and tokens[j].text in self.callees
                and j + 1 < len(tokens) and tokens[j + 1].text == "(")

    def _tapped(self, tokens: list[Token]) -> str:
        for j in range(len(tokens)):
            if not self._is_call(tokens, j):
                continue
            close = c_family.matching(tokens, j + 1)
            start = j
            # Include a simple receiver: `s.method(...)`.
            if j >= 2 and tokens[j - 1].text == "." and tokens[j - 2].kind == "ident":
                start = j - 2
            text = self.text
            return (text[tokens[0].start: tokens[start].start]
                    + "evaluator_site_.tap(" + text[tokens[start].start: tokens[close].end]
                    + ")" + text[tokens[close].end: tokens[-1].end])
        return c_family.span(self.text, tokens)


def _unwrap(tokens: list[Token]) -> list[Token]:
    """`(x)` -> `x`, when the parentheses enclose the whole expression."""
    while len(tokens) >= 2 and tokens[0].text == "(" \
            and c_family.matching(tokens, 0) == len(tokens) - 1:
        tokens = tokens[1:-1]
    return tokens


def _opening(tokens: list[Token]) -> int | None:
    """Index of the `(` matching the final `)`."""
    depth = 0
    for j in range(len(tokens) - 1, -1, -1):
        text = tokens[j].text
        if text in c_family.CLOSE:
            depth += 1
        elif text in c_family.OPEN:
            depth -= 1
            if depth == 0:
                return j
    return None


def _is_postfix(tokens: list[Token]) -> bool:
    """True for a primary expression with member accesses and calls, and nothing else
    at its top level (no operator that `.equals` or `!` would bind tighter than)."""
    if not tokens:
        return False
    for j in c_family.top_level(tokens):
        token = tokens[j]
        if token.kind == "punct" and token.text not in (".", "(", "[", "{", "::"):
            return False
        if token.kind == "ident" and token.text in ("new", "instanceof"):
            return False
    return True


def _classes(text: str) -> list[tuple[int, str, bool]]:
    """(offset, name, public) of each class declared in `text`, comments skipped."""
    try:
        tokens = c_family.tokenize(text, language="java")
    except ScanError:
        return []
    found = []
    for j in range(len(tokens) - 1):
        if tokens[j].text == "class" and tokens[j + 1].kind == "ident" \
                and not (j > 0 and tokens[j - 1].text == "."):
            k = j - 1
            while k >= 0 and tokens[k].text in ("final", "abstract", "static"):
                k -= 1
            found.append((tokens[j].start, tokens[j + 1].text,
                          k >= 0 and tokens[k].text == "public"))
    return found


def _main_offset(text: str) -> int | None:
    try:
        tokens = c_family.tokenize(text, language="java")
    except ScanError:
        return None
    for j in range(len(tokens) - 3):
        if [t.text for t in tokens[j: j + 4]] == ["static", "void", "main", "("]:
            return tokens[j].start
    return None


def class_names(prefix: str, test: str) -> tuple[str, str]:
    """(source file name, main class) for the program `prefix + completion + test`.

    Read from the dataset's text only (prompt and test), never from the completion.
    """
    test_classes = _classes(test)
    prefix_classes = _classes(prefix)
    main_at = _main_offset(test)
    main_class = ""
    if main_at is not None:
        before = [name for offset, name, _ in test_classes if offset < main_at]
        if before:
            main_class = before[-1]
    if not main_class and prefix_classes:
        main_class = prefix_classes[-1][1]
    main_class = main_class or "Main"
    public = [name for _, name, is_public in [*prefix_classes, *test_classes] if is_public]
    return (public[0] if public else main_class) + ".java", main_class


# -- the language -------------------------------------------------------------------------


@dataclass(frozen=True)
class JavaProgram:
    program: str
    instrumented: str
    test_first_line: int
    rewrite: Rewrite
    file_name: str
    main_class: str
    javatuples: bool


class Java(Language):
    name = "java"
    display_name = "Java"
    order = 30

    def build(self, problem: Problem, sample: Sample, options: RunOptions) -> JavaProgram:
        prefix = "" if sample.is_full_program else self.prefix(problem, options)
        head = prefix + sample.completion + "\n"
        test = self.test_text(problem, options)
        rewrite = rewrite_test(test, (problem.entry_point,))
        file_name, main_class = class_names(prefix or sample.completion, test)
        return JavaProgram(
            program=head + test, instrumented=head + rewrite.text,
            test_first_line=head.count("\n") + 1, rewrite=rewrite, file_name=file_name,
            main_class=main_class,
            javatuples=re.search(r"^\s*import\s+org\.javatuples\b", head, re.MULTILINE)
            is not None)

    def prepare(self, problem: Problem, sample: Sample, options: RunOptions) -> PreparedJob:
        built = self.build(problem, sample, options)
        try:
            tools = jdk()
        except ToolchainError as exc:
            raise LanguageError(str(exc)) from exc
        classpath = [str(tools.harness)]
        if built.javatuples:
            jar = javatuples()
            if jar is None:
                raise LanguageError("the program imports org.javatuples, which is not "
                                    "installed (apt-get install libjavatuples-java)")
            classpath.append(jar)
        javac = [tools.javac, *(f"-J{flag}" for flag in FAST_JVM)]
        if tools.javac_archive is not None:
            javac.append(f"-J-XX:SharedArchiveFile={tools.javac_archive}")
        javac_options = ["-encoding", "UTF-8", "-proc:none", "-cp", ":".join(classpath)]
        javac += javac_options
        files = {LAUNCHER_FILE: LAUNCHER}
        if built.rewrite.split:
            files.update({
                built.file_name: built.instrumented,
                f"whole/{built.file_name}": built.program,
                BUILD_FILE: build_script(
                    source=built.file_name, first_test_line=built.test_first_line,
                    split=[*javac, "-d", "classes", built.file_name],
                    whole=[*javac, "-d", "../classes", built.file_name]),
            })
            compile_argv = ["/bin/sh", BUILD_FILE]
        else:
            files[built.file_name] = built.program
            compile_argv = [*javac, "-d", "classes", built.file_name]
        memory = options.limits.memory_mb
        # java.io is opened so the harness can write to its inherited report fd (Java has
        # no public API for that, and gVisor cannot reopen a pipe through /proc).
        run_argv = ["/bin/sh", LAUNCHER_FILE, tools.java,
                    *_assertion_flags(built.program, options), *FAST_JVM, f"-Xmx{memory}m",
                    "--add-opens", "java.base/java.io=ALL-UNNAMED",
                    "-cp", ":".join([*classpath, "classes"]), "evaluator_harness.Launch",
                    built.main_class]
        steps: list[dict[str, Any]] = [
            {"name": "compile", "argv": compile_argv,
             "limits": _with_threads(options.compile_limits), "address_space_limit": False},
            {"name": "run", "argv": run_argv, "limits": _with_threads(options.limits),
             "report": True, "address_space_limit": False},
        ]
        job: dict[str, Any] = {"kind": "command", "files": files, "steps": steps}
        digest = program_hash("java", tools.version, json.dumps([compile_argv, run_argv]),
                              json.dumps(files, sort_keys=True))
        context: dict[str, Any] = {
            "mode": "split" if built.rewrite.split else "whole",
            "whole_reason": built.rewrite.whole_reason,
            "sites": [site.to_dict() for site in built.rewrite.sites],
            "test_first_line": built.test_first_line,
            "fallback_marker": FALLBACK_MARKER if built.rewrite.split else "",
            "main_class": built.main_class,
            # What `build_remotely` needs to compile this program with the warm javac.
            "remote": {"options": javac_options, "file_name": built.file_name,
                       "split": built.instrumented if built.rewrite.split else None,
                       "whole": built.program, "run_step": steps[1]},
        }
        return PreparedJob(job=job, program=built.program, program_hash=digest,
                           context=context)

    def interpret(self, prepared: PreparedJob, answer: dict[str, Any], sample: Sample,
                  problem: Problem, options: RunOptions, sandbox: SandboxInfo) -> SampleResult:
        return super().interpret(prepared, normalise_records(prepared.context, answer),
                                 sample, problem, options, sandbox)

    def compile_service(self, limits: SandboxLimits) -> CompileService | None:
        try:
            tools = jdk()
        except ToolchainError:
            return None
        # Half the compile memory for the heap; the rest is the JVM's own and the
        # sandbox's. Tiered compilation stays on: this JVM lives long enough to gain.
        return CompileService(
            name="javac",
            argv=(tools.java, "-XX:+UseSerialGC", "-XX:-UsePerfData",
                  f"-Xmx{max(256, limits.memory_mb // 2)}m", "-cp", str(tools.compiler),
                  "evaluator_compiler.Server"),
            extra_processes=JVM_THREADS)

    def build_remotely(self, prepared: PreparedJob, ask: AskCompiler) -> RemoteBuild | None:
        remote = prepared.context.get("remote")
        if not remote:
            return None
        name = remote["file_name"]

        def compile_text(text: str) -> tuple[dict[str, Any], list[str]]:
            answer = ask(["compile", str(len(remote["options"])), *remote["options"],
                          "1", name, text])
            return dict(answer["steps"][0]), list(answer.get("outputs", []))

        if remote["split"] is not None:
            step, outputs = compile_text(remote["split"])
            if step.get("exit_code") == 1 and not user_error_before(
                    str(step.get("stderr") or ""), name, prepared.context["test_first_line"]):
                # The rewrite broke a program that may compile unchanged: the build
                # script's rule, the same message.
                first_ms = float(step.get("wall_ms") or 0)
                step, outputs = compile_text(remote["whole"])
                step["stderr"] = (f"{FALLBACK_MARKER}; compiling it unchanged\n"
                                  + str(step.get("stderr") or ""))
                step["wall_ms"] = first_ms + float(step.get("wall_ms") or 0)
        else:
            step, outputs = compile_text(remote["whole"])
        if step.get("exit_code") == OUT_OF_MEMORY:
            step["oom_killed"] = True
        if step.get("exit_code") != 0 or step.get("timed_out") or step.get("oom_killed"):
            return RemoteBuild(steps=[step], job=None)
        classes = {f"classes/{base64.b64decode(path).decode('utf-8')}": data
                   for path, data in zip(outputs[::2], outputs[1::2], strict=True)}
        job = {"kind": "command", "files": {LAUNCHER_FILE: LAUNCHER},
               "binary_files": classes, "steps": [remote["run_step"]]}
        return RemoteBuild(steps=[step], job=job)

    def mounts(self) -> list[Mount]:
        mounts = [Mount(cache_root())]
        try:
            home = jdk().home
        except ToolchainError:
            return mounts
        # Debian keeps the JDK's configuration in /etc/java-17-openjdk, linked from the
        # JDK's conf/ and lib/jvm.cfg; /usr itself is mounted by every backend.
        config = Path(os.path.realpath(home / "lib" / "jvm.cfg")).parent
        if not config.is_relative_to("/usr"):
            mounts.append(Mount(config))
        jar = javatuples()
        if jar is not None:
            mounts.append(Mount(Path(os.path.realpath(jar))))
        return mounts

    def selfcheck_stub(self, problem: Problem, stub: str) -> str:
        """`stub`, closing the method and its class when the tests do not.

        MultiPL-E's tests begin by closing both; HumanEval-XL's open a class of their own
        right after the prompt's, so a bare body would leave the prompt's class open.
        """
        if problem.test.lstrip().startswith("}"):
            return stub
        return stub + "    }\n}\n"

    def require_toolchain(self) -> None:
        jdk()


def _with_threads(limits: SandboxLimits) -> dict[str, Any]:
    data = limits.to_dict()
    data["processes"] = int(data.get("processes") or 0) + JVM_THREADS
    return data


def _assertion_flags(program: str, options: RunOptions) -> list[str]:
    """`-ea` unless the profile runs Java without it and the program has an `assert`
    statement for the flag to switch off: a program without one runs the same job under
    every profile, so its execution is shared between them."""
    if get_profile(options.profile).java_assertions or not ASSERT_WORD.search(program):
        return ["-ea"]
    return []
