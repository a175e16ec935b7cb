"""The embedded broker: kombu's filesystem transport, with each message written whole before
any worker can see it.

kombu's own transport creates the message file under its final name and then writes it. A
worker polling the folder can take the file in between (its rename does not wait for the
writer's lock) and read it empty: the worker then dies of a JSONDecodeError, as a
browser test saw with the sweeper's and the canaries' messages racing a poll. Here the
message is written under a name no reader looks at and renamed into place, which is
atomic; a reader takes a message by renaming it into the processed folder, in the same
file system, which at most one reader can do. `webapp.celery` puts this transport under
the `filesystem://` scheme, so the setting stays the same.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps, loads


class Channel(filesystem.Channel):
    # kombu's stubs name the message `message` in the base and `payload` here: we follow
    # the code, which passes it by position.
    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # A leading dot: its part after the first dot is never "<queue>.msg".
        partial = os.path.join(self.data_folder_out, f".{name}.partial")
        try:
            with open(partial, "wb") as handle:
                handle.write(dumps(payload).encode())
            os.replace(partial, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.remove(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        wanted = f"{queue}.msg"
        taken_folder = self.processed_folder
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            taken = os.path.join(taken_folder, name)
            try:
                os.rename(os.path.join(self.data_folder_in, name), taken)
            except OSError:
                continue  # another reader took it first
            try:
                with open(taken, "rb") as handle:
                    payload = handle.read()
            finally:
                if not self.store_processed:
                    with contextlib.suppress(OSError):
                        os.remove(taken)
            return loads(payload)
        raise Empty


class Transport(filesystem.Transport):
    Channel = Channel
