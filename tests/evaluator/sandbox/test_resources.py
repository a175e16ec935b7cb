"""Hostile programs against resources: memory, output, time. Each ends with a clear status."""

from __future__ import annotations

import pytest
from sandbox_programs import LIMITS, Sandbox, c, observed, python, status_of

from evaluator.languages.base import judge

LANGUAGES = ["python", "c"]

PY_HOG = """
chunks = []
while True:
    chunks.append(bytearray(16 * 1024 * 1024))
"""

C_HOG = r"""
int main(void) {
    for (;;) {
        char *block = malloc(16 << 20);
        if (!block) { fputs("out of memory\n", stderr); return 1; }
        memset(block, 1, 16 << 20);
    }
}
"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_memory_exhaustion_ends_as_memory(sandbox: Sandbox, language: str) -> None:
    code = python(PY_HOG) if language == "python" else c(C_HOG)
    answer = sandbox.run(language, code)
    verdict = judge(answer)
    assert verdict.status == "memory", (verdict.message, answer["steps"][-1])
    assert "memory" in verdict.message


C_HOG_NO_RLIMIT = r"""
int main(void) {
    for (;;) {
        char *block = malloc(16 << 20);
        if (block) memset(block, 1, 16 << 20);
    }
}
"""


def test_memory_beyond_the_rlimit_is_stopped_by_the_cgroup(sandbox: Sandbox) -> None:
    """Without RLIMIT_AS (as for a JVM), the cgroup alone bounds memory, and says so."""
    if sandbox.session.cgroup is None:
        pytest.skip("no cgroup could be created here (not root?)")
    job = {
        "kind": "command", "files": {"main.c": c(C_HOG_NO_RLIMIT)},
        "steps": [
            {"name": "compile", "argv": ["gcc", "-O0", "-o", "main", "main.c"],
             "limits": {"wall_seconds": 60, "cpu_seconds": 60, "memory_mb": 1024},
             "address_space_limit": False},
            # Time is LIMITS', far away: at a busy moment bwrap's hog took 13 s to meet
            # the cgroup, and a 20 s limit nearly turned "memory" into "timeout".
            {"name": "run", "argv": ["./main"], "address_space_limit": False,
             "limits": {"wall_seconds": LIMITS.wall_seconds, "cpu_seconds": LIMITS.cpu_seconds,
                        "memory_mb": 128, "processes": 16, "file_size_mb": 8,
                        "output_bytes": 65536}},
        ],
    }
    answer = sandbox.session.run(job)
    run = answer["steps"][-1]
    assert run.get("oom_killed"), run
    assert judge(answer).status == "memory"
    # The sandbox is usable afterwards (gVisor's is replaced when the OOM killer took it).
    assert observed(sandbox.python(python("report(ok=True)")))["ok"] is True


PY_MANY_HOGS = """
children = []
for _ in range(8):
    pid = posix.fork()
    if pid == 0:
        hoard = []
        try:
            while True:
                hoard.append(bytearray(8 * 1024 * 1024))
        except MemoryError:
            time.sleep(2)  # hold what it got
        posix._exit(0)
    children.append(pid)
for pid in children:
    posix.waitpid(pid, 0)
"""


def test_many_processes_cannot_add_up_past_the_memory_limit(sandbox: Sandbox) -> None:
    """RLIMIT_AS bounds each process; eight of them together meet the cgroup."""
    if sandbox.session.cgroup is None:
        pytest.skip("no cgroup could be created here (not root?)")
    # With time far away (LIMITS') the cgroup always ends it: at a busy moment that took
    # 7-10 s, so a 15 s limit, and accepting "timeout", were needed before.
    answer = sandbox.python(python(PY_MANY_HOGS))
    assert status_of(answer) == "memory", answer["steps"][-1]
    assert observed(sandbox.python(python("report(ok=True)")))["ok"] is True


PY_ENDLESS_PRINT = """
while True:
    print("spam " * 100)
"""

C_ENDLESS_PRINT = r"""
int main(void) {
    for (;;) puts("spam spam spam spam spam spam spam spam spam spam spam spam spam spam");
}
"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_endless_output_is_cut_at_the_output_limit(sandbox: Sandbox, language: str) -> None:
    code = python(PY_ENDLESS_PRINT) if language == "python" else c(C_ENDLESS_PRINT)
    answer = sandbox.run(language, code)
    run = answer["steps"][-1]
    assert run["output_exceeded"]
    assert len(run["stdout"]) < 128 * 1024  # only the head is kept
    verdict = judge(answer)
    assert verdict.error_type == "OutputLimitExceeded"
    assert run["wall_ms"] < sandbox.session.limits.wall_seconds * 1000


PY_SLEEP = """
time.sleep(10 ** 6)
"""

C_SLEEP = r"""
int main(void) { for (;;) pause(); }
"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_sleeping_forever_ends_at_the_wall_clock_limit(sandbox: Sandbox, language: str) -> None:
    code = python(PY_SLEEP) if language == "python" else c(C_SLEEP)
    answer = sandbox.run(language, code, wall_seconds=1.5)
    run = answer["steps"][-1]
    assert run["timed_out"]
    verdict = judge(answer)
    assert verdict.status == "timeout"
    assert "wall-clock" in verdict.message
    # Not before its limit, and by this job's limit, not the suite's far larger default.
    assert 1500 <= run["wall_ms"] < 1000 * LIMITS.wall_seconds


PY_SPIN = """
while True:
    pass
"""


def test_a_busy_loop_ends_at_the_cpu_limit(sandbox: Sandbox) -> None:
    # The wall-clock limit is LIMITS', far away: on a busy machine one second of CPU
    # took 6-8 s of wall under bwrap, and a 10 s limit came close to ending it first.
    answer = sandbox.python(python(PY_SPIN), cpu_seconds=1)
    verdict = judge(answer)
    assert verdict.status == "timeout"
    assert answer["steps"][-1].get("cpu_timed_out")
