"""`{{ row|grid_row }}`: one row of the suite grid as HTML, built in Python.

A suite of six variants has about a thousand cells; drawn cell by cell with template tags
they took most of the page's time, so each row is formatted here in one pass instead.
"""

from __future__ import annotations

from django import template
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from webapp.suites.selectors import Row

register = template.Library()


@register.filter
def grid_row(row: Row) -> SafeString:
    # Plain string building: every value is a number, a colour made here, or escaped once.
    parts = [
        f'<tr data-task="{escape(row.task_id)}" data-disagreement="'
        f'{"" if row.disagreement is None else row.disagreement}"><th scope="row">'
        f'<a href="{reverse("benchmarks:problem", args=[row.number])}">{escape(row.task_id)}'
        f'</a></th><td class="num">'
        f'{"—" if row.disagreement is None else f"{row.disagreement:.2f}"}</td>'
        f'<td class="num">{"—" if row.mean is None else f"{row.mean * 100:.0f}%"}</td>'
    ]
    for cell in row.cells:
        if cell is None:
            parts.append('<td class="cell empty-swatch" data-rate="">·</td>')
            continue
        parts.append(
            f'<td class="cell" data-rate="{round(cell.rate, 4)}" style="background: '
            f'{cell.colour.background}; color: {cell.colour.text}"><a href="{escape(cell.url)}">'
            f"{cell.c}/{cell.n}</a></td>")
    parts.append("</tr>")
    return mark_safe("".join(parts))  # noqa: S308  (built from escaped parts above)
