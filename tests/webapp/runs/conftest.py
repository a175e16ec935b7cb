"""Fixtures of the run tests."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.fixture
def headers(personas) -> list[tuple[bytes, bytes]]:
    """A websocket's headers: the owner's session cookie and the site's own origin."""
    client = Client()
    client.force_login(personas.owner)
    return [(b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()),
            (b"origin", b"http://testserver")]
