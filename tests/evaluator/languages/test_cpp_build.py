"""C++ builds without the g++ driver, the shared string conversions, and showing both
sides of `a == b` with one function: the same programs, judged the same way."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from language_support import evaluate_one, local_engine

from evaluator.engine import Engine
from evaluator.languages import cpp
from evaluator.languages.cpp import (
    CODEGEEX_HEADERS,
    TOOLS_FILE,
    Cpp,
    compiler,
    direct_tools,
    prelude,
)
from evaluator.records import Problem, RunOptions, Sample, SampleResult

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")

PROMPT = "#include<stdio.h>\n#include<string>\nusing namespace std;\nint add(int a, int b){\n"


def make_problem(test: str, prompt: str = PROMPT, dataset: str = "humaneval-x") -> Problem:
    return Problem(dataset=dataset, task_id="HumanEval/0", language="cpp",
                   natural_language="en", prompt=prompt, entry_point="add", test=test,
                   source_id="CPP/0", declaration=prompt, example_test="",
                   canonical_solution="    return a + b;\n}\n")


def sample(completion: str) -> Sample:
    return Sample(task_id="HumanEval/0", index=0, raw=completion, completion=completion)


def write_job(files: dict[str, str], into: Path) -> None:
    for name, text in files.items():
        path = into / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.mark.parametrize(("standard", "headers"), [
    ("c++11", CODEGEEX_HEADERS), ("c++17", ("bits/stdc++.h",)), ("c++11", ("stdio.h",))])
def test_the_tools_build_the_drivers_program_byte_for_byte(
        tmp_path: Path, standard: str, headers: tuple[str, ...]) -> None:
    tools = direct_tools(standard, headers)
    assert tools is not None, "this machine's g++ runs cc1plus, as and collect2"
    source = ("#include <string>\n#include <vector>\n#include <iostream>\n"
              "int main() { std::vector<long> v{1, 2}; std::string s = std::to_string(2.5);"
              " std::cout << v.size() + std::stoi(\"3\") << s << '\\n';"
              " evaluator_harness::MainGuard guard; }\n")
    by_driver, by_tools = tmp_path / "driver", tmp_path / "tools"
    for where in (by_driver, by_tools):
        where.mkdir()
        (where / "main.cpp").write_text(source)
    argv = cpp._driver_argv(compiler(), standard, prelude(standard, headers))
    subprocess.run(argv, cwd=by_driver, check=True)
    (by_tools / TOOLS_FILE).write_text(tools.script())
    subprocess.run(["/bin/sh", TOOLS_FILE, "prog"], cwd=by_tools, check=True)
    assert (by_tools / "prog").read_bytes() == (by_driver / "prog").read_bytes()
    ran = subprocess.run(["./prog"], cwd=by_tools, capture_output=True, text=True, check=True)
    assert ran.stdout == "52.500000\n"


def test_a_job_runs_the_tools_not_the_driver(tmp_path: Path) -> None:
    test = "#undef NDEBUG\n#include<assert.h>\nint main(){\n    assert (add(1, 2) == 3);\n}\n"
    job = Cpp().prepare(make_problem(test), sample("    return a + b;\n}\n"),
                        RunOptions()).job
    script = job["files"][TOOLS_FILE]
    assert "cc1plus" in script
    assert "collect2" not in script
    assert "-plugin" not in script, "our objects are never LTO objects"
    assert " g++ " not in job["files"][".evaluator-build.sh"]
    write_job(job["files"], tmp_path)
    subprocess.run(job["steps"][0]["argv"], cwd=tmp_path, check=True)
    assert (tmp_path / "prog").exists()


def test_the_driver_is_used_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cpp.DIRECT_ENV, "0")
    direct_tools.cache_clear()
    try:
        test = "#include<assert.h>\nint main(){ assert (add(1, 2) == 3); }\n"
        job = Cpp().prepare(make_problem(test), sample("    return a + b;\n}\n"),
                            RunOptions()).job
        assert TOOLS_FILE not in job["files"]
        assert f"if {compiler().path} " in job["files"][".evaluator-build.sh"]
    finally:
        direct_tools.cache_clear()


@pytest.mark.parametrize("printed", [
    "",  # nothing
    " /usr/lib/gcc/x86_64-linux-gnu/12/cc1plus -o /tmp/ccA.s main.cpp\n as -o /tmp/ccB.o "
    "/tmp/ccA.s\n",  # no link
    " /usr/lib/gcc/x86_64-linux-gnu/12/cc1plus -o /tmp/ccA.s main.cpp\n as -o /tmp/ccB.o "
    "/tmp/ccA.s\n /usr/bin/lto-wrapper /tmp/x\n /usr/lib/gcc/collect2 -o prog /tmp/ccB.o\n",
    " /usr/lib/gcc/x86_64-linux-gnu/12/cc1plus -o /tmp/ccA.s main.cpp\n as -o /tmp/ccB.o "
    "/tmp/ccA.s\n /usr/lib/gcc/collect2 -o prog /tmp/ccB.o /tmp/ccOther.o\n",  # unknown temp
])
def test_an_unexpected_driver_means_no_tools(tmp_path: Path, printed: str) -> None:
    fake = tmp_path / "g++"
    (tmp_path / "printed").write_text(printed)
    fake.write_text(f"#!/bin/sh\ncat {tmp_path / 'printed'} >&2\n")
    fake.chmod(0o755)
    assert cpp._driver_tools([str(fake), "-o", "prog", "main.cpp"], tmp_path) is None


# -- through the engine -------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with local_engine(seconds=5, memory_mb=512) as eng:
        yield eng


def run(engine: Engine, test: str, completion: str = "    return a + b;\n}\n",
        dataset: str = "humaneval-x") -> SampleResult:
    return evaluate_one(engine, make_problem(test, dataset=dataset), sample(completion))


@pytest.mark.parametrize("dataset", ["humaneval-x", "multipl-e"])
def test_string_conversions_link_from_the_shared_archive(engine: Engine,
                                                         dataset: str) -> None:
    built = prelude("c++11" if dataset == "humaneval-x" else "c++17",
                    CODEGEEX_HEADERS if dataset == "humaneval-x" else ("bits/stdc++.h",))
    assert "extern template int __gnu_cxx::__stoa<long, int, char, int>" in \
        built.header.read_text()
    test = ("#undef NDEBUG\n#include<assert.h>\nint main(){\n"
            "    assert (std::stoi(\"12\") + add(0, 0) == 12);\n"
            "    assert (std::stol(\" -7\") == -7L);\n"
            "    assert (std::stoull(\"ff\", nullptr, 16) == 255ULL);\n"
            "    assert (std::stod(\"2.5\") == 2.5);\n"
            "    assert (std::stof(\"0.5\") == 0.5f);\n"
            "    assert (std::to_string(1.5) == \"1.500000\");\n"
            "    assert (std::to_wstring(2.0) == L\"2.000000\");\n"
            "    assert (std::stoi(L\"42\") == 42);\n"
            "    assert (std::stoi(\"x\") == 0);\n"
            "}\n")
    if dataset == "multipl-e":
        test = "#include <bits/stdc++.h>\n" + test
    result = run(engine, test, dataset=dataset)
    assert [t.status for t in result.tests] == ["passed"] * 8 + ["error"], result.stderr
    assert result.tests[-1].message == "stoi"  # std::invalid_argument's what()


def test_both_sides_of_an_equality_show_as_before(engine: Engine) -> None:
    """String literals of any length, char arrays, C strings, strings and numbers."""
    test = ("#undef NDEBUG\n#include<assert.h>\nint main(){\n"
            "    char buffer[4] = \"abc\";\n"
            "    const char* c_string = \"xy\";\n"
            "    assert (std::string(\"ab\") == \"abc\");\n"
            "    assert (\"abcd\" == std::string(\"ab\"));\n"
            "    assert (std::string(\"q\") == buffer);\n"
            "    assert (std::string(\"q\") == c_string);\n"
            "    assert (add(1, 1) == 3);\n"
            "    assert (add(1, 1) == 2.5);\n"
            "    assert (std::string(\"x\") == \"x\");\n"
            "}\n")
    result = run(engine, test)
    assert [(t.status, t.actual, t.expected) for t in result.tests] == [
        ("failed", '"ab"', '"abc"'),
        ("failed", '"abcd"', '"ab"'),
        ("failed", '"q"', '"abc"'),
        ("failed", '"q"', '"xy"'),
        ("failed", "2", "3"),
        ("failed", "2", "2.5"),
        ("passed", '"x"', '"x"'),
    ]


def test_an_equality_whose_comparison_throws_is_an_error(engine: Engine) -> None:
    completion = ("    return a + b;\n}\n"
                  "struct Odd { int v; };\n"
                  "bool operator==(const Odd&, int) { throw std::string(\"no\"); }\n")
    test = ("#undef NDEBUG\n#include<assert.h>\nint main(){\n"
            "    assert (Odd{add(1, 1)} == 2);\n"
            "}\n")
    result = run(engine, test, completion)
    assert [(t.status, t.error_type, t.message) for t in result.tests] == [
        ("error", "std::string", "no")]


def _defined(library: str) -> set[str]:
    path = subprocess.run([compiler().path, f"-print-file-name={library}"], check=True,
                          capture_output=True, text=True).stdout.strip()
    listed = subprocess.run(["nm", "-D", "--defined-only", path], check=True,
                            capture_output=True, text=True).stdout
    return {line.split()[-1].split("@")[0] for line in listed.splitlines() if line.strip()}


@pytest.mark.skipif(shutil.which("nm") is None, reason="nm is not installed")
def test_openssl_defines_nothing_the_rest_of_the_link_defines() -> None:
    """What makes a link without libssl and libcrypto, when it succeeds, the same link."""
    openssl = _defined("libssl.so") | _defined("libcrypto.so")
    assert "MD5" in openssl
    rest = set().union(*(_defined(name) for name in (
        "libstdc++.so", "libm.so.6", "libc.so.6", "libgcc_s.so.1")))
    assert len(rest) > 5000
    assert openssl & rest == set()


def test_a_program_using_openssl_still_links(engine: Engine) -> None:
    # Declared by the program itself, as a completion may: CodeGeeX's link line has
    # libcrypto, so it links and runs.
    completion = ('    return a + b;\n}\nextern "C" unsigned char* MD5(const unsigned char*, '
                  "unsigned long, unsigned char*);\n")
    test = ("#undef NDEBUG\n#include<assert.h>\nint main(){\n"
            "    unsigned char digest[16];\n"
            "    MD5((const unsigned char*)\"\", 0, digest);\n"
            "    assert (digest[0] == 0xd4 && add(1, 1) == 2);\n"
            "}\n")
    result = run(engine, test, completion)
    assert result.status == "passed", result.stderr


def test_an_unresolved_symbol_is_reported_as_before(engine: Engine) -> None:
    completion = "    return a + b;\n}\nint nowhere(int);\n"
    test = ("#undef NDEBUG\n#include<assert.h>\nint main(){\n"
            "    assert (nowhere(add(1, 1)) == 2);\n"
            "}\n")
    result = run(engine, test, completion)
    assert result.status == "compile_error"
    assert "undefined" in result.message
    assert "nowhere" in result.stderr
