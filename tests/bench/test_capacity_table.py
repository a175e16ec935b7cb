"""docs/webapp.md's capacity table: the commands it gives still parse, it names every
language and every sandbox level, its figures agree with each other, and the CPU clock
behind them counts a sandbox's processes."""

from __future__ import annotations

import math
import re
import shlex
import shutil
import subprocess
import sys
import textwrap

import pytest

from bench import coordinator_bench, languages_bench
from evaluator.languages.registry import canonical_name, language_names
from evaluator.sandbox.levels import LEVELS, get_level
from tests.conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs" / "webapp.md"
SECTION = "### Capacity"
SCRIPTS = {"bench/languages_bench.py": languages_bench.build_parser,
           "bench/coordinator_bench.py": coordinator_bench.build_parser}


def capacity_section() -> str:
    text = DOCS.read_text()
    assert SECTION in text, f"docs/webapp.md has no {SECTION!r} section"
    return section_text(text)


def section_text(text: str) -> str:
    """The capacity section of `text` ("" when it has none)."""
    if SECTION not in text:
        return ""
    start = text.index(SECTION) + len(SECTION)
    after = re.search(r"^#{1,3} ", text[start:], re.MULTILINE)
    return text[start:] if after is None else text[start:start + after.start()]


def bench_commands(section: str) -> list[list[str]]:
    """Every command of the section's shell blocks that runs a bench script, as argv
    from the script's path on (continuation lines joined)."""
    commands = []
    for block in re.findall(r"^```sh\n(.*?)^```", section, re.MULTILINE | re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            scripts = [i for i, word in enumerate(words) if word.startswith("bench/")]
            if scripts:
                commands.append(words[scripts[0]:])
    return commands


def table_rows(section: str) -> tuple[list[str], list[list[str]]]:
    """The header and body rows of the section's first table that starts with `language`."""
    lines = [line.strip() for line in section.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("| language |"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[0], [row for row in rows[2:]]


def level_columns(header: list[str]) -> dict[str, tuple[int, int]]:
    """Level name -> (its CPU ms/sample column, its samples/s per core column)."""
    columns: dict[str, tuple[int, int]] = {}
    for level in LEVELS:
        named = [i for i, cell in enumerate(header) if f"`{level.name}`" in cell]
        ms = [i for i in named if "ms" in header[i]]
        core = [i for i in named if "per core" in header[i]]
        if len(ms) == 1 and len(core) == 1:
            columns[level.name] = (ms[0], core[0])
    return columns


def half_unit(figure: str) -> float:
    """Half the unit of a figure's last digit: 0.05 for "12.3", 0.5 for "12"."""
    decimals = len(figure.partition(".")[2])
    return 0.5 * 10 ** -decimals


def test_the_section_names_both_benchmarks() -> None:
    scripts = {command[0] for command in bench_commands(capacity_section())}
    assert scripts == set(SCRIPTS), f"bench commands in the section: {sorted(scripts)}"


@pytest.mark.parametrize("command", bench_commands(section_text(DOCS.read_text())),
                         ids=shlex.join)
def test_every_bench_command_of_the_section_parses(command: list[str]) -> None:
    # Each script's --help is tests/evaluator/test_bench_scripts.py's; this parses the
    # section's very arguments, which fails (SystemExit) on one the script no longer has.
    parser = SCRIPTS[command[0]]()
    args = parser.parse_args(command[1:])
    if command[0] == "bench/languages_bench.py":
        assert set(args.languages) <= set(languages_bench.PLUGINS)
        for backend in args.backend.split(","):
            get_level(backend)


def test_the_bench_can_measure_every_language_of_the_registry() -> None:
    assert set(languages_bench.PLUGINS) == set(language_names())


def test_the_table_names_every_language_and_every_level() -> None:
    header, rows = table_rows(capacity_section())
    assert set(level_columns(header)) == {level.name for level in LEVELS}, header
    named = [canonical_name(row[0]) for row in rows]
    assert None not in named, [row[0] for row in rows]
    assert sorted(named) == sorted(language_names())  # type: ignore[type-var]


def test_samples_per_core_is_a_thousand_over_the_cpu_per_sample() -> None:
    header, rows = table_rows(capacity_section())
    for row in rows:
        for level, (ms_column, core_column) in level_columns(header).items():
            ms, per_core = float(row[ms_column]), float(row[core_column])
            # Each figure is rounded to its last digit: half of that either way.
            ms_slack, core_slack = half_unit(row[ms_column]), half_unit(row[core_column])
            low = 1000 / (ms + ms_slack) - core_slack
            high = 1000 / max(ms - ms_slack, ms_slack) + core_slack
            assert low <= per_core <= high, f"{row[0]} {level}: {ms} ms, {per_core}/s"


def test_the_worked_example_follows_from_the_table() -> None:
    """The example's core-hours at the default level are the table's CPU times over the
    sweep's 32,800 programs a language."""
    section = capacity_section()
    header, rows = table_rows(section)
    ms_column = level_columns(header)["standard"][0]
    core_hours = sum(32_800 * float(row[ms_column]) for row in rows) / 3_600_000
    stated = re.search(r"At `standard`[^.]*?(\d+\.\d+) core-hours", section)
    assert stated is not None, "the worked example states no core-hours for `standard`"
    assert math.isclose(float(stated.group(1)), core_hours, abs_tol=0.051), core_hours


CPUACCT = languages_bench.CPUACCT / "cpuacct.usage"

BURN = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from bench.languages_bench import CLOCK
    from evaluator.datasets import load_dataset
    from evaluator.engine import Engine, EngineConfig
    from evaluator.records import RunOptions, Sample
    from evaluator.sandbox.base import SandboxLimits

    print(CLOCK.enter_cgroup(), file=sys.stderr)
    assert CLOCK.complete
    problem = load_dataset().problems[0]
    # The program burns 0.6 s of its own CPU time (as the sandboxed process counts it),
    # then answers correctly.
    burn = "    import time\\n    t = time.process_time()\\n" \\
           "    while time.process_time() - t < 0.6:\\n        pass\\n"
    completion = burn + problem.canonical_solution
    sample = Sample(task_id=problem.task_id, index=0, raw=completion, completion=completion)
    options = RunOptions(limits=SandboxLimits(wall_seconds=60, cpu_seconds=10))
    before = CLOCK.seconds()
    with Engine(EngineConfig(backend="standard", workers=1, options=options, cache=None,
                             dedup=False)) as engine:
        results = [e["result"] for e in engine.evaluate({problem.task_id: problem}, [sample])
                   if e["type"] == "sample_finished"]
    used = CLOCK.seconds() - before
    CLOCK.leave_cgroup()
    print(results[0].status, used)
""")


@pytest.mark.slow
def test_the_cpu_clock_counts_a_program_that_ran_in_the_standard_sandbox() -> None:
    """getrusage misses what bubblewrap's processes use; the bench's cgroup must not."""
    if not CPUACCT.exists():
        pytest.skip("no cgroup v1 cpuacct hierarchy here")
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    done = subprocess.run([sys.executable, "-c", BURN, str(REPO_ROOT)], cwd=REPO_ROOT,
                          capture_output=True, text=True, check=False)
    if "cannot make a cpuacct group" in done.stderr or "no cgroup" in done.stderr:
        pytest.skip(done.stderr.strip().splitlines()[0])
    assert done.returncode == 0, done.stderr[-2000:]
    status, used = done.stdout.split()
    assert status == "passed"
    assert float(used) >= 0.6, f"the clock saw {used} s of the sandbox's 0.6 s"
