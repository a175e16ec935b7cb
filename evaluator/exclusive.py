"""A readers–writer lock: many threads share it, or one thread holds it alone.

The engine runs programs side by side under the shared side, and runs a program again
under the exclusive side when its verdict may have come from the machine being busy
(`Engine._attempts`). A thread waiting to go alone holds off newcomers to the shared
side, so a steady stream of work cannot starve it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager


class SharedExclusiveLock:
    """A thread that holds the shared side may take it again, but may not ask for the
    exclusive one (it would wait for itself): asking raises instead of hanging."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._sharers: Counter[int] = Counter()
        """Shared holds per thread id."""
        self._exclusive: int | None = None
        """The thread id that holds the lock alone."""
        self._waiting: int = 0
        """Threads waiting to hold it alone."""

    @contextmanager
    def shared(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._changed:
            if self._exclusive == me:
                raise RuntimeError("this thread already holds the lock alone")
            while (self._exclusive is not None or self._waiting) and me not in self._sharers:
                self._changed.wait()
            self._sharers[me] += 1
        try:
            yield
        finally:
            with self._changed:
                self._sharers[me] -= 1
                if not self._sharers[me]:
                    del self._sharers[me]
                if not self._sharers:
                    self._changed.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._changed:
            if me in self._sharers or self._exclusive == me:
                raise RuntimeError("this thread already holds the lock")
            self._waiting += 1
            try:
                while self._exclusive is not None or self._sharers:
                    self._changed.wait()
            finally:
                self._waiting -= 1
                # Should the wait end by an exception, those it held off may go on.
                self._changed.notify_all()
            self._exclusive = me
        try:
            yield
        finally:
            with self._changed:
                self._exclusive = None
                self._changed.notify_all()
