"""HTTP for the ASGI server: Django's sync handler, each request wholly on one pooled thread.

Django's own ASGI handler runs the middleware chain on the event loop. Each middleware
written for both modes (sessions, CSRF, authentication, messages and the rest) then hands
its `process_request` and `process_response` to a thread and back, and a sync-only one
(WhiteNoise, the health probe) turns the chain around twice more. Each request also gets
a thread of its own, started and joined for it, with a database connection opened for
that thread. Measured on this project's small pages under uvicorn, that machinery was
about half of their CPU time, and every view here is sync.

So HTTP is served as WSGI is, by Django's `WSGIHandler`: the request's signals, its whole
middleware chain, the view, the response's iteration and its closing all run in one call
on one of `THREADS` long-lived threads, which keep their database connection between
requests (PostgreSQL's pool in the web process, see `webapp.settings`). The event loop
reads the body into a spooled file first (memory bounded, as Django's ASGI handler does),
and sends each part of the response as it is drawn, so a streamed download is sent a
part at a time; a client that goes away stops the drawing at the next part.

Websockets are untouched: Channels serves them on the event loop (`webapp.asgi`).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from tempfile import SpooledTemporaryFile
from typing import IO, Any

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

log = logging.getLogger(__name__)


class ClientGone(Exception):
    """The client closed the connection while its response was being drawn."""


def wsgi_environ(scope: Scope, body: IO[bytes]) -> dict[str, Any]:
    """The WSGI environ (PEP 3333) of an ASGI HTTP scope. Text in an environ is bytes read
    as Latin-1, so the path, already decoded by the server, is encoded back to its bytes."""
    root = scope.get("root_path", "")
    path = scope["path"]
    if root and path.startswith(root):
        path = path[len(root):]
    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": _latin1(root),
        "PATH_INFO": _latin1(path),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] if server[1] is not None else 80),
        "REMOTE_ADDR": client[0],
        "REMOTE_PORT": str(client[1]),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": body,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        if name not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            name = f"HTTP_{name}"
        value = raw_value.decode("latin-1")
        if name in environ:
            value = f"{environ[name]}{'; ' if name == 'HTTP_COOKIE' else ','}{value}"
        environ[name] = value
    return environ


def _latin1(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("latin-1")


class SyncDjangoHTTP:
    """The ASGI application for HTTP. See the module's text."""

    def __init__(self, *, threads: int) -> None:
        self.handler = WSGIHandler()
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"HTTP only, not {scope['type']!r}")
        max_size = settings.FILE_UPLOAD_MAX_MEMORY_SIZE
        with SpooledTemporaryFile(max_size=max_size, mode="w+b") as body:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return  # gone before its request was whole: nothing to answer
                body.write(message.get("body", b""))
                if not message.get("more_body", False):
                    break
            body.seek(0)
            gone = threading.Event()
            watcher = asyncio.create_task(_watch_disconnect(receive, gone))
            loop = asyncio.get_running_loop()
            try:
                # In the pool thread's own context, which lasts as long as the thread, as
                # under a threaded WSGI server: what Django keeps per thread in a context
                # variable (its cache clients, with their Redis connections) is made once
                # per thread, not once per request.
                await loop.run_in_executor(
                    self.pool, self._serve, scope, body, send, loop, gone)
            finally:
                watcher.cancel()

    def _serve(self, scope: Scope, body: IO[bytes], send: Send,
               loop: asyncio.AbstractEventLoop, gone: threading.Event) -> None:
        """On a pool thread: run Django and hand each part of its answer to the loop."""
        unsent: list[Message] = []
        """The response's start, until it goes out with the first part of its body."""

        def start_response(status: str, headers: list[tuple[str, str]],
                           exc_info: Any = None) -> Callable[[bytes], None]:
            unsent[:] = [{
                "type": "http.response.start",
                "status": int(status.split(" ", 1)[0]),
                "headers": [(name.lower().encode("latin-1"), value.encode("latin-1"))
                            for name, value in headers],
            }]
            return lambda data: deliver([_part(data, more=True)])

        def deliver(messages: list[Message]) -> None:
            if gone.is_set():
                raise ClientGone
            asyncio.run_coroutine_threadsafe(_send_all(send, [*unsent, *messages]),
                                             loop).result()
            unsent.clear()

        response: Iterable[bytes] = self.handler(wsgi_environ(scope, body), start_response)
        try:
            parts = iter(response)
            held = next(parts, None)
            # One trip to the loop for a page (start, its body and the end); a streamed
            # answer sends each part as it is drawn.
            for part in parts:
                assert held is not None
                deliver([_part(held, more=True)])
                held = part
            deliver([_part(held or b"", more=False)])
        except ClientGone:
            log.info("client went away during %s %s", scope["method"], scope["path"])
        finally:
            close = getattr(response, "close", None)
            if close is not None:
                close()  # Django's request_finished: the connection goes back here


def _part(data: bytes, *, more: bool) -> Message:
    return {"type": "http.response.body", "body": data, "more_body": more}


async def _send_all(send: Send, messages: list[Message]) -> None:
    for message in messages:
        await send(message)


async def _watch_disconnect(receive: Receive, gone: threading.Event) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return
