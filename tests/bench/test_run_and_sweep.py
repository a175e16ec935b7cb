"""A reference harness's leftovers do not outlive it: `bench.common.run_and_sweep` kills what
the harness's session still runs when the harness ends (CodeGeeX's left looping C++ programs
running for over 20 minutes, beside the next benchmark)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.common import run_and_sweep


def _running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting to be reaped is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def test_an_orphan_the_harness_leaves_is_killed(tmp_path):
    # The "harness" starts a program in the background and ends at once, as a harness
    # whose time limit killed only the program's parent would.
    done = run_and_sweep(["sh", "-c", "sleep 600 & echo $!"], cwd=tmp_path,
                         env=dict(os.environ))
    assert done.returncode == 0
    orphan = int(done.stdout.strip())
    deadline = time.monotonic() + 60  # an event to wait for, not a timing: KILL is sure
    while _running(orphan) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(orphan)


def test_the_harness_output_and_status_are_kept(tmp_path):
    done = run_and_sweep(["sh", "-c", "echo out; echo err >&2; exit 3"], cwd=tmp_path,
                         env=dict(os.environ))
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
