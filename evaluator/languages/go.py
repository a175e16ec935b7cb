"""Go: compiled with the toolchain's own compiler and linker, one assertion per record.

Building. Measured here (Go 1.19, a changed program each time): `go test -c` with a warm
build cache costs 0.3 s of CPU (0.6 s wall), most of it the go command itself; it also
works with a read-only cache (1.19 skips writes it cannot make), at the same cost.
`go test` as CodeGeeX runs it adds vet. We call the compiler and linker directly
instead (`go tool compile`, `go tool link -s -w`), against precompiled standard-library
archives (Debian's Go ships them in `$GOROOT/pkg`; other releases get them built once
into the cache directory, `EVALUATOR_GO_BUILD_STD=1` forces that). A sample then costs
0.07 s of CPU for its two compiler runs and one link, needs no build cache at all, and
works with the toolchain mounted read-only.

Vetting. Under a profile with `go_vet` (CodeGeeX's: its `go test` vets first), the
program as CodeGeeX assembles it is checked by `$GOTOOLDIR/vet` with the analyzers
`go test` enables (read from `go help test`), between compiling and linking, as
`go test` does: a finding is a compile error with vet's message. vet is called the way
the go command calls it, with a `vet.cfg` naming the same archives the compiler used,
so it needs no go command and no build cache either (a few milliseconds). A program in
which none of those analyzers has anything to look at (`vet_could_report`) gets no vet
step, so it runs the same job, and shares its execution, under every profile.

Testing. The program is assembled as CodeGeeX's HumanEval-X harness assembles it, and
compiled as an ordinary package. A generated `main` runs its `Test*` functions through
the `testing` package. `github.com/stretchr/testify/assert` resolves to our own package
(`runtime/go/assert`), which judges equality exactly as testify 1.8 does, but reports
every assertion on the report pipe and never stops the test. Each assertion statement
is wrapped in a closure with a deferred recover, so a panic in the code under test
fails that assertion only. HumanEval-XL (`deepCompare` in `main`) and MultiPL-E
(`t.Run` over a table) get equivalent rewrites; a test of any other shape runs whole,
and the result says so.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evaluator.languages import lexing
from evaluator.languages.base import (
    Language,
    LanguageError,
    PreparedJob,
    program_hash,
    required_toolchain,
)
from evaluator.languages.reporting import (
    LAUNCHER,
    LAUNCHER_FILE,
    apply_edits,
    whole_program_records,
)
from evaluator.languages.syntax_check import Answer, RunJob, parse_batched
from evaluator.languages.toolchains import (
    Tool,
    ToolchainError,
    prebuilt,
    run_tool,
    tree_key,
    version_key,
)
from evaluator.profiles import ProfileKnob, get_profile
from evaluator.records import Problem, RunOptions, Sample, SampleResult, SandboxInfo, cap_text
from evaluator.sandbox.base import Mount

RUNTIME = Path(__file__).resolve().parent / "runtime" / "go"

IMPORT_HELPER = ("math", "strings", "fmt", "strconv", "time", "bytes", "regexp", "sort",
                 "math/rand", "crypto/md5")
"""The standard packages CodeGeeX's harness imports when the generation uses them."""

REPORT_IMPORT = 'evaluatorreport "evaluator/report"'
PACKAGE_MEMBERS = {
    "bytes": "Equal", "crypto/md5": "Sum", "encoding/hex": "EncodeToString",
    "encoding/json": "Marshal", "errors": "New", "fmt": "Sprint", "math": "Abs",
    "math/big": "NewInt", "math/rand": "Intn", "reflect": "DeepEqual", "regexp": "MustCompile",
    "sort": "Ints", "strconv": "Itoa", "strings": "Contains", "time": "Now",
    "unicode": "IsUpper", "unicode/utf8": "RuneLen",
}
"""One exported name of each standard package a HumanEval prompt imports."""
PROGRAM_PATH = "humaneval"
"""The import path the program is compiled under when a generated main drives it."""
VET_FILE = "main_test.go"
"""The program vet sees is CodeGeeX's `main_test.go`, so messages name the same file."""
VET_CONFIG = "vet.cfg"

_TEST_FUNC = re.compile(r"^func\s+(Test(?:[A-Z0-9_]\w*)?)\s*\(\s*\w+\s+\*\s*testing\.T\s*\)",
                        re.MULTILINE)
