"""Views used only by tests/webapp/test_sync_http.py, under a URLconf of their own."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from django.core.cache import caches
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from webapp.streaming import StreamedDownload

drawn: list[int] = []
"""The parts the streamed view has drawn so far."""


def where(request: HttpRequest, rest: str) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"thread": threading.get_ident(), "path": request.path,
                         "q": request.GET.get("q", ""), "host": request.get_host(),
                         "secure": request.is_secure(), "remote": request.META["REMOTE_ADDR"],
                         "cookies": dict(request.COOKIES)})


def cache_client(request: HttpRequest) -> JsonResponse:
    """Which cache object (and so which client and connections) served this request."""
    backend = caches["default"]
    backend.get("sync-http-probe")
    return JsonResponse({"thread": threading.get_ident(), "cache": id(backend)})


@csrf_exempt
def echo(request: HttpRequest) -> HttpResponse:
    return HttpResponse(request.body[::-1], content_type="application/octet-stream")


def counted(count: int) -> Iterator[str]:
    for index in range(count):
        drawn.append(index)
        yield f"{index}\n"


def stream(request: HttpRequest) -> StreamedDownload:
    drawn.clear()
    return StreamedDownload(counted(int(request.GET["n"])), content_type="text/plain",
                            filename="parts.txt")


def fails(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a view that fails")


urlpatterns = [
    path("where/<path:rest>", where),
    path("echo/", echo),
    path("cache/", cache_client),
    path("stream/", stream),
    path("fails/", fails),
]
