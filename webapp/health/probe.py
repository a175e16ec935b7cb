"""`/healthz`: the answer a load balancer or Kubernetes probe asks for.

Answered before any other middleware, so the probe needs no allowed host name (a kubelet
sends the pod's IP as the host), no session and no sign-in: 200 when this process can
query its database, 503 when it cannot. It says nothing else; the operators' view of
workers and canaries is `/status.json`, which needs a staff token.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse

PATH = "/healthz"

logger = logging.getLogger(__name__)


class ProbeMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path != PATH:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            return HttpResponse("GET or HEAD\n", status=405, content_type="text/plain",
                                headers={"Allow": "GET, HEAD"})
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        except DatabaseError as exc:
            logger.warning("health probe: the database does not answer: %s", exc)
            return _plain("the database does not answer\n", status=503)
        return _plain("ok\n", status=200)


def _plain(text: str, *, status: int) -> HttpResponse:
    response = HttpResponse(text, status=status, content_type="text/plain")
    response["Cache-Control"] = "no-store"
    return response