_MAIN_FUNC = re.compile(r"^func\s+main\s*\(\s*\)\s*\{", re.MULTILINE)
_PACKAGE = re.compile(r"^package\s+\w+[ \t]*;?", re.MULTILINE)
_IMPORT_BLOCK = re.compile(r'import\s*(?:\(\s*(?:"[^"\n]*"\s*)*\)|"[^"\n]*")')
_DECLARED = re.compile(r"\b([A-Za-z_]\w*)\s*:=")
_STRING_LITERAL = re.compile(r"\"[^\"\n]*\"|`[^`]*`")
_IMPORT_SPEC = re.compile(r"(?:[\w.]+\s*)?(?:\"[^\"\n]*\"|`[^`]*`)")
"""One import spec: an optional name (`m`, `.`, `_`), then the path literal."""


@dataclass(frozen=True)
class GoToolchain:
    goroot: Path
    tool_dir: Path
    version: str
    std_dir: Path
    """Directory of precompiled standard-library archives (`fmt.a`, `crypto/md5.a`...)."""
    lib_dir: Path
    """Directory of our reporting packages, compiled for this toolchain."""
    vet_checks: tuple[str, ...] = ()
    """The vet analyzers `go test` runs before a test binary, as this toolchain says."""
    vet_problem: str = ""
    """Why `vet_checks` could not be read (vetting profiles then refuse Go samples)."""

    @property
    def compile(self) -> str:
        return str(self.tool_dir / "compile")

    @property
    def vet(self) -> str:
        return str(self.tool_dir / "vet")

    @property
    def link(self) -> str:
        return str(self.tool_dir / "link")


@dataclass
class GoProgram:
    source: str
    test_first_line: int
    layout: str
    """testing (Test functions), xl (tests in main), or whole (not split)."""
    tests: list[str] = field(default_factory=list)
    sites: dict[int, str] = field(default_factory=dict)
    """Program line -> assertion source text."""
    note: str = ""
    plain: str = ""
    """The program as CodeGeeX assembles it, before our test instrumentation."""


GO = Tool("go", "EVALUATOR_GO", ("/usr/bin/go", "/usr/lib/go/bin/go"), "apt-get install golang-go")

VET_KNOB = ProfileKnob("go_vet", False, enabled="runs Go with go vet",
                       disabled="runs Go without go vet")
IMPORTS_KNOB = ProfileKnob("go_imports_by_text", False,
                           enabled="chooses Go's helper imports another way",
                           disabled="chooses Go's helper imports another way")


def _go_env() -> dict[str, str]:
    go = GO.find()
    if go is None:
        raise ToolchainError("Go is not installed (apt-get install golang-go)")
    out = run_tool([go, "env", "-json", "GOROOT", "GOTOOLDIR", "GOOS", "GOARCH", "GOVERSION"],
                   timeout=60)
    env: dict[str, str] = json.loads(out)
    env["GO"] = go
    return env


@functools.lru_cache(maxsize=1)
def toolchain() -> GoToolchain:
    """Find Go and make sure the archives a sample links against exist (built once)."""
    env = _go_env()
    goroot = Path(env["GOROOT"])
    platform = f"{env['GOOS']}_{env['GOARCH']}"
    shipped = goroot / "pkg" / platform
    # EVALUATOR_GO_BUILD_STD=1 forces the build that newer Go releases need (for tests).
    if ((shipped / "fmt.a").exists() and (shipped / "testing.a").exists()
            and os.environ.get("EVALUATOR_GO_BUILD_STD") != "1"):
        std_dir = shipped
    else:
        std_dir = prebuilt("go-std", version_key(env["GOVERSION"], platform),
                           lambda work: _build_std(env, work), keep=2) / "pkg"
    key = version_key(env["GOVERSION"], platform, str(std_dir), tree_key(RUNTIME))
    lib = prebuilt("go-lib", key, lambda work: _build_lib(env, std_dir, work), keep=3)
    checks, problem = _vet_checks(env)
    return GoToolchain(goroot=goroot, tool_dir=Path(env["GOTOOLDIR"]),
                       version=env["GOVERSION"], std_dir=std_dir, lib_dir=lib / "pkg",
                       vet_checks=checks, vet_problem=problem)


_VET_SUBSET = re.compile(r"That subset is:(.*?)\.(?:\s|$)", re.DOTALL)


