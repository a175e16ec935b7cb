"""Hostile programs against the kernel's surface: the system calls a sandbox refuses.

The refusals come from our seccomp filter (EPERM, or ENOSYS where a runtime falls back),
which bwrap installs before it starts the runner and gVisor's runner installs on itself
(where gVisor's Sentry evaluates it before its own implementation of the call). Each
program passes arguments for which the kernel itself, reached, would answer differently
(succeed, or EFAULT on a bad pointer) wherever such arguments exist. Landlock is bwrap's
only.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_programs import LIMITS, Sandbox, observed, python, require_backend, status_of

from evaluator.datasets import load_dataset
from evaluator.engine import Engine, EngineConfig
from evaluator.sandbox.backends import get_backend
from evaluator.sandbox.base import LaunchSpec, SandboxError
from evaluator.sandbox.bwrap import WITH_FILTER, landlock_abi
from evaluator.sandbox.session import RunnerSession
from evaluator.selfcheck import selfcheck
from tests.evaluator.sandbox.python_jobs import PYTHON_ENV, PYTHON_MOUNTS

CALLS = """
libc.syscall.restype = ctypes.c_long

def arg(value):
    if isinstance(value, bytes):
        return ctypes.c_char_p(value)
    return ctypes.c_long(value)

def call(number, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *[arg(a) for a in args])
    if result == 0 and P.get("forks"):
        posix._exit(0)  # a clone that went through: the child leaves at once
    if result > 0 and P.get("forks"):
        posix.waitpid(result, 0)
    if result == -1:
        return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
    return "ok"

buffer = ctypes.create_string_buffer(4096)
handle = ctypes.create_string_buffer(128 + 8)
ctypes.c_uint.from_buffer(handle).value = 128
out = {}
for name, number, args in P["calls"]:
    args = [ctypes.addressof(buffer) if a == "BUF" else
            ctypes.addressof(handle) if a == "HANDLE" else
            a.encode() if isinstance(a, str) else a for a in args]
    out[name] = call(number, *args)
