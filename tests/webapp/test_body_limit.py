"""The ASGI guard answers 413 before a huge body is read to disk."""

from __future__ import annotations

import asyncio
from typing import Any

from webapp.body_limit import BodySizeLimit


def _scope(length: int | None) -> dict[str, Any]:
    headers = [] if length is None else [(b"content-length", str(length).encode())]
    return {"type": "http", "method": "POST", "path": "/api/runs", "headers": headers}


async def _call(scope: dict[str, Any], chunks: list[bytes]) -> tuple[list[dict[str, Any]], int]:
    reached = 0

    async def app(scope, receive, send):
        nonlocal reached
        while True:
            message = await receive()
            reached += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    queue = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
             for i, c in enumerate(chunks)]

    async def receive():
        return queue.pop(0)

    sent: list[dict[str, Any]] = []

    async def send(message):
        sent.append(message)

    await BodySizeLimit(app, max_bytes=10)(scope, receive, send)
    return sent, reached


def test_declared_length_over_the_limit_is_refused_unread():
    sent, reached = asyncio.run(_call(_scope(11), [b"x" * 11]))
    assert sent[0]["status"] == 413
    assert reached == 0


def test_streamed_body_over_the_limit_is_cut_off():
    sent, _ = asyncio.run(_call(_scope(None), [b"x" * 6, b"x" * 6, b"x" * 6]))
    assert sent[0]["status"] == 413


def test_body_within_the_limit_passes():
    sent, reached = asyncio.run(_call(_scope(10), [b"x" * 10]))
    assert sent[0]["status"] == 200
    assert reached == 10