def _vet_checks(env: dict[str, str]) -> tuple[tuple[str, ...], str]:
    """The analyzers `go test` enables, from `go help test`, each known to vet."""
    try:
        text = run_tool([env["GO"], "help", "test"], timeout=60)
        flags = json.loads(run_tool([str(Path(env["GOTOOLDIR"]) / "vet"), "-flags"],
                                    timeout=60))
    except (ToolchainError, ValueError) as exc:
        return (), f"cannot ask the Go toolchain which vet checks go test runs: {exc}"
    match = _VET_SUBSET.search(text)
    names = tuple(re.findall(r"[\w-]+", re.sub(r"\band\b", " ", match.group(1)))) \
        if match else ()
    known = {str(flag.get("Name")) for flag in flags}
    unknown = [name for name in names if name not in known]
    if not names or unknown:
        return (), ("cannot read the vet checks go test runs from `go help test` "
                    f"(found {list(names)}, unknown to vet: {unknown})")
    return names, ""


def _build_std(env: dict[str, str], work: Path) -> None:
    """Compile the standard library once, for Go releases that no longer ship it."""
    cache = work / "gocache"
    run_env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "GOCACHE": str(cache),
               "GO111MODULE": "off", "CGO_ENABLED": "0", "GOFLAGS": ""}
    listing = run_tool([env["GO"], "list", "-export", "-f", "{{.ImportPath}} {{.Export}}",
                        "std"], env=run_env)
    for line in listing.splitlines():
        path, _, export = line.partition(" ")
        if not export:
            continue
        # Every package with its import path, `vendor/...` ones included: the linker
        # looks them up by the paths recorded in the archives that import them.
        target = work / "pkg" / f"{path}.a"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(export, target)
    shutil.rmtree(cache, ignore_errors=True)


def _build_lib(env: dict[str, str], std_dir: Path, work: Path) -> None:
    compile_tool = str(Path(env["GOTOOLDIR"]) / "compile")
    pkg = work / "pkg"
    report = pkg / "evaluator" / "report.a"
    shim = pkg / "github.com" / "stretchr" / "testify" / "assert.a"
    report.parent.mkdir(parents=True)
    shim.parent.mkdir(parents=True)
    run_env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "GOROOT": env["GOROOT"]}
    run_tool([compile_tool, "-p", "evaluator/report", "-complete", "-pack", "-o", str(report),
              "-I", str(std_dir), str(RUNTIME / "report" / "report.go")], env=run_env)
    run_tool([compile_tool, "-p", "github.com/stretchr/testify/assert", "-complete", "-pack",
              "-o", str(shim), "-I", str(pkg), "-I", str(std_dir),
              str(RUNTIME / "assert" / "assert.go")], env=run_env)


def _import_section(text: str) -> str:
    return "".join(match.group(0) for match in _IMPORT_BLOCK.finditer(text))


def strip_imports(text: str) -> str:
    """`text` without its import declarations."""
    return _IMPORT_BLOCK.sub("", text)


def uses_package(blanked_code: str, package: str) -> bool:
    """Whether code (comments and strings blanked: `lexing.blank`) refers to `package` by
    its name, as `strings.Split` refers to "strings"."""
    name = package.rsplit("/", 1)[-1]
    return re.search(rf"(?<![\w.]){re.escape(name)}\.", blanked_code) is not None


def imported_paths(source: str) -> list[str]:
    """The import paths of `source`'s import declarations, in order."""
    blanked = lexing.blank(source, "go")
    paths: list[str] = []
    for keyword in re.finditer(r"\bimport\b", blanked):
        start = keyword.end()
        while start < len(blanked) and blanked[start].isspace():
            start += 1
        if blanked.startswith("(", start):
            end = lexing.matching_close(blanked, start) or len(blanked)
        else:
            spec = _IMPORT_SPEC.match(blanked, start)
            if spec is None:
                continue
            end = spec.end()
        # Literals are located in the blanked text (comments are gone there) and read
        # from the source.
        for literal in _STRING_LITERAL.finditer(blanked[start:end]):
            raw = source[start + literal.start():start + literal.end()]
            paths.append(raw[1:-1].replace('\\"', '"') if raw[0] == '"' else raw[1:-1])
    return paths


VET_QUIET_IMPORTS = frozenset({
    "bytes", "container/heap", "container/list", "crypto/md5", "errors", "fmt", "math",
    "math/big", "math/rand", "regexp", "sort", "strconv", "strings", "testing", "time",
    "unicode", "unicode/utf8", "github.com/stretchr/testify/assert",
})
"""Packages that give vet nothing to look at by being imported: no exported type whose
underlying type is a string (a conversion to one is `stringintconv`'s business) and no
printf wrapper beyond the functions `printf` knows by name (`_PRINT_CALL`)."""

