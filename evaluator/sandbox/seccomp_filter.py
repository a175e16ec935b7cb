"""The system-call allowlist that bwrap applies to the whole sandbox (`bwrap --seccomp`).

The filter is compiled by libseccomp, through its Python bindings (Debian's
`python3-seccomp`), which exist only for the system's `/usr/bin/python3`, not for our
virtual environment's interpreter. So this file has two halves:
- run as a script by `/usr/bin/python3` (standard library and `seccomp` only, nothing from
  the evaluator), it writes the compiled BPF program to stdout;
- imported by the evaluator, `compiled_filter()` runs that script once, keeps the program
  in a cache file named by the hash of this file's text and of libseccomp's version, and
  hands bwrap the path.

The filter is built on the host, before the sandbox exists, so that it covers the runner
from its first instruction: nothing inside the sandbox ever runs unfiltered.

What it allows is what the toolchains need (Python, gcc/g++/as/ld/mold, the JVM, Go,
rustc, Node). Everything else fails with EPERM, except calls a runtime probes and falls
back from on ENOSYS (`clone3`, `io_uring_*`). Calls from another ABI (i386 through
`int 0x80`, x32) fail with EPERM too.
"""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SYSTEM_PYTHON = "/usr/bin/python3"

CLONE_NEW_FLAGS = (
    0x00000080  # CLONE_NEWTIME
    | 0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)

ALLOWED = (
    # files and descriptors
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
    "preadv2", "pwritev2", "open", "openat", "openat2", "creat", "close", "close_range",
    "lseek", "dup", "dup2", "dup3", "fcntl", "flock", "fsync", "fdatasync", "sync",
    "syncfs", "sync_file_range", "truncate", "ftruncate", "fallocate", "fadvise64",
    "readahead", "sendfile", "copy_file_range", "splice", "tee", "vmsplice", "ioctl",
    "stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs", "access",
    "faccessat", "faccessat2", "readlink", "readlinkat", "getdents", "getdents64",
    "getcwd", "chdir", "fchdir", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat",
    "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "chmod",
    "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat", "utime", "utimes",
    "utimensat", "futimesat", "umask", "mknod", "mknodat", "getxattr", "lgetxattr",
    "fgetxattr", "listxattr", "llistxattr", "flistxattr", "setxattr", "lsetxattr",
    "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "inotify_init",
    "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "memfd_create",
    "pipe", "pipe2", "eventfd", "eventfd2", "signalfd", "signalfd4", "timerfd_create",
    "timerfd_settime", "timerfd_gettime",
    # waiting
    "poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl",
    "epoll_wait", "epoll_pwait", "epoll_pwait2", "futex", "futex_waitv", "nanosleep",
    "clock_nanosleep", "pause", "restart_syscall",
    # memory
    "brk", "mmap", "munmap", "mprotect", "mremap", "madvise", "msync", "mincore", "mlock",
    "mlock2", "munlock", "mlockall", "munlockall", "membarrier", "pkey_alloc", "pkey_free",
    "pkey_mprotect", "get_mempolicy", "set_mempolicy", "mbind",
    # processes and threads (clone is allowed below, without namespace flags)
    "fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid",
    "kill", "tkill", "tgkill", "pidfd_open", "pidfd_send_signal", "rt_sigaction",
    "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend", "rt_sigtimedwait",
    "rt_sigqueueinfo", "rt_tgsigqueueinfo", "sigaltstack", "getpid", "getppid", "gettid",
    "getpgid", "setpgid", "getpgrp", "getsid", "setsid", "getuid", "geteuid", "getgid",
    "getegid", "getresuid", "getresgid", "getgroups", "setuid", "setgid", "setreuid",
    "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid", "capget",
    "capset", "prctl", "arch_prctl", "set_tid_address", "set_robust_list",
    "get_robust_list", "rseq", "sched_yield", "sched_getaffinity", "sched_setaffinity",
    "sched_getparam", "sched_setparam", "sched_getscheduler", "sched_setscheduler",
    "sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval",
    "sched_getattr", "sched_setattr", "getpriority", "setpriority", "ioprio_get",
    "getrlimit", "setrlimit", "prlimit64", "getrusage", "times", "sysinfo", "uname",
    "getcpu", "getrandom", "seccomp", "landlock_create_ruleset", "landlock_add_rule",
    "landlock_restrict_self",
    # time
    "clock_gettime", "clock_getres", "gettimeofday", "time", "alarm", "getitimer",
    "setitimer", "timer_create", "timer_settime", "timer_gettime", "timer_getoverrun",
    "timer_delete",
    # sockets (the network namespace has only `lo`) and System V / POSIX IPC (private)
    "socket", "socketpair", "bind", "listen", "accept", "accept4", "connect",
    "getsockname", "getpeername", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg",
    "recvmmsg", "shutdown", "setsockopt", "getsockopt", "shmget", "shmat", "shmdt",
    "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd", "msgrcv",
    "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
    "mq_getsetattr",
)
"""Allowed with any arguments."""

FALL_BACK = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register")
"""Refused with ENOSYS, so that glibc uses `clone` and libuv its thread pool."""

PERSONALITIES = (0x0, 0x0008, 0x20000, 0x20008, 0xFFFFFFFF)
"""`personality` values allowed: Linux, its 32-bit variant, UNAME26, and the query."""

