"""Re-score evaluated samples under other harness profiles, and compare the profiles.

A result records the facts of its execution (`SampleResult.facts`), so most samples are
re-judged under another profile without running anything (`Profile.rejudge`). A sample is
run again only when the new profile runs a different program for it (post-processing,
or a setting its language declares in `Language.profile_knobs`: Java's `-ea`, Go's vet)
or gives it more time than the limit it was stopped at (`Profile.needs_execution`). The
comparison then lists, per profile, pass@k and the problems whose verdict depends on the
profile, each with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from evaluator.engine import Engine
from evaluator.languages import registry
from evaluator.metrics import pass_at_k
from evaluator.profiles import Profile, ProfileKnob, get_profile
from evaluator.records import Problem, Sample, SampleResult, task_order

EngineFactory = Callable[[Profile], Engine]
"""Makes an engine that evaluates under the given profile (its options carry the name)."""


@dataclass
class Rescored:
    profile: Profile
    results: list[SampleResult]
    """In the order of the samples given."""
    rejudged: int = 0
    """Samples judged again from their recorded facts, without running."""
    executed: int = 0
    """Samples run again under the profile."""
    reasons: dict[str, int] = field(default_factory=dict)
    """Why samples were run again, with their counts."""


def rescore(
    samples: Sequence[Sample],
    results: Sequence[SampleResult],
    problems: Mapping[str, Problem],
    profile: Profile,
    engine_factory: EngineFactory,
) -> Rescored:
    """`results` (one per sample, same order) judged under `profile`, running only the
    samples its rules cannot decide from their facts."""
    if len(samples) != len(results):
        raise ValueError(f"{len(samples)} samples but {len(results)} results")
    out: list[SampleResult | None] = [None] * len(results)
    again: list[int] = []
    reasons: dict[str, int] = {}
    for position, (sample, result) in enumerate(zip(samples, results, strict=True)):
        why = _why_run_again(sample, result, problems, profile)
        if why is None:
            out[position] = profile.rejudge(result)
        else:
            again.append(position)
            reasons[why] = reasons.get(why, 0) + 1
    if again:
        with engine_factory(profile) as engine:
            chosen = [samples[i] for i in again]
            for event in engine.evaluate(problems, chosen):
                if event["type"] == "sample_finished":
                    out[again[event["position"]]] = event["result"]
    final = [r for r in out if r is not None]
    if len(final) != len(results):
        raise RuntimeError("the engine did not report every sample it was given")
    return Rescored(profile=profile, results=final, rejudged=len(results) - len(again),
                    executed=len(again), reasons=reasons)


def _why_run_again(sample: Sample, result: SampleResult, problems: Mapping[str, Problem],
                   profile: Profile) -> str | None:
    problem = problems.get(sample.task_id)
    if problem is None:
        return None  # the engine would only say so again; keep the recorded verdict
    before = get_profile(result.profile or "strict")
    language = problem.language
    text = sample.completion
    if before.prepare_text(text, language) != profile.prepare_text(text, language):
        return f"{profile.name}'s post-processing changes the text"
    for knob in _knobs(language):
        value = profile.setting(knob)
        if before.setting(knob) != value and (knob.matters is None
                                              or knob.matters(problem, text)):
            return f"{profile.name} {knob.reason(value)}"
    if problem.call_cases and before.input_time_limits != profile.input_time_limits:
        return (f"{profile.name} limits each input's time" if profile.input_time_limits
                else f"{before.name}'s per-input time limits decided this verdict")
    return profile.needs_execution(result)


def _knobs(language: str) -> tuple[ProfileKnob, ...]:
    """The profile settings that change how `language`'s programs run (none for a
    language this process does not know)."""
    cls = registry.language_class(language) if registry.canonical_name(language) else None
    return cls.profile_knobs if cls is not None else ()


# -- comparing profiles ---------------------------------------------------------------


@dataclass(frozen=True)
class Dependent:
    """A problem whose verdicts differ between profiles."""

    task_id: str
    passed: dict[str, int]
    """Profile name -> samples that pass under it."""
    reason: str


@dataclass(frozen=True)
class Comparison:
    profiles: list[str]
    pass_at_1: dict[str, float]
    samples: int
    dependent: list[Dependent]

    def changed_problems(self, profile: str, baseline: str) -> int:
        return sum(1 for d in self.dependent if d.passed[profile] != d.passed[baseline])


def compare(rescored: Sequence[Rescored]) -> Comparison:
    """pass@1 per profile, and the problems whose verdict depends on the profile."""
    names = [r.profile.name for r in rescored]
    by_task: dict[str, dict[str, list[SampleResult]]] = {}
    for entry in rescored:
        for result in entry.results:
            by_task.setdefault(result.task_id, {}).setdefault(entry.profile.name, []).append(
                result)
    pass_at_1: dict[str, float] = {}
    for name in names:
        scores = [pass_at_k(len(per[name]), sum(r.passed for r in per[name]), 1)
                  for per in by_task.values() if per.get(name)]
        pass_at_1[name] = sum(scores) / len(scores) if scores else 0.0
    dependent: list[Dependent] = []
    for task_id, per in by_task.items():
        passed = {name: sum(r.passed for r in per.get(name, [])) for name in names}
        if len(set(passed.values())) > 1:
            dependent.append(Dependent(task_id, passed, _reason(per, names)))
    dependent.sort(key=lambda d: task_order(d.task_id))
    samples = len(rescored[0].results) if rescored else 0
    return Comparison(profiles=names, pass_at_1=pass_at_1, samples=samples,
                      dependent=dependent)


def _reason(per: Mapping[str, list[SampleResult]], names: Sequence[str]) -> str:
    """Why one problem's verdicts differ: the first sample that passes under one profile
    and not another, with what the other profile said about it."""
    for passing in names:
        for failing in names:
            for a, b in zip(per.get(passing, []), per.get(failing, []), strict=False):
                if a.passed and not b.passed:
                    return (f"passes under {passing}, {b.status} under {failing}: "
                            f"{b.message or b.error_type or b.status}")
    return "the profiles' verdicts differ"


