"""Service jobs: a long-lived trusted tool (a warm compiler) kept by the runner.

The service here is a small Python program speaking the runner's frame protocol: it
answers `pid` with its process id, `sleep` by never answering, `crash` by exiting, and
anything else by echoing it. It runs under `none` and under each real backend.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from sandbox_programs import REAL_BACKENDS, require_backend

from evaluator.sandbox.backends import get_backend
from evaluator.sandbox.base import SandboxLimits
from evaluator.sandbox.session import RunnerSession

SERVICE = r"""
import os, struct, sys, time
def read():
    head = sys.stdin.buffer.read(4)
    if len(head) < 4:
        sys.exit(0)
    (count,) = struct.unpack(">i", head)
    items = []
    for _ in range(count):
        (length,) = struct.unpack(">i", sys.stdin.buffer.read(4))
        items.append(sys.stdin.buffer.read(length))
    return items
def write(items):
    sys.stdout.buffer.write(struct.pack(">i", len(items)) + b"".join(
        struct.pack(">i", len(i)) + i for i in items))
    sys.stdout.buffer.flush()
while True:
    request = read()
    if request[0] == b"pid":
        write([b"0", b"", str(os.getpid()).encode(), str(os.getuid()).encode()])
    elif request[0] == b"sleep":
        time.sleep(3600)
    elif request[0] == b"crash":
        sys.stderr.write("giving up\n"); sys.stderr.flush()
        os._exit(5)
    elif request[0] == b"garbage":
        sys.stdout.buffer.write(struct.pack(">i", 2) + struct.pack(">i", -5))
        sys.stdout.buffer.flush()
    elif request[0] == b"big":
        write([b"0", b"", b"x" * 3_000_000])
    else:
        write([b"1", b"said: " + b" ".join(request)])
"""

# Far away, as in sandbox_programs.LIMITS: only the test about a stuck service sets a
# wall-clock limit that decides anything.
LIMITS = SandboxLimits(wall_seconds=60.0, cpu_seconds=3.0, memory_mb=256, processes=16)


@pytest.fixture(scope="module", params=("none", *REAL_BACKENDS))
def session(request: pytest.FixtureRequest) -> Iterator[RunnerSession]:
    if request.param != "none":
        require_backend(request.param)
    backend = get_backend(request.param)
    with RunnerSession(backend, limits=LIMITS) as runner:
        runner.python = backend.python()  # type: ignore[attr-defined]
        yield runner


def ask(session: RunnerSession, *request: str, wall: float = LIMITS.wall_seconds) -> dict[str, Any]:
    argv = [session.python, "-I", "-S", "-c", SERVICE]  # type: ignore[attr-defined]
    limits = {**LIMITS.to_dict(), "wall_seconds": wall, "cpu_seconds": 10 ** 7}
    return session.run({"kind": "service", "limits": limits, "request": list(request),
                        "service": {"name": "echo", "argv": argv, "limits": limits}})


def outputs(answer: dict[str, Any]) -> list[str]:
    return [base64.b64decode(item).decode() for item in answer["outputs"]]


def test_one_service_answers_many_requests(session: RunnerSession) -> None:
    first = ask(session, "pid")
    second = ask(session, "pid")
    assert first["steps"][0]["exit_code"] == 0
    assert outputs(first)[0] == outputs(second)[0], "the service was not kept"
    echoed = ask(session, "hello", "world")
    assert echoed["steps"][0]["exit_code"] == 1
    assert echoed["steps"][0]["stderr"] == "said: hello world"
    if session.backend.name != "none":
        assert outputs(first)[1] == "65534", "the service must not run as root"


def test_a_service_that_does_not_answer_times_out_and_is_replaced(
        session: RunnerSession) -> None:
    before = outputs(ask(session, "pid"))[0]
    stuck = ask(session, "sleep", wall=1.0)
    assert stuck["steps"][0]["timed_out"] is True
    # Not before its limit, and by this request's limit, not the far larger default.
    assert 1000 <= stuck["steps"][0]["wall_ms"] < 1000 * LIMITS.wall_seconds
    after = outputs(ask(session, "pid"))[0]
    assert after != before


def test_a_crashed_service_is_a_service_error_not_a_verdict(session: RunnerSession) -> None:
    before = outputs(ask(session, "pid"))[0]
    crashed = ask(session, "crash")
    assert crashed["steps"] == []
    assert "the echo service failed" in crashed["service_error"]
    assert "giving up" in crashed["service_error"]
    assert outputs(ask(session, "pid"))[0] != before


def test_large_answers_arrive_whole(session: RunnerSession) -> None:
    answer = ask(session, "big")
    assert len(base64.b64decode(answer["outputs"][0])) == 3_000_000


def test_a_missing_tool_is_a_service_error(session: RunnerSession) -> None:
    limits = {**LIMITS.to_dict(), "cpu_seconds": 10 ** 7}
    answer = session.run({"kind": "service", "limits": limits, "request": ["x"],
                          "service": {"name": "absent", "argv": ["/nonexistent/tool"],
                                      "limits": limits}})
    assert "the absent service failed" in answer["service_error"]
    assert "cannot run /nonexistent/tool" in answer["service_error"]


def test_a_malformed_answer_is_a_service_error(session: RunnerSession) -> None:
    answer = ask(session, "garbage")
    assert answer["steps"] == []
    assert "ValueError" in answer["service_error"]
    assert outputs(ask(session, "pid"))[0], "a fresh service answers the next request"
