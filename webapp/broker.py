"""The embedded broker: kombu's filesystem transport, with each message and each exchange
table written whole before any other process can read it.

kombu's own transport creates the message file under its final name and then writes it. A
worker polling the folder can take the file in between (its rename does not wait for the
writer's lock) and read it empty: the worker then dies of a JSONDecodeError, as a
browser test saw with the sweeper's and the canaries' messages racing a poll. Here the
message is written under a name no reader looks at and renamed into place, which is
atomic; a reader takes a message by renaming it into the processed folder, in the same
file system, which at most one reader can do. The exchange tables (which queues an
exchange routes to) had the same race: a process that declared a queue created the table
empty and then wrote it, and another reading it meanwhile died of the same error, or
routed a message to no queue. A table is now replaced whole by a rename, its changes
made one at a time under a lock file of its own. `webapp.celery` puts this transport
under the `filesystem://` scheme, so the setting stays the same.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, virtual
from kombu.utils.json import dumps, loads


def _write_whole(path: Path, text: str) -> None:
    """`text` into `path` by a rename: a reader sees the old content or the new, whole."""
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise


class Channel(filesystem.Channel):
    # kombu's stubs name the message `message` in the base and `payload` here: we follow
    # the code, which passes it by position.
    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:  # type: ignore[override]
        # (kombu's stubs name the message `message` in the base and `payload` here; the
        # code passes it by position.)
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = Path(self.data_folder_out) / name
        try:
            # The partial name starts with a dot: its part after the first dot is never
            # "<queue>.msg", so no reader takes it.
            _write_whole(final, dumps(payload))
        except OSError as exc:
            raise ChannelError(f"Cannot add file {str(final)!r} to directory") from exc

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


    def get_table(self, exchange: str) -> list[Any]:
        """The exchange's table on disk, with the bindings this process made itself: kombu
        records a binding in the process's memory before writing it to disk, and another
        thread of the process, finding it recorded, publishes at once; reading the disk
        alone, its message was routed to no queue and dropped."""
        rows = self._table_on_disk(exchange)
        for meta in (self.state.exchanges or {}).get(exchange, {}).get("table", []):
            row = filesystem.exchange_queue_t(*meta)
            if row not in rows:
                rows.append(row)
        return rows

    def _table_on_disk(self, exchange: str) -> list[Any]:
        file = self._exchange_file(exchange)  # type: ignore[attr-defined]
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc
        return [filesystem.exchange_queue_t(*row) for row in loads(text)]

    @contextlib.contextmanager
    def _changing_table(self, exchange: str) -> Iterator[tuple[Path, list[Any]]]:
        """The exchange's table, to change in place, under its lock; written whole after."""
        file = self._exchange_file(exchange)  # type: ignore[attr-defined]
        self.control_folder.mkdir(parents=True, exist_ok=True)
        with open(self.control_folder / f".{exchange}.lock", "a") as guard:
            fcntl.flock(guard, fcntl.LOCK_EX)
            queues = self._table_on_disk(exchange)
            before = list(queues)
            yield file, queues
            if queues != before:
                try:
                    _write_whole(file, dumps(queues))
                except OSError as exc:
                    raise ChannelError(f"Cannot write {file}") from exc

    def _queue_bind(self, exchange: str, routing_key: str | None, pattern: str | None,
                    queue: str | None) -> None:
        row = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        with self._changing_table(exchange) as (_, queues):
            if row not in queues:
                queues.insert(0, row)

    def _delete(self, queue: str, exchange: str, routing_key: str | None, pattern: str | None,
                *args: Any, **kwargs: Any) -> None:
        virtual.Channel._delete(self, queue, exchange, routing_key, pattern, *args, **kwargs)
        row = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        with self._changing_table(exchange) as (_, queues):
            if row in queues:
                queues.remove(row)


class Transport(filesystem.Transport):
    Channel = Channel
