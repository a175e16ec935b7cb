"""The embedded broker (`filesystem://`, webapp/broker.py): a worker never takes a message
before it is whole, two workers never take the same one, and no message is routed to no
queue while another connection of the process declares its binding (kombu's own
transport failed this test each way: an empty message, an empty exchange table, and
messages dropped)."""

from __future__ import annotations

import threading
from pathlib import Path
from queue import Empty

from kombu import Connection

import webapp.celery  # noqa: F401  (puts our transport under filesystem://)
from webapp.broker import Transport

MESSAGES = 300
PAYLOAD = "x" * 200_000  # large enough that writing one takes a while


def _connection(folder: Path) -> Connection:
    for name in ("queue", "processed", "control"):
        (folder / name).mkdir(exist_ok=True)
    return Connection("filesystem://", transport_options={
        "data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
        "processed_folder": str(folder / "processed"), "control_folder": str(folder / "control"),
        "store_processed": False})


def test_filesystem_is_our_transport(tmp_path):
    with _connection(tmp_path) as connection:
        assert isinstance(connection.transport, Transport)


def test_readers_polling_while_a_writer_writes_get_every_message_whole_and_once(tmp_path):
    taken: list[int] = []
    errors: list[BaseException] = []
    written = threading.Event()

    def write() -> None:
        with _connection(tmp_path) as connection:
            queue = connection.SimpleQueue("work")
            for number in range(MESSAGES):
                queue.put({"n": number, "payload": PAYLOAD})
        written.set()

    def read() -> None:
        try:
            with _connection(tmp_path) as connection:
                queue = connection.SimpleQueue("work")
                while True:
                    try:
                        message = queue.get_nowait()
                    except Empty:
                        if written.is_set() and not any((tmp_path / "queue").iterdir()):
                            return
                        continue
                    assert message.payload["payload"] == PAYLOAD
                    taken.append(message.payload["n"])
                    message.ack()
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for reader in readers:
        reader.start()
    write()
    for reader in readers:
        reader.join(timeout=600)
    assert not errors, errors[0]
    assert sorted(taken) == list(range(MESSAGES))
    assert not list((tmp_path / "processed").iterdir()), "nothing is kept after reading"
