"""Fixtures for the hostile-code suite: real sandboxes, decoy secrets, host-side witnesses.

Every isolation test runs under each real backend (`bwrap`, `gvisor`). A backend that
does not work on this machine is skipped with the reason, except in CI (`CI=true`), where
both must work. The `none` backend is never given hostile programs: it is the host, and
a program that calls `kill(-1, SIGKILL)` there as root would take the machine down.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluator.sandbox.backends import get_backend
from evaluator.sandbox.base import Mount
from evaluator.sandbox.session import RunnerSession
from tests.evaluator.sandbox.python_jobs import PYTHON_ENV, PYTHON_MOUNTS

# The hostile programs and helpers live beside this file; test modules import them too.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sandbox_programs import (  # noqa: E402
    LIMITS,
    REAL_BACKENDS,
    AbstractUnixListener,
    LoopbackListener,
    Sandbox,
    make_decoys,
    require_backend,
)


@pytest.fixture(scope="module", params=REAL_BACKENDS)
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    name: str = request.param
    require_backend(name)
    base = Path(tempfile.mkdtemp(prefix=f"evaluator-hostile-{name}-"))
    decoys = make_decoys(base)
    previous = os.environ.get(decoys.env_name)
    os.environ[decoys.env_name] = decoys.env_value
    # An inheritable descriptor open in the worker when the sandbox starts.
    decoys.inherited_fd = os.open(decoys.root / "inherited.txt", os.O_RDONLY)
    os.set_inheritable(decoys.inherited_fd, True)
    session = RunnerSession(
        get_backend(name), limits=LIMITS,
        mounts=[Mount(decoys.readonly_mount, Path("/opt/toolchain")), *PYTHON_MOUNTS],
        env=PYTHON_ENV,
    )
    try:
        session.start()
        yield Sandbox(name, session, decoys)
    finally:
        session.close()
        os.close(decoys.inherited_fd)
        if previous is None:
            os.environ.pop(decoys.env_name, None)
        else:
            os.environ[decoys.env_name] = previous
    try:
        decoys.assert_host_unchanged()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def listener() -> Iterator[LoopbackListener]:
    server = LoopbackListener()
    # The listener works: the host itself can reach it (that is the one connection a
    # test expects to find counted).
    with socket.create_connection(("127.0.0.1", server.port), timeout=60):
        pass
    assert server.wait_for_accepted(1), "the host could not reach its own listener"
    assert server.accepted == 1
    yield server
    server.close()


@pytest.fixture
def unix_listener() -> Iterator[AbstractUnixListener]:
    server = AbstractUnixListener()
    yield server
    server.close()
