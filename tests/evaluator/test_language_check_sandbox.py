"""The language check's parsers run in the sandbox, within the limits of any program.

Real sandboxes (bubblewrap, gVisor) and the real g++: a hostile C++ completion can read
no file of the host and, however much a template or `constexpr` asks of the compiler,
gets an answer (or "could not decide") at the sandbox's limits.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluator import language_check
from evaluator.language_check import CHECK_LIMITS, SandboxedParsers, check_language
from evaluator.languages import cpp, syntax_check
from evaluator.languages.toolchains import Tool, ToolchainError
from evaluator.records import Problem, Sample
from tests.backends import require_backend
from tests.polyglot import generations, require_parser, write_dataset

SECRET = "SECRET-7f3a9c"
# 2^40 distinct instantiations: the compiler's memory grows until a limit stops it.
MEMORY_BOMB = """
template<int A, long B> struct T {
  using t = typename T<A - 1, B * 2>::t;
  using u = typename T<A - 1, B * 2 + 1>::t;
};
template<long B> struct T<0, B> { using t = int; };
T<40, 1>::t bomb;
"""
# 200000^3 steps of constant evaluation.
CONSTEXPR_BOMB = """
constexpr long f() {
  long s = 0;
  for (long i = 0; i < 200000; ++i)
    for (long j = 0; j < 200000; ++j)
      for (long k = 0; k < 200000; ++k) s += i ^ j ^ k;
  return s;
}
constexpr long v = f();
"""


@pytest.fixture(params=["bwrap", "gvisor"])
def backend(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    require_parser("cpp")
    return str(request.param)


@pytest.fixture
def parsers(backend: str) -> Iterator[SandboxedParsers]:
    parsers = SandboxedParsers(backend)
    yield parsers
    parsers.close()


@pytest.fixture
def bwrap_parsers() -> Iterator[SandboxedParsers]:
    """For the bombs, which cost a minute of CPU each under every backend: one is enough."""
    require_backend("bwrap")
    require_parser("cpp")
    parsers = SandboxedParsers("bwrap")
    yield parsers
    parsers.close()


@pytest.fixture
def host_header(tmp_path: Path) -> Path:
    """A header on the host that, included, makes g++ print the secret."""
    header = tmp_path / "secret.h"
    header.write_text(f"#error {SECRET}\n")
    return header


def _gxx_step(parsers: SandboxedParsers, source: str) -> dict[str, object]:
    """What g++ said in the check's sandbox about `source` (the answer the check reads)."""
    run = parsers._run("cpp")
    answer = run({"kind": "command", "files": {"s0.cpp": source},
                  "steps": [syntax_check.tool_step(
                      [cpp.GXX.beside("g++"), "-std=c++17", "-fsyntax-only", "s0.cpp"],
                      cpp._CPP_PATTERN)]})
    return dict(answer["steps"][0])


def test_a_host_file_named_by_a_macro_include_is_not_there(parsers, host_header, tmp_path):
    # A macro names the file, so no text filter sees a path: only the sandbox stops it.
    source = f'#define WHERE "{host_header}"\n#include WHERE\nint f() {{ return 1; }}\n'
    # On the host, g++ reads it (what the check did before it ran in the sandbox).
    (tmp_path / "s0.cpp").write_text(source)
    outside = subprocess.run([cpp.GXX.beside("g++"), "-fsyntax-only", "s0.cpp"],
                             cwd=tmp_path, capture_output=True, text=True, check=False)
    assert SECRET in outside.stderr
    step = _gxx_step(parsers, source)
    said = str(step["stdout"])
    assert SECRET not in said
    assert "No such file or directory" in said
    # The check itself answers only yes, no or could not decide.
    assert parsers({"cpp": [source]}) == {"cpp": [True]}


