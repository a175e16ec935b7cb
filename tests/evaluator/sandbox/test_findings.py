"""One test per isolation finding of research/sandbox-and-speed.md, proving it is closed."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from sandbox_programs import LIMITS, Sandbox, observed, python, status_of

from evaluator.sandbox.backends import get_backend
from evaluator.sandbox.session import RunnerSession
from tests.evaluator.sandbox.python_jobs import PYTHON_ENV, PYTHON_MOUNTS, python_job


def _host_status(pid: int) -> str:
    return Path(f"/proc/{pid}/status").read_text()


@pytest.mark.parametrize("sandbox", ["bwrap"], indirect=True)
def test_bwrap_is_not_launched_as_root(sandbox: Sandbox) -> None:
    """Finding 1: bwrap launched by root kept every capability, and a read-only bind was
    remounted read-write and written through. bwrap now runs as nobody on the host."""
    process = sandbox.session.process
    assert process is not None
    cgroup = sandbox.session.cgroup
    members = cgroup.members() if cgroup else [process.pid]
    assert members
    for pid in members:
        status = _host_status(pid)
        uids = re.search(r"Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", status)
        assert uids is not None
        assert {int(u) for u in uids.groups()} == {65534}, status
        capabilities = re.search(r"CapEff:\s+([0-9a-f]+)", status)
        assert capabilities is not None
        assert int(capabilities.group(1), 16) == 0
    # And the attack itself, from inside.
    attack = """
MS_REMOUNT, MS_BIND = 32, 4096
remount = attempt(lambda: libc_call("mount", None, b"/opt/toolchain", None,
                                    MS_REMOUNT | MS_BIND, None))
write = attempt(lambda: open("/opt/toolchain/lib.txt", "w").write("owned"))
shadow = attempt(lambda: open("/etc/shadow").read())
root_home = attempt(lambda: os.listdir("/root"))
report(remount=remount, write=write, shadow=shadow, root_home=root_home)
"""
    seen = observed(sandbox.python(python(attack)))
    assert all(value.startswith("refused") for value in seen.values()), seen
    assert (sandbox.decoys.readonly_mount / "lib.txt").read_text() == "original toolchain file\n"


@pytest.mark.parametrize("sandbox", ["gvisor"], indirect=True)
def test_gvisor_shows_no_host_file_and_bounds_its_writable_storage(sandbox: Sandbox) -> None:
    """Finding 2: `runsc do` showed the whole host file system read-only and kept its writes
    in host memory without a bound. We run an OCI bundle with an empty read-only root,
    a few read-only binds, and a size-limited tmpfs."""
    process = sandbox.session.process
    assert process is not None
    assert "do" not in process.args
    workdir = sandbox.session.workdir
    assert workdir is not None
    config = json.loads((workdir / "bundle" / "config.json").read_text())
    assert config["root"]["readonly"] is True
    rootfs = workdir / "bundle" / "rootfs"
    # Nothing in the root but empty mount points and the merged-/usr links.
    assert all(path.is_dir() or path.is_symlink() or path.stat().st_size == 0
               for path in rootfs.rglob("*"))
    writable = [m for m in config["mounts"] if "rw" in m.get("options", [])]
    assert writable == []
    tmpfs = [m for m in config["mounts"] if m["type"] == "tmpfs"]
    assert [m["destination"] for m in tmpfs] == ["/tmp"]
    assert f"size={LIMITS.scratch_mb * 1024 * 1024}" in tmpfs[0]["options"]
    probe = """
visible = {path: os.path.exists(path) for path in P["paths"]}
written = 0
try:
    with open("fill", "wb") as handle:
        while True:
            handle.write(b"x" * 1024 * 1024)
            handle.flush()
            written += 1
except OSError as exc:
    stopped = exc.errno
report(visible=visible, written_mb=written, stopped=stopped,
       root=attempt(lambda: open("/written-to-root", "w")))
