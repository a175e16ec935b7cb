"""Go under the codegeex profile, which follows CodeGeeX's `go test`: `go vet` runs first
and its findings fail the program (a program vet has nothing to look at runs the job of
every other profile), and a test that ends the program early fails."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from language_support import evaluate_one
from test_go import SETUP, make_problem, sample

from evaluator.engine import Engine, EngineConfig
from evaluator.languages.go import Go, imported_paths, vet_could_report
from evaluator.records import Problem, RunOptions, SampleResult
from evaluator.sandbox.base import SandboxLimits
from tests.backends import require_backend

GO = Go()
needs_go = pytest.mark.skipif(GO.available() is not None, reason=f"Go: {GO.available()}")
GO_COMMAND = os.environ.get("EVALUATOR_GO") or shutil.which("go") or "go"

CLEAN = "    return a + b\n}\n"
PRINTF_MISMATCH = '    _ = fmt.Sprintf("%d", "x")\n    return a + b\n}\n'

FINDINGS = {
    # analyzer -> a completion it reports on, using nothing another analyzer looks at
    "atomic": "    var n uint64\n    n = atomic.AddUint64(&n, 1)\n    return a + b\n}\n",
    "bool": "    if a == 1 || a == 1 {\n        return 0\n    }\n    return a + b\n}\n",
    "buildtags": "    return a + b\n}\n\n// +build ignore\n",
    "errorsas": ("    var err error\n    var target error\n    errors.As(err, target)\n"
                 "    return a + b\n}\n"),
    "ifaceassert": ("    var e error\n    _, _ = e.(interface{ Error() int })\n"
                    "    return a + b\n}\n"),
    "nilfunc": "    if helper == nil {\n        return 0\n    }\n    return a + b\n}\n"
               "\nfunc helper() {}\n",
    "printf": PRINTF_MISMATCH,
    "stringintconv": "    _ = string(a)\n    return a + b\n}\n",
}


def problem() -> Problem:
    # Imported by the prompt, so imported when the completion uses them (the strict rule).
    return make_problem(extra={"import": 'import (\n    "errors"\n    "sync/atomic"\n)\n',
                               "test_setup": SETUP})


def problem_with_setup_imports(*packages: str) -> Problem:
    """The packages in the test's own setup, which every harness keeps as it is: under
    CodeGeeX's rule only its ten helper packages are imported for the generation."""
    setup = SETUP.replace('    "testing"\n',
                          '    "testing"\n' + "".join(f'    "{p}"\n' for p in packages))
    return make_problem(extra={"import": "", "test_setup": setup})


SETUP_IMPORTS = {"atomic": ("sync/atomic",), "errorsas": ("errors",)}
"""The packages a finding uses beyond CodeGeeX's helpers."""


def evaluate(completion: str, profile: str, backend: str = "none",
             task: Problem | None = None) -> SampleResult:
    options = RunOptions(profile=profile, limits=SandboxLimits(wall_seconds=20,
                                                               cpu_seconds=10,
                                                               memory_mb=1024))
    with Engine(EngineConfig(backend=backend, workers=1, options=options,
                             cache=None)) as engine:
        return evaluate_one(engine, task or problem(), sample(completion))


def plain_program(completion: str) -> str:
    return GO.build(problem(), sample(completion), RunOptions()).plain


# -- which programs are vetted ---------------------------------------------------------


def test_import_paths_are_read_with_aliases_comments_and_raw_strings() -> None:
    source = ('package main\n\nimport "fmt"\nimport (\n    m "math" // "not/this"\n'
              '    . `strings`\n    _ "sync/atomic"\n    /* "nor/this" */\n)\n'
              'var s = "import \\"os\\""\n')
    assert imported_paths(source) == ["fmt", "math", "strings", "sync/atomic"]


@needs_go
def test_this_go_reports_the_checks_go_test_runs() -> None:
    checks = GO._toolchain().vet_checks
    assert {"printf", "bool", "nilfunc", "stringintconv"} <= set(checks)


@pytest.mark.parametrize("check", sorted(FINDINGS))
def test_each_analyzer_sees_the_code_it_reports_on(check: str) -> None:
    program = plain_program(FINDINGS[check])
    assert vet_could_report(program, [check])
    # The same check has nothing to look at in a plain sum.
    assert not vet_could_report(plain_program(CLEAN), [check])


def test_an_import_vet_may_look_into_is_always_vetted() -> None:
    program = plain_program(CLEAN).replace(
        'import (\n', 'import (\n    _ "encoding/json"\n', 1)
    assert vet_could_report(program, ["printf"])


def test_an_analyzer_without_a_known_trigger_always_runs() -> None:
    assert vet_could_report(plain_program(CLEAN), ["tests"])


# -- real vet runs -----------------------------------------------------------------------


