"""Reading query parameters strictly, with a clear 400 for anything else.

The exploration pages take filters, sort keys, ids and page numbers from the URL, so that
every view can be linked to. A hand-edited or hostile URL gets a page that says which
parameter is wrong and what it accepts, never a 500 and never a silently different view.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render

from webapp.textfields import text_problem

MAX_PARAM_LENGTH = 200
_ID_SEPARATORS = re.compile(r"[,\s]+")
_read: ContextVar[set[str] | None] = ContextVar("query_params_read", default=None)
"""The parameters the current view has read, while `handles_bad_query` watches."""


def _note(name: str) -> None:
    read = _read.get()
    if read is not None:
        read.add(name)


class BadQuery(ValueError):
    """A query parameter has a value the page does not accept."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


def _raw(params: QueryDict, name: str) -> str | None:
    _note(name)
    value = params.get(name)
    if value is None:
        return None
    if len(value) > MAX_PARAM_LENGTH:
        raise BadQuery(name, f"longer than {MAX_PARAM_LENGTH} characters")
    if text_problem(value) is not None:
        # A search would take it to the database, and PostgreSQL refuses a NUL with a 500.
        raise BadQuery(name, "NUL characters and lone surrogates are not allowed")
    return value.strip()


def query_int(params: QueryDict, name: str, *, default: int | None, minimum: int = 0,
              maximum: int = 10**9) -> int | None:
    raw = _raw(params, name)
    if raw is None or raw == "":
        return default
    if not re.fullmatch(r"\d{1,10}", raw):
        raise BadQuery(name, f"expected a whole number, got {raw[:40]!r}")
    value = int(raw)
    if not minimum <= value <= maximum:
        raise BadQuery(name, f"must be between {minimum} and {maximum}, got {value}")
    return value


def query_choice(params: QueryDict, name: str, choices: Iterable[str], *,
                 default: str = "") -> str:
    allowed = list(choices)
    raw = _raw(params, name)
    if raw is None or raw == "":
        return default
    if raw not in allowed:
        shown = ", ".join(allowed[:20]) + (" …" if len(allowed) > 20 else "")
        raise BadQuery(name, f"unknown value {raw[:40]!r}; use one of: {shown}")
    return raw


def query_flag(params: QueryDict, name: str) -> bool:
    raw = _raw(params, name)
    if raw is None or raw in ("", "0", "false", "off", "no"):
        return False
    if raw in ("1", "true", "on", "yes"):
        return True
    raise BadQuery(name, f"expected 1 or 0, got {raw[:40]!r}")


def query_text(params: QueryDict, name: str) -> str:
    raw = _raw(params, name)
    return raw or ""


def query_ids(params: QueryDict, name: str, *, limit: int) -> list[int]:
    """Ids given as repeated parameters or comma-separated (`?with=2&with=3`, `?with=2,3`),
    in the order given, without repeats."""
    _note(name)
    ids: list[int] = []
    for value in params.getlist(name):
        if len(value) > MAX_PARAM_LENGTH:
            raise BadQuery(name, f"longer than {MAX_PARAM_LENGTH} characters")
        for part in filter(None, _ID_SEPARATORS.split(value.strip())):
            if not re.fullmatch(r"\d{1,10}", part):
                raise BadQuery(name, f"expected run ids, got {part[:40]!r}")
            if int(part) not in ids:
                ids.append(int(part))
    if len(ids) > limit:
        raise BadQuery(name, f"at most {limit} ids, got {len(ids)}")
    return ids


def bad_query_response(request: HttpRequest, error: BadQuery) -> HttpResponse:
    return render(request, "bad_query.html", {"error": error}, status=400)


View = Callable[..., HttpResponse]


def handles_bad_query(view: View) -> View:
    """Turn a `BadQuery` raised anywhere in the view into a 400 page naming the parameter,
    and answer a page that did not read one of the URL's parameters (a typo, or a filter
    of another page) with a 400 too, rather than silently showing the unfiltered view."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        read: set[str] = set()
        token = _read.set(read)
        try:
            response = view(request, *args, **kwargs)
        except BadQuery as error:
            return bad_query_response(request, error)
        finally:
            _read.reset(token)
        unknown = sorted(set(request.GET) - read)
        if unknown and response.status_code == 200:
            takes = ", ".join(sorted(read)) or "no parameters"
            return bad_query_response(request, BadQuery(
                unknown[0], f"this page does not take {unknown[0]!r}; it takes: {takes}"))
        return response

    return wrapper
