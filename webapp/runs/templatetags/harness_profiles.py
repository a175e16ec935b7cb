"""The "Harness profiles" section of a run page, and a sample's verdict under each profile."""

from __future__ import annotations

from typing import Any

from django import template

from webapp.benchmarks.selectors import dataset_problems
from webapp.runs.pages.profile_views import profiles_section_context
from webapp.runs.reads.profile_reports import sample_profile_verdicts

register = template.Library()


@register.inclusion_tag("runs/_profiles.html", takes_context=True)
def profiles_section(context: dict[str, Any]) -> dict[str, Any]:
    """Drawn by the run page, and again by the status answers its script polls."""
    request = context["request"]
    return {**profiles_section_context(user=request.user, run=context["run"]),
            "request": request, "csrf_token": context.get("csrf_token")}


@register.inclusion_tag("runs/_sample_profiles.html", takes_context=True)
def sample_profiles(context: dict[str, Any]) -> dict[str, Any]:
    run, sample = context["run"], context["sample"]
    return {
        "run": run,
        "verdicts": sample_profile_verdicts(run=run, sample=sample,
                                            problems=dataset_problems(dataset=run.dataset)),
    }
