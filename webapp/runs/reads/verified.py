"""What "verified" means for a run, and which runs wait for their owner's confirmation
before they may stand on a leaderboard. The one definition: the leaderboard's mark, its
tooltip, the run page and the API all read `run_verification` / `runs_verification`.

A run is **verified** when each of `CONDITIONS` holds:

- evaluated here: it finished on this workbench, which recorded the harness and sandbox;
- from the uploaded generations: its samples are those of an uploaded file (its SHA-256 is
  kept), not scores imported from elsewhere;
- under the dataset's reference profile, with that profile's own time limit: the rules
  and the limit the dataset's numbers are published under
  (`evaluator.profiles.default_profile`, `run_time_limit`); a limit chosen by the uploader
  or the operator is an override;
- the language check passed: the generations were not uploaded with a mismatch allowed;
- not held for review (below), or confirmed by its owner;
- no infrastructure failure: no sample that the machine, not the program, failed;
- healthy canaries: every chunk ran on a worker whose canary of its language had passed
  (`Run.canary_gaps` records each one that did not);
- no suspicious samples: no verdict the harness distrusted (`SampleResult.suspicious`) and
  none the machine's load may have decided (`unstable`);
- every problem covered: the file has samples for every problem of the dataset.

Separately, a run is **held for review**, kept off every leaderboard until its owner (or an
owner of its team) confirms it, when more than `COMPILE_ERROR_SHARE` of its samples failed to
compile, or when it was uploaded with a language mismatch allowed. Both usually mean the
wrong dataset or a broken extraction, not a weak model: in issue 13, 164 Python samples
evaluated as C++ led a leaderboard at 0.0%. The confirmation is a `RunChange`
(leaderboard: "held for review" -> "confirmed"), so it needs no column of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q

from evaluator.profiles import LIMIT_OVERRIDES, default_profile
from webapp.runs.models import Run, RunChange, RunDigest, Sample

COMPILE_ERROR_SHARE = 0.5
"""Above this share of samples with a compile error, a run is held for review."""

HELD = "held for review"
CONFIRMED = "confirmed"

CONDITIONS = {
    "evaluated_here": "evaluated by this workbench (harness and sandbox recorded)",
    "uploaded_generations": "from the uploaded generations",
    "reference_profile": "under the dataset's reference harness profile, with its own "
                         "time limit",
    "language_check": "the generations passed the language check",
    "not_held": "not held for review",
    "no_infrastructure_failures": "no sample failed by the machine",
    "healthy_canaries": "every part run by a worker whose canary of its language passed",
    "no_suspicious_samples": "no suspicious samples",
    "every_problem_covered": "every problem of the dataset covered",
}
DEFINITION = "Verified: " + "; ".join(CONDITIONS.values()) + "."

SUSPICIOUS = Q(result__unstable=True) | (Q(result__has_key="suspicious")
                                         & ~Q(result__suspicious=[]))

REVIEW_REASONS = {
    "compile_errors": f"more than {COMPILE_ERROR_SHARE:.0%} of its samples failed to compile",
    "language_mismatch": "uploaded with a language mismatch allowed",
}


@dataclass(frozen=True)
class Verification:
    failed: dict[str, str]
    """The conditions of `CONDITIONS` the run fails, each with the fact that fails it."""
    review: dict[str, str]
    """Why the run needs its owner's confirmation (`REVIEW_REASONS`), with the facts."""
    confirmed: bool

    @property
    def verified(self) -> bool:
        return not self.failed

    @property
    def held(self) -> bool:
        """Kept off the leaderboards until confirmed."""
        return bool(self.review) and not self.confirmed

    def tooltip(self) -> str:
        """The definition, then what this run fails, for a `title` attribute."""
        lines = [DEFINITION]
        if self.failed:
            lines.append("Not verified: " + "; ".join(self.failed.values()) + ".")
        if self.review:
            lines.append(("Confirmed by its owner although " if self.confirmed else
                          "Held for review: ") + "; ".join(self.review.values()) + ".")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"verified": self.verified, "definition": DEFINITION,
                "failed": self.failed, "review": self.review,
                "confirmed": self.confirmed, "held": self.held}


def _judge(run: Run, *, compile_errors: int, suspicious: int, confirmed: bool) -> Verification:
    failed: dict[str, str] = {}
    if run.status != Run.Status.FINISHED or not run.harness_version or not run.sandbox_backend:
        failed["evaluated_here"] = f"not finished here (status {run.status})"
    if not run.file_sha256:
        failed["uploaded_generations"] = "no uploaded file is recorded"
    limit_fact = _limit_fact(run)
    if limit_fact:
        failed["reference_profile"] = limit_fact
    if (run.coverage or {}).get("language_mismatch"):
        failed["language_check"] = (f"the generations look like "
                                    f"{run.coverage['language_mismatch']}; uploaded anyway")
    review = _review(run, compile_errors)
    if review and not confirmed:
        failed["not_held"] = "held for review: " + "; ".join(review.values())
    if run.sandbox_error_count:
        failed["no_infrastructure_failures"] = (
            f"{run.sandbox_error_count} sample(s) failed by the machine, not judged")
    if run.canary_gaps:
        first = run.canary_gaps[0]
        where = " ".join(str(first.get(key) or "") for key in ("language", "worker")).strip()
        failed["healthy_canaries"] = (f"{len(run.canary_gaps)} part(s) without a healthy "
                                      f"canary: {first.get('reason', '')}"
                                      + (f" ({where})" if where else ""))
    if suspicious:
        failed["no_suspicious_samples"] = f"{suspicious} suspicious sample(s)"
    coverage = run.coverage or {}
    missing = len(coverage.get("missing_tasks") or ())
    if missing or coverage.get("tasks_with_samples", 0) < coverage.get("tasks_total", 0):
        failed["every_problem_covered"] = (
            f"{missing or coverage['tasks_total'] - coverage['tasks_with_samples']} "
            "problem(s) without samples")
    return Verification(failed=failed, review=review, confirmed=confirmed)


