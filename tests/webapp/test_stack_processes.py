"""What the stack reads of processes from /proc, to find a process group's members when it
stops: each process's files, the fields of its stat line, and the live members of a group."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from webapp.stack import group_members, process_files, process_stats

# A command name with a space and a parenthesis, as a process may give itself.
RENAMED = ("import ctypes, time; "
           "ctypes.CDLL(None).prctl(15, b'odd) name', 0, 0, 0); "
           "print('ready', flush=True); time.sleep(60)")


@pytest.fixture
def leader() -> Iterator[subprocess.Popen[str]]:
    """A process that leads a group of its own and has renamed itself."""
    process = subprocess.Popen([sys.executable, "-c", RENAMED], start_new_session=True,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        yield process
    finally:
        process.kill()
        process.wait()


def test_process_files_names_each_process_with_its_file(leader):
    command = dict(process_files("cmdline"))[leader.pid].split(b"\0")
    assert command[1:3] == [b"-c", RENAMED.encode()]


def test_a_stat_line_is_read_past_a_command_name_with_spaces_and_parentheses(leader):
    fields = dict(process_stats())[leader.pid]
    assert fields[1] == str(os.getpid()), "the parent"
    assert fields[2] == str(leader.pid), "the process group"


def test_a_group_has_its_live_members_and_none_once_they_are_reaped(leader):
    assert group_members(leader.pid) == [leader.pid]
    assert leader.pid not in group_members(os.getpgid(0))
    leader.kill()
    # Killed but not yet waited for: a zombie, no longer a member.
    while (dict(process_stats()).get(leader.pid) or ["Z"])[0] != "Z":
        time.sleep(0.01)
    assert group_members(leader.pid) == []
    leader.wait()
    assert group_members(leader.pid) == []