report(**out)
"""

BAD = 1
"""An invalid user-space pointer: a call that reached the kernel would fail with EFAULT."""
AT_FDCWD = -100
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNS = 0x00020000
SIGCHLD = 17

# name, x86-64 number, arguments ("BUF": a zeroed 4 KB buffer; a str: a C string)
FAMILIES: dict[str, tuple[str, list[tuple[str, int, list[object]]]]] = {
    "io_uring": ("ENOSYS", [
        ("io_uring_setup", 425, [1, "BUF"]),
        ("io_uring_enter", 426, [0, 0, 0, 0, 0, 0]),
        ("io_uring_register", 427, [0, 0, 0, 0]),
    ]),
    "clone3": ("ENOSYS", [("clone3", 435, [BAD, 88])]),
    "bpf": ("EPERM", [("bpf", 321, [0, BAD, 72])]),
    "userfaultfd": ("EPERM", [("userfaultfd", 323, [1])]),  # UFFD_USER_MODE_ONLY
    "keyring": ("EPERM", [
        ("keyctl", 250, [0, -3, 1]),  # KEYCTL_GET_KEYRING_ID of the session keyring
        ("add_key", 248, ["user", "evaluator", "secret", 6, -2]),
        ("request_key", 249, ["user", "evaluator", 0, -2]),
    ]),
    "perf_event_open": ("EPERM", [("perf_event_open", 298, [BAD, 0, -1, -1, 0])]),
    "ptrace": ("EPERM", [
        ("ptrace", 101, [0, 0, 0, 0]),  # PTRACE_TRACEME
        ("process_vm_readv", 310, [0, BAD, 1, BAD, 1, 0]),
        ("process_vm_writev", 311, [0, BAD, 1, BAD, 1, 0]),
    ]),
    "mount": ("EPERM", [
        ("mount", 165, [BAD, BAD, BAD, 0, 0]),
        ("umount2", 166, [BAD, 0]),
        ("pivot_root", 155, [BAD, BAD]),
        ("chroot", 161, [BAD]),
        ("open_tree", 428, [AT_FDCWD, "/tmp", 0]),
        ("move_mount", 429, [-1, BAD, -1, BAD, 0]),
        ("fsopen", 430, ["tmpfs", 0]),
        ("fsconfig", 431, [-1, 0, 0, 0, 0]),
        ("fsmount", 432, [-1, 0, 0]),
        ("fspick", 433, [AT_FDCWD, "/tmp", 0]),
        ("mount_setattr", 442, [-1, BAD, 0, BAD, 32]),
    ]),
    "namespaces": ("EPERM", [
        ("unshare_user", 272, [CLONE_NEWUSER]),
        ("unshare_nothing", 272, [0]),
        ("setns", 308, [-1, 0]),
        ("clone_newuser", 56, [CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0]),
        ("clone_newpid", 56, [CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0]),
        ("clone_newns", 56, [CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0]),
    ]),
    "kernel_images": ("EPERM", [
        ("kexec_load", 246, [0, 0, 0, 0]),
        ("kexec_file_load", 320, [-1, -1, 0, BAD, 0]),
        ("init_module", 175, [BAD, 0, BAD]),
        ("finit_module", 313, [-1, BAD, 0]),
        ("delete_module", 176, [BAD, 0]),
    ]),
    "handles": ("EPERM", [
        ("name_to_handle_at", 303, [AT_FDCWD, "/tmp", "HANDLE", "BUF", 0]),
        ("open_by_handle_at", 304, [AT_FDCWD, "HANDLE", 0]),
    ]),
    "machine": ("EPERM", [
        ("swapon", 167, [BAD, 0]),
        ("swapoff", 168, [BAD]),
        ("reboot", 169, [0, 0, 0, 0]),
        ("iopl", 172, [3]),
        ("ioperm", 173, [0, 1, 1]),
        ("syslog", 103, [10, 0, 0]),  # SYSLOG_ACTION_SIZE_BUFFER
    ]),
    "clock": ("EPERM", [
        ("settimeofday", 164, [BAD, 0]),
        ("clock_settime", 227, [0, BAD]),
        ("adjtimex", 159, ["BUF"]),  # modes 0: only reads, and would succeed
        ("clock_adjtime", 305, [0, "BUF"]),
    ]),
    "x32_abi": ("EPERM", [("x32_getpid", 0x40000000 | 39, [])]),
}


def run_calls(sandbox: Sandbox, calls: list[tuple[str, int, list[object]]],
              forks: bool = False) -> dict[str, str]:
    answer = sandbox.python(python(CALLS, calls=calls, forks=forks))
    assert status_of(answer) == "passed", answer["steps"][-1]["stderr"][-2000:]
    return observed(answer)


def assert_still_works(sandbox: Sandbox) -> None:
    answer = sandbox.python(python("report(pid=posix.getpid(), forked=posix.fork() >= 0)"))
    assert status_of(answer) == "passed"
    assert observed(answer)["forked"] is True


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_refuses_each_blocked_call_family(sandbox: Sandbox, family: str) -> None:
    # Under gVisor too: without the filter its Sentry would implement io_uring, keyrings,
    # ptrace and namespaces itself, and answer syslog with its own data.
    expected, calls = FAMILIES[family]
    seen = run_calls(sandbox, calls, forks=family == "namespaces")
    assert seen == {name: expected for name, _, _ in calls}
    assert_still_works(sandbox)


I386_GETPID = """
import mmap
# mov eax, 20 (getpid in the i386 table); int 0x80; ret
code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])
page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
function = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
report(result=function(), pid=posix.getpid())
"""


def test_refuses_the_i386_abi(sandbox: Sandbox) -> None:
    seen = run_calls_raw(sandbox, I386_GETPID)
    if sandbox.name == "gvisor":
        # gVisor serves no i386 calls at all: an error (trixie's runsc: the filter's
        # EPERM; bookworm's: EBADF from the Sentry), never a pid.
        assert isinstance(seen["result"], int), seen
        assert seen["result"] < 0, seen
    else:
        assert seen["result"] == -errno.EPERM, seen
    assert_still_works(sandbox)


def run_calls_raw(sandbox: Sandbox, body: str) -> dict[str, object]:
    answer = sandbox.python(python(body))
    assert status_of(answer) == "passed", answer["steps"][-1]["stderr"][-2000:]
    return observed(answer)


def test_a_forked_child_and_threads_still_work(sandbox: Sandbox) -> None:
    # clone without namespace flags (fork, threads) passes; clone3 falls back to it.
    body = """
