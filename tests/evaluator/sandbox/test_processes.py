"""Hostile programs against processes: fork bombs, daemons, signals, /proc, fds, privileges."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator

import pytest
from sandbox_programs import LIMITS, Sandbox, c, observed, python, status_of

LANGUAGES = ["python", "c"]


@pytest.fixture
def witness() -> Iterator[subprocess.Popen[bytes]]:
    """A host process that hostile programs try to kill."""
    process = subprocess.Popen(["sleep", "120"])
    yield process
    process.kill()
    process.wait()


PY_LIST_PROCESSES = """
me = posix.getpid()
others = {}
for name in os.listdir("/proc"):
    if name.isdigit() and int(name) != me:
        others[name] = attempt(lambda name=name: open(f"/proc/{name}/cmdline", "rb").read())
report(me=me, others=others, uid=posix.getuid())
"""


def assert_sandbox_is_clean(sandbox: Sandbox, deaths: int) -> None:
    """No runner ended by itself since `deaths` was read, and only the runner is left
    besides the next job, which runs correctly.

    The number of starts is not checked: the session replaces a gVisor runner on purpose
    after whichever job leaves its Sentry with many host tasks. A fork bomb raises that
    count by a load-dependent amount (640 to 1,420 here, either side of the threshold),
    and every later job adds a few, so the replacement may come after a later job, even
    one of the previous test, and this test's first job then starts a runner.
    """
    cgroup = sandbox.session.cgroup
    assert cgroup is None or cgroup.pids_refused() == 0, "the host pids limit was reached"
    answer = sandbox.python(python(PY_LIST_PROCESSES))
    assert status_of(answer) == "passed"
    seen = observed(answer)
    assert set(seen["others"]) == {"1"}, seen["others"]
    assert sandbox.session.process is None or sandbox.session.alive, "the runner ended"
    assert sandbox.runner_deaths == deaths, "a runner ended by itself and was replaced"


PY_FORK_BOMB = """
fork = posix.fork
while True:
    try:
        fork()
    except OSError:
        pass
"""

C_FORK_BOMB = r"""
int main(void) {
    for (;;) fork();
}
"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_fork_bomb_times_out_and_leaves_nothing(sandbox: Sandbox, language: str) -> None:
    """A fork bomb under a host pids limit crashed runsc's Sentry: RLIMIT_NPROC stops it."""
    deaths = sandbox.runner_deaths
    sandbox.ensure_runner()
    session = sandbox.session
    runner, cgroup = session.process, session.cgroup
    assert runner is not None
    code = python(PY_FORK_BOMB) if language == "python" else c(C_FORK_BOMB)
    # The CPU limit (LIMITS') is far above 3 s: the wall-clock limit is the one that ends
    # it. (With both at 3 s, gVisor's C bomb reached 2.8 s of CPU, a race.)
    answer = sandbox.run(language, code, wall_seconds=3)
    assert status_of(answer) == "timeout"  # the runner answered: no crash
    assert answer["steps"][-1]["timed_out"]
    if session.process is runner:
        assert session.alive
        assert cgroup is None or cgroup.pids_refused() == 0, "the host pids limit was reached"
    else:
        # Replaced on purpose (its Sentry kept many host tasks): nothing of it is left.
        assert session.process is None
        assert runner.poll() is not None
        if cgroup is not None:
            assert cgroup.members() == []
            assert not any(path.exists() for path in cgroup.dirs.values())
    assert_sandbox_is_clean(sandbox, deaths)


PY_THREAD_BOMB = """
import threading
threads = 0
error = ""
try:
    while threads < 10000:
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        threads += 1
except RuntimeError as exc:
    error = str(exc)
report(threads=threads, error=error)
"""


def test_a_thread_bomb_stops_at_the_process_limit(sandbox: Sandbox) -> None:
    deaths = sandbox.runner_deaths
    # Memory to spare: with 256 MB, RLIMIT_AS stopped Python's threads (8 MB stacks) at
    # eight or nine, and the process limit was never reached.
    seen = observed(sandbox.python(python(PY_THREAD_BOMB), memory_mb=4096))
    limit = sandbox.session.limits.processes
    # Threads count as processes, and so do the program and (bwrap) the runner; gVisor
    # lets the program go one past the limit.
    assert limit - 4 <= seen["threads"] <= limit
    assert "can't start new thread" in seen["error"]
    assert_sandbox_is_clean(sandbox, deaths)


