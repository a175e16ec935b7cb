"""C++: g++, a precompiled prelude, and every `assert` of the test reported on its own.

Building. The program is the one the reference harness builds: for HumanEval-X,
CodeGeeX's missing `#include`s, then the prompt (or the declaration, for translation),
the completion and the test, compiled as C++11 like CodeGeeX; for MultiPL-E, prompt +
completion + tests, compiled as C++17 like MultiPL-E's `eval_cpp`. OpenSSL's libcrypto
is always on the link line (`--as-needed` drops it when unused), so the md5 task links.

Speed. Parsing the standard headers is most of a compile. Each program's leading
standard includes, and CodeGeeX's, are the same for every sample of a dataset, so they
are precompiled once (with the harness) into the cache directory, mounted read-only,
and pulled in with `-include`: g++ loads the .gch instead of parsing the headers. A
precompiled header is by definition equivalent to including its text, and it contains
only headers the program includes anyway, so verdicts do not change.

Next is generating code for the templates every program instantiates: `std::vector` of
the dataset's element types, and the harness's value printer for them. When the
prelude has <vector> and <string>, it declares those instantiations `extern template`,
and an archive built once with the prelude defines them, one member per type; each
program links the members it uses instead of compiling them again. The code is the
same, compiled by the same compiler with the same flags, only in another translation
unit. (One theoretical difference: a program that explicitly specialises, say,
`std::vector<int>` itself, which the standard forbids, is now refused where g++ alone
accepts it.) The same goes for the string conversions every program's <string>
declares (`std::stoi` and the others, `std::to_string` of a floating value): their
function templates are declared `extern` too, and compiled once into the archive, so
that a program no longer instantiates all eighteen of them, used or not, at its end.
Linking uses mold, else gold, when installed: the same program, in a fraction of ld's
time.

Without the driver. `g++` itself only starts three tools: the compiler proper (cc1plus),
the assembler, and, through collect2, the linker. Their exact command lines are read
once from `g++ -###`, and a job runs them itself from a small script (`TOOLS_FILE`),
which saves starting the driver twice and collect2 once. When a prelude is built, one
program is built both ways and the two executables compared byte for byte; if they
differ, or the driver's commands are not the three expected, jobs use `g++` as before.

Per-test outcomes. Each `assert(...)` in the test text, in `main` or in a function it
calls (HumanEval-X+ writes its thousand checks in functions of 10, which g++ compiles
several times faster than one `main`), becomes a block that evaluates the condition,
reports it (with expected and actual when it is `a == b`, and otherwise the value of the
first call of the function under test), catches exceptions, and goes on. A guard at the
top of `main` reports `done` when `main` returns. When the rewrite cannot be made safely
(no `main`, `assert` inside a macro), or the rewritten program fails to compile where
the original would not, the unchanged program runs and is judged by its exit status, and
the result says so.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.languages import c_family, lexing
from evaluator.languages.base import (
    Language,
    LanguageError,
    PreparedJob,
    program_hash,
)
from evaluator.languages.lexing import ScanError, Token
from evaluator.languages.reporting import (
    BUILD_FILE,
    LAUNCHER,
    LAUNCHER_FILE,
    Rewrite,
    Site,
    apply_edits,
    build_script,
    normalise_records,
)
from evaluator.languages.syntax_check import (
    Answer,
    RunJob,
    job_steps,
    tool_output,
    tool_step,
    writable,
)
from evaluator.languages.toolchains import (
    Tool,
    ToolchainError,
    cache_root,
    prebuilt,
    run_tool,
    version_key,
)
from evaluator.records import Problem, RunOptions, Sample
from evaluator.sandbox.base import Mount

HARNESS = Path(__file__).resolve().parent / "runtime" / "cpp_harness.h"
PCH_ENV = "EVALUATOR_CPP_PCH"
"""Set to 0 to include the prelude as text (to measure what precompiling saves)."""
DIRECT_ENV = "EVALUATOR_CPP_DIRECT"
"""Set to 0 to build through the `g++` driver (to measure what running the tools saves)."""
TOOLS_FILE = ".evaluator-cxx.sh"
"""The job's script running cc1plus, the assembler and the linker on `main.cpp`; its one
argument is where to write the program."""
DIRECT_MARKER = "direct-build-checked"
OPTIONAL_LIBRARIES = ("-lssl", "-lcrypto")
"""On every link line (the md5 task needs them), used by almost no program."""

CODEGEEX_HEADERS = ("stdlib.h", "algorithm", "math.h", "stdio.h", "vector", "string",
                    "climits", "cstring", "iostream")
"""CodeGeeX's `IMPORT_HELPER["cpp"]`: each is prepended unless the prompt has it."""

