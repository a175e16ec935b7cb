"""The web-vs-CLI bench's account of where each path's lane time went: lanes rebuilt from
the chunks' times, idle time between chunks and at the end, and the programs' own time
with the timeouts apart."""

from __future__ import annotations

import datetime as dt

import pytest

from bench import web_vs_cli
from bench.web_vs_cli import lanes_cli, lanes_web, program_times

START = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    return START + dt.timedelta(seconds=seconds)


def test_program_times_keep_the_timeouts_apart_and_count_the_retried() -> None:
    totals = program_times([("passed", 0.5, 1), ("timeout", 3.0, 2), ("failed", 0.25, 1),
                            ("timeout", 3.5, 1)])
    assert totals == {"programs": 7.25, "timeouts": 6.5, "timeout_count": 2, "retried": 1}


def test_two_lanes_rebuilt_from_the_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_vs_cli, "LANES", 2)
    # Lane A: chunk 1 (claimed at 1 s, first program at 1.5 s, done at 10 s), then chunk 3
    # (claimed at 10.5 s, done at 20 s). Lane B: chunk 2 (claimed at 2 s, first program at
    # 2.25 s, done at 14 s), then nothing until the run ends at 20 s.
    chunks = [(at(1), at(1.5), at(10)), (at(2), at(2.25), at(14)),
              (at(10.5), at(11), at(20))]
    programs = {"programs": 20.0, "timeouts": 6.0, "timeout_count": 2, "retried": 0}
    figures = lanes_web(20.0, START, chunks, programs)
    assert figures["lane_seconds"] == 40.0
    assert figures["idle_between_chunks"] == pytest.approx(1 + 2 + 0.5)
    assert figures["idle_at_end"] == pytest.approx(6.0)
    assert figures["chunk_start"] == pytest.approx(0.5 + 0.25 + 0.5)
    # Busy lane time (40 - 3.5 - 6) less the chunks' starts and the programs' own time.
    assert figures["between"] == pytest.approx(40 - 3.5 - 6 - 1.25 - 20)
    assert figures["timeouts"] == 6.0


def test_the_cli_s_lane_time_is_all_programs_or_between(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_vs_cli, "LANES", 2)
    figures = lanes_cli(10.0, {"programs": 15.0, "timeouts": 3.0, "timeout_count": 1,
                               "retried": 1})
    assert figures["lane_seconds"] == 20.0
    assert figures["between"] == 5.0


def test_the_breakdown_names_every_path_and_says_when_cpu_was_not_measured() -> None:
    cli = {"lanes": lanes_cli(10.0, program_times([("passed", 4.0, 1)])), "cpu": None}
    web = {"lanes": lanes_web(8.0, START, [(at(0), at(0.5), at(8))],
                              program_times([("passed", 4.0, 1)])),
           "cpu": 9.5, "run_span": 8.0, "canaries": ["rust (2.0 s)"]}
    lines = list(web_vs_cli.breakdown({"default": cli, "no-cache": cli}, {"embedded": web}))
    assert "CLI default" in lines[0]
    assert "CLI no-cache" in lines[0]
    assert "web embedded" in lines[0]
    assert any(line.startswith("CPU seconds") and "not measured" in line and "9.5" in line
               for line in lines)
    assert lines[-1].endswith("canaries run during it: rust (2.0 s)")