def test_a_memory_bomb_is_stopped_at_the_memory_limit_and_left_undecided(bwrap_parsers):
    parsers = bwrap_parsers
    step = _gxx_step(parsers, MEMORY_BOMB)
    assert syntax_check.tool_output(step, failure_says=cpp._CPP_PATTERN) is None
    rss = step.get("max_rss_kb")
    assert rss is None or int(str(rss)) <= CHECK_LIMITS.memory_mb * 1024
    answers = parsers({"cpp": ["int f() { return 1; }", MEMORY_BOMB, "def f(): pass"]})
    # The batch hit the limit; each source was then parsed alone.
    assert answers == {"cpp": [True, None, False]}


def test_a_constexpr_bomb_ends_within_the_cpu_limit(bwrap_parsers):
    parsers = bwrap_parsers
    step = _gxx_step(parsers, CONSTEXPR_BOMB)
    cpu_ms = step.get("cpu_ms")
    assert cpu_ms is not None
    assert float(str(cpu_ms)) <= (CHECK_LIMITS.cpu_seconds + 1) * 1000
    (answer,) = parsers({"cpp": [CONSTEXPR_BOMB]})["cpp"]
    assert answer in (True, None)  # g++'s own limit, or ours: never a hang


def test_the_check_counts_a_bomb_as_undecided_not_as_another_language(bwrap_parsers,
                                                                        tmp_path):
    parsers = bwrap_parsers
    from evaluator.datasets import load_dataset

    problems: list[Problem] = list(load_dataset(path=write_dataset(tmp_path, "cpp")).problems)
    records = generations("cpp", copies=1)
    samples = [Sample(task_id=r["task_id"], index=0, raw=r["completion"],
                      completion=r["completion"]) for r in records]
    # The bomb closes the function the prompt opened and declares its template after it.
    bomb = "    return {};\n}\n" + MEMORY_BOMB + "auto _g() {\n"
    samples.append(Sample(task_id=samples[0].task_id, index=1, raw=bomb, completion=bomb))
    language_check._cache.clear()
    verdict = check_language(problems, samples, parse=parsers)
    assert verdict.undecided == 1
    assert verdict.checked == len(samples) - 1
    assert verdict.fits
    assert not verdict.mismatch


def test_a_missing_toolchain_is_reported_as_not_asked(bwrap_parsers, monkeypatch):
    parsers = bwrap_parsers
    def missing(_tool: Tool, _program: str) -> str:
        raise ToolchainError("g++ is not installed")

    monkeypatch.setattr(Tool, "beside", missing)
    said = parsers({"cpp": ["int f() { return 1; }"]})
    assert said == {"cpp": "g++ is not installed"}


@pytest.mark.parametrize(("stdout", "expected"), [
    ("status 0\n", ""),
    ("status 1\ns0.cpp:2:5: error: expected ';' before '}' token\n",
     "s0.cpp:2:5: error: expected ';' before '}' token\n"),
    # g++ failed without naming a line: it stopped for a reason it did not say.
    ("status 1\n", None),
    ("status 4\ng++: internal compiler error: Segmentation fault\n", None),
    ("status 1\nvirtual memory exhausted: Cannot allocate memory\n", None),
])
def test_a_parser_failing_without_a_line_is_no_answer(stdout: str, expected: str | None):
    step = {"exit_code": 0, "signal": None, "timed_out": False, "output_exceeded": False,
            "stdout": stdout}
    assert syntax_check.tool_output(
        step, failure_says=cpp._CPP_PATTERN) == expected
    # A parser whose failures need not name a line (rustfmt --check differs on layout)
    # keeps its status-1 answer.
    if stdout == "status 1\n":
        assert syntax_check.tool_output(step) == ""


def test_a_runner_outlives_the_call_that_started_it(backend):
    # bwrap ends a runner with the thread that started it (--die-with-parent): a second
    # check must find the same runner alive, not a dead one that leaves every source
    # undecided.
    parsers = SandboxedParsers(backend)
    try:
        assert parsers({"python": ["x = 1", "def ("]}) == {"python": [True, False]}
        session = parsers._run("python").session
        assert session.process is not None
        first = session.process.pid
        assert parsers({"python": ["y = 2", "def )"]}) == {"python": [True, False]}
        assert session.process is not None
        assert session.process.pid == first
    finally:
        parsers.close()
