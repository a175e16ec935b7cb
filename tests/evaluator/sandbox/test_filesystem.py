"""Hostile programs against the file system: write outside scratch, read secrets, remount."""

from __future__ import annotations

import re

import pytest
from sandbox_programs import REPO_ROOT, Sandbox, c, observed, python

from evaluator.languages.python import RUNTIME_TARGET

LANGUAGES = ["python", "c"]

ALLOWED_ROOT = {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "opt", "proc", "sbin",
                "sys", "tmp", "usr"}
ALLOWED_ETC = {"passwd", "group", "hosts", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
               "alternatives",
               # gVisor's runner installs the system-call filter from here (no secret in it).
               "evaluator-seccomp.bpf"}


def _write_targets(sandbox: Sandbox) -> list[str]:
    decoys = sandbox.decoys
    return [
        str(decoys.repo_marker),
        str(decoys.host_tmp_marker),
        f"/root/hostile-{decoys.token}",
        f"/usr/bin/hostile-{decoys.token}",
        f"/etc/hostile-{decoys.token}",
        f"/hostile-{decoys.token}",
        str(decoys.root / "project" / "webapp" / "settings.py"),
        str(decoys.root / "project" / "db.sqlite3"),
        "/opt/toolchain/lib.txt",
        f"/dev/shm/hostile-{decoys.token}",
        f"/dev/hostile-{decoys.token}",
    ]


PY_WRITE = """
outcomes = {}
for path in P["targets"]:
    def write(path=path):
        with open(path, "a") as handle:
            handle.write("owned\\n")
    outcomes[path] = attempt(write)
report(**outcomes)
"""

C_WRITE = r"""
int main(void) {
    const char *targets[] = TARGETS;
    for (int i = 0; targets[i]; i++) {
        int fd = open(targets[i], O_WRONLY | O_CREAT | O_APPEND, 0666);
        int ok = fd >= 0 && write(fd, "owned\n", 6) == 6;
        field_outcome(targets[i], ok);
    }
    report();
    return 0;
}
"""


def _c_string_array(values: list[str]) -> str:
    return "{" + ", ".join('"' + v.replace('"', '\\"') + '"' for v in values) + ", 0}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_writes_outside_the_scratch_directory_never_reach_the_host(
    sandbox: Sandbox, language: str
) -> None:
    targets = _write_targets(sandbox)
    if language == "python":
        answer = sandbox.python(python(PY_WRITE, targets=targets))
    else:
        answer = sandbox.c(c(C_WRITE.replace("TARGETS", _c_string_array(targets))))
    seen = observed(answer)
    # Inside, only the private /tmp may take a write; everything else is read-only or
    # not there at all.
    for path in targets:
        if path.startswith("/tmp/"):
            continue
        assert seen[path].startswith("refused"), (path, seen[path])
    sandbox.decoys.assert_host_unchanged()
    assert (sandbox.decoys.readonly_mount / "lib.txt").read_text() == "original toolchain file\n"


PY_READ = """
found = {}
for path in P["paths"]:
    def read(path=path):
        with open(path, "rb") as handle:
            return handle.read(4096).decode("latin-1")
    found[path] = attempt(read)
found["environ"] = repr(dict(os.environ))
for path in ("/proc/self/environ", "/proc/1/environ", "/proc/1/cmdline"):
    found[path] = attempt(lambda path=path: open(path, "rb").read().decode("latin-1"))
report(**found)
"""

C_READ = r"""
extern char **environ;
int main(void) {
    const char *paths[] = PATHS;
    char buffer[4096];
    for (int i = 0; paths[i]; i++) {
        if (read_file(paths[i], buffer, sizeof buffer)) field(paths[i], buffer);
        else field_outcome(paths[i], 0);
    }
    char env[8192] = "";
    for (char **e = environ; *e; e++) {
        strncat(env, *e, sizeof env - strlen(env) - 2);
        strncat(env, ";", sizeof env - strlen(env) - 1);
    }
    field("environ", env);
    if (read_file("/proc/1/environ", buffer, sizeof buffer)) field("/proc/1/environ", buffer);
    else field_outcome("/proc/1/environ", 0);
    report();
    return 0;
}
"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_secrets_of_the_worker_are_out_of_reach(sandbox: Sandbox, language: str) -> None:
    decoys = sandbox.decoys
    paths = [
        str(decoys.root / "project" / "webapp" / "settings.py"),
        str(decoys.root / "project" / "db.sqlite3"),
        str(decoys.root / "home" / ".ssh" / "id_ed25519"),
        str(decoys.root / "inherited.txt"),
        "/root/.ssh/id_rsa",
        "/root/.ssh/id_ed25519",
        "/root/.bash_history",
        "/etc/shadow",
        str(REPO_ROOT / "pyproject.toml"),
        "/work/shared/DESIGN.md",
    ]
    if language == "python":
        answer = sandbox.python(python(PY_READ, paths=paths))
    else:
        answer = sandbox.c(c(C_READ.replace("PATHS", _c_string_array(paths))))
    seen = observed(answer)
    for path in paths:
        assert seen[path].startswith("refused"), (path, seen[path][:200])
    everything = answer["steps"][-1]["stdout"] + answer["steps"][-1]["stderr"]
    for secret in decoys.all_secrets:
        assert secret not in everything
    assert decoys.env_name not in everything


PY_LIST_ROOT = """
tree = {}
for directory in ("/", "/etc", "/opt", "/usr"):
    tree[directory] = sorted(os.listdir(directory))
