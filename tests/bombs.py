"""Gzip bombs of valid generation lines (issue 23): a few megabytes that expand to
gigabytes, for the tests that must see them refused at once."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

LINE = json.dumps({"task_id": "HumanEval/0", "completion": "    return 1\n"}) + "\n"
"""The line of issue 23's bomb (`yes '...' | head -c 2600M | gzip -9`)."""
_MEMBER_BYTES = 1 << 26


def write_gzip_bomb(path: Path, *, expanded: int, line: str = LINE) -> Path:
    """`line` repeated to about `expanded` bytes, as gzip at level 9. One 64 MiB member is
    compressed once and written again and again (gzip readers read concatenated members
    as one stream), so even gigabytes take a second to make and a few MB of disk."""
    data = line.encode()
    member = gzip.compress(data * (_MEMBER_BYTES // len(data)), compresslevel=9)
    with path.open("wb") as out:
        for _ in range(max(1, expanded // _MEMBER_BYTES)):
            out.write(member)
    return path
