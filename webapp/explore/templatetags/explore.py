"""Template helpers of the exploration pages: links that keep the current filters,
percentages, colour classes for pass rates, and code highlighting."""

from __future__ import annotations

from typing import Any

from django import template
from django.http import QueryDict
from django.utils.safestring import SafeString

from webapp.benchmarks.highlight import highlight
from webapp.benchmarks.models import ProblemVariant
from webapp.benchmarks.selectors import variant_prompt

register = template.Library()


@register.simple_tag(takes_context=True)
def query_url(context: dict[str, Any], **changes: Any) -> str:
    """`?…` with the current query parameters, `changes` applied (None or "" removes one).
    Changing anything but the page goes back to page 1."""
    request = context.get("request")
    params = QueryDict(mutable=True)
    if request is not None:
        params.update(request.GET)
    if "page" not in changes:
        params.pop("page", None)
    for key, value in changes.items():
        params.pop(key, None)
        if value not in (None, ""):
            params[key] = str(value)
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.simple_tag(takes_context=True)
def sort_url(context: dict[str, Any], key: str, current: str, descending: bool,
             default_descending: bool = False) -> str:
    """The link of a sortable column header: sort by `key`, or flip the order if the
    table is sorted by it already."""
    if key == current:
        order = "asc" if descending else "desc"
    else:
        order = "desc" if default_descending else "asc"
    return query_url(context, sort=key, order=order)


@register.filter
def pct(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "—"
    return f"{value * 100:.{digits}f}%"


@register.filter
def rate_class(value: float | None) -> str:
    """Colour bucket of a pass rate: r0 (none) … r4 (all)."""
    if value is None:
        return "r-none"
    if value <= 0.0:
        return "r0"
    if value >= 1.0:
        return "r4"
    return f"r{1 + min(2, int(value * 3))}"


@register.filter
def highlighted(text: str, language: str) -> SafeString:
    return highlight(text or "", language)


@register.filter
def solution_prompt(variant: ProblemVariant) -> str:
    """The prompt with what the harness puts in front of it (`variant_prompt`)."""
    return variant_prompt(variant=variant)


@register.filter
def get_item(mapping: dict[Any, Any] | None, key: Any) -> Any:
    if not mapping:
        return None
    return mapping.get(key)


@register.filter
def aria_sort(key: str, current_and_order: str) -> str:
    """`ascending`/`descending`/`none` for a header's aria-sort: pass "current:order"."""
    current, _, order = current_and_order.rpartition(":")
    if key != current:
        return "none"
    return "descending" if order == "desc" else "ascending"


@register.filter
def pvalue(value: float | None) -> str:
    if value is None:
        return "—"
    return "< 0.0001" if value < 1e-4 else f"{value:.4f}"