PY_DAEMON = """
first = posix.fork()
if first == 0:
    posix.setsid()
    if posix.fork() == 0:
        # A detached grandchild, in its own session: no process group reaches it.
        for fd in range(3):
            posix.close(fd)
        time.sleep(300)
    posix._exit(0)
posix.waitpid(first, 0)
report(left="a daemon")
"""

C_DAEMON = r"""
int main(void) {
    pid_t first = fork();
    if (first == 0) {
        setsid();
        if (fork() == 0) {
            close(0); close(1); close(2);
            sleep(300);
        }
        _exit(0);
    }
    waitpid(first, NULL, 0);
    field("left", "a daemon");
    report();
    return 0;
}
"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_detached_daemon_does_not_outlive_its_job(sandbox: Sandbox, language: str) -> None:
    deaths = sandbox.runner_deaths
    code = python(PY_DAEMON) if language == "python" else c(C_DAEMON)
    answer = sandbox.run(language, code)
    assert observed(answer)["left"] == "a daemon"
    # A daemon that held the job's pipes would keep it open until its wall-clock limit.
    assert answer["steps"][-1]["wall_ms"] < 1000 * LIMITS.wall_seconds
    assert_sandbox_is_clean(sandbox, deaths)


PY_KILL_RUNNER = """
import signal
outcomes = {"parent": posix.getppid()}
for target in (posix.getppid(), 1):
    for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGSTOP, signal.SIGHUP):
        outcomes[f"{target}-{sig.name}"] = attempt(lambda: posix.kill(target, sig))
time.sleep(0.2)
report(**outcomes)
"""

C_KILL_RUNNER = r"""
int main(void) {
    int signals[] = {SIGKILL, SIGTERM, SIGINT, SIGSTOP, SIGHUP, 0};
    pid_t targets[] = {getppid(), 1};
    field_int("parent", getppid());
    for (int t = 0; t < 2; t++)
        for (int s = 0; signals[s]; s++) {
            char key[32];
            snprintf(key, sizeof key, "%d-%d", (int)targets[t], signals[s]);
            field_outcome(key, kill(targets[t], signals[s]) == 0);
        }
    usleep(200000);
    report();
    return 0;
}
"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_runner_cannot_be_killed_or_stopped(sandbox: Sandbox, language: str) -> None:
    deaths = sandbox.runner_deaths
    code = python(PY_KILL_RUNNER) if language == "python" else c(C_KILL_RUNNER)
    answer = sandbox.run(language, code)
    observed(answer)  # the answer came back: the runner was there to send it
    # (No process: the session replaced the runner on purpose; see assert_sandbox_is_clean.)
    assert sandbox.session.process is None or sandbox.session.alive
    assert_sandbox_is_clean(sandbox, deaths)


PY_KILL_EVERYTHING = """
import signal
outcomes = {}
outcomes["all"] = attempt(lambda: posix.kill(-1, signal.SIGKILL))
for name, pid in P["host"].items():
    outcomes[name] = attempt(lambda pid=pid: posix.kill(pid, signal.SIGKILL))
report(**outcomes)
"""

C_KILL_EVERYTHING = r"""
int main(void) {
    pid_t host[] = HOST_PIDS;
    for (int i = 0; host[i]; i++) {
        char key[32];
        snprintf(key, sizeof key, "%d", (int)host[i]);
        field_outcome(key, kill(host[i], SIGKILL) == 0);
    }
    field_outcome("all", kill(-1, SIGKILL) == 0);
    report();
    return 0;
}
"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_signals_never_reach_host_processes(
    sandbox: Sandbox, witness: subprocess.Popen[bytes], language: str
) -> None:
    deaths = sandbox.runner_deaths
    host = {"witness": witness.pid, "worker": os.getpid(), "init": 1}
    if language == "python":
        answer = sandbox.python(python(PY_KILL_EVERYTHING, host=host))
        seen = observed(answer)
        assert seen["witness"].startswith("refused")
        assert seen["worker"].startswith("refused")
    else:
        pids = "{" + f"{witness.pid}, {os.getpid()}, 0" + "}"
        answer = sandbox.c(c(C_KILL_EVERYTHING.replace("HOST_PIDS", pids)))
        seen = observed(answer)
        assert seen[str(witness.pid)].startswith("refused")
    assert witness.poll() is None, "a host process was killed"
    assert_sandbox_is_clean(sandbox, deaths)


PY_PROC = """
texts = {}
for name in os.listdir("/proc"):
    if name.isdigit():
        for item in ("cmdline", "environ"):
            texts[f"{name}/{item}"] = attempt(
                lambda name=name, item=item: open(f"/proc/{name}/{item}", "rb").read())
