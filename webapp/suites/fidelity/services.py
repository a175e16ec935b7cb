"""Filing a translation-defect candidate into the review queue: the registry entry it would
become, checked as the registry checks its own entries, and the proposal that holds it."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from evaluator.defects import KINDS, DefectError, load_registry, parse_defect
from evaluator.defects import TEXT_FIELDS as DETECT_FIELDS
from webapp.benchmarks.models import Dataset, ProblemVariant
from webapp.benchmarks.problem_json import problem_from_json
from webapp.suites.fidelity.analysis import DefectCandidate
from webapp.suites.fidelity_models import DefectProposal
from webapp.textfields import text_problem

DEFAULT_KIND = "prompt_contradiction"
MAX_TEXT = 2000


class ProposalError(ValueError):
    """The proposal cannot be filed as given; the message says why, for the form."""


@dataclass(frozen=True)
class ProposalDraft:
    kind: str
    defect: str
    detect_field: str = ""
    detect_contains: str = ""


def _entry_id(dataset: Dataset, number: int) -> str:
    parts = [dataset.name, dataset.language, dataset.natural_language, dataset.variant,
             str(number), "translation"]
    return re.sub(r"[^a-z0-9]+", "-", "-".join(p for p in parts if p).lower()).strip("-")


def _evidence_text(candidate: DefectCandidate) -> str:
    models = "; ".join(
        f"{item.suite}: {item.rate:.0%} here vs a median {item.others_median:.0%} "
        f"elsewhere (best: {item.reference_key}), one-sided Fisher p = {item.p_lower:.3g}"
        for item in candidate.evidence)
    return (f"Workbench translation-fidelity analysis: harder in {candidate.variant_key} for "
            f"all {candidate.models} model(s) that have it there and in another variant "
            f"(Fisher's combined p = {candidate.combined_p:.3g}). {models}.")


def proposal_entry(*, dataset: Dataset, variant: ProblemVariant, candidate: DefectCandidate,
                   draft: ProposalDraft) -> dict[str, Any]:
    """The registry entry, in registry.json's shape (`Defect.to_dict`'s keys and order).

    Raises `ProposalError` when the draft is incomplete or the entry would not load."""
    if draft.kind not in KINDS:
        raise ProposalError(f"Unknown kind {draft.kind!r}; choose one of the registry's kinds.")
    text = draft.defect.strip()
    if not text:
        raise ProposalError("Say what is wrong with this variant.")
    if len(text) > MAX_TEXT or len(draft.detect_contains) > MAX_TEXT:
        raise ProposalError(f"Keep each text under {MAX_TEXT} characters.")
    problem = text_problem(text + draft.detect_contains)
    if problem is not None:
        raise ProposalError(problem)
    entry: dict[str, Any] = {
        "id": _entry_id(dataset, variant.problem.number),
        "dataset": dataset.name, "language": dataset.language,
        "task_id": variant.problem.task_id, "source_id": variant.source_id,
        "kind": draft.kind, "defect": text, "evidence": _evidence_text(candidate),
        "effect": (f"Every model analysed passes this problem less often in "
                   f"{dataset.key} than in its other variants."),
        "canonical_fails": [], "tasks": ["generation", "translation"], "flaky": False,
    }
    if draft.detect_contains:
        if draft.detect_field not in DETECT_FIELDS:
            raise ProposalError(f"Choose where the text is: one of {', '.join(DETECT_FIELDS)}.")
        # Pins the entry to this variant: the registry matches entries by dataset and
        # programming language only, so its Russian and Arabic copies would share it.
        if draft.detect_contains not in _field_text(variant, draft.detect_field):
            raise ProposalError(f"The text to detect is not in this variant's "
                                f"{draft.detect_field}.")
        entry["detect"] = {"field": draft.detect_field, "contains": draft.detect_contains}
    try:
        parse_defect(entry, f"proposed {entry['id']}")
    except DefectError as exc:
        raise ProposalError(str(exc)) from None
    if any(defect.id == entry["id"] for defect in load_registry().defects):
        raise ProposalError(f"The registry already has an entry {entry['id']}.")
    return entry


def _field_text(variant: ProblemVariant, name: str) -> str:
    if name in ("prompt", "canonical_solution", "test"):
        return str(getattr(variant, name))
    return str(getattr(problem_from_json(variant.record), name, ""))


def _evidence_json(candidate: DefectCandidate) -> dict[str, Any]:
    return {
        "variant": candidate.variant_key, "models": candidate.models,
        "combined_p": candidate.combined_p,
        "suites": [{"suite": item.suite, "rate": item.rate,
                    "others_median": item.others_median, "p_lower": item.p_lower,
                    "reference": item.reference_key} for item in candidate.evidence],
    }


def entry_digest(entry: dict[str, Any]) -> str:
    """What the preview showed, as the confirmation sends it back."""
    return hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()


class EntryChanged(ProposalError):
    """The entry differs from the one previewed (new runs changed the evidence, or the
    preview was skipped): it must be shown again before it is filed."""

    def __init__(self, message: str, entry: dict[str, Any]) -> None:
        super().__init__(message)
        self.entry = entry


def defect_proposal_create(*, user: User, dataset: Dataset,
                           variant: ProblemVariant, candidate: DefectCandidate,
                           draft: ProposalDraft, previewed: str) -> DefectProposal:
    """Files exactly the entry whose digest the preview gave (`previewed`), or raises
    `EntryChanged` with the entry as it is now."""
    entry = proposal_entry(dataset=dataset, variant=variant, candidate=candidate, draft=draft)
    if not hmac.compare_digest(previewed, entry_digest(entry)):
        raise EntryChanged("The entry is not the one you previewed (the evidence or the form "
                           "changed): check it below and confirm again.", entry)
    try:
        with transaction.atomic():
            return DefectProposal.objects.create(
                dataset=dataset, problem=variant.problem, entry=entry,
                evidence=_evidence_json(candidate), proposed_by=user)
    except IntegrityError:
        raise ProposalError(f"{variant.problem.task_id} in {dataset.key} already has an open "
                            "proposal in the review queue.") from None


def defect_proposal_review(*, user: User, proposal: DefectProposal,
                           status: str) -> DefectProposal:
    """Staff mark a proposal accepted or rejected (or open again). Accepting records the
    decision only: the entry reaches the registry when a reviewer commits it there."""
    if not getattr(user, "is_staff", False):
        raise ProposalError("Only staff review proposals.")
    if status not in DefectProposal.Status.values:
        raise ProposalError(f"Unknown status {status!r}.")
    proposal.status = status
    try:
        with transaction.atomic():
            proposal.save(update_fields=["status"])
    except IntegrityError:
        raise ProposalError("Another open proposal exists for this problem; close it "
                            "first.") from None
    return proposal
