"""Downloads drawn a part at a time, never whole.

A run's export of 164,000 samples is a generator of parts. The web process serves HTTP
with Django's sync handler (`webapp.sync_http`), which draws a part, sends it, and only
then draws the next: the export is never held whole. (Django's ASGI handler, which we no
longer use for HTTP, drew a synchronous iterator into a list before the first byte left.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.http import StreamingHttpResponse


class StreamedDownload(StreamingHttpResponse):
    def __init__(self, parts: Iterator[str], *, content_type: str, filename: str = "",
                 **kwargs: Any) -> None:
        super().__init__(parts, content_type=content_type, **kwargs)
        if filename:
            self["Content-Disposition"] = f'attachment; filename="{filename}"'