texts["mem"] = attempt(lambda: open("/proc/1/mem", "rb").read(16))
texts["fd"] = attempt(lambda: os.listdir("/proc/1/fd"))
texts["maps"] = attempt(lambda: open("/proc/1/maps").read(100))
texts["ptrace"] = attempt(lambda: libc_call("ptrace", 16, 1, None, None))  # PTRACE_ATTACH
texts["fd_open"] = {fd: attempt(lambda fd=fd: posix.open(f"/proc/1/fd/{fd}", posix.O_WRONLY))
                    for fd in range(3, 12)}
texts["me"] = str(posix.getpid())
report(**texts)
"""


def test_proc_shows_no_host_process_and_not_the_runner_insides(sandbox: Sandbox) -> None:
    answer = sandbox.python(python(PY_PROC))
    seen = observed(answer)
    everything = answer["steps"][-1]["stdout"]
    assert "pytest" not in everything
    assert sandbox.decoys.env_value not in everything
    for key in ("mem", "ptrace"):
        assert seen[key].startswith("refused"), (key, seen[key])
    # The runner's descriptors (the host protocol pipes among them) cannot be opened.
    assert all(v.startswith("refused") for v in seen["fd_open"].values()), seen["fd_open"]
    if sandbox.name == "bwrap":
        # Same user as the runner, which is therefore not dumpable. (gVisor shows
        # /proc/1/environ and maps to other users; the runner's environment holds
        # nothing but the sandbox's own settings.)
        for key in ("fd", "maps", "1/environ"):
            assert seen[key].startswith("refused"), (key, seen[key])
    pids = {key.split("/")[0] for key in seen if "/" in key}
    assert pids == {"1", seen["me"]}, pids  # the runner and this job, nothing else


PY_POISON = """
class RLimit(ctypes.Structure):
    _fields_ = [("cur", ctypes.c_ulong), ("max", ctypes.c_ulong)]
low = RLimit(8, 8)
outcomes = {}
for resource_id, name in ((7, "nofile"), (6, "nproc"), (0, "cpu")):
    outcomes[name] = attempt(lambda resource_id=resource_id: libc_call(
        "prlimit", 1, resource_id, ctypes.byref(low), None))
outcomes["priority"] = attempt(lambda: libc_call("setpriority", 0, 1, 19))
report(**outcomes)
"""


def test_a_runner_whose_limits_were_lowered_is_replaced(sandbox: Sandbox) -> None:
    deaths = sandbox.runner_deaths
    answer = sandbox.python(python(PY_POISON))
    seen = observed(answer)
    if seen["nofile"].startswith("ok"):
        # bwrap: the program runs as the runner's own user and may prlimit() it; the
        # runner notices, answers, and ends, and the next job gets a fresh one.
        assert answer.get("runner_poisoned")
        assert not sandbox.session.alive
    else:
        assert not answer.get("runner_poisoned")
    following = observed(sandbox.python(python(PY_LIST_PROCESSES)))
    assert set(following["others"]) == {"1"}
    assert sandbox.runner_deaths == deaths


PY_FDS = """
def is_open(fd):
    try:
        posix.fstat(fd)
        return True
    except OSError:
        return False
# (listdir's own descriptor is listed too, and closed by now)
fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd") if is_open(int(fd)))
targets = {fd: attempt(lambda fd=fd: posix.readlink(f"/proc/self/fd/{fd}")) for fd in fds}
forged = json.dumps({"id": None, "steps": [{"name": "run", "exit_code": 0}],
                     "records": [{"kind": "done", "tests": 0}]}) + "\\n"
written = 0
for fd in range(0, 1024):
    if fd in (1, 2):
        continue
    try:
        posix.write(fd, forged.encode())
        written += 1
    except OSError:
        pass
contents = {}
for fd in fds:
    if fd > 3:
        contents[fd] = attempt(lambda fd=fd: posix.read(fd, 200))