writable = []
for root, dirs, files in os.walk("/"):
    if root.startswith(("/proc", "/sys", "/dev/pts")):
        dirs[:] = []
        continue
    if root.count("/") >= 3 and root.startswith(("/usr", "/etc/alternatives")):
        dirs[:] = []  # deep system trees are slow to walk under gVisor; their tops suffice
    if os.access(root, os.W_OK):
        writable.append(root)
tree["writable"] = writable
tree["cwd"] = posix.getcwd()
report(**tree)
"""


def test_the_sandbox_shows_only_a_minimal_root(sandbox: Sandbox) -> None:
    """runsc `do` exposed the host's whole file system; our view has only what runs code."""
    seen = observed(sandbox.python(python(PY_LIST_ROOT)))
    assert set(seen["/"]) <= ALLOWED_ROOT, set(seen["/"]) - ALLOWED_ROOT
    assert {"root", "home", "work", "var", "srv", "mnt"}.isdisjoint(seen["/"])
    assert set(seen["/etc"]) <= ALLOWED_ETC, set(seen["/etc"]) - ALLOWED_ETC
    assert "local" not in seen["/usr"]  # /usr/local may hold anything; it is not bound
    # The runner's files, the fixture's toolchain, and Python's harness (its mount).
    assert set(seen["/opt"]) == {"evaluator", "toolchain", RUNTIME_TARGET.name}
    # The only writable places are the job's own directory and the scratch root.
    assert all(path == "/tmp" or path.startswith("/tmp/") for path in seen["writable"]), seen
    assert seen["cwd"].startswith("/tmp/job-")


PY_PASSWD = """
report(passwd=open("/etc/passwd").read(), home=os.path.expanduser("~"))
"""


def test_passwd_is_generated_and_knows_only_root_and_nobody(sandbox: Sandbox) -> None:
    seen = observed(sandbox.python(python(PY_PASSWD)))
    users = {line.split(":")[0] for line in seen["passwd"].splitlines()}
    assert users == {"root", "nobody"}


PY_REMOUNT = """
MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
outcomes = {}
outcomes["remount_rw"] = attempt(lambda: libc_call(
    "mount", None, b"/opt/toolchain", None, MS_REMOUNT | MS_BIND, None))
outcomes["remount_root_rw"] = attempt(lambda: libc_call(
    "mount", None, b"/", None, MS_REMOUNT, None))
outcomes["tmpfs_over_usr"] = attempt(lambda: libc_call(
    "mount", b"none", b"/usr/bin", b"tmpfs", 0, None))
outcomes["bind_proc_over"] = attempt(lambda: libc_call(
    "mount", b"/tmp", b"/opt/toolchain", None, MS_BIND, None))
outcomes["umount"] = attempt(lambda: libc_call("umount2", b"/opt/toolchain", 2))
def write():
    with open("/opt/toolchain/lib.txt", "w") as handle:
        handle.write("owned")
outcomes["write"] = attempt(write)
outcomes["status"] = open("/proc/self/status").read()
report(**outcomes)
"""