REFUSED_FAMILIES = {
    "io_uring": ("io_uring_setup", "io_uring_enter", "io_uring_register"),
    "bpf": ("bpf",),
    "userfaultfd": ("userfaultfd",),
    "keyring": ("keyctl", "add_key", "request_key"),
    "perf": ("perf_event_open",),
    "ptrace": ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"),
    "mount": ("mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount",
              "fspick", "move_mount", "open_tree", "mount_setattr"),
    "namespaces": ("unshare", "setns"),
    "kernel": ("kexec_load", "kexec_file_load", "init_module", "finit_module",
               "delete_module", "reboot", "swapon", "swapoff", "syslog", "acct",
               "quotactl", "iopl", "ioperm", "modify_ldt"),
    "handles": ("open_by_handle_at", "name_to_handle_at"),
    "clock": ("settimeofday", "clock_settime", "clock_adjtime", "adjtimex"),
    "host_names": ("sethostname", "setdomainname"),
}
"""What the filter refuses, by family, for documentation and tests: none of these is in
`ALLOWED`, so the default action refuses them (the last check below makes sure)."""


def _build(out_fd: int) -> None:
    """Compile the filter and write it to `out_fd` (run under /usr/bin/python3)."""
    import seccomp  # type: ignore[import-not-found]  # Debian: python3-seccomp

    refused = {name for family in REFUSED_FAMILIES.values() for name in family}
    overlap = refused & set(ALLOWED)
    if overlap:
        raise SystemExit(f"refused calls are also allowed: {sorted(overlap)}")
    rules = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errno.EPERM))
    # Calls of another ABI (x32 numbers, i386 through int 0x80) are not the native
    # architecture's: refused before any of the rules below are looked at.
    rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.ERRNO(errno.EPERM))
    # A binary search on the call number instead of a chain of ~270 comparisons: about 16
    # instructions per call instead of about 200. gVisor's Sentry runs the filter for
    # every call number whenever a task forks (to cache the answers that do not depend on
    # arguments), so the chain cost each fork there several milliseconds.
    rules.set_attr(seccomp.Attr.CTL_OPTIMIZE, 2)
    for name in ALLOWED:
        rules.add_rule(seccomp.ALLOW, name)
    for name in FALL_BACK:
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), name)
    rules.add_rule(seccomp.ALLOW, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_NEW_FLAGS, 0))
    for persona in PERSONALITIES:
        rules.add_rule(seccomp.ALLOW, "personality", seccomp.Arg(0, seccomp.EQ, persona))
    with os.fdopen(out_fd, "wb", closefd=False) as out:
        rules.export_bpf(out)


# -- the host side ----------------------------------------------------------------------

class FilterUnavailable(RuntimeError):
    """The filter cannot be built here (no python3-seccomp, no cache directory)."""


_lock = threading.Lock()
_built: list[Path] = []
"""The filter this process uses, once found or built."""


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evaluator" / "seccomp"


_VERSION_SCRIPT = """
import ctypes.util, os, sys
sys.path.append("/usr/lib/python3/dist-packages")
import seccomp
library = ctypes.util.find_library("seccomp")
for name in (library, "/usr/lib/%s-linux-gnu/%s" % (os.uname().machine, library)):
    if name and os.path.exists(name):
        library = os.path.realpath(name)
print(library, os.stat(seccomp.__file__).st_size, seccomp.system_arch())
"""
"""Prints what the compiled program depends on besides our rules (libseccomp's version,
in its file name)."""


def cache_key() -> str:
    """The hash that names the compiled filter: this file's rules and libseccomp's version."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    probe = subprocess.run(
        [SYSTEM_PYTHON, "-I", "-S", "-c", _VERSION_SCRIPT],
        capture_output=True, timeout=60, check=False,
    )
    if probe.returncode != 0:
        said = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        raise FilterUnavailable(
            f"{SYSTEM_PYTHON} cannot import libseccomp's bindings "
            f"(Debian package: python3-seccomp): {said[-1] if said else probe.returncode}")
    digest.update(probe.stdout)
    return digest.hexdigest()[:32]


def compiled_filter() -> Path:
    """The compiled filter's file, built on first use; raises FilterUnavailable."""
    with _lock:
        if _built and _built[0].exists():
            return _built[0]
        try:
            key = cache_key()
        except (OSError, subprocess.SubprocessError) as exc:
            raise FilterUnavailable(f"{SYSTEM_PYTHON} did not run: {exc}") from exc
        directory = _cache_dir()
        path = directory / f"{key}.bpf"
        if not path.exists():
            _compile_to(path)
        _built[:] = [path]
        return path


def _compile_to(path: Path) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".part")
    except OSError as exc:
        raise FilterUnavailable(f"no cache directory for the filter: {exc}") from exc
    try:
        with os.fdopen(handle, "wb") as out:
            done = subprocess.run(
                [SYSTEM_PYTHON, "-I", "-S", __file__, "--build"], stdout=out,
                stderr=subprocess.PIPE, timeout=60, check=False,
            )
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip()
            raise FilterUnavailable(f"libseccomp could not build the filter: {said[-500:]}")
        size = os.path.getsize(temporary)
        if size == 0 or size % 8:
            raise FilterUnavailable(f"the compiled filter has a bad size ({size} bytes)")
        # Whole or not at all: a reader never sees a half-written program.
        os.replace(temporary, path)
    except (OSError, subprocess.SubprocessError) as exc:
        raise FilterUnavailable(f"the filter was not built: {exc}") from exc
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


if __name__ == "__main__" and sys.argv[1:] == ["--build"]:
    # -S leaves out site-packages; Debian's bindings live in dist-packages.
    sys.path.append("/usr/lib/python3/dist-packages")
    _build(sys.stdout.fileno())
