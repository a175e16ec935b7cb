"""Rust: one `rustc` run per sample against prebuilt crates, one record per assertion.

Crates. HumanEval-X's declarations `use rand::Rng; use regex::Regex; use md5;`, and its
reference harness builds in a Cargo project with `rand = "0.4"`, `regex = "1"` and
`md5 = "0.7"`. Offline, Debian packages regex 1.7 and md5 0.7 (built here with Debian's
cargo from `/usr/share/cargo/registry`), but only rand 0.8, whose `gen_range` takes a
range: the dataset's tests call `gen_range(0, 2)` and fail to compile against it. So
`rand` is our own crate (`runtime/rust/rand`) with rand 0.4's API, and no rand 0.8 API:
a program written for 0.8 fails here as it would in the reference harness. The crates
are compiled once per toolchain into the cache directory and linked with `--extern`;
only HumanEval-X programs get them, as only its harness provides them (MultiPL-E's
builds with bare `rustc`).

Toolchain. `/usr/bin/rustc` (Debian's `rustc` package) is preferred, since the sandbox
user cannot read a rustup toolchain under `/root`; `$EVALUATOR_RUSTC` overrides it.
Speed, measured on a small program: linking the standard library dynamically
(`-C prefer-dynamic`) took 0.14 s against 0.27 s static; one codegen unit cut the CPU
of a sample's compile from ~0.16 s to ~0.11 s; the reporting code lives in a crate
compiled once (`runtime/rust/harness`, ~0.18 s of CPU when it was compiled into every
sample), and the per-assertion closures go to it boxed, so `catch_unwind` is not
instantiated for every assertion.

Tests. Instead of `cargo test`, the program is compiled as a binary with `--cfg test`
and a generated `main` calls each `#[test]` function (the attribute is removed, the
function made `pub`) inside `catch_unwind`. `assert!`, `assert_eq!` and `assert_ne!`
are shadowed, from the start of the test code on, by macros that evaluate their
operands inside `catch_unwind`, report passed / failed / error with Debug-formatted
expected and actual values, and never panic, so every assertion runs. The macros are
inserted as a single line, so line numbers match the program as CodeGeeX builds it.
`assert!(a == b)` is rewritten to compare `a` and `b` so both values are reported.
If the instrumented program fails to compile for a reason in the test code (a test
returning `Result`, say), it is rebuilt unchanged (`rustc --test`, or MultiPL-E's plain
`main`) and judged as a whole by its exit status; the result says so.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
from dataclasses import dataclass, field
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
from evaluator.languages.go import normalise_records
from evaluator.languages.reporting import (
    BUILD_FILE,
    FALLBACK_MARKER,
    LAUNCHER,
    LAUNCHER_FILE,
    apply_edits,
    build_script,
)
from evaluator.languages.syntax_check import Answer, RunJob, parse_batched
from evaluator.languages.toolchains import (
    Tool,
    ToolchainError,
    executable,
    prebuilt,
    run_tool,
    tree_key,
    version_key,
)
from evaluator.records import Problem, RunOptions, Sample
from evaluator.sandbox.base import Mount

RUNTIME = Path(__file__).resolve().parent / "runtime" / "rust"
CRATES = ("rand", "regex", "md5")
HARNESS_CRATE = "evaluator_harness"
EDITION = "2021"
DEBIAN_REGISTRY = Path("/usr/share/cargo/registry")

_TEST_ATTR = re.compile(r"#\[test\]")
_FN = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?fn\s+(\w+)")
_MOD = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*\{")
_MAIN = re.compile(r"\bfn\s+main\s*\(\s*\)")
_ASSERT_MACRO = re.compile(r"\b(assert|assert_eq|assert_ne)!\s*\(")
_CRATE_USE = re.compile(r"\b(?:rand|regex|md5)\b")


@dataclass(frozen=True)
class RustToolchain:
    rustc: str
    version: str
    crate_dir: Path
    externs: dict[str, str]
    """Crate name -> rlib path."""
    runtime_lib_dir: str
    """Where the dynamic standard library lives, for the run step's LD_LIBRARY_PATH."""


@dataclass
class RustProgram:
    source: str
    test_first_line: int
    original: str
    """The program as CodeGeeX / MultiPL-E build it, for the whole-program fallback."""
    tests: list[tuple[str, str]] = field(default_factory=list)
    """(name, path) of each test function the generated main calls."""
    sites: dict[int, str] = field(default_factory=dict)
    note: str = ""
    crates: bool = False


RUSTC = Tool("rustc", "EVALUATOR_RUSTC", ("/usr/bin/rustc",), "apt-get install rustc cargo")


