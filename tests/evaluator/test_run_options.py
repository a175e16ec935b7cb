"""`RunOptions` as a run stores them: one `to_dict`, one `from_dict`."""

from __future__ import annotations

import pytest

from evaluator.records import RunOptions
from evaluator.sandbox.base import SandboxLimits, wall_backstop


def test_a_run_without_options_gets_the_sandboxs_defaults():
    options = RunOptions.from_dict({})
    defaults = SandboxLimits()
    assert options.limits == SandboxLimits.for_timeout(defaults.cpu_seconds,
                                                       memory_mb=defaults.memory_mb)
    assert (options.task, options.tests, options.patched, options.profile) == (
        "generation", "hidden", False, "strict")
    assert options.compile_limits == RunOptions().compile_limits


def test_stored_run_options_give_the_limits_they_name():
    stored = {"sanitize": True, "profile": "human-eval", "profile_version": "1",
              "timeout_seconds": 3.0, "memory_mb": 512, "task": "generation",
              "tests": "example", "harness_version": "1.2.0"}
    options = RunOptions.from_dict(stored)
    assert options.limits.cpu_seconds == 3.0
    assert options.limits.wall_seconds == wall_backstop(3.0)
    assert options.limits.memory_mb == 512
    assert (options.profile, options.tests) == ("human-eval", "example")


def test_to_dict_and_from_dict_go_round():
    options = RunOptions(task="translation", tests="example", patched=True, profile="multipl-e",
                         limits=SandboxLimits.for_timeout(15.0, memory_mb=2048),
                         limit_source="profile")
    assert RunOptions.from_dict(options.to_dict()) == options
    assert options.to_dict() == {"task": "translation", "tests": "example", "patched": True,
                                 "profile": "multipl-e", "timeout_seconds": 15.0,
                                 "memory_mb": 2048, "limit_source": "profile"}


@pytest.mark.parametrize(("data", "message"), [
    ({"task": "completion"}, "unknown task 'completion'; known: generation, translation"),
    ({"tests": "hidden\u200b"}, "unknown test set 'hidden\\\\u200b'; known: hidden, example"),
    ({"timeout_seconds": "soon"}, "could not convert string to float"),
])
def test_bad_stored_options_are_refused_by_name(data, message):
    with pytest.raises(ValueError, match=message):
        RunOptions.from_dict(data)


def test_a_compilers_wall_clock_is_a_backstop_not_its_limit():
    """CPU time decides a compile, as it decides a run: a busy machine stretches a
    compile's wall time, and a wall limit as tight as the CPU one failed correct programs
    (a full-set C++ plus program: 28 s of CPU, 92 s of wall time at load 11)."""
    limits = RunOptions().compile_limits
    assert limits.cpu_seconds == 60.0
    assert limits.wall_seconds == wall_backstop(limits.cpu_seconds) >= 2.5 * limits.cpu_seconds
    assert RunOptions.from_dict({"timeout_seconds": 3.0}).compile_limits == limits