PRECOMPILABLE = frozenset({
    *CODEGEEX_HEADERS,
    "bits/stdc++.h", "boost/any.hpp", "openssl/md5.h",
    "array", "bitset", "cctype", "cfloat", "cmath", "complex", "cstdint", "cstdio",
    "cstdlib", "ctype.h", "deque", "functional", "iomanip", "iterator", "limits", "list",
    "map", "memory", "numeric", "optional", "queue", "set", "sstream", "stack",
    "stdint.h", "string.h", "tuple", "unordered_map", "unordered_set", "utility",
    "limits.h", "float.h",
})
"""Headers that may go into a precompiled prelude: ones whose meaning does not depend on
what comes before them. `assert.h` is not among them (it reads NDEBUG each time)."""

_INCLUDE = re.compile(r"#\s*include\s*[<\"]([^>\"]+)[>\"]")

COMMON_TYPES = ("int", "long", "long long", "float", "double", "char", "std::string")
"""Element types of the dataset's vectors (counted over HumanEval-X and MultiPL-E C++:
long, int, string and float cover nearly all)."""


_STRING_CONVERSIONS = (
    # (result, what the C function returns, its extra `int base` argument or none)
    ("int", "long", ", int"), ("long", "long", ", int"),
    ("unsigned long", "unsigned long", ", int"), ("long long", "long long", ", int"),
    ("unsigned long long", "unsigned long long", ", int"), ("float", "float", ""),
    ("double", "double", ""), ("long double", "long double", ""))
"""The instantiations of libstdc++'s `__gnu_cxx::__stoa` that <string>'s inline `stoi`,
`stol`, ..., `stold` name, for `char` and for `wchar_t`. GCC instantiates every template
a header's inline function names at the end of each translation unit, used or not, and a
precompiled header does not keep those instantiations: these 16 and the two
`__to_xstring` below cost about 7 ms of every compile."""


def _string_conversions(word: str) -> str:
    lines = []
    for char in ("char", "wchar_t"):
        for result, returned, base in _STRING_CONVERSIONS:
            arguments = f"{returned}, {result}, {char}{base}"
            lines.append(f"{word} {result} __gnu_cxx::__stoa<{arguments}>({returned} (*)("
                         f"const {char}*, {char}**{base}), const char*, const {char}*, "
                         f"std::size_t*{base});\n")
        string = "std::string" if char == "char" else "std::wstring"
        lines.append(f"{word} {string} __gnu_cxx::__to_xstring<{string}, {char}>(int (*)("
                     f"{char}*, std::size_t, const {char}*, __builtin_va_list), "
                     f"std::size_t, const {char}*, ...);\n")
    return "".join(lines)


def _instance_groups(*, extern: bool) -> list[str]:
    """The shared instantiations, in groups that a program needs together: one group per
    vector type (the class and its printer), one of the scalar printers, and one of the
    string conversions. Each group is one member of the instances archive, so a program
    links only the groups it uses."""
    word = "extern template" if extern else "template"

    def show(t: str) -> str:
        return f"{word} std::string evaluator_harness::show<{t} >({t} const&);\n"

    vectors = [f"std::vector<{t}>" for t in COMMON_TYPES]
    vectors += ["std::vector<std::vector<int> >", "std::vector<std::vector<long> >"]
    groups = [f"{word} class {v};\n{show(v)}" for v in vectors]
    groups.append("".join(show(t) for t in ("bool", "unsigned", "const char*",
                                            *COMMON_TYPES)))
    groups.append(_string_conversions(word))
    return groups


