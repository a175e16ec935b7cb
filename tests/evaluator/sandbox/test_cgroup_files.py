"""What a runner's cgroup reads and makes in the cgroup file system, on plain directories:
the counters of its `key value` files, and a new group made after the stale ones of dead
runners are removed."""

from __future__ import annotations

import os
from pathlib import Path

from evaluator.sandbox import cgroups
from evaluator.sandbox.cgroups import SandboxCgroup

DEAD_PID = 99_999_999
"""Above any pid_max: no such process."""


def _v2_group(tmp_path: Path, files: dict[str, str]) -> SandboxCgroup:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return SandboxCgroup({"memory": tmp_path, "pids": tmp_path}, 2)


def test_counters_are_read_by_their_key(tmp_path):
    group = _v2_group(tmp_path, {
        "memory.events": "low 0\nhigh 0\nmax 4\noom 2\noom_kill 3\n",
        "pids.events": "max 7\n",
        "cpu.stat": "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n",
    })
    assert group.oom_kills() == 3
    assert group.pids_refused() == 7
    assert group.cpu_usage_ns() == 1_500_000


def test_a_missing_file_or_key_counts_nothing(tmp_path):
    group = _v2_group(tmp_path, {"memory.events": "oom 1\n"})
    assert group.oom_kills() == 0
    assert group.pids_refused() == 0
    assert group.cpu_usage_ns() is None
    assert SandboxCgroup({"memory": tmp_path, "pids": tmp_path}, 1).cpu_usage_ns() is None


def test_a_new_group_is_made_once_the_dead_runners_groups_are_gone(tmp_path):
    dead = tmp_path / f"evaluator-runner-{DEAD_PID}-0"
    alive = tmp_path / f"evaluator-runner-{os.getpid()}-0"
    dead.mkdir()
    alive.mkdir()
    made = cgroups._new_group(tmp_path, "evaluator-runner-new-1")
    assert made == tmp_path / "evaluator-runner-new-1"
    assert made is not None
    assert made.is_dir()
    assert not dead.exists()
    assert alive.is_dir()


def test_a_group_that_cannot_be_made_is_none(tmp_path):
    assert cgroups._new_group(tmp_path / "absent", "evaluator-runner-x-1") is None
    (tmp_path / "taken").mkdir()
    assert cgroups._new_group(tmp_path, "taken") is None
