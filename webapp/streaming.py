"""Downloads drawn a batch at a time, under ASGI as under WSGI.

Django's `StreamingHttpResponse` serves a synchronous iterator under ASGI by first drawing
all of it into a list (`StreamingHttpResponse.__aiter__`), so a run's export of 164,000
samples was held whole in the web process before its first byte left. `StreamedDownload`
draws `BATCH` parts at a time on the request's own thread (thread-sensitive
`sync_to_async`, where the database connection lives) and sends them before drawing more.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from itertools import islice
from typing import Any

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse

BATCH = 200
"""Parts drawn per trip to the request's thread: each export yields a part per few
hundred rows, so a batch is at most some megabytes."""


class StreamedDownload(StreamingHttpResponse):
    def __init__(self, parts: Iterator[str], *, content_type: str, filename: str = "",
                 batch: int = BATCH, **kwargs: Any) -> None:
        super().__init__(parts, content_type=content_type, **kwargs)
        self.batch = batch
        if filename:
            self["Content-Disposition"] = f'attachment; filename="{filename}"'

    async def __aiter__(self) -> AsyncIterator[bytes]:
        parts = self.streaming_content
        assert isinstance(parts, Iterator), "StreamedDownload takes a synchronous iterator"
        draw = sync_to_async(lambda: list(islice(parts, self.batch)), thread_sensitive=True)
        while batch := await draw():
            for part in batch:
                yield part