_PRINT_CALL = re.compile(
    r"\b(?:Errorf|Error|Fatal|Fatalf|Fatalln|Fprint|Fprintf|Fprintln|Log|Logf|Panic|Panicf|"
    r"Panicln|Print|Printf|Println|Skip|Skipf|Sprint|Sprintf|Sprintln)\s*\(")
"""A call of a function `printf` checks: the names in its `isPrint` table (fmt, log,
testing, runtime/trace). A wrapper written in the program calls one of them too."""

_VET_TRIGGERS: dict[str, Callable[[str, str, frozenset[str]], bool]] = {
    # (source, blanked source, imports) -> whether the analyzer could report anything.
    "atomic": lambda _s, _b, imports: "sync/atomic" in imports,
    "bool": lambda _s, blanked, _i: "&&" in blanked or "||" in blanked,
    "bools": lambda _s, blanked, _i: "&&" in blanked or "||" in blanked,
    "buildtags": lambda source, _b, _i: "+build" in source or "go:build" in source,
    "buildtag": lambda source, _b, _i: "+build" in source or "go:build" in source,
    "errorsas": lambda _s, _b, imports: "errors" in imports,
    "ifaceassert": lambda _s, blanked, _i: re.search(r"\.\s*\(", blanked) is not None,
    "nilfunc": lambda _s, blanked, _i: re.search(r"\bnil\b", blanked) is not None,
    "printf": lambda _s, blanked, _i: _PRINT_CALL.search(blanked) is not None,
    "stringintconv": lambda _s, blanked, _i: re.search(r"\bstring\b", blanked) is not None,
}
"""For each analyzer `go test` runs (Go 1.19's), what a program must contain for it to
have anything to report; read from the analyzers in `cmd/vendor/.../passes`. An
analyzer not listed (a later Go's `directive`, `tests`) always runs."""


def vet_could_report(program: str, checks: Sequence[str]) -> bool:
    """False only when none of `checks` can find anything in `program`, so vetting it is
    known to pass without running vet."""
    imports = frozenset(imported_paths(program))
    if not imports <= VET_QUIET_IMPORTS:
        return True
    blanked = lexing.blank(program, "go")
    return any(check not in _VET_TRIGGERS or _VET_TRIGGERS[check](program, blanked, imports)
               for check in checks)


def vet_config(program: str, tools: GoToolchain) -> str:
    """The `vet.cfg` the go command would write for `go test`'s vet of `program`: its
    imports resolved to the archives our compile steps use."""
    files: dict[str, str] = {}
    standard: dict[str, bool] = {}
    for path in dict.fromkeys(imported_paths(program)):
        for directory in (tools.lib_dir, tools.std_dir):
            archive = directory / f"{path}.a"
            if archive.is_file():
                files[path] = str(archive)
                standard[path] = directory == tools.std_dir
                break
    config = {
        "ID": "main", "Compiler": "gc", "Dir": ".", "ImportPath": "main",
        "GoFiles": [f"./{VET_FILE}"], "NonGoFiles": [], "IgnoredFiles": [],
        "ImportMap": {path: path for path in [*files, "unsafe"]},
        "PackageFile": files, "Standard": standard, "PackageVetx": {},
        "VetxOnly": False, "VetxOutput": "vet.out", "SucceedOnTypecheckFailure": False,
    }
    return json.dumps(config, indent=1, sort_keys=True)


def _statement_end(blanked: str, start: int) -> int | None:
    """End offset of a call statement starting at `start` (`name.Method(...)`)."""
    open_paren = blanked.find("(", start)
    newline = blanked.find("\n", start)
    if open_paren < 0 or (0 <= newline < open_paren):
        return None
    close = lexing.matching_close(blanked, open_paren)
    if close is None:
        return None
    rest = blanked[close + 1:].split("\n", 1)[0]
    # A call followed by anything but a comment or `;` is not a statement on its own.
    if rest.strip() not in ("", ";"):
        return None
    return close + 1


