"""The "Reproducibility" section of a run page: its manifest and its reproductions."""

from __future__ import annotations

from typing import Any

from django import template

from webapp.runs.services.reproduce import reproduce_refusal, run_reproductions
from webapp.runs.worker.manifests import manifest_rows

register = template.Library()


@register.simple_tag(takes_context=True)
def reproducibility(context: template.Context) -> dict[str, Any]:
    run = context["run"]
    user = context["request"].user
    return {
        "rows": manifest_rows(run.manifest),
        "can_reproduce": reproduce_refusal(user=user, run=run) is None,
        "reproductions": run_reproductions(run=run) if run.reproduction_of_id is None else [],
    }
