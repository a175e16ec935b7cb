"""bench/common.py's `report_target`: how a page benchmark says whether it met its target,
and fails the command when it did not."""

from __future__ import annotations

import re

import pytest

from bench.common import report_target


def test_a_median_under_the_target_is_reported_ok(capsys) -> None:
    report_target("3 runs · median 120.5 ms", 120.5, 500.0)
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"load average after: [\d.]+ [\d.]+ [\d.]+", lines[0])
    assert lines[1:] == ["3 runs · median 120.5 ms · target 500 ms: ok"]


@pytest.mark.parametrize("median", [500.0, 812.25])
def test_a_median_at_or_over_the_target_is_reported_and_fails(capsys, median) -> None:
    with pytest.raises(SystemExit) as stopped:
        report_target("slowest", median, 500.0)
    assert stopped.value.code == 1
    assert capsys.readouterr().out.splitlines()[1] == "slowest · target 500 ms: OVER"