import threading
results = []
threads = [threading.Thread(target=lambda: results.append(1)) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
pid = posix.fork()
if pid == 0:
    posix._exit(7)
_, status = posix.waitpid(pid, 0)
report(threads=len(results), child=posix.waitstatus_to_exitcode(status))
"""
    assert run_calls_raw(sandbox, body) == {"threads": 4, "child": 7}


def test_user_namespaces_are_refused_inside(sandbox: Sandbox) -> None:
    # Under gVisor they are its own kernel's, not the host's; but in one, trixie's runsc
    # let a program remount the read-only toolchain read-write.
    body = """
libc.unshare.argtypes = [ctypes.c_int]
report(unshare=attempt(lambda: libc_call("unshare", 0x10000000)))
"""
    seen = run_calls_raw(sandbox, body)
    assert str(seen["unshare"]).startswith("refused: PermissionError"), seen


UNSHARE_USER = (
    "import ctypes, errno; libc = ctypes.CDLL(None, use_errno=True); "
    "result = libc.unshare(0x10000000); "
    "print('unshare', 'ok' if result == 0 else errno.errorcode[ctypes.get_errno()])"
)


def test_bwrap_refuses_user_namespaces_even_without_the_filter() -> None:
    # The same launch with the filter taken out: --disable-userns alone already stops a
    # nested user namespace (the kernel says ENOSPC: the namespace count is used up).
    require_backend("bwrap")
    backend = get_backend("bwrap")
    workdir = Path(tempfile.mkdtemp(prefix="evaluator-userns-"))
    try:
        spec = LaunchSpec(argv=[backend.python(), "-I", "-S", "-c", UNSHARE_USER],
                          workdir=workdir)
        argv = backend.command(spec)
        assert argv[:4] == ["/bin/sh", "-c", WITH_FILTER, "evaluator-seccomp"]
        argv = argv[5:]
        at = argv.index("--seccomp")
        del argv[at:at + 2]
        assert "--disable-userns" in argv
        done = subprocess.run(argv, env=backend.environment(spec), capture_output=True,
                              timeout=60, check=False)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert done.stdout.decode().split() == ["unshare", "ENOSPC"], done


# -- Landlock (bwrap only) ----------------------------------------------------------------

LANDLOCK_PROBE = """
import json, os

def attempt(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return "refused: " + type(exc).__name__

def write(path, text):
    with open(path, "w") as handle:
        handle.write(text)

print(json.dumps(dict(
    comm=attempt(lambda: write("/proc/self/comm", "renamed")),
    mem=attempt(lambda: open("/proc/self/mem", "r+b").close()),
    ptmx=attempt(lambda: os.close(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))),
    usr=attempt(lambda: os.listdir("/usr/bin")),
    scratch=attempt(lambda: write(os.path.join(os.environ["TMPDIR"], "note.txt"), "ok")),
    devnull=attempt(lambda: write("/dev/null", "x")),
)))
"""


def landlock_probe(sandbox: Sandbox) -> dict[str, str]:
    # A command step: exec makes the program dumpable again, so its /proc/self files are
    # its own to write (a forked Python sample inherits the runner's non-dumpable state).
    job = {
        "kind": "command", "files": {"probe.py": LANDLOCK_PROBE},
        "steps": [{"name": "run", "argv": ["/usr/bin/python3", "-I", "probe.py"],
                   "limits": LIMITS.to_dict()}],
    }
    step = sandbox.session.run(job)["steps"][-1]
    assert step["exit_code"] == 0, step
    seen: dict[str, str] = json.loads(step["stdout"])
    return seen


@pytest.fixture(scope="module")
def bwrap_without_landlock() -> Iterator[Sandbox]:
    """A bwrap runner like the others but with Landlock turned off: the control that
    shows the mount view alone would allow what Landlock refuses."""
    require_backend("bwrap")
    session = RunnerSession(get_backend("bwrap"), limits=LIMITS, mounts=PYTHON_MOUNTS,
                            env={**PYTHON_ENV, "EVALUATOR_LANDLOCK": ""})
    with session:
        assert session.info.get("landlock_abi") is None
        yield Sandbox("bwrap", session, decoys=None)


@pytest.fixture(scope="module")
def bwrap_sandbox() -> Iterator[Sandbox]:
    require_backend("bwrap")
    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock")
    with RunnerSession(get_backend("bwrap"), limits=LIMITS, mounts=PYTHON_MOUNTS,
                       env=PYTHON_ENV) as session:
        yield Sandbox("bwrap", session, decoys=None)


def test_landlock_is_active_and_reported(bwrap_sandbox: Sandbox) -> None:
    abi = landlock_abi()
    assert bwrap_sandbox.session.info["landlock_abi"] == abi
    described = get_backend("bwrap").describe()
    assert described["landlock"] == {"active": True, "abi": abi}
    assert described["seccomp"]["default"] == "EPERM"


def test_landlock_refuses_writes_the_mount_view_allows(
        bwrap_sandbox: Sandbox, bwrap_without_landlock: Sandbox) -> None:
    without = landlock_probe(bwrap_without_landlock)
    with_landlock = landlock_probe(bwrap_sandbox)
    # The mounts alone let a program rename itself, open its own memory for writing, and
    # make itself a pseudo-terminal.
    for name in ("comm", "mem", "ptmx"):
        assert without[name] == "ok", without
    assert with_landlock == {"comm": "refused: PermissionError",
                             "mem": "refused: PermissionError",
                             "ptmx": "refused: PermissionError",
                             # what programs need: the view readable, the scratch writable
                             "usr": "ok", "scratch": "ok", "devnull": "ok"}


def test_landlock_binds_every_process_a_program_starts(bwrap_sandbox: Sandbox) -> None:
    # A shell and the shells it starts are confined like the program itself.
    script = ("sh -c 'echo renamed > /proc/self/comm'; echo comm=$?\n"
              "sh -c 'echo note > \"$TMPDIR/note\"'; echo scratch=$?\n")
    job = {
        "kind": "command", "files": {"probe.sh": script},
        "steps": [{"name": "run", "argv": ["/bin/sh", "probe.sh"],
                   "limits": LIMITS.to_dict()}],
    }
    step = bwrap_sandbox.session.run(job)["steps"][-1]
    outcomes = dict(line.split("=") for line in step["stdout"].split())
    assert outcomes["comm"] != "0", step
    assert outcomes["scratch"] == "0", step
    assert "Permission denied" in step["stderr"], step


def test_the_filter_is_cached_by_content() -> None:
    from evaluator.sandbox.seccomp_filter import cache_key, compiled_filter

    path = compiled_filter()
    assert path.name == f"{cache_key()}.bpf"
    assert path.stat().st_size % 8 == 0
    assert Path(path).parent.stat().st_mode & 0o077 == 0


# -- the toolchains under the filter ------------------------------------------------------

@pytest.mark.parametrize("language", ["python", "cpp", "java", "js", "go", "rust"])
def test_every_toolchain_works_under_the_filter(shared_dir: Path, language: str) -> None:
    # Compilers, linkers, the JVM with its warm javac service, Go's build and vet, rustc
    # and Node: each language's first canonical solutions pass under bwrap.
    require_backend("bwrap")
    path = shared_dir / "datasets" / "humaneval-x" / f"humaneval_{language}.jsonl.gz"
    dataset = load_dataset(path=path)
    first = dataclasses.replace(dataset, problems=dataset.problems[:3])
    with Engine(EngineConfig(backend="bwrap", workers=1)) as engine:
        report = selfcheck(first, engine, retry=False)
    assert [(f.task_id, f.status, f.message) for f in report.failures] == []
    assert report.summary().passed == 3


def test_the_gvisor_runner_runs_under_the_filter(sandbox: Sandbox) -> None:
    # Installed by the runner on itself, before any job: every program inherits it.
    if sandbox.name != "gvisor":
        pytest.skip("bwrap installs the filter itself, before the runner starts")
    assert sandbox.session.info["seccomp"] is True
    assert get_backend("gvisor").describe()["seccomp"]["default"] == "EPERM"
    body = """
status = open("/proc/self/status").read()
report(seccomp=[line.split()[1] for line in status.splitlines() if line.startswith("Seccomp:")])
"""
    assert run_calls_raw(sandbox, body)["seccomp"] in ([], ["2"]), "not in filter mode"


def test_a_runner_that_cannot_install_its_filter_does_not_start(tmp_path: Path) -> None:
    # Fail closed: asked to filter, the runner ends before its first job. (Shown with the
    # `none` backend, whose runner is the same file; a broken filter is never installed.)
    broken = tmp_path / "broken.bpf"
    broken.write_bytes(b"\x06\x00\x00")
    for path in (broken, tmp_path / "missing.bpf"):
        session = RunnerSession(get_backend("none"), limits=LIMITS,
                                env={"EVALUATOR_SECCOMP": str(path)})
        with pytest.raises(SandboxError, match="did not start"):
            session.start()
        session.close()


def test_gvisor_is_unavailable_without_its_filter(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from evaluator.sandbox import gvisor, seccomp_filter

    monkeypatch.setattr(seccomp_filter, "SYSTEM_PYTHON", "/bin/false")
    monkeypatch.setattr(seccomp_filter, "_built", [])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if shutil.which(gvisor.RUNSC) is None or os.geteuid() != 0:
        pytest.skip("gVisor needs runsc and root here")
    reason = gvisor.GvisorBackend().probe()
    assert reason is not None
    assert "system-call filter" in reason
    with pytest.raises(seccomp_filter.FilterUnavailable):
        gvisor.GvisorBackend().command(LaunchSpec(argv=["true"], workdir=tmp_path))


def test_bwrap_is_unavailable_without_its_filter(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Fail closed: no python3-seccomp (here: an interpreter that cannot import it) means
    # no bwrap at all, with the reason, never bwrap without the filter.
    from evaluator.sandbox import seccomp_filter
    from evaluator.sandbox.bwrap import BwrapBackend

    monkeypatch.setattr(seccomp_filter, "SYSTEM_PYTHON", "/bin/false")
    monkeypatch.setattr(seccomp_filter, "_built", [])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    reason = BwrapBackend().probe()
    assert reason is not None
    assert "system-call filter" in reason
    assert "python3-seccomp" in reason
    with pytest.raises(seccomp_filter.FilterUnavailable):
        BwrapBackend().command(LaunchSpec(argv=["true"], workdir=tmp_path))
    assert not list(tmp_path.rglob("*.bpf"))
