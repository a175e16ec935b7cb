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

from webapp.defects.scores import SCORES_PARAM, query_scores, three_way_version
from webapp.defects.views import COMPUTE_PARTIAL, PARTIAL, defect_aware_context
from webapp.runs.reads.page_cache import FINISHED_SECONDS, key_of, run_version, shared
from webapp.runs.reads.selectors import run_can_manage

register = template.Library()

COMPUTE_SLOT = mark_safe("<!--defect-aware:compute-->")  # noqa: S308 - a constant
"""Where the shared block leaves room for the viewer's own part (`COMPUTE_PARTIAL`). Text
drawn into the block is escaped, so no run or registry text can forge it."""


@register.simple_tag(takes_context=True)
def defect_aware_scores(context: dict[str, Any], run: Any, compact: bool = False) -> str:
    """The block, drawn once into the shared page cache for every viewer, with the viewer's
    own part (the "compute" form, whose token is the session's) put in on each request.

    Its key is what the block is drawn from, read without computing a score (computing
    them to key it was a fifth of a finished run's page): the run's row and dataset
    (`run_version`), the registry and the patched job (`three_way_version`), the choice,
    and the page's query, which its links keep."""
    request = context["request"]
    scores = query_scores(request.GET)
    key = key_of("defect-aware", run.pk, run_version(run=run), three_way_version(run=run),
                 scores, compact, sorted(request.GET.lists()))

    def draw() -> str:
        values = defect_aware_context(request=request, run=run, compact=compact)
        return get_template(PARTIAL).render({**values, "compute_slot": COMPUTE_SLOT})

    # A run still going draws one block (its scores come when it finishes) until its row's
    # state, and with it the key, changes: kept as long as a finished run's.
    block = shared(key, draw, timeout=FINISHED_SECONDS)
    if COMPUTE_SLOT not in block:
        return mark_safe(block)  # noqa: S308 - a template's output
    # The slot is drawn only while the patched scores may be asked for.
    own = get_template(COMPUTE_PARTIAL).render({
        "run": run, "scores": scores, "compact": compact,
        "can_compute": run_can_manage(user=request.user, run=run),
        "csrf_token": context.get("csrf_token")})
    return mark_safe(block.replace(COMPUTE_SLOT, own, 1))  # noqa: S308 - as above


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