@needs_go
def test_a_printf_mismatch_fails_under_codegeex_and_passes_under_strict() -> None:
    vetted = evaluate(PRINTF_MISMATCH, "codegeex")
    assert vetted.status == "compile_error"
    assert vetted.error_type == "VetError"
    assert "fmt.Sprintf format %d has arg \"x\" of wrong type string" in vetted.message
    assert vetted.message.startswith("go vet: ./main_test.go:")
    assert evaluate(PRINTF_MISMATCH, "strict").status == "passed"


@needs_go
@pytest.mark.parametrize("check", sorted(FINDINGS))
def test_vet_reports_each_analyzers_finding(check: str) -> None:
    if check not in GO._toolchain().vet_checks:
        pytest.skip(f"go test does not run {check} with this Go")
    result = evaluate(FINDINGS[check], "codegeex",
                      task=problem_with_setup_imports(*SETUP_IMPORTS.get(check, ())))
    assert (result.status, result.error_type) == ("compile_error", "VetError"), result.message


@needs_go
def test_a_clean_program_runs_the_same_job_under_both_profiles() -> None:
    strict, codegeex = evaluate(CLEAN, "strict"), evaluate(CLEAN, "codegeex")
    assert strict.program_hash == codegeex.program_hash
    assert strict.status == codegeex.status == "passed"


@needs_go
def test_a_vetted_program_that_vet_accepts_passes() -> None:
    completion = '    _ = fmt.Sprintf("%d", a)\n    return a + b\n}\n'
    strict, codegeex = evaluate(completion, "strict"), evaluate(completion, "codegeex")
    assert strict.program_hash != codegeex.program_hash  # vetted: a job of its own
    assert codegeex.status == "passed"


@needs_go
def test_a_compile_error_is_the_compilers_not_vets() -> None:
    result = evaluate('    _ = fmt.Sprintf("%d", "x")\n    return a + c\n}\n', "codegeex")
    assert (result.status, result.error_type) == ("compile_error", "CompileError")
    assert "undefined: c" in result.message


@needs_go
@pytest.mark.parametrize("backend", ["bwrap", "gvisor"])
def test_vet_runs_inside_each_sandbox(backend: str) -> None:
    require_backend(backend)
    vetted = evaluate(PRINTF_MISMATCH, "codegeex", backend)
    assert (vetted.status, vetted.error_type) == ("compile_error", "VetError"), vetted.message
    assert evaluate('    _ = fmt.Sprintf("%d", a)\n    return a + b\n}\n', "codegeex",
                    backend).status == "passed"


# -- ending early -----------------------------------------------------------------------

EXITS_EARLY = "    os.Exit(0)\n    return a + b\n}\n"


def problem_importing_os() -> Problem:
    return problem_with_setup_imports("os")


@needs_go
def test_go_test_itself_fails_a_test_that_exits_with_status_0(tmp_path: Path) -> None:
    # Since Go 1.16 `go test` runs test binaries with -test.paniconexit0.
    (tmp_path / "main_test.go").write_text(
        'package main\n\nimport (\n    "os"\n    "testing"\n)\n\n'
        "func TestExit(t *testing.T) {\n    os.Exit(0)\n}\n")
    env = {**os.environ, "GO111MODULE": "off", "GOFLAGS": "",
           "GOCACHE": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    done = subprocess.run([GO_COMMAND, "test", "main_test.go"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode != 0
    assert "unexpected call to os.Exit(0) during test" in done.stdout + done.stderr


@needs_go
def test_exiting_with_status_0_before_the_tests_fails_under_codegeex() -> None:
    options = RunOptions(profile="codegeex")
    with Engine(EngineConfig(backend="none", workers=1, options=options,
                             cache=None)) as engine:
        result = evaluate_one(engine, problem_importing_os(), sample(EXITS_EARLY))
    assert result.status == "error"
    assert result.error_type == "IncompleteRun"


# -- helper imports ----------------------------------------------------------------------

NAMED_IN_A_COMMENT = "    // not strings.Anything\n    return a + b\n}\n"


def test_codegeex_imports_a_package_named_only_in_a_comment() -> None:
    # CodeGeeX's rule is a substring test on the generation: `strings.` in a comment
    # imports "strings", which is then unused.
    codegeex = GO.head(problem(), sample(NAMED_IN_A_COMMENT), RunOptions(profile="codegeex"))
    strict = GO.head(problem(), sample(NAMED_IN_A_COMMENT), RunOptions(profile="strict"))
    assert '"strings"' in codegeex
    assert '"strings"' not in strict


@needs_go
def test_a_package_named_only_in_a_comment_fails_only_under_codegeex() -> None:
    result = evaluate(NAMED_IN_A_COMMENT, "codegeex")
    assert result.status == "compile_error"
    assert '"strings" imported and not used' in result.message \
        or 'imported and not used: "strings"' in result.message
    assert evaluate(NAMED_IN_A_COMMENT, "strict").status == "passed"
