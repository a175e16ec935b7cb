"""`{% defect_aware_scores run %}`: a run's score three ways (original, with the registry's
patches, excluding defective problems), with intervals and a legend. The run page includes
it; the suite page and any other page that shows a run's score can too.

    {% load defect_scores %}
    {% defect_aware_scores run %}                  the choice from ?scores=, a full block
    {% defect_aware_scores run compact=True %}     one line per way, for a grid or a table
    {% scores_link url %}                           `url` with the page's ?scores= kept
"""

from __future__ import annotations

from typing import Any

from django import template
from django.http import QueryDict
from django.template.loader import get_template
from django.utils.safestring import mark_safe

from webapp.defects.scores import SCORES_PARAM, query_scores
from webapp.defects.views import PARTIAL, defect_aware_context
from webapp.runs.reads.page_cache import key_of, run_timeout, shared

register = template.Library()


@register.simple_tag(takes_context=True)
def defect_aware_scores(context: dict[str, Any], run: Any, compact: bool = False) -> str:
    """The block, drawn from the shared page cache where nothing in it is the viewer's own:
    drawing it was a fifth of a finished run's page. Its key holds all it shows (the three
    ways as computed, the choice, the page's query, which its links keep)."""
    request = context["request"]
    values = {**defect_aware_context(request=request, run=run, compact=compact),
              "csrf_token": context.get("csrf_token")}

    def draw() -> str:
        return get_template(PARTIAL).render(values)

    if values["can_compute"]:
        return mark_safe(draw())  # noqa: S308 - a template's output; its form is the viewer's
    key = key_of("defect-aware", run.pk, repr(values["three"]), values["scores"], compact,
                 values["in_progress"], sorted(request.GET.lists()))
    return mark_safe(shared(key, draw, timeout=run_timeout(run)))  # noqa: S308 - as above


@register.simple_tag(takes_context=True)
def scores_link(context: dict[str, Any], url: str) -> str:
    """`url` with the current page's `?scores=` choice appended, unless it is the default:
    links between score pages keep the reader's choice."""
    request = context.get("request")
    scores = query_scores(request.GET) if request is not None else "original"
    if scores == "original":
        return url
    params = QueryDict(mutable=True)
    params[SCORES_PARAM] = scores
    return f"{url}{'&' if '?' in url else '?'}{params.urlencode()}"
