"""Downloads are drawn a batch at a time under ASGI, never whole (webapp/streaming.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from webapp.streaming import StreamedDownload


class Counted:
    """Parts that count how many have been drawn."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.drawn = 0

    def __iter__(self) -> Iterator[str]:
        for index in range(self.count):
            self.drawn += 1
            yield f"{index}\n"


def test_under_asgi_a_part_leaves_before_the_rest_is_drawn() -> None:
    parts = Counted(10_000)
    response = StreamedDownload(iter(parts), content_type="text/plain", batch=50)

    async def serve() -> tuple[int, list[bytes]]:
        sent: list[bytes] = []
        drawn_at_first = -1
        async for part in response:
            if not sent:
                drawn_at_first = parts.drawn
            sent.append(part)
        return drawn_at_first, sent

    drawn_at_first, sent = asyncio.run(serve())
    assert drawn_at_first == 50
    assert b"".join(sent) == "".join(f"{i}\n" for i in range(10_000)).encode()


def test_served_whole_when_iterated_synchronously() -> None:
    response = StreamedDownload(iter(["a,b\n", "1,2\n"]), content_type="text/csv",
                                filename="run_matrix.csv")
    assert response["Content-Disposition"] == 'attachment; filename="run_matrix.csv"'
    assert b"".join(response) == b"a,b\n1,2\n"


def test_an_empty_download_ends() -> None:
    response = StreamedDownload(iter([]), content_type="text/plain")

    async def serve() -> list[bytes]:
        return [part async for part in response]

    assert asyncio.run(serve()) == []
