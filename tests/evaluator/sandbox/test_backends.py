"""The backends themselves: choosing one, starting and ending runners, cleaning up."""

from __future__ import annotations

import shutil

import pytest
from sandbox_programs import LIMITS, REAL_BACKENDS, backend_reason, observed, python

from evaluator import calibration
from evaluator.sandbox.backends import get_backend
from evaluator.sandbox.bwrap import BwrapBackend
from evaluator.sandbox.gvisor import GvisorBackend
from evaluator.sandbox.session import RunnerSession
from tests.evaluator.sandbox.python_jobs import PYTHON_ENV, PYTHON_MOUNTS, python_job


def test_auto_uncalibrated_chooses_the_strongest_backend_that_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Calibrated, `auto` weighs speed too (tests/evaluator/sandbox/test_levels.py).
    working = [name for name in ("gvisor", "bwrap") if backend_reason(name) is None]
    if not working:
        pytest.skip("no real backend works here")
    monkeypatch.setenv("EVALUATOR_AUTO_CALIBRATION", "off")
    monkeypatch.setattr(calibration, "_auto_choice", None)
    monkeypatch.setattr(calibration, "_auto_decision", None)
    assert calibration.resolve_backend("auto").name == working[0]
    # Tried once, then cached.
    assert calibration.resolve_backend("auto") is calibration.resolve_backend("auto")


def test_a_missing_tool_is_named_in_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert "bubblewrap" in (BwrapBackend().probe() or "")
    assert "runsc" in (GvisorBackend().probe() or "")


def test_auto_passes_over_a_broken_backend_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    if backend_reason("bwrap") is not None:
        pytest.skip("bwrap does not work here")
    monkeypatch.setattr(calibration, "_auto_choice", None)
    monkeypatch.setattr(calibration, "_auto_reasons", {})
    monkeypatch.setattr(GvisorBackend, "probe", lambda self: "broken on purpose")
    assert calibration.resolve_backend("auto").name == "bwrap"
    assert calibration.auto_reasons() == {"gvisor": "broken on purpose"}


@pytest.mark.parametrize("name", REAL_BACKENDS)
def test_a_runner_is_confined_and_everything_goes_when_it_closes(name: str) -> None:
    reason = backend_reason(name)
    if reason is not None:
        pytest.skip(reason)
    session = RunnerSession(get_backend(name), limits=LIMITS)
    with session:
        assert session.info["pid"] == 1
        assert session.info["pid_namespace"] is True
        assert session.info["job_uid"] == 65534
        cgroup = session.cgroup
        workdir = session.workdir
        assert workdir is not None
        assert workdir.is_dir()
        if cgroup is not None:
            assert cgroup.members()
    assert session.process is None
    assert not workdir.exists()
    if cgroup is not None:
        assert all(not path.exists() for path in cgroup.dirs.values())


@pytest.mark.parametrize("name", REAL_BACKENDS)
def test_a_runner_that_died_is_replaced_on_the_next_job(name: str) -> None:
    reason = backend_reason(name)
    if reason is not None:
        pytest.skip(reason)
    with RunnerSession(get_backend(name), limits=LIMITS, mounts=PYTHON_MOUNTS,
                       env=PYTHON_ENV) as session:
        assert session.process is not None
        session.process.kill()
        session.process.wait()
        job = python_job(mode="plain", source=python("report(ok=1)"),
                         limits=LIMITS.to_dict())
        assert observed(session.run(job)) == {"ok": 1}
        assert session.starts == 2
