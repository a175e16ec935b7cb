"""Gzip input under a limit on its expanded size.

A few megabytes of gzip can expand to gigabytes (a "gzip bomb"), so every reader of a
generation or dataset file, for the command line and the web app alike, decompresses
through `LimitedGzipReader`, which stops as soon as more than the limit has come out.
"""

from __future__ import annotations

import gzip
from types import TracebackType
from typing import IO

GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_MAX_EXPANDED_BYTES = 1 << 30
"""1 GiB: far above any real file (HumanEval's largest inflates to about 12 MB)."""


class ExpansionLimitExceeded(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"expands to more than {limit:,} bytes when decompressed")
        self.limit = limit


class LimitedGzipReader:
    """Reads a gzip stream like `gzip.GzipFile`, raising `ExpansionLimitExceeded` once more
    than `limit` bytes have come out. No single read returns more than the limit + 1, so a
    bomb costs at most that much memory and the time to inflate it."""

    def __init__(self, fileobj: IO[bytes], limit: int) -> None:
        if limit < 0:
            raise ValueError(f"the expansion limit must be 0 or more, not {limit}")
        self.limit = limit
        self.expanded = 0
        self._stream = gzip.GzipFile(fileobj=fileobj, mode="rb")

    def read(self, size: int = -1) -> bytes:
        return self._count(self._stream.read(self._allowed(size)))

    def readline(self, size: int = -1) -> bytes:
        return self._count(self._stream.readline(self._allowed(size)))

    def _allowed(self, size: int) -> int:
        # One byte past the limit is enough to know it was passed.
        room = self.limit - self.expanded + 1
        return room if size < 0 else min(size, room)

    def _count(self, data: bytes) -> bytes:
        self.expanded += len(data)
        if self.expanded > self.limit:
            raise ExpansionLimitExceeded(self.limit)
        return data

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> LimitedGzipReader:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