class Go(Language):
    name = "go"
    display_name = "Go"
    aliases = ("golang",)
    order = 50
    pygments_lexer = "go"
    function_pattern = r"^func\s+(?:\([^)]*\)\s*)?(\w+)\s*\("
    syntax_check = "gofmt"
    toolchain = GO
    version_args = ("version",)
    profile_knobs = (VET_KNOB, IMPORTS_KNOB)
    # Closes the function: the datasets' tests in Go start after it.
    selfcheck_body = "    panic(\"selfcheck stub\")\n}\n"

    # -- building the program ---------------------------------------------------------
    def head(self, problem: Problem, sample: Sample, options: RunOptions) -> str:
        """Everything before the test, as CodeGeeX's harness builds it for HumanEval-X."""
        setup = str(problem.extra.get("test_setup", ""))
        if sample.is_full_program:
            return sample.completion + "\n"
        prefix = self.prefix(problem, options)
        if not setup:
            return prefix + sample.completion + "\n"
        # HumanEval-X: the prompt's import block is dropped and every helper package the
        # generation uses is imported (CodeGeeX's rule), so a completion needing `strings`
        # compiles even when the prompt did not import it. Comments and strings are
        # blanked first, so a mention of `fmt.` in a comment adds no unused import.
        code = strip_imports(prefix) + sample.completion
        if get_profile(options.profile).go_imports_by_text:
            # CodeGeeX's own rule, to the letter: a substring test on the generation alone.
            wanted = [pkg for pkg in IMPORT_HELPER
                      if pkg not in setup and pkg.rsplit("/", 1)[-1] + "." in sample.completion]
        else:
            blanked = lexing.blank(code, "go")
            shipped = re.findall(r'"([\w./]+)"', str(problem.extra.get("import", "")))
            wanted = [pkg for pkg in dict.fromkeys([*IMPORT_HELPER, *shipped])
                      if f'"{pkg}"' not in setup and uses_package(blanked, pkg)]
        imports = "import (\n" + "".join(f'    "{pkg}"\n' for pkg in wanted) + ")\n" if wanted \
            else ""
        return setup + "\n" + imports + code + "\n"

    def build(self, problem: Problem, sample: Sample, options: RunOptions) -> GoProgram:
        head = self.head(problem, sample, options)
        test = self.test_text(problem, options)
        program = head + test
        first = head.count("\n") + 1
        blanked = lexing.blank(program, "go")
        tests = _TEST_FUNC.findall(blanked)
        if tests:
            built = self._testing_layout(program, blanked, first, tests)
        elif _MAIN_FUNC.search(blanked[len(head):]):
            built = self._main_layout(program, blanked, first, len(head))
        else:
            built = GoProgram(program, first, "whole",
                              note="the test has neither Test functions nor a main function")
        built.plain = program
        return built

    def _add_report_import(self, program: str) -> str | None:
        # On the package clause's own line, so no line number moves.
        match = _PACKAGE.search(lexing.blank(program, "go"))
        if match is None:
            return None
        end = match.end()
        clause = program[:end].rstrip(";")
        return f"{clause}; import {REPORT_IMPORT};{program[end:]}"

    def _testing_layout(self, program: str, blanked: str, first: int,
                        tests: list[str]) -> GoProgram:
        test_start = _offset_of_line(program, first)
        edits: list[tuple[int, int, str]] = []
        sites: dict[int, str] = {}
        # testify: each `assert.X(...)` statement in the test part.
        for match in re.finditer(r"^[ \t]*(assert)\.[A-Z]\w*\s*\(", blanked[test_start:],
                                 re.MULTILINE):
            start = test_start + match.start(1)
            end = _statement_end(blanked, start)
            if end is None:
                continue
            line = lexing.line_of(program, start)
            sites[line] = program[start:end].strip()
            edits.append((start, start, f"func() {{ defer evaluatorreport.Guard({line})(); "))
            edits.append((end, end, " }()"))
        # MultiPL-E: a table of `{ actual: candidate(...), expected: ... }` rows, then
        # `t.Run(name, func(t *testing.T) {...})` for each row inside `for i, tc := range`.
        if re.search(r"for\s+\w+\s*,\s*tc\s*:=\s*range\b", blanked[test_start:]):
            for match in re.finditer(r"\bt\.Run\s*\(", blanked[test_start:]):
                start = test_start + match.start()
                line = lexing.line_of(program, start)
                sites[line] = "test case " + program[start:].split("\n", 1)[0].strip()
                edits.append((start, test_start + match.end(), "evaluatorreport.Run(t, tc, "))
            edits.extend(_guarded_table_values(program, blanked, test_start))
        source = apply_edits(program, edits)
        note = ""
        if edits:
            with_import = self._add_report_import(source)
            if with_import is None:
                source, note = program, "no package clause to add the reporting import to"
                sites = {}
            else:
                source = with_import
        else:
            note = "no assertion statements were found in the test functions"
        return GoProgram(source, first, "testing", tests=tests, sites=sites, note=note)

    def _main_layout(self, program: str, blanked: str, first: int, test_offset: int) -> GoProgram:
        """HumanEval-XL: `func main()` holds `actual := f(...); deepCompare(...)` groups."""
        match = _MAIN_FUNC.search(blanked, test_offset)
        assert match is not None
        body_open = match.end() - 1
        body_close = lexing.matching_close(blanked, body_open)
        if body_close is None:
            return GoProgram(program, first, "whole", note="unbalanced main function")
        edits: list[tuple[int, int, str]] = [
            (match.start(), match.end(), "func evaluatorMain() {"),
        ]
        sites: dict[int, str] = {}
        compares: list[tuple[int, int, str]] = []
        groups: list[tuple[int, int, int]] = []
        group_start = body_open + 1
        for call in re.finditer(r"^[ \t]*(deepCompare)\s*\(", blanked[:body_close],
                                re.MULTILINE):
            if call.start() < body_open:
                continue
            start = call.start(1)
            end = _statement_end(blanked, start)
            if end is None:
                compares, groups = [], []
                break
            line = lexing.line_of(program, start)
            sites[line] = program[start:end].strip()
            # `deepCompare(a, b, msg)` -> `evaluatorreport.Compare(deepCompare, a, b, msg)`
            compares.append((start, call.end(), "evaluatorreport.Compare(deepCompare, "))
            groups.append((group_start, end, line))
            group_start = end
        note = ""
        edits.extend(compares)
        if not groups:
            sites = {}
            note = "no deepCompare checks were found in main"
        elif _groups_independent(blanked, groups, body_close):
            for start, end, line in groups:
                edits.append((start, start, f" func() {{ defer evaluatorreport.Guard({line})();"))
                edits.append((end, end, " }();"))
        else:
            note = "test groups share variables; a panic ends the remaining checks"
        source = apply_edits(program, edits) + (
            "\nfunc main() { evaluatorreport.RunMain(evaluatorMain) }\n")
        with_import = self._add_report_import(source)
        if with_import is None:
            return GoProgram(program, first, "whole", note="no package clause")
        return GoProgram(with_import, first, "xl", sites=sites, note=note)

    # -- the job ------------------------------------------------------------------------
    def prepare(self, problem: Problem, sample: Sample, options: RunOptions) -> PreparedJob:
        tools = self._toolchain()
        built = self.build(problem, sample, options)
        include = ["-I", ".", "-I", str(tools.lib_dir), "-I", str(tools.std_dir)]
        libs = ["-L", ".", "-L", str(tools.lib_dir), "-L", str(tools.std_dir)]
        compile_limits = options.compile_limits.to_dict()
        env = self.environment()

        def compile_step(path: str, output: str, source: str) -> dict[str, Any]:
            return {"name": "compile", "argv": [tools.compile, "-p", path, "-complete",
                                                "-pack", "-o", output, *include, source],
                    "limits": compile_limits, "address_space_limit": False}

        files = {"prog.go": built.source, LAUNCHER_FILE: LAUNCHER}
        steps: list[dict[str, Any]] = []
        if built.layout == "testing":
            files["driver.go"] = _driver(built.tests)
            steps.append(compile_step(PROGRAM_PATH, f"{PROGRAM_PATH}.a", "prog.go"))
            steps.append(compile_step("main", "main.a", "driver.go"))
        else:
            steps.append(compile_step("main", "main.a", "prog.go"))
        vet_step = None
        if get_profile(options.profile).go_vet and vet_could_report(built.plain,
                                                                    self._vet_checks()):
            # After the compiler, as `go test` does: a program that does not compile
            # gets the compiler's message, not vet's.
            files[VET_FILE] = built.plain
            files[VET_CONFIG] = vet_config(built.plain, tools)
            vet_step = len(steps)
            steps.append({"name": "compile",
                          "argv": [tools.vet, *(f"-{check}" for check in tools.vet_checks),
                                   VET_CONFIG],
                          "limits": compile_limits, "address_space_limit": False})
        # -s -w: no symbol table or DWARF, which halves link time; panics still show
        # file:line, which come from the runtime's own tables.
        steps.append({"name": "compile", "argv": [tools.link, "-s", "-w", "-buildmode=exe",
                                                  "-o", "prog", *libs, "main.a"],
                      "limits": compile_limits, "address_space_limit": False})
        # The launcher hands the report nonce over on fd 4, outside the environment.
        steps.append({"name": "run", "argv": ["sh", LAUNCHER_FILE, "./prog"],
                      "limits": options.limits.to_dict(),
                      "report": built.layout != "whole", "address_space_limit": False,
                      "env": {"GOTRACEBACK": "single"}})
        job: dict[str, Any] = {"kind": "command", "files": files, "steps": steps, "env": env}
        # Without vet the parts are exactly those of a job built before vetting existed.
        vetted = () if vet_step is None else ("vet", *tools.vet_checks)
        digest = program_hash("go", tools.version, built.layout, *vetted,
                              json.dumps(files, sort_keys=True))
        return PreparedJob(job=job, program=built.source, program_hash=digest, context={
            "mode": built.layout, "test_first_line": built.test_first_line,
            "sites": built.sites, "note": built.note, "vet_step": vet_step,
        })

    def _vet_checks(self) -> tuple[str, ...]:
        tools = self._toolchain()
        if not tools.vet_checks:
            raise LanguageError(f"this profile vets Go programs, but {tools.vet_problem}")
        return tools.vet_checks

    def _toolchain(self) -> GoToolchain:
        return required_toolchain(toolchain)

    def mounts(self) -> list[Mount]:
        tools = self._toolchain()
        mounts = [Mount(tools.goroot.resolve()), Mount(tools.lib_dir.parent)]
        if not tools.std_dir.resolve().is_relative_to(tools.goroot.resolve()):
            mounts.append(Mount(tools.std_dir.parent))
        return mounts

    def environment(self) -> dict[str, str]:
        tools = self._toolchain()
        return {"GOROOT": str(tools.goroot), "GO111MODULE": "off", "GOFLAGS": "",
                "CGO_ENABLED": "0"}

    def selfcheck_stub(self, problem: Problem, stub: str) -> str:
        """`stub` plus a use of each package the prompt imports.

        Go refuses to compile a program with an unused import, and HumanEval-XL's
        prompts import what a solution (not the test) needs; without these uses a
        stub body fails to compile for that reason alone.
        """
        uses = [f"var _ = {pkg.rsplit('/', 1)[-1]}.{member}"
                for pkg, member in PACKAGE_MEMBERS.items()
                if re.search(rf'"{re.escape(pkg)}"', _import_section(problem.prompt))]
        return stub + "".join(f"{use}\n" for use in uses)

    def require_toolchain(self) -> None:
        toolchain()

    def tool_path(self, *, python: str) -> str | None:
        return str(toolchain().goroot / "bin" / "go")

    # -- the language check of uploads --------------------------------------------------
    def check_syntax(self, sources: list[str], run: RunJob) -> list[Answer]:
        # gofmt is go/parser: it parses without type-checking, all files in one process.
        gofmt = GO.beside("gofmt")
        return parse_batched(sources, run, suffix=".go",
                             argv=lambda names: [gofmt, "-e", "-l", *names],
                             pattern=r"^s[0-9]+\.go:", failing=r"^s(\d+)\.go:")

    def syntax_contexts(self, code: str) -> list[str]:
        if re.match(r"\s*(//[^\n]*\n\s*)*package\b", code):
            return [code]
        return ["package p\n" + code, "package p\nfunc _f() {\n" + code,
                "package p\nfunc _f() {\n" + code + "\n}"]

    def checked_program(self, problem: Problem, sample: Sample,
                        options: RunOptions) -> str | None:
        # The build instruments the tests; `plain` is the program CodeGeeX assembles.
        built = self.build(problem, sample, options)
        return built.plain or None

    # -- reading the outcome ------------------------------------------------------------
    def complete_answer(self, prepared: PreparedJob, answer: dict[str, Any]) -> dict[str, Any]:
        return normalise_records(prepared, answer)

    def interpret(self, prepared: PreparedJob, answer: dict[str, Any], sample: Sample,
                  problem: Problem, options: RunOptions, sandbox: SandboxInfo) -> SampleResult:
        # `answer` as the runner gave it: vet's findings are in its own step.
        result = super().interpret(prepared, answer, sample, problem, options, sandbox)
        return _with_vet_findings(result, prepared, answer)


