"""Reads about harness profiles: the profiles page, a run's "Harness profiles" section and
its JSON, and one sample's verdict under each profile.

A run's profile is in its options; a run from before profiles has none recorded and was
judged by the strict rules (`Run.profile_name`). Nothing here runs a program: a sample's
verdict under another profile is shown only where its recorded facts decide it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from django.urls import reverse
from django.utils.http import urlencode

from evaluator.engine import Engine
from evaluator.profiles import DATASET_DEFAULTS, PROFILES, Profile
from evaluator.records import Problem, SampleResult
from evaluator.records import Sample as EvaluatorSample
from evaluator.rescoring import rescore
from webapp.runs.domain.sample_rows import result_from_json
from webapp.runs.models import ProfileComparison, Run, Sample


def profiles_url(profile: str = "") -> str:
    base = reverse("runs:profiles")
    return f"{base}#profile-{profile}" if profile else base


# -- the profiles page ------------------------------------------------------------------------
@dataclass(frozen=True)
class ProfileEntry:
    profile: Profile
    default_for: list[str]
    """The datasets (by name) whose own reference harness it is."""
    limits: list[tuple[str, str]]
    """(language, seconds) of its time limits; empty when the run's own limit decides."""
    pass_rules: list[tuple[str, str]]


def profile_entries() -> list[ProfileEntry]:
    entries = []
    for profile in PROFILES.values():
        defaults = sorted(name for name, default in DATASET_DEFAULTS.items()
                          if default == profile.name)
        entries.append(ProfileEntry(
            profile=profile, default_for=defaults,
            limits=[("every language" if lang == "*" else lang, f"{seconds:g} s")
                    for lang, seconds in profile.time_limits.items()],
            pass_rules=[("every other language" if lang == "*" else lang, rule)
                        for lang, rule in profile.pass_rules.items()],
        ))
    return entries


# -- a run's section --------------------------------------------------------------------------
@dataclass(frozen=True)
class ProfileRow:
    name: str
    version: str
    title: str
    url: str
    is_run_profile: bool
    pass_at_k: dict[int, dict[str, float]]
    changed: int
    rejudged: int
    executed: int
    reasons: dict[str, int]
    current: bool
    """The stored version is the profile's version today."""


@dataclass(frozen=True)
class DependentRow:
    task_id: str
    url: str
    n: int
    passed: list[tuple[str, int]]
    reason: str


@dataclass(frozen=True)
class ProfilesSection:
    run_profile: Profile
    recorded: bool
    """False for a run from before profiles: strict judged it, nothing names it."""
    comparison: ProfileComparison | None
    rows: list[ProfileRow] = field(default_factory=list)
    ks: list[int] = field(default_factory=list)
    dependent: list[DependentRow] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.comparison.status if self.comparison is not None else "none"

    @property
    def in_progress(self) -> bool:
        return self.comparison is not None and self.comparison.in_progress

    @property
    def outdated(self) -> bool:
        """A profile's rules changed (or one was added) since the comparison was made."""
        if self.status != ProfileComparison.Status.DONE:
            return False
        return (any(not row.current for row in self.rows)
                or {row.name for row in self.rows} != set(PROFILES))


def run_comparison(run: Run) -> ProfileComparison | None:
    """The run's comparison, from the run's own fetch when it joined it (`get_run_for_user`)."""
    try:
        return run.profile_comparison
    except ProfileComparison.DoesNotExist:
        return None


def run_profile(run: Run) -> Profile:
    """The profile that judged the run. A name this server no longer knows (a profile
    renamed or removed since) is shown as recorded, without its points; so is an earlier
    version of a profile it knows (evalplus 1 before its per-group limits), whose points
    today's would misstate. A run that recorded no version is taken as judged by today's."""
    known = PROFILES.get(run.profile_name)
    recorded = run.options.get("profile_version")
    if known is not None and (recorded is None or str(recorded) == known.version):
        return known
    version = "?" if recorded is None else str(recorded)
    if known is None:
        return Profile(name=run.profile_name, version=version,
                       title="a profile this server no longer knows", reference="unknown")
    return Profile(name=known.name, version=version,
                   title=f"an earlier version of {known.label}, whose rules this server "
                         f"no longer holds", reference=known.reference)


