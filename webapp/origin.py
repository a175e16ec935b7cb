"""Websockets only from the workbench's own pages.

A browser sends the user's cookies with a websocket handshake whatever page opened it, so
the Origin header is all that tells our pages from a page elsewhere. Channels'
`AllowedHostsOriginValidator` compares only the Origin's host with ALLOWED_HOSTS, so a
page at `http://127.0.0.1:9999` (any other local service) could watch runs on
`127.0.0.1:8000` as the signed-in user. Here, as in Django's CSRF check, the Origin's
scheme, host and port must be those the request came to, or be in CSRF_TRUSTED_ORIGINS.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from webapp.body_limit import ASGIApp, Receive, Scope, Send

logger = logging.getLogger(__name__)

Origin = tuple[str, str, int]
"""Scheme, lower-case host (IPv6 without brackets) and port."""
DEFAULT_PORTS = {"http": 80, "https": 443}
REFUSED = 4403
"""The close code the run consumer also uses for a refusal."""


def parse_origin(value: str) -> Origin | None:
    """`scheme://host[:port]`, with the port filled in; None for anything else (`null`, a
    path, credentials, another scheme)."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    if (parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path
            or parts.query or parts.fragment or "@" in parts.netloc):
        return None
    return parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme]


def _headers(scope: Scope) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, value in scope.get("headers") or []:
        found.setdefault(name.decode("latin-1").lower(), []).append(value.decode("latin-1"))
    return found


def _is_secure(scope: Scope, headers: dict[str, list[str]]) -> bool:
    """Django's `HttpRequest.is_secure`: the proxy's header when DJANGO_BEHIND_TLS_PROXY set
    SECURE_PROXY_SSL_HEADER and the header is present, else the connection's own scheme."""
    if settings.SECURE_PROXY_SSL_HEADER:
        meta_name, secure_value = settings.SECURE_PROXY_SSL_HEADER
        name = meta_name.removeprefix("HTTP_").replace("_", "-").lower()
        if name in headers:
            return headers[name][0].split(",", 1)[0].strip() == str(secure_value)
    return scope.get("scheme") in ("wss", "https")


def request_origin(scope: Scope) -> Origin | None:
    """The origin the handshake was addressed to, from its Host header (or the server's
    address), when that host is one of ALLOWED_HOSTS."""
    headers = _headers(scope)
    host = None
    if settings.USE_X_FORWARDED_HOST and "x-forwarded-host" in headers:
        host = headers["x-forwarded-host"][0]
    elif "host" in headers:
        host = headers["host"][0]
    elif scope.get("server"):
        server_host, server_port = scope["server"]
        host = f"[{server_host}]:{server_port}" if ":" in server_host else \
            f"{server_host}:{server_port}"
    if not host:
        return None
    domain, _ = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]  # Django's own default under DEBUG
    if not domain or not validate_host(domain, allowed):
        return None
    scheme = "https" if _is_secure(scope, headers) else "http"
    return parse_origin(f"{scheme}://{host}")


def is_trusted(origin: Origin) -> bool:
    """Listed in CSRF_TRUSTED_ORIGINS; `https://*.example.com` covers example.com and its
    subdomains, as it does for Django."""
    scheme, host, port = origin
    for entry in settings.CSRF_TRUSTED_ORIGINS:
        trusted = parse_origin(entry)
        if trusted is None or (trusted[0], trusted[2]) != (scheme, port):
            continue
        pattern = trusted[1]
        if pattern.startswith("*."):
            base = pattern[2:]
            if host == base or host.endswith("." + base):
                return True
        elif host == pattern:
            return True
    return False


def origin_allowed(scope: Scope) -> bool:
    origins = _headers(scope).get("origin", [])
    # Browsers always send exactly one; without it there is nothing to check.
    origin = parse_origin(origins[0]) if len(origins) == 1 else None
    if origin is None:
        return False
    return origin == request_origin(scope) or is_trusted(origin)


class SameOriginWebsockets:
    """Refuses a websocket handshake whose Origin is not this site (`origin_allowed`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            headers = _headers(scope)
            logger.warning("websocket refused: Origin %s is not this site (Host %s)",
                           headers.get("origin"), headers.get("host"))
            message = await receive()
            if message["type"] == "websocket.connect":
                # Closing before accepting makes the server answer the handshake with 403.
                await send({"type": "websocket.close", "code": REFUSED})
            return
        await self.app(scope, receive, send)