def _with_vet_findings(result: SampleResult, prepared: PreparedJob,
                       answer: dict[str, Any]) -> SampleResult:
    """Name vet as the source of a compile error that its step reported."""
    index = prepared.context.get("vet_step")
    steps = answer.get("steps", [])
    if (result.status != "compile_error" or index is None or len(steps) <= index
            or steps[index].get("exit_code") in (0, None)):
        return result
    findings = [line.strip() for line in str(steps[index].get("stderr") or "").splitlines()
                if line.strip() and not line.startswith("#")]
    message = "go vet: " + ("; ".join(findings) if findings else "failed")
    return replace(result, error_type="VetError", message=cap_text(message, 500))


def normalise_records(prepared: PreparedJob, answer: dict[str, Any]) -> dict[str, Any]:
    """Give test records their source text, test-relative line and site, add the plan of
    sites, and mark a whole run.

    Shared by the compiled languages: their harnesses report program line numbers and
    leave the assertion text to us, who know where each assertion came from. The plan
    (every instrumented assertion, in program order) is what lets `base.never_ran` list
    the assertions a program stopped by a limit never reached, as the other languages'
    harnesses do.
    """
    context = prepared.context
    first = int(context.get("test_first_line", 1))
    sites: dict[int, str] = {int(k): v for k, v in context.get("sites", {}).items()}
    starts = sorted(sites)
    # A record names its assertion by a program line, which may be any line of an
    # assertion written over several.
    site_at = {start + offset: number for number, start in enumerate(starts)
               for offset in range(sites[start].count("\n") + 1)}
    program_lines = prepared.program.splitlines()
    records: list[dict[str, Any]] = []
    for record in answer.get("records", []):
        if record.get("kind") == "test" and isinstance(record.get("line"), int):
            line = record["line"]
            record = dict(record)
            site = site_at.get(line)
            if site is not None:
                record.setdefault("site", site)
            if not record.get("source"):
                record["source"] = sites[starts[site]] if site is not None else (
                    program_lines[line - 1].strip() if 0 < line <= len(program_lines) else "")
            record["line"] = line - first + 1
        records.append(record)
    note = context.get("note")
    marker = str(context.get("fallback_marker") or "")
    if marker and any(marker in str(step.get("stderr") or "") for step in answer.get("steps", [])
                      if step.get("name") == "compile"):
        records = [r for r in records if r.get("kind") not in ("test", "done")]
        records.extend(whole_program_records(
            answer, "the instrumented tests did not compile, so the program was rebuilt "
                    "unchanged"))
        return {**answer, "records": records}
    if context.get("mode") == "whole":
        records = [r for r in records if r.get("kind") not in ("test", "done")]
        records.extend(whole_program_records(answer, f"tests could not be split ({note})"))
        return {**answer, "records": records}
    if note:
        records.append({"kind": "note", "message": note})
        for record in records:
            if record.get("kind") == "done":
                record.setdefault("suspicious", [])
                record["suspicious"] = [*record["suspicious"], f"per-test split limited: {note}"]
    if starts:
        records.insert(0, {"kind": "plan", "sites": [
            {"source": sites[start], "line": start - first + 1} for start in starts]})
    return {**answer, "records": records}


