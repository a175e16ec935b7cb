"""The run page's "Base and plus" section, drawn from the request's viewer and the run, so
the page's view needs nothing of it."""

from __future__ import annotations

from typing import Any

from django import template

from webapp.runs.services.plus import PlusPair, PlusScore, run_plus_context

register = template.Library()


@register.inclusion_tag("runs/_plus.html", takes_context=True)
def plus_scores_section(context: dict[str, Any]) -> dict[str, Any]:
    request = context["request"]
    run = context["run"]
    return {**run_plus_context(user=request.user, run=run), "run": run,
            "csrf_token": context.get("csrf_token")}


@register.filter
def plus_at(pairs: dict[int, PlusPair], cell: Any) -> PlusScore | None:
    """The plus score beside a leaderboard cell (its run and k), if the run has one."""
    pair = pairs.get(cell.run.pk) if cell else None
    if pair is None:
        return None
    return next((score for score in pair.scores if score.k == cell.k), None)
