"""Landlock for the programs a runner starts: read the view, write only the scratch.

This file runs inside the sandbox (standard library only), beside `runner.py`. The
runner builds one ruleset at start-up (`Ruleset.build`) and every child it forks calls
`restrict` before it runs anything else; the child then closes the ruleset, so a forked
Python program cannot add rules to the ruleset the next job's child will use.

The mount view already decides what exists; Landlock narrows what is reachable inside it
from the kernel's side, whatever a mount flag says: `/proc` is readable but not writable
(`/proc/self/mem`, `comm`, `attr`, ...), `/dev` offers only its harmless devices (no
`/dev/ptmx`), and only the scratch directory takes writes. Directories can be listed
everywhere: the mounts decide which names exist. A kernel without Landlock
(older than 5.13, or built without it, or gVisor) leaves all this to the mounts.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct

CREATE_RULESET = 444
ADD_RULE = 445
RESTRICT_SELF = 446
"""System-call numbers, the same on every architecture (added after the unified table)."""
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The rights a rule on a file (not a directory) may hold."""
READ = EXECUTE | READ_FILE | READ_DIR
DEVICES_WRITABLE = ("/dev/null", "/dev/zero", "/dev/full")
DEVICES_READABLE = ("/dev/random", "/dev/urandom")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def abi_version() -> int:
    """The kernel's Landlock ABI, or 0 where there is none (or it is turned off)."""
    version = _libc.syscall(ctypes.c_long(CREATE_RULESET), None, ctypes.c_size_t(0),
                            ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(int(version), 0)


def handled_rights(abi: int) -> int:
    rights = (1 << 13) - 1  # everything of ABI 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


class Ruleset:
    """A ruleset fd ready for `restrict`, and what it grants."""

    def __init__(self, fd: int, abi: int) -> None:
        self.fd = fd
        self.abi = abi

    @classmethod
    def build(cls, *, readable: list[str], writable: list[str]) -> Ruleset | None:
        """The ruleset for the view: None when the kernel has no Landlock."""
        abi = abi_version()
        if abi < 1:
            return None
        handled = handled_rights(abi)
        attr = struct.pack("=Q", handled)
        fd = _check(_libc.syscall(ctypes.c_long(CREATE_RULESET), attr,
                                  ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)),
                    "landlock_create_ruleset")
        ruleset = cls(fd, abi)
        try:
            # Names may be listed anywhere (the mounts decide which exist); contents are
            # what the rules below guard.
            ruleset._allow("/", READ_DIR, handled)
            for path in readable:
                ruleset._allow(path, READ, handled)
            for path in writable:
                ruleset._allow(path, handled, handled)
            for path in DEVICES_WRITABLE:
                ruleset._allow(path, READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV, handled)
            for path in DEVICES_READABLE:
                ruleset._allow(path, READ_FILE, handled)
        except BaseException:
            os.close(fd)
            raise
        return ruleset

    def _allow(self, path: str, rights: int, handled: int) -> None:
        try:
            target = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return  # not in this view (a toolchain another language needs)
        try:
            if not stat.S_ISDIR(os.fstat(target).st_mode):
                rights &= FILE_RIGHTS
            # struct landlock_path_beneath_attr is packed: u64 rights, s32 fd.
            attr = struct.pack("=Qi", rights & handled, target)
            _check(_libc.syscall(ctypes.c_long(ADD_RULE), ctypes.c_int(self.fd),
                                 ctypes.c_int(RULE_PATH_BENEATH), attr, ctypes.c_uint32(0)),
                   f"landlock_add_rule({path})")
        finally:
            os.close(target)

    def restrict(self) -> None:
        """Confine the calling process (and all it starts), then close the ruleset.

        Needs `no_new_privs`, which bwrap's launch (setpriv, --seccomp) has already set.
        """
        try:
            _check(_libc.syscall(ctypes.c_long(RESTRICT_SELF), ctypes.c_int(self.fd),
                                 ctypes.c_uint32(0)), "landlock_restrict_self")
        finally:
            os.close(self.fd)