"""
    paths = ["/root", "/home", "/work", "/var", str(Path.home()), str(sandbox.decoys.root)]
    seen = observed(sandbox.python(python(probe, paths=paths), file_size_mb=1024))
    assert not any(seen["visible"].values()), seen["visible"]
    assert seen["stopped"] == 28  # ENOSPC at the tmpfs size, not host memory
    assert seen["written_mb"] <= LIMITS.scratch_mb
    assert seen["root"].startswith("refused")


FORKS_REFUSED = 200
"""How many refused forks the bomb below keeps pressing for, once at its limit."""


@pytest.mark.parametrize("sandbox", ["gvisor"], indirect=True)
def test_a_fork_bomb_does_not_crash_the_gvisor_sentry(sandbox: Sandbox) -> None:
    """Finding 3: a fork bomb under a host pids limit crashed the Sentry. RLIMIT_NPROC
    inside stops the bomb long before the (much higher) host limit.

    The bomb stops on events, not on a clock: once it has been refused FORKS_REFUSED
    times (or after 1,000 forks, should nothing refuse it). Given two seconds instead,
    it made fewer forks than the limit on a busy machine and was never refused.
    """
    bomb = """
count = 0
refused = 0
while refused < P["refused"] and count < 1000:
    try:
        if posix.fork() == 0:
            time.sleep(3600)  # holds its place until the runner's sweep
            posix._exit(0)
        count += 1
    except OSError:
        refused += 1
report(count=count, refused=refused)
"""
    starts = sandbox.session.starts
    answer = sandbox.python(python(bomb, refused=FORKS_REFUSED))
    seen = observed(answer)
    assert answer["steps"][-1]["exit_code"] == 0  # it ended by itself, after the report
    # (gVisor lets a process make `processes` children, one more than Linux would.)
    assert seen["count"] <= LIMITS.processes
    assert seen["refused"] == FORKS_REFUSED
    assert sandbox.session.cgroup is not None
    assert sandbox.session.cgroup.pids_refused() == 0  # the host limit was never reached
    assert sandbox.session.alive  # the Sentry survived the bomb and the sweep after it
    assert status_of(sandbox.python(python("report(ok=1)"))) == "passed"
    assert sandbox.session.starts == starts  # and it was the same runner that ran this


def test_rlimit_nproc_binds_every_sandboxed_program(sandbox: Sandbox) -> None:
    """Finding 4: RLIMIT_NPROC does not bind root. No program runs as root in any backend,
    and the limit holds."""
    bomb = """
class RLimit(ctypes.Structure):
    _fields_ = [("cur", ctypes.c_ulong), ("max", ctypes.c_ulong)]
limit = RLimit()
libc_call("getrlimit", 6, ctypes.byref(limit))
count = 0
try:
    while count < 1000:
        if posix.fork() == 0:
            time.sleep(3600)  # holds its place until the job ends
            posix._exit(0)
        count += 1
except OSError:
    pass
report(uid=posix.getuid(), nproc=limit.cur, count=count)
"""
    seen = observed(sandbox.python(python(bomb)))
    assert seen["uid"] != 0
    assert seen["nproc"] == LIMITS.processes
    assert seen["count"] <= LIMITS.processes


def test_the_none_backend_bounds_a_root_fork_bomb_with_a_pids_cgroup() -> None:
    """Finding 4 for `none`: its runner is the worker's own user, root here, which
    RLIMIT_NPROC does not bind; the session's pids cgroup does."""
    if os.geteuid() != 0:
        pytest.skip("the worker is not root: RLIMIT_NPROC binds it")
    session = RunnerSession(get_backend("none"), limits=LIMITS, mounts=PYTHON_MOUNTS,
                            env=PYTHON_ENV)
    with session:
        if session.cgroup is None:
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail("CI runs as root: the session must be able to create cgroups")
            pytest.skip("no cgroup could be created here")
        # A bounded bomb: even unconfined it would stop at 400 processes.
        code = python("""
count = 0
try:
    while count < 400:
        if posix.fork() == 0:
            time.sleep(3600)  # holds its place until the job ends
            posix._exit(0)
        count += 1
except OSError:
    pass
report(uid=posix.getuid(), count=count)
""")
        cgroup = session.cgroup
        answer = session.run(python_job(mode="plain", source=code, limits=LIMITS.to_dict()))
        seen = observed(answer)
        assert seen["uid"] == 0
        assert seen["count"] < cgroup.pids_limit
        assert cgroup.pids_refused() > 0