report(fds=fds, targets=targets, contents=contents)
"""

C_FDS = r"""
int main(void) {
    const char *forged = "{\"id\": null, \"steps\": [], \"records\": [{\"kind\": \"done\"}]}\n";
    char open_fds[4096] = "";
    for (int fd = 0; fd < 1024; fd++) {
        if (fcntl(fd, F_GETFD) != -1) {
            char number[16];
            snprintf(number, sizeof number, "%d,", fd);
            strncat(open_fds, number, sizeof open_fds - strlen(open_fds) - 1);
            if (fd > 2) write(fd, forged, strlen(forged));
        }
    }
    field("fds", open_fds);
    report();
    return 0;
}
"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_no_descriptor_of_the_runner_or_the_worker_is_inherited(
    sandbox: Sandbox, language: str
) -> None:
    deaths = sandbox.runner_deaths
    if language == "python":
        answer = sandbox.python(python(PY_FDS))
        seen = observed(answer)
        assert seen["fds"] == [0, 1, 2, 3], seen["targets"]  # 3: this job's report pipe
        assert answer["forged_lines"] >= 1  # the spray reached the report pipe, unsigned
        assert status_of(answer) == "passed"  # the runner's real answer, not the forged one
    else:
        answer = sandbox.c(c(C_FDS))
        assert observed(answer)["fds"] == "0,1,2,"
        assert answer["steps"][-1]["exit_code"] == 0
    assert sandbox.decoys.fd_secret not in answer["steps"][-1]["stdout"]
    assert_sandbox_is_clean(sandbox, deaths)


PY_PRIVILEGES = """
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x20000, 0x40000000
MS_REMOUNT, MS_BIND = 32, 4096
outcomes = {"uid": posix.getuid(), "euid": posix.geteuid(), "gid": posix.getgid(),
            "groups": posix.getgroups(), "status": open("/proc/self/status").read()}
outcomes["disks"] = [d for d in os.listdir("/dev") if d.startswith(("sd", "vd", "nvme", "xvd"))]
outcomes["setuid"] = attempt(lambda: libc_call("setuid", 0))
outcomes["mknod"] = attempt(lambda: posix.mknod("disk", 0o600 | 0o60000, posix.makedev(8, 0)))
outcomes["open_disk"] = attempt(lambda: open("disk", "rb").read(512))
outcomes["kmsg"] = attempt(lambda: open("/dev/kmsg", "rb").read(10))
outcomes["cgroup"] = attempt(lambda: open("/sys/fs/cgroup/cgroup.procs", "w").write("1"))
outcomes["sysrq"] = attempt(lambda: open("/proc/sysrq-trigger", "w").write("b"))
outcomes["hostname"] = attempt(lambda: libc_call("sethostname", b"owned", 5))
outcomes["unshare_net"] = attempt(lambda: libc_call("unshare", CLONE_NEWNET))
# The escalation chain: a user namespace of our own, where we hold every capability,
# then a mount namespace, then a read-write remount of the read-only toolchain.
outcomes["unshare_user"] = attempt(lambda: libc_call("unshare", CLONE_NEWUSER | CLONE_NEWNS))
outcomes["remount"] = attempt(lambda: libc_call(
    "mount", None, b"/opt/toolchain", None, MS_REMOUNT | MS_BIND, None))
outcomes["tmpfs"] = attempt(lambda: libc_call("mount", b"none", b"/opt", b"tmpfs", 0, None))
outcomes["write"] = attempt(lambda: open("/opt/toolchain/lib.txt", "w").write("owned"))
report(**outcomes)
"""


def test_programs_run_unprivileged_and_cannot_gain_privileges(sandbox: Sandbox) -> None:
    """RLIMIT_NPROC does not bind root: programs never run as root, in any sense."""
    seen = observed(sandbox.python(python(PY_PRIVILEGES)))
    assert seen["uid"] == seen["euid"] == 65534
    assert seen["gid"] == 65534
    assert seen["groups"] in ([], [65534])
    for name in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        match = re.search(name + r":\s*([0-9a-f]+)", seen["status"])
        if match is not None:
            assert int(match.group(1), 16) == 0, (name, match.group(1))
    if sandbox.name == "bwrap":
        assert seen["mknod"].startswith("refused")
    # (gVisor's tmpfs lets anyone make a device node; it leads to no host device.)
    for key in ("setuid", "open_disk", "kmsg", "cgroup", "sysrq", "hostname", "unshare_net",
                "remount", "tmpfs", "write"):
        assert seen[key].startswith("refused"), (key, seen[key])
    # The filter refuses it under both (bwrap's --disable-userns too). Inside gVisor's own
    # user namespace, trixie's runsc let the remount above succeed.
    assert seen["unshare_user"].startswith("refused")
    assert seen["disks"] == []
    assert (sandbox.decoys.readonly_mount / "lib.txt").read_text() == "original toolchain file\n"