def _limit_fact(run: Run) -> str:
    """Why the run was not judged under its dataset's reference profile and that profile's
    own limit; "" when it was."""
    reference = default_profile(run.dataset.name)
    if run.profile_name != reference.name:
        return f"judged under profile {run.profile_name}, not the reference {reference.name}"
    options = run.options or {}
    timeout = options.get("timeout_seconds")
    source = options.get("limit_source")
    if source in LIMIT_OVERRIDES:
        who = "its uploader" if source == "user" else "the server's operator"
        return f"its CPU limit of {timeout} s was chosen by {who}, an override"
    expected = reference.time_limit(run.dataset.language)
    if expected is not None and timeout != expected:
        return (f"it ran with a CPU limit of {timeout} s, not the {reference.name} "
                f"profile's {expected:g} s")
    return ""


def _review(run: Run, compile_errors: int) -> dict[str, str]:
    review: dict[str, str] = {}
    total = run.samples_total
    if total and compile_errors / total > COMPILE_ERROR_SHARE:
        review["compile_errors"] = (f"{compile_errors} of {total} samples failed to compile "
                                    f"(more than {COMPILE_ERROR_SHARE:.0%})")
    mismatch = (run.coverage or {}).get("language_mismatch")
    if mismatch:
        review["language_mismatch"] = (f"the generations look like {mismatch}, the dataset is "
                                       f"{run.dataset.language}; uploaded anyway")
    return review


def _confirmed(ids: list[int]) -> set[int]:
    return set(RunChange.objects.filter(
        run_id__in=ids, field=RunChange.Field.LEADERBOARD, after=CONFIRMED,
    ).values_list("run_id", flat=True))


def runs_held(*, runs: list[Run]) -> set[int]:
    """The ids of `runs` held for review. Unlike `runs_verification` it reads no sample's
    result (only the indexed status of those that failed to compile), so a leaderboard can
    afford it over hundreds of large runs."""
    compile_errors = dict(
        Sample.objects.filter(run_id__in=[run.pk for run in runs], status="compile_error")
        .values("run_id").annotate(n=Count("pk")).values_list("run_id", "n"))
    candidates = [run.pk for run in runs if _review(run, compile_errors.get(run.pk, 0))]
    return set(candidates) - _confirmed(candidates) if candidates else set()


def runs_verification(*, runs: Iterable[Run],
                      confirmed: set[int] | None = None) -> dict[int, Verification]:
    """Each run's verification, by id, in at most three queries whatever the number of
    runs; one fewer when the caller already knows which of them were `confirmed` (from
    their history), and none over the samples when every run is finished and digested."""
    runs = list(runs)
    ids = [run.pk for run in runs]
    # A finished run's counts were stored with its scores; only the others (still going,
    # or scored before digests existed) are counted over their samples.
    finished = [run.pk for run in runs if run.status == Run.Status.FINISHED]
    counts = {run_id: (compile_errors, suspicious) for run_id, compile_errors, suspicious in
              RunDigest.objects.filter(run_id__in=finished).values_list(
                  "run_id", "compile_errors", "suspicious")} if finished else {}
    rest = [run_id for run_id in ids if run_id not in counts]
    if rest:
        counts.update(counted_verification(rest))
    if confirmed is None:
        confirmed = _confirmed(ids)
    return {run.pk: _judge(run, compile_errors=counts.get(run.pk, (0, 0))[0],
                           suspicious=counts.get(run.pk, (0, 0))[1],
                           confirmed=run.pk in confirmed)
            for run in runs}


def counted_verification(ids: list[int]) -> dict[int, tuple[int, int]]:
    """(compile errors, suspicious samples) of each run by id that has any, in one query
    over their samples."""
    return {
        row["run_id"]: (row["compile_errors"], row["suspicious"])
        for row in Sample.objects.filter(run_id__in=ids).filter(
            Q(status="compile_error") | SUSPICIOUS).values("run_id").annotate(
            compile_errors=Count("pk", filter=Q(status="compile_error")),
            suspicious=Count("pk", filter=SUSPICIOUS))
    }


def run_verification(*, run: Run, changes: list[RunChange] | None = None) -> Verification:
    """`changes`: the run's whole history when the caller has it, to save a query."""
    confirmed = None if changes is None else {
        change.run_id for change in changes
        if change.field == RunChange.Field.LEADERBOARD and change.after == CONFIRMED}
    return runs_verification(runs=[run], confirmed=confirmed)[run.pk]