def run_profiles_section(*, run: Run) -> ProfilesSection:
    judged_by = run_profile(run)
    recorded = run.profile_recorded
    comparison = run_comparison(run)
    if comparison is None or comparison.status != ProfileComparison.Status.DONE:
        return ProfilesSection(run_profile=judged_by, recorded=recorded,
                               comparison=comparison)
    rows = [
        ProfileRow(
            name=score.profile, version=score.version,
            title=PROFILES[score.profile].title if score.profile in PROFILES else "",
            url=profiles_url(score.profile), is_run_profile=score.profile == comparison.baseline,
            pass_at_k={int(v["k"]): v for v in score.pass_at_k},
            changed=score.changed, rejudged=score.rejudged, executed=score.executed,
            reasons=score.reasons,
            current=score.profile in PROFILES and PROFILES[score.profile].version == score.version,
        )
        for score in comparison.scores.all()
    ]
    ks = sorted({k for row in rows for k in row.pass_at_k})
    samples = reverse("runs:samples", args=[run.pk])
    dependent = [
        DependentRow(task_id=d["task_id"], n=int(d.get("n") or 0),
                     url=f"{samples}?{urlencode({'task': d['task_id']})}",
                     passed=[(row.name, int(d["passed"].get(row.name, 0))) for row in rows],
                     reason=d.get("reason", ""))
        for d in comparison.dependent
    ]
    return ProfilesSection(run_profile=judged_by, recorded=recorded, comparison=comparison,
                           rows=rows, ks=ks, dependent=dependent)


def run_profiles_json(*, run: Run) -> dict[str, Any]:
    """The run's profile and its stored comparison, for `GET /api/runs/<id>`."""
    section = run_profiles_section(run=run)
    profile = section.run_profile
    data: dict[str, Any] = {
        "profile": {"name": profile.name, "version": profile.version, "title": profile.title,
                    "recorded": section.recorded, "url": profiles_url(profile.name)},
    }
    comparison = section.comparison
    if comparison is None:
        data["profile_comparison"] = None
        return data
    data["profile_comparison"] = {
        "status": comparison.status,
        "error": comparison.error,
        "baseline": comparison.baseline,
        "profiles_done": comparison.profiles_done,
        "profiles_total": comparison.profiles_total,
        "requested_at": comparison.created_at.isoformat(),
        "finished_at": comparison.finished_at.isoformat() if comparison.finished_at else None,
        "profiles": [
            {"name": row.name, "version": row.version, "is_run_profile": row.is_run_profile,
             "pass_at_k": [row.pass_at_k[k] for k in sorted(row.pass_at_k)],
             "problems_changed": row.changed, "rejudged": row.rejudged,
             "executed_again": row.executed, "why_executed": row.reasons}
            for row in section.rows
        ],
        "dependent_problems": [
            {"task_id": d.task_id, "n": d.n, "passed": dict(d.passed), "reason": d.reason}
            for d in section.dependent
        ],
    }
    return data


# -- one sample -------------------------------------------------------------------------------
@dataclass(frozen=True)
class SampleVerdict:
    profile: Profile
    url: str
    status: str | None
    """None when the recorded facts cannot decide it: the program must run again."""
    message: str
    judged: bool
    """This profile gave the stored verdict."""


class _NeedsExecution(Exception):
    pass


def _refuse_execution(_profile: Profile) -> Engine:
    # `rescore` asks for an engine only when the facts cannot decide a verdict.
    raise _NeedsExecution


def sample_profile_verdicts(*, run: Run, sample: Sample, problems: dict[str, Problem]
                            ) -> list[SampleVerdict]:
    """The sample's verdict under every profile, from its stored result alone."""
    if not sample.result:
        return []
    result = result_from_json(sample.result)
    problem = problems.get(sample.task_id)
    if problem is not None:
        result = replace(result, language=problem.language)
    judged_by = PROFILES.get(result.profile) or PROFILES.get(run.profile_name)
    if judged_by is None:
        return []
    subject = EvaluatorSample(task_id=sample.task_id, index=sample.index, raw=sample.raw,
                              completion=sample.completion)
    verdicts = []
    for profile in PROFILES.values():
        url = profiles_url(profile.name)
        if profile.name == judged_by.name:
            verdicts.append(SampleVerdict(profile, url, result.status, result.message, True))
            continue
        try:
            again = rescore([subject], [result], problems, profile, _refuse_execution)
        except _NeedsExecution:
            verdicts.append(SampleVerdict(profile, url, None, _why_undecided(
                profile, judged_by, result, subject.completion), False))
            continue
        (rejudged,) = again.results
        verdicts.append(SampleVerdict(profile, url, rejudged.status, rejudged.message, False))
    return verdicts


def _why_undecided(profile: Profile, judged_by: Profile, result: SampleResult,
                   text: str) -> str:
    language = result.language
    if profile.prepare_text(text, language) != judged_by.prepare_text(text, language):
        return (f"{profile.name}'s post-processing changes this text, so it runs another "
                "program")
    return profile.needs_execution(result) or (
        f"{profile.name} runs this program another way (Java's -ea, Go's vet or "
        "imports, EvalPlus's per-input time limits)")