def _rustc() -> str:
    rustc = RUSTC.find()
    if rustc is None:
        raise ToolchainError("rustc is not installed (apt-get install rustc cargo)")
    return rustc


@functools.lru_cache(maxsize=1)
def toolchain() -> RustToolchain:
    rustc = _rustc()
    version = run_tool([rustc, "-vV"], timeout=60)
    sysroot = run_tool([rustc, "--print", "sysroot"], timeout=60).strip()
    host = re.search(r"^host:\s*(\S+)", version, re.MULTILINE)
    lib_dir = str(Path(sysroot) / "lib" / "rustlib" / (host.group(1) if host else "") / "lib")
    key = version_key(version, tree_key(RUNTIME / "rand"), tree_key(RUNTIME / "harness"))
    crate_dir = prebuilt("rust-crates", key, lambda work: _build_crates(rustc, work), keep=3)
    manifest = json.loads((crate_dir / "externs.json").read_text())
    externs = {name: str(crate_dir / "deps" / file) for name, file in manifest.items()}
    return RustToolchain(rustc=rustc, version=version.splitlines()[0], crate_dir=crate_dir,
                         externs=externs, runtime_lib_dir=lib_dir)


def _build_crates(rustc: str, work: Path) -> None:
    """Build rand (ours), regex and md5 (Debian's) once, with Debian's cargo, offline."""
    cargo = executable("cargo", "EVALUATOR_CARGO", ("/usr/bin/cargo",))
    if cargo is None:
        raise ToolchainError("cargo is needed once to build the Rust crates "
                             "(apt-get install cargo librust-regex-dev librust-md5-dev)")
    if not DEBIAN_REGISTRY.is_dir():
        raise ToolchainError(f"{DEBIAN_REGISTRY} is missing "
                             "(apt-get install librust-regex-dev librust-md5-dev)")
    project = work / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "lib.rs").write_text("")
    (project / "Cargo.toml").write_text(
        '[package]\nname = "evaluator-crates"\nversion = "0.0.0"\nedition = "2021"\n\n'
        "[dependencies]\n"
        f'rand = {{ path = "{RUNTIME / "rand"}" }}\nregex = "1"\nmd5 = "0.7"\n'
        f'{HARNESS_CRATE} = {{ path = "{RUNTIME / "harness"}" }}\n\n'
        "[profile.release]\ndebug = false\n"
    )
    home = work / "cargo-home"
    home.mkdir()
    (home / "config.toml").write_text(
        '[source.crates-io]\nreplace-with = "debian"\n\n'
        f'[source.debian]\ndirectory = "{DEBIAN_REGISTRY}"\n\n[net]\noffline = true\n'
    )
    target = work / "target"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work),
           "CARGO_HOME": str(home), "RUSTC": rustc, "CARGO_TARGET_DIR": str(target)}
    out = run_tool([cargo, "build", "--release", "--offline", "--message-format=json",
                    "--manifest-path", str(project / "Cargo.toml")], env=env)
    deps = work / "deps"
    deps.mkdir()
    externs: dict[str, str] = {}
    for line in out.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if message.get("reason") != "compiler-artifact":
            continue
        for filename in message.get("filenames", []):
            if filename.endswith(".rlib"):
                shutil.copy2(filename, deps)
                name = message["target"]["name"]
                if name in (*CRATES, HARNESS_CRATE):
                    externs[name] = Path(filename).name
    missing = [name for name in (*CRATES, HARNESS_CRATE) if name not in externs]
    if missing:
        raise ToolchainError(f"cargo did not build: {', '.join(missing)}")
    (work / "externs.json").write_text(json.dumps(externs, indent=1))
    shutil.rmtree(target, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(project, ignore_errors=True)


@functools.lru_cache(maxsize=1)
def _macros_line() -> str:
    # The macros go in as one line, so that no line of the program moves.
    text = (RUNTIME / "macros.rs").read_text()
    return " ".join(line.strip() for line in text.splitlines() if line.strip()) + " "


def _depth_zero_offset(blanked: str, start: int) -> int | None:
    """The first offset at or after `start` that is outside every brace."""
    depth = 0
    for i, ch in enumerate(blanked):
        if i >= start and depth == 0:
            return i
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and i + 1 >= start:
                return i + 1
    return None


def _split_comparison(blanked: str, open_paren: int, close_paren: int) -> tuple[int, str] | None:
    """For `assert!(a == b)`: the offset and text of the one top-level `==`/`!=`."""
    if lexing.top_level_split(blanked, open_paren + 1, close_paren, (",",)):
        return None  # a message follows the condition
    found = lexing.top_level_split(
        blanked, open_paren + 1, close_paren,
        ("==", "!=", "&&", "||", "..", "|", "<=", ">=", "=>", "=", "?"),
    )
    if len(found) == 1 and found[0][1] in ("==", "!="):
        return found[0]
    return None


class Rust(Language):
    name = "rust"
    display_name = "Rust"
    aliases = ("rs",)
    order = 60
    pygments_lexer = "rust"
    function_pattern = r"^\s*(?:pub\s+)?fn\s+(\w+)\s*[<(]"
    syntax_check = "rustfmt"
    toolchain = RUSTC
    selfcheck_body = "    panic!(\"selfcheck stub\");\n"

    def prefix(self, problem: Problem, options: RunOptions) -> str:
        if options.task == "translation":
            if not problem.declaration.strip():
                raise LanguageError(
                    f"{problem.task_id} has no declaration for the translation task"
                )
            return problem.declaration
        if problem.declaration.strip():
            # HumanEval-X Rust: the prompt is only the docstring; CodeGeeX's harness puts
            # the declaration (use lines and signature) in front of it.
            return problem.declaration + problem.prompt
        return problem.prompt

    def test_text(self, problem: Problem, options: RunOptions) -> str:
        if options.tests == "example":
            if not problem.example_test.strip():
                raise LanguageError(
                    f"{problem.task_id} has no example tests (HumanEval-X's Rust problems "
                    "ship none); use the hidden tests"
                )
            return problem.example_test
        return problem.test

    def tool_path(self, *, python: str) -> str | None:
        return toolchain().rustc

    # -- the language check of uploads --------------------------------------------------
    def check_syntax(self, sources: list[str], run: RunJob) -> list[Answer]:
        # rustfmt is rustc's own parser (`rustc -Z parse-only` needs a nightly compiler);
        # it neither expands macros nor resolves names.
        rustfmt = RUSTC.beside("rustfmt")
        return parse_batched(sources, run, suffix=".rs",
                             argv=lambda names: [rustfmt, "--check", "--edition", "2021",
                                                 "--color", "never", *names],
                             pattern=r"--> ", failing=r"--> .*?s(\d+)\.rs:")

    def syntax_contexts(self, code: str) -> list[str]:
        return [code, "fn _f() {\n" + code, "fn _f() {\n" + code + "\n}"]

    def checked_program(self, problem: Problem, sample: Sample,
                        options: RunOptions) -> str | None:
        # The build instruments the tests; this is the program before that.
        head = sample.completion if sample.is_full_program else (
            self.prefix(problem, options) + sample.completion)
        return head + "\n" + self.test_text(problem, options)

    def build(self, problem: Problem, sample: Sample, options: RunOptions) -> RustProgram:
        head = sample.completion if sample.is_full_program else (
            self.prefix(problem, options) + sample.completion)
        head += "\n"
        test = self.test_text(problem, options)
        program = head + test
        crates = problem.dataset == "humaneval-x" or bool(_CRATE_USE.search(problem.declaration))
        return self._instrument(program, len(head), head.count("\n") + 1, crates)

    def _instrument(self, program: str, test_offset: int, first_line: int,
                    crates: bool) -> RustProgram:
        blanked = lexing.blank(program, "rust")
        edits: list[tuple[int, int, str]] = []
        sites: dict[int, str] = {}
        notes: list[str] = []
        # The shadowing macros start where the test code starts at the top level.
        anchor = _depth_zero_offset(blanked, test_offset)
        if anchor is None:
            anchor = test_offset
            notes.append("the code before the tests leaves a brace open")
        edits.append((anchor, anchor, _macros_line()))
        modules = self._modules(blanked, test_offset)
        tests: list[tuple[str, str]] = []
        exposed: set[int] = set()
        for attr in _TEST_ATTR.finditer(blanked, test_offset):
            fn = _FN.search(blanked, attr.end())
            if fn is None:
                continue
            # Without `--test`, rustc drops `#[test]` functions: the attribute goes, and
            # the function becomes `pub` so the generated main can call it.
            edits.append((attr.start(), attr.end(), " " * len(attr.group())))
            if not fn.group(0).startswith("pub"):
                edits.append((fn.start(), fn.start(), "pub "))
            enclosing = [m for m in modules if m[1] < fn.start() < m[2]]
            for mod_start, _body, _end, _name, public in enclosing:
                if not public and mod_start not in exposed:
                    exposed.add(mod_start)
                    edits.append((mod_start, mod_start, "pub "))
            path = [name for _s, _b, _e, name, _p in enclosing]
            tests.append((fn.group(1), "::".join([*path, fn.group(1)])))
        main = _MAIN.search(blanked, test_offset)
        if main is not None:
            # MultiPL-E: the tests are the body of `fn main`.
            edits.append((main.start(), main.end(), "fn __evaluator_tests()"))
            tests.append(("main", "__evaluator_tests"))
        if not tests:
            notes.append("the tests define no test function (nothing is checked)")
        for macro in _ASSERT_MACRO.finditer(blanked, test_offset):
            open_paren = macro.end() - 1
            close = lexing.matching_close(blanked, open_paren)
            if close is None:
                continue
            sites[lexing.line_of(program, macro.start())] = program[macro.start():close + 1]
            if macro.group(1) != "assert":
                continue
            split = _split_comparison(blanked, open_paren, close)
            if split is None:
                continue
            offset, operator = split
            name = "__evaluator_assert_eq" if operator == "==" else "__evaluator_assert_ne"
            edits.append((macro.start(), macro.end(), f"{name}!("))
            edits.append((offset, offset + 2, ","))
        runs = ", ".join(f'("{name}", {path} as fn())' for name, path in tests)
        source = apply_edits(program, edits)
        source += f"\nfn main() {{ evaluator_harness::run(&[{runs}]); }}\n"
        return RustProgram(source=source, test_first_line=first_line, original=program,
                           tests=tests, sites=sites, note="; ".join(notes), crates=crates)

    @staticmethod
    def _modules(blanked: str, start: int) -> list[tuple[int, int, int, str, bool]]:
        """(start, body start, body end, name, is pub) of each inline module in the tests."""
        found = []
        for match in _MOD.finditer(blanked, start):
            close = lexing.matching_close(blanked, match.end() - 1)
            if close is not None:
                found.append((match.start(), match.end() - 1, close, match.group(1),
                              match.group(0).startswith("pub")))
        return found

    def prepare(self, problem: Problem, sample: Sample, options: RunOptions) -> PreparedJob:
        tools = self._toolchain()
        built = self.build(problem, sample, options)
        common = [tools.rustc, "--edition", EDITION, "-A", "warnings", "-C", "prefer-dynamic",
                  "-C", "debuginfo=0", "-C", "codegen-units=1",
                  "-L", f"dependency={tools.crate_dir / 'deps'}"]
        externs = [arg for crate, path in sorted(tools.externs.items())
                   for arg in ("--extern", f"{crate}={path}")
                   if built.crates or crate == HARNESS_CRATE]
        # Short diagnostics start with `prog.rs:LINE:`, which the build script reads to
        # tell an error of the completion from one the instrumentation caused.
        split = [*common, "--error-format=short", "--crate-type", "bin", "--cfg", "test",
                 *externs, "-o", "prog", "prog.rs"]
        # The fallback is the program exactly as the reference harness builds it: a test
        # binary (libtest) for `#[test]` functions, else MultiPL-E's plain `main`.
        test_main = ("main", "__evaluator_tests") in built.tests
        whole = [*common, *([] if test_main else ["--test"]), *externs, "-o", "../prog",
                 "prog.rs"]
        script = build_script(source="prog.rs", first_test_line=built.test_first_line,
                              split=split, whole=whole)
        job: dict[str, Any] = {
            "kind": "command",
            "files": {"prog.rs": built.source, "whole/prog.rs": built.original,
                      LAUNCHER_FILE: LAUNCHER, BUILD_FILE: script},
            "steps": [
                {"name": "compile", "argv": ["sh", BUILD_FILE],
                 "limits": options.compile_limits.to_dict(), "address_space_limit": False},
                {"name": "run", "argv": ["sh", LAUNCHER_FILE, "./prog"],
                 "limits": options.limits.to_dict(),
                 "report": True,
                 "env": {"LD_LIBRARY_PATH": tools.runtime_lib_dir, "RUST_BACKTRACE": "0"}},
            ],
            "env": self.environment(),
        }
        digest = program_hash("rust", tools.version, str(built.crates), built.source)
        return PreparedJob(job=job, program=built.source, program_hash=digest, context={
            "mode": "tests", "test_first_line": built.test_first_line, "sites": built.sites,
            "note": built.note, "fallback_marker": FALLBACK_MARKER,
        })

    def _toolchain(self) -> RustToolchain:
        return required_toolchain(toolchain)

    def mounts(self) -> list[Mount]:
        tools = self._toolchain()
        mounts = [Mount(tools.crate_dir)]
        sysroot = Path(tools.runtime_lib_dir).parents[3]
        if not str(sysroot).startswith("/usr"):
            mounts.append(Mount(sysroot))
        return mounts

    def environment(self) -> dict[str, str]:
        return {"CARGO_HOME": "/nonexistent"}

    def require_toolchain(self) -> None:
        toolchain()

    def complete_answer(self, prepared: PreparedJob, answer: dict[str, Any]) -> dict[str, Any]:
        return normalise_records(prepared, answer)
