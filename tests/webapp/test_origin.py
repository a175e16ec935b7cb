"""Websocket handshakes are accepted only from the workbench's own origin (scheme, host and
port) or one in CSRF_TRUSTED_ORIGINS; a page on another port of the same host is refused."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import Client

from tests.webapp.support import WebsocketClient
from webapp.origin import SameOriginWebsockets, parse_origin
from webapp.runs.models import Run
from webapp.runs.services.writes import run_create
from webapp.runs.upload_checks.files import EvaluationOptions, upload_check

HOST = (b"host", b"127.0.0.1:8000")


async def _accepting_app(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "websocket.accept"})


def connects(headers: list[tuple[bytes, bytes]], *, server: tuple[str, int] = ("127.0.0.1", 8000),
             scheme: str = "ws") -> bool:
    client = WebsocketClient(SameOriginWebsockets(_accepting_app), "/ws/x/", headers)
    client.scope.update(server=server, scheme=scheme)
    connected, code = async_to_sync(client.connect)()
    assert connected or code == 4403
    return connected


def origin(value: str) -> tuple[bytes, bytes]:
    return (b"origin", value.encode())


def test_same_origin_is_accepted():
    assert connects([HOST, origin("http://127.0.0.1:8000")])


@pytest.mark.parametrize("other", [
    "http://127.0.0.1:9999",  # another local service
    "http://127.0.0.1",  # port 80
    "https://127.0.0.1:8000",  # another scheme
    "http://localhost:8000",  # another host, even one in ALLOWED_HOSTS
    "http://evil.example:8000",
    "null",  # sandboxed frames and file:// pages
    "http://127.0.0.1:8000/path",
    "http://user@127.0.0.1:8000",
    "http://127.0.0.1:99999",
    "",
])
def test_other_origins_are_refused(other: str):
    assert not connects([HOST, origin(other)])


def test_missing_or_repeated_origin_is_refused():
    assert not connects([HOST])
    assert not connects([HOST, origin("http://127.0.0.1:8000"), origin("http://evil.example")])


def test_host_outside_allowed_hosts_is_refused_even_when_origin_matches():
    # DNS rebinding: evil.example resolves to 127.0.0.1, so Host and Origin agree.
    assert not connects([(b"host", b"evil.example:8000"), origin("http://evil.example:8000")])


def test_default_ports_and_case_do_not_matter():
    assert connects([(b"host", b"LOCALHOST:80"), origin("http://localhost")], server=("x", 80))
    assert connects([(b"host", b"localhost"), origin("http://LocalHost:80")])
    assert connects([(b"host", b"[::1]:8000"), origin("http://[::1]:8000")])


def test_server_address_is_used_without_a_host_header():
    assert connects([origin("http://127.0.0.1:8000")], server=("127.0.0.1", 8000))
    assert not connects([origin("http://127.0.0.1:9999")], server=("127.0.0.1", 8000))


def test_trusted_origins_are_accepted(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://workbench.example.org", "https://*.lab.example"]
    for trusted in ("https://workbench.example.org", "https://a.lab.example",
                    "https://lab.example"):
        assert connects([HOST, origin(trusted)]), trusted
    for untrusted in ("http://workbench.example.org", "https://workbench.example.org:8443",
                      "https://evil.example", "https://notlab.example"):
        assert not connects([HOST, origin(untrusted)]), untrusted


def test_scheme_behind_a_tls_proxy_comes_from_its_header(settings):
    settings.ALLOWED_HOSTS = ["workbench.example.org"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proxied = [(b"host", b"workbench.example.org"), (b"x-forwarded-proto", b"https")]
    assert connects([*proxied, origin("https://workbench.example.org")])
    assert not connects([*proxied, origin("http://workbench.example.org")])
    assert not connects([(b"host", b"workbench.example.org"),
                         origin("https://workbench.example.org")]), "no header: plain ws"


def test_wss_without_a_proxy_is_https():
    assert connects([HOST, origin("https://127.0.0.1:8000")], scheme="wss")
    assert not connects([HOST, origin("http://127.0.0.1:8000")], scheme="wss")


def test_parse_origin_fills_in_the_port():
    assert parse_origin("https://Example.org") == ("https", "example.org", 443)
    assert parse_origin("ws://example.org") is None


# -- through the real ASGI application --------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_run_websocket_checks_the_port_of_the_origin(personas, humaneval, samples_file,
                                                     monkeypatch):
    from webapp.asgi import application

    monkeypatch.setattr("webapp.runs.services.writes._enqueue_start", lambda run_id: None)
    check = upload_check(path=samples_file, file_name="s.jsonl", sha256="a" * 64,
                         size=samples_file.stat().st_size, dataset=humaneval,
                         options=EvaluationOptions())
    run: Run = run_create(owner=personas.owner, team=personas.team, check=check, name="live")
    client = Client()
    client.force_login(personas.owner)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    path = f"/ws/runs/{run.pk}/"

    async def join(origin_header: str) -> str:
        client = WebsocketClient(application, path, [HOST, cookie, origin(origin_header)])
        client.scope.update(server=("127.0.0.1", 8000), scheme="ws")
        connected, _ = await client.connect()
        if not connected:
            return "refused"
        first = await client.receive_json_from(timeout=5)
        await client.disconnect()
        return str(first["type"])

    assert async_to_sync(join)("http://127.0.0.1:8000") == "snapshot"
    assert async_to_sync(join)("http://127.0.0.1:9999") == "refused"
    assert async_to_sync(join)("http://evil.example:8000") == "refused"