def _instances_text(*, extern: bool) -> str:
    return "".join(_instance_groups(extern=extern))


def _has_common_headers(headers: tuple[str, ...]) -> bool:
    return "bits/stdc++.h" in headers or {"vector", "string"} <= set(headers)


@dataclass(frozen=True)
class Convention:
    """How one dataset's reference harness builds and compiles a C++ program."""

    setup_headers: tuple[str, ...]
    standard: str


CONVENTIONS: dict[str, Convention] = {
    "humaneval-x": Convention(CODEGEEX_HEADERS, "c++11"),
    "multipl-e": Convention((), "c++17"),
}
DEFAULT_CONVENTION = Convention((), "c++17")


@dataclass(frozen=True)
class Compiler:
    path: str
    version: str
    link_flags: tuple[str, ...]


GXX = Tool("g++", "EVALUATOR_CXX", ("/usr/bin/g++",),
           "apt-get install g++ libboost-dev libssl-dev")


@functools.lru_cache(maxsize=1)
def compiler() -> Compiler:
    path = GXX.find()
    if path is None:
        raise ToolchainError("g++ is not installed (apt-get install g++ libboost-dev "
                             "libssl-dev)")
    version = run_tool([path, "-dumpfullversion"], timeout=60).strip()
    machine = run_tool([path, "-dumpmachine"], timeout=60).strip()
    return Compiler(path, f"{version} {machine}", (*_linker(), "-Wl,--as-needed",
                                                   *OPTIONAL_LIBRARIES))


def _linker() -> tuple[str, ...]:
    """The fastest linker installed: mold, else gold (binutils ships it beside ld).

    Both link these small programs in a fraction of ld's time, into the same program.
    mold runs single-threaded and without its background process: a worker's CPU is
    its sample's, and the time is accounted where it is spent.
    """
    if shutil.which("ld.mold"):
        return ("-fuse-ld=mold", "-Wl,--no-fork", "-Wl,--threads=1")
    if shutil.which("ld.gold"):
        return ("-fuse-ld=gold",)
    return ()


@dataclass(frozen=True)
class Tools:
    """The commands `g++` runs to turn `main.cpp` into a program, as `g++ -###` prints
    them, with its temporary files renamed `main.s` and `main.o` in the job directory."""

    compile: tuple[str, ...]
    assemble: tuple[str, ...]
    link: tuple[str, ...]
    """The linker collect2 would start (`-fuse-ld`'s, else ld), without the LTO plugin
    (our objects are never LTO objects); `OUTPUT` stands for the program's path."""

    OUTPUT = "\0output"

    def script(self) -> str:
        """`TOOLS_FILE`: its argument is where to write the program.

        The link is tried first without OpenSSL's two libraries (`OPTIONAL_LIBRARIES`),
        whose symbol tables are most of what the linker reads (3 ms), and only when that
        fails, with them, as g++ links. No symbol they define is defined by anything
        else on the line (`test_cpp_build` checks this machine's libraries), and
        `--as-needed` leaves them out of a program that uses none of their symbols: so a
        program that links without them is the same program, and one that does not gets
        the link, and the errors, it always had.
        """
        def line(argv: tuple[str, ...]) -> str:
            return " ".join('"$1"' if arg == self.OUTPUT else shlex.quote(arg)
                            for arg in argv)
        lean = tuple(arg for arg in self.link if arg not in OPTIONAL_LIBRARIES)
        dropped = next((i for i, arg in enumerate(self.link) if arg in OPTIONAL_LIBRARIES),
                       len(self.link))
        first = (f"{line(lean)} 2>/dev/null ||\n"
                 if lean != self.link and "--as-needed" in self.link[:dropped] else "")
        return (f"{line(self.compile)} &&\n{line(self.assemble)} &&\n"
                f"{{ {first}exec {line(self.link)}; }}\n")


