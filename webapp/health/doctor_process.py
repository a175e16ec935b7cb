"""Running `python -m evaluator doctor` for one language, in a process of its own.

A fresh process sees the toolchains as they are now (the evaluator remembers a compiler
it found for as long as it lives), cannot take the worker down with it, and can be killed
when it hangs or when the worker stops.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import evaluator
from evaluator.doctor import LanguageCheck

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(evaluator.__file__).resolve().parent.parent
STOP_GRACE = 10.0
"""Seconds a doctor has to close its sandboxes after SIGTERM before it is killed."""

_running: set[subprocess.Popen[str]] = set()
_lock = threading.Lock()


def doctor_check(*, language: str, sandbox: str, timeout: float) -> LanguageCheck:
    """The canary of `language` under `sandbox`, as `python -m evaluator doctor` reports
    it; a doctor that fails or overruns `timeout` is a failed check that says so."""
    started = dt.datetime.now(dt.UTC)
    argv = [sys.executable, "-m", "evaluator", "doctor", "--json", "--language", language,
            "--sandbox", sandbox]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT),
                                                      env.get("PYTHONPATH")]))
    # Same process group as the worker, so that stopping the worker's group stops it too.
    process = subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    with _lock:
        _running.add(process)
    try:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            return _failed(language, sandbox, started,
                           f"the canary did not finish within {timeout:g} s",
                           "the machine may be overloaded or a toolchain hangs; run "
                           f"`python -m evaluator doctor --language {language}` by hand")
    finally:
        with _lock:
            _running.discard(process)
    if process.returncode in (0, 1):
        try:
            checks = json.loads(out)["checks"]
            return LanguageCheck.from_dict(checks[0])
        except (ValueError, KeyError, IndexError, TypeError):
            pass
    tail = " ".join(err.strip().splitlines()[-3:])[-500:] or "it printed nothing"
    return _failed(language, sandbox, started,
                   f"the doctor itself failed (exit status {process.returncode}): {tail}",
                   "run `python -m evaluator doctor` by hand on this machine to see why")


def doctor_processes_stop() -> None:
    """Stop every doctor this process started (the worker is stopping)."""
    with _lock:
        processes = list(_running)
    for process in processes:
        _stop(process)


def _stop(process: subprocess.Popen[str]) -> None:
    # SIGTERM first: the doctor then closes its sandboxes (see evaluator.doctor).
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        process.communicate(timeout=STOP_GRACE)
    except (subprocess.TimeoutExpired, ValueError):
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired, ValueError):
            process.communicate(timeout=STOP_GRACE)


def _failed(language: str, sandbox: str, started: dt.datetime, cause: str,
            hint: str) -> LanguageCheck:
    seconds = (dt.datetime.now(dt.UTC) - started).total_seconds()
    return LanguageCheck(language=language, sandbox=sandbox, backend="", ok=False,
                         seconds=round(seconds, 2),
                         checked_at=started.isoformat(timespec="seconds"),
                         cause=cause, hint=hint)