C_REMOUNT = r"""
int main(void) {
    field_outcome("remount_rw",
        mount(NULL, "/opt/toolchain", NULL, MS_REMOUNT | MS_BIND, NULL) == 0);
    field_outcome("remount_root_rw", mount(NULL, "/", NULL, MS_REMOUNT, NULL) == 0);
    field_outcome("tmpfs_over_usr", mount("none", "/usr/bin", "tmpfs", 0, NULL) == 0);
    field_outcome("bind_proc_over", mount("/tmp", "/opt/toolchain", NULL, MS_BIND, NULL) == 0);
    field_outcome("umount", umount2("/opt/toolchain", MNT_DETACH) == 0);
    int fd = open("/opt/toolchain/lib.txt", O_WRONLY | O_TRUNC);
    field_outcome("write", fd >= 0 && write(fd, "owned", 5) == 5);
    char status[4096];
    read_file("/proc/self/status", status, sizeof status);
    field("status", status);
    report();
    return 0;
}
"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_read_only_binds_cannot_be_remounted_writable(sandbox: Sandbox, language: str) -> None:
    """The root-bwrap finding: with capabilities, `mount -o remount,rw` wrote to the host."""
    code = python(PY_REMOUNT) if language == "python" else c(C_REMOUNT)
    seen = observed(sandbox.run(language, code))
    for key in ("remount_rw", "remount_root_rw", "tmpfs_over_usr", "bind_proc_over", "umount",
                "write"):
        assert seen[key].startswith("refused"), (key, seen[key])
    # (C escapes tabs and newlines as "?")
    for name in ("CapEff", "CapPrm"):
        match = re.search(name + r":[\s?]*([0-9a-f]+)", seen["status"])
        assert match is not None, seen["status"]
        assert int(match.group(1), 16) == 0, seen["status"]
    assert (sandbox.decoys.readonly_mount / "lib.txt").read_text() == "original toolchain file\n"


PY_LEAVE_FILES = """
# gVisor's scratch root belongs to the runner, so the first write is refused there.
attempt(lambda: open("/tmp/leak-" + P["token"], "w").write("left behind"))
attempt(lambda: posix.mkdir("/tmp/leak-dir-" + P["token"]))
with open("left-in-job-dir", "w") as handle:
    handle.write("left behind")
report(cwd=posix.getcwd(), tmp=sorted(os.listdir("/tmp")))
"""

PY_LOOK_FOR_FILES = """
report(cwd=posix.getcwd(), tmp=sorted(os.listdir("/tmp")))
"""


def test_no_file_of_one_job_is_there_for_the_next(sandbox: Sandbox) -> None:
    first = observed(sandbox.python(python(PY_LEAVE_FILES, token=sandbox.decoys.token)))
    second = observed(sandbox.python(python(PY_LOOK_FOR_FILES)))
    assert second["tmp"] == [second["cwd"].rsplit("/", 1)[1]]
    assert first["cwd"] != second["cwd"]


PY_FILL_DISK = """
written = 0
error = ""
index = 0
try:
    while written < 512 * 1024 * 1024:
        with open(f"fill-{index}", "wb") as handle:
            for _ in range(4):
                handle.write(b"x" * (1024 * 1024))
                handle.flush()
                written += 1024 * 1024
        index += 1
except OSError as exc:
    error = f"{type(exc).__name__}: errno {exc.errno}"
elsewhere = {}
for path in ("/dev/shm/fill", "/fill", "/opt/fill", "/etc/fill"):
    elsewhere[path] = attempt(lambda path=path: open(path, "wb").write(b"x"))
report(written=written, error=error, elsewhere=elsewhere)
"""


def test_filling_the_disk_stops_at_the_scratch_size(sandbox: Sandbox) -> None:
    """runsc `do` put every write in host memory without a bound; ours stop at scratch_mb."""
    scratch_mb = sandbox.session.limits.scratch_mb
    seen = observed(sandbox.python(python(PY_FILL_DISK)))
    assert "errno 28" in seen["error"]  # ENOSPC
    assert seen["written"] <= scratch_mb * 1024 * 1024
    for path, outcome in seen["elsewhere"].items():
        assert outcome.startswith("refused"), (path, outcome)
    # The scratch is emptied after the job: the next one has its full size again.
    again = observed(sandbox.python(python(PY_FILL_DISK)))
    assert again["written"] >= (scratch_mb - 8) * 1024 * 1024


PY_BIG_FILE = """
written = 0
try:
    with open("big", "wb") as handle:
        while written < 256 * 1024 * 1024:
            handle.write(b"x" * 65536)
            handle.flush()
            written += 65536
except OSError as exc:
    report(written=written, error=exc.errno)
else:
    report(written=written, error=None)
"""


def test_one_file_stops_at_the_file_size_limit(sandbox: Sandbox) -> None:
    seen = observed(sandbox.python(python(PY_BIG_FILE), file_size_mb=2))
    assert seen["error"] == 27  # EFBIG: Python ignores SIGXFSZ, so write() fails
    assert seen["written"] <= 2 * 1024 * 1024