def _driver_tools(argv: list[str], cwd: Path) -> Tools | None:
    """The tools behind `argv` (a g++ command compiling `main.cpp` into `prog`), or None
    when the driver runs anything but cc1plus, as and collect2 once each, in order."""
    try:
        printed = subprocess.run([argv[0], "-###", *argv[1:]], cwd=cwd, capture_output=True,
                                 text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    commands = [shlex.split(line) for line in printed.stderr.splitlines()
                if line.startswith(" ")]
    if printed.returncode != 0 or len(commands) != 3:
        return None
    compile_, assemble, link = commands
    if Path(compile_[0]).name != "cc1plus" or assemble[0] != "as" \
            or Path(link[0]).name != "collect2":
        return None
    try:
        assembly = compile_[compile_.index("-o") + 1]
        obj = assemble[assemble.index("-o") + 1]
    except (ValueError, IndexError):
        return None
    if assemble[-1] != assembly or obj not in link or "prog" not in link:
        return None
    renamed = {assembly: "main.s", obj: "main.o"}
    assembler = shutil.which(assemble[0])
    linker_name = next((f"ld.{arg.split('=', 1)[1]}" for arg in link
                        if arg.startswith("-fuse-ld=")), "ld")
    linker = shutil.which(linker_name)
    if assembler is None or linker is None:
        return None
    link_args: list[str] = []
    skip = False
    for arg in link[1:]:
        if skip:
            skip = False
        elif arg == "-plugin":
            skip = True
        elif not arg.startswith(("-plugin-opt=", "-fuse-ld=")):
            link_args.append(arg)
    output = link_args.index("-o") + 1 if "-o" in link_args else -1
    if output < 0 or link_args[output] != "prog":
        return None
    link_args[output] = Tools.OUTPUT
    tools = Tools(tuple(renamed.get(a, a) for a in compile_),
                  (assembler, *(renamed.get(a, a) for a in assemble[1:])),
                  (linker, *(renamed.get(a, a) for a in link_args)))
    if any(a.startswith(tempfile.gettempdir()) for a in tools.compile + tools.assemble
           + tools.link):
        return None  # a temporary file we do not know how to rename
    return tools


def _check_direct_build(cxx: Compiler, argv: list[str], work: Path) -> bool:
    """Build one program with `argv` (the driver) and with the tools it names; True when
    the two executables are the same bytes."""
    check = work / "direct-check"
    (check / "by-tools").mkdir(parents=True)
    source = ("int main() { std::string s = evaluator_harness::show(1); "
              "return static_cast<int>(s.size()) - 1; }\n")
    (check / "main.cpp").write_text(source)
    (check / "by-tools" / "main.cpp").write_text(source)
    tools = _driver_tools(argv, check)
    if tools is None:
        return False
    try:
        run_tool(argv, cwd=check, timeout=600)
        run_tool(["/bin/sh", "-c", tools.script(), TOOLS_FILE, "prog"], cwd=check / "by-tools",
                 timeout=600)
        same = (check / "prog").read_bytes() == (check / "by-tools" / "prog").read_bytes()
    except (ToolchainError, OSError):
        same = False
    shutil.rmtree(check, ignore_errors=True)
    return same


@functools.lru_cache(maxsize=64)
def direct_tools(standard: str, headers: tuple[str, ...]) -> Tools | None:
    """The tools a job runs for this prelude, or None to run `g++` (see the docstring)."""
    built = prelude(standard, headers)
    if not built.direct or os.environ.get(DIRECT_ENV, "1") == "0":
        return None
    with tempfile.TemporaryDirectory() as scratch:
        return _driver_tools(_driver_argv(compiler(), standard, built), Path(scratch))


def _driver_argv(cxx: Compiler, standard: str, built: Prelude) -> list[str]:
    """The g++ command building `main.cpp` into `prog` with this prelude."""
    return [cxx.path, f"-std={standard}", "-include", str(built.header),
            "-fdiagnostics-color=never", "-Winvalid-pch", "-o", "prog", "main.cpp",
            *built.objects, *cxx.link_flags]


@dataclass(frozen=True)
class Prelude:
    header: Path
    """`prelude.h`: the headers, then the harness; `prelude.h.gch` beside it when g++
    could precompile it."""
    harness_object: Path
    """The harness's non-template code, compiled once, linked into every program."""
    instances: Path | None = None
    """The archive of the common template instantiations the prelude declares `extern`
    (see `COMMON_TYPES`), compiled once; None when the prelude does not declare them."""
    direct: bool = False
    """A program built by the tools `g++ -###` names was the driver's, byte for byte."""

    @property
    def objects(self) -> list[str]:
        return [str(self.harness_object), *([str(self.instances)] if self.instances else [])]


@functools.lru_cache(maxsize=64)
def prelude(standard: str, headers: tuple[str, ...]) -> Prelude:
    """The prelude for one language standard and header list, built once.

    A header that fails to precompile (Boost not installed, say) leaves the prelude
    textual: the program then fails or passes exactly as it would have anyway.
    """
    cxx = compiler()
    harness = HARNESS.read_text()
    precompile = os.environ.get(PCH_ENV, "1") != "0"
    key = version_key(cxx.version, standard, *headers, harness, str(precompile),
                      *cxx.link_flags, _instances_text(extern=False), DIRECT_MARKER)

    def build(work: Path) -> None:
        text = "".join(f"#include <{h}>\n" for h in headers) + harness
        # Only the harness's own headers: the object must build even when a dataset
        # header (Boost, say) is missing.
        (work / "harness.cpp").write_text("#define EVALUATOR_HARNESS_IMPLEMENTATION\n"
                                          + harness)
        run_tool([cxx.path, f"-std={standard}", "-c", "harness.cpp", "-o", "harness.o"],
                 cwd=work, timeout=600)
        if _has_common_headers(headers) and _build_instances(cxx, standard, harness, work):
            text += _instances_text(extern=True)
        (work / "prelude.h").write_text(text)
        if not precompile:
            return
        try:
            run_tool([cxx.path, f"-std={standard}", "-x", "c++-header", "prelude.h",
                      "-o", "prelude.h.gch"], cwd=work, timeout=600)
        except ToolchainError:
            (work / "prelude.h.gch").unlink(missing_ok=True)
        instances = work / "instances.a"
        here = Prelude(work / "prelude.h", work / "harness.o",
                       instances if instances.exists() else None)
        if _check_direct_build(cxx, _driver_argv(cxx, standard, here), work):
            (work / DIRECT_MARKER).touch()

    built = prebuilt("cpp-prelude", key, build)
    instances = built / "instances.a"
    return Prelude(header=built / "prelude.h", harness_object=built / "harness.o",
                   instances=instances if instances.exists() else None,
                   direct=(built / DIRECT_MARKER).exists())


def _build_instances(cxx: Compiler, standard: str, harness: str, work: Path) -> bool:
    """Compile each instantiation group into `instances.a`; False if any fails."""
    ar = shutil.which("ar") or "/usr/bin/ar"
    head = "#include <vector>\n#include <string>\n" + harness
    names = []
    for number, group in enumerate(_instance_groups(extern=False)):
        (work / f"instances{number}.cpp").write_text(head + group)
        names.append(f"instances{number}")

    def compile_one(name: str) -> None:
        run_tool([cxx.path, f"-std={standard}", "-c", f"{name}.cpp", "-o", f"{name}.o"],
                 cwd=work, timeout=600)

    try:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            list(pool.map(compile_one, names))
        run_tool([ar, "rcs", "instances.a", *(f"{name}.o" for name in names)], cwd=work,
                 timeout=600)
    except ToolchainError:
        (work / "instances.a").unlink(missing_ok=True)
        return False
    finally:
        for name in names:
            (work / f"{name}.o").unlink(missing_ok=True)
    return True


def leading_includes(text: str) -> list[str]:
    """The headers `text` includes before its first declaration (comments skipped)."""
    try:
        tokens = lexing.tokenize(text, "cpp")
    except ScanError:
        return []
    found: list[str] = []
    for token in tokens:
        if token.kind != "directive":
            break
        match = _INCLUDE.match(token.text)
        if match:
            found.append(match.group(1).strip())
    return found


# -- rewriting the test -------------------------------------------------------------------

_LOW_PRECEDENCE = frozenset({"&&", "||", "?", ":", "=", ",", "!=", "&", "|", "^", "+=", "-=",
                             "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "<=>"})
"""Operators binding less tightly than `==`, or as tightly: with one of them at the top
level, `a == b` is not the whole condition, so it is not split."""


def rewrite_test(test: str, callees: tuple[str, ...]) -> Rewrite:
    """Instrument every `assert` of the test text (see the module docstring)."""
    try:
        tokens = lexing.tokenize(test, "cpp")
    except ScanError as exc:
        return Rewrite(test, whole_reason=f"the test text could not be scanned ({exc})")
    for token in tokens:
        if token.kind == "directive" and re.search(r"\bassert\b", token.text) \
                and not _INCLUDE.match(token.text):
            return Rewrite(test, whole_reason="the test uses assert inside a preprocessor "
                                              "directive")
    main_body = _main_body(tokens)
    if main_body is None:
        return Rewrite(test, whole_reason="the test has no main function")
    edits: list[tuple[int, int, str]] = [
        (main_body, main_body, " evaluator_harness::MainGuard evaluator_main_guard_;")]
    sites: list[Site] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not _is_assert(tokens, i):
            i += 1
            continue
        try:
            close = c_family.matching(tokens, i + 1)
        except ScanError:
            return Rewrite(test, whole_reason="an assert has unbalanced parentheses")
        inner = tokens[i + 2: close]
        statement = close + 1 < len(tokens) and tokens[close + 1].text == ";"
        site = len(sites)
        line = test.count("\n", 0, token.start) + 1
        source = c_family.one_line(c_family.span(test, tokens[i: close + 1]))
        replacement, kind = _check(test, inner, site, callees, statement=statement)
        sites.append(Site(source=source, line=line, kind=kind))
        # Keep the line count, so compiler messages point at the program's own lines.
        original = test[token.start: tokens[close].end]
        edits.append((token.start, tokens[close].end,
                      replacement + "\n" * original.count("\n")))
        i = close + 1
    return Rewrite(apply_edits(test, edits), sites=sites)


def _is_assert(tokens: list[Token], i: int) -> bool:
    token = tokens[i]
    if token.kind != "ident" or token.text != "assert":
        return False
    if i + 1 >= len(tokens) or tokens[i + 1].text != "(":
        return False
    return not (i > 0 and tokens[i - 1].text in (".", "->", "::"))


def _main_body(tokens: list[Token]) -> int | None:
    """Offset just inside the `{` of `int main(...)`."""
    for i, token in enumerate(tokens):
        if token.kind == "ident" and token.text == "main" and i > 0 \
                and tokens[i - 1].text == "int" and i + 1 < len(tokens) \
                and tokens[i + 1].text == "(":
            try:
                close = c_family.matching(tokens, i + 1)
            except ScanError:
                return None
            if close + 1 < len(tokens) and tokens[close + 1].text == "{":
                return tokens[close + 1].end
    return None


def _check(text: str, inner: list[Token], site: int, callees: tuple[str, ...], *,
           statement: bool) -> tuple[str, str]:
    split = _split_equality(inner)
    if split is not None and statement:
        left, right = split
        if _calls(right, callees) and not _calls(left, callees):
            left, right = right, left  # `expected == f(x)`: the call's side is the actual
        actual = c_family.span(text, left)
        expected = c_family.span(text, right)
        # The comparison, then the actual value shown, then the expected one: the order
        # in which a template taking both sides once evaluated them.
        body = (f"auto&& evaluator_actual_ = ({actual}); "
                f"auto&& evaluator_expected_ = ({expected}); "
                "bool evaluator_equal_ = static_cast<bool>("
                + ("evaluator_actual_ == evaluator_expected_" if left is split[0]
                   else "evaluator_expected_ == evaluator_actual_")
                + "); std::string evaluator_shown_ = evaluator_harness::show("
                "evaluator_actual_); evaluator_site_.compare(evaluator_equal_, "
                "evaluator_shown_, evaluator_harness::show(evaluator_expected_));")
        return _statement(site, body), "eq"
    condition = _tapped(text, inner, callees)
    if statement:
        return _statement(site, f"evaluator_site_.truth(static_cast<bool>({condition}));"), \
            "truth"
    return (f"evaluator_harness::check_expression({site}, [&](evaluator_harness::Site& "
            f"evaluator_site_) -> bool {{ return static_cast<bool>({condition}); }})"), "truth"


def _statement(site: int, body: str) -> str:
    # do { } while (0) stays one statement, so `if (c) assert(x); else ...` still parses.
    return (f"do {{ evaluator_harness::Site evaluator_site_({site}); try {{ {body} }} "
            "catch (...) { evaluator_site_.raised(); } } while (0)")


def _split_equality(inner: list[Token]) -> tuple[list[Token], list[Token]] | None:
    top = c_family.top_level(inner)
    equals = [j for j in top if inner[j].kind == "punct" and inner[j].text == "=="]
    if len(equals) != 1:
        return None
    if any(inner[j].kind == "punct" and inner[j].text in _LOW_PRECEDENCE for j in top):
        return None
    left, right = inner[: equals[0]], inner[equals[0] + 1:]
    if not left or not right or right[0].text == "{" or left[0].text == "{":
        return None  # a braced list cannot initialise `auto&&`
    return left, right


def _calls(tokens: list[Token], callees: tuple[str, ...]) -> bool:
    return any(_is_call(tokens, j, callees) for j in range(len(tokens)))


def _is_call(tokens: list[Token], j: int, callees: tuple[str, ...]) -> bool:
    return (tokens[j].kind == "ident" and tokens[j].text in callees
            and j + 1 < len(tokens) and tokens[j + 1].text == "("
            and not (j > 0 and tokens[j - 1].text in (".", "->", "::")))


def _tapped(text: str, inner: list[Token], callees: tuple[str, ...]) -> str:
    """The condition with its first call of the function under test wrapped in `tap`."""
    for j in range(len(inner)):
        if _is_call(inner, j, callees):
            try:
                close = c_family.matching(inner, j + 1)
            except ScanError:
                break
            call = text[inner[j].start: inner[close].end]
            return (text[inner[0].start: inner[j].start]
                    + f"evaluator_site_.tap({call})"
                    + text[inner[close].end: inner[-1].end])
    return c_family.span(text, inner)


# -- the language -------------------------------------------------------------------------


@dataclass(frozen=True)
class CppProgram:
    program: str
    """The program as the reference harness builds it."""
    instrumented: str
    test_first_line: int
    rewrite: Rewrite
    standard: str
    headers: tuple[str, ...]


class Cpp(Language):
    name = "cpp"
    display_name = "C++"
    aliases = ("c++", "cc", "cxx")
    fence_tags = ("c",)
    order = 20
    pygments_lexer = "cpp"
    # A return type before the name, which also keeps `if (` out.
    function_pattern = r"^[A-Za-z_][\w:<>,*& ]*[\s*&>](\w+)\s*\([^;]*$"
    syntax_check = "g++"
    slow_syntax_check = True
    toolchain = GXX
    selfcheck_body = "    throw 0;\n"

    def convention(self, problem: Problem) -> Convention:
        return CONVENTIONS.get(problem.dataset, DEFAULT_CONVENTION)

    def build(self, problem: Problem, sample: Sample, options: RunOptions) -> CppProgram:
        convention = self.convention(problem)
        code = sample.completion if sample.is_full_program else (
            self.prefix(problem, options) + sample.completion)
        # CodeGeeX's rule: a helper include is added when the prompt does not contain it
        # (as text: `#include<vector>` exactly).
        setup = "".join(f"#include<{h}>\n" for h in convention.setup_headers
                        if f"#include<{h}>" not in code)
        head = (setup + "\n" if convention.setup_headers else "") + code + "\n"
        test = self.test_text(problem, options)
        callees = tuple(dict.fromkeys([problem.entry_point, "candidate"]))
        rewrite = rewrite_test(test, callees)
        leading = [h for h in leading_includes(code) if h in PRECOMPILABLE]
        headers = tuple(dict.fromkeys([*convention.setup_headers, *leading]))
        return CppProgram(program=head + test, instrumented=head + rewrite.text,
                          test_first_line=head.count("\n") + 1, rewrite=rewrite,
                          standard=convention.standard, headers=headers)

    def prepare(self, problem: Problem, sample: Sample, options: RunOptions) -> PreparedJob:
        built = self.build(problem, sample, options)
        try:
            cxx = compiler()
            built_prelude = prelude(built.standard, built.headers)
            tools = direct_tools(built.standard, built.headers)
        except ToolchainError as exc:
            raise LanguageError(str(exc)) from exc
        files = {LAUNCHER_FILE: LAUNCHER}
        if tools is not None:
            files[TOOLS_FILE] = tools.script()

        def build_into(program: str, tools_file: str) -> list[str]:
            if tools is not None:
                return ["/bin/sh", tools_file, program]
            argv = _driver_argv(cxx, built.standard, built_prelude)
            argv[argv.index("prog")] = program
            return argv

        if built.rewrite.split:
            files.update({
                "main.cpp": built.instrumented,
                "whole/main.cpp": built.program,
                BUILD_FILE: build_script(
                    source="main.cpp", first_test_line=built.test_first_line,
                    split=build_into("prog", TOOLS_FILE),
                    whole=build_into("../prog", f"../{TOOLS_FILE}")),
            })
            compile_argv = ["/bin/sh", BUILD_FILE]
        else:
            files["main.cpp"] = built.program
            compile_argv = build_into("prog", TOOLS_FILE)
        steps: list[dict[str, Any]] = [
            {"name": "compile", "argv": compile_argv,
             "limits": options.compile_limits.to_dict(), "address_space_limit": False},
            {"name": "run", "argv": ["/bin/sh", LAUNCHER_FILE, "./prog"],
             "limits": options.limits.to_dict(), "report": True},
        ]
        job: dict[str, Any] = {"kind": "command", "files": files, "steps": steps}
        digest = program_hash("cpp", cxx.version, json.dumps(compile_argv),
                              json.dumps(files, sort_keys=True))
        context: dict[str, Any] = {
            **built.rewrite.job_context(test_first_line=built.test_first_line),
            "standard": built.standard,
            "precompiled_headers": list(built.headers),
        }
        return PreparedJob(job=job, program=built.program, program_hash=digest,
                           context=context)

    def complete_answer(self, prepared: PreparedJob, answer: dict[str, Any]) -> dict[str, Any]:
        return normalise_records(prepared.context, answer)

    def mounts(self) -> list[Mount]:
        # The precompiled preludes; the compiler itself is under /usr, which every
        # backend mounts.
        return [Mount(cache_root())]

    def require_toolchain(self) -> None:
        compiler()

    def tool_path(self, *, python: str) -> str | None:
        return compiler().path

    # -- the language check of uploads --------------------------------------------------
    def check_syntax(self, sources: list[str], run: RunJob) -> list[Answer]:
        return _parse_cpp(sources, run)

    def syntax_contexts(self, code: str) -> list[str]:
        # One context, not three: each costs a compiler front end. A body the prompt
        # opened closes one brace more than it opens.
        closed = code.count("}") > code.count("{")
        return ["auto _f() {\n" + code + ("" if closed else "\n}")]


# -- the syntax check (g++ -fsyntax-only) ----------------------------------------
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
    gxx = GXX.beside("g++")
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
    gxx = GXX.beside("g++")
    header = _cpp_header()
    sources = [writable(_cpp_safe(source)) for source in sources]

    def step(files: list[str]) -> dict[str, Any]:
        return tool_step([gxx, "-std=c++17", "-fsyntax-only", "-fdiagnostics-color=never",
                           "-fno-diagnostics-show-caret", "-w", "-include", str(header),
                           *files], _CPP_PATTERN)

    alone = [i for i, source in enumerate(sources) if _cpp_leaky(source)]
    together = [i for i in range(len(sources)) if i not in alone]
    answers: list[Answer] = [True] * len(sources)
    if together:
        answer = run({"kind": "command",
                      "files": {"batch.cpp": _cpp_batch(sources, together)},
                      "steps": [step(["batch.cpp"])]})
        steps = job_steps(answer)
        batch = tool_output(steps[0], failure_says=_CPP_PATTERN) if steps else None
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
        steps = job_steps(answer)
        for k, i in enumerate(alone):
            output = (tool_output(steps[k], failure_says=_CPP_PATTERN)
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