def _offset_of_line(text: str, line: int) -> int:
    offset = 0
    for _ in range(line - 1):
        found = text.find("\n", offset)
        if found < 0:
            return len(text)
        offset = found + 1
    return offset


def _guarded_table_values(program: str, blanked: str, start: int) -> list[tuple[int, int, str]]:
    """Wrap each `actual: <expr>` of a MultiPL-E test table in `evaluatorreport.Try`."""
    edits: list[tuple[int, int, str]] = []
    for match in re.finditer(r"\{\s*actual\s*:", blanked[start:]):
        row_open = start + match.start()
        row_close = lexing.matching_close(blanked, row_open)
        if row_close is None:
            continue
        value_start = start + match.end()
        commas = lexing.top_level_split(blanked, value_start, row_close, (",",))
        value_end = commas[0][0] if commas else row_close
        if not program[value_start:value_end].strip():
            continue
        edits.append((value_start, value_start,
                      " evaluatorreport.Try(func() interface{} { return "))
        edits.append((value_end, value_end, " })"))
    return edits


def _groups_independent(blanked: str, groups: list[tuple[int, int, int]],
                        body_end: int) -> bool:
    """True when no variable declared in one group is used after it (closures would hide it)."""
    for start, end, _line in groups:
        later = blanked[end:body_end]
        for name in _DECLARED.findall(blanked[start:end]):
            if re.search(rf"\b{re.escape(name)}\b", later):
                return False
    return True


def _driver(tests: list[str]) -> str:
    entries = "".join(f'\t\t{{Name: "{name}", F: prog.{name}}},\n' for name in tests)
    return (
        "package main\n\n"
        "import (\n\t\"testing\"\n\n"
        f"\tprog \"{PROGRAM_PATH}\"\n\t{REPORT_IMPORT}\n)\n\n"
        "func main() {\n"
        "\tevaluatorreport.RunTests([]testing.InternalTest{\n"
        f"{entries}"
        "\t})\n"
        "}\n"
    )
