"""A plus set's page section: per language, the inputs kept, dropped by reason, and
flagged, drawn from the dataset alone so the page's view needs nothing of it."""

from __future__ import annotations

from typing import Any

from django import template

from webapp.benchmarks.models import Dataset
from webapp.benchmarks.plus_selectors import plus_languages

register = template.Library()


@register.inclusion_tag("benchmarks/_plus_summary.html")
def plus_summary(dataset: Dataset) -> dict[str, Any]:
    return {"dataset": dataset, "languages": plus_languages(dataset=dataset)}
