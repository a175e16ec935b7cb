"""The ASGI application: Django for HTTP, Channels for websockets.

Run it with `uvicorn webapp.asgi:application` (or daphne) behind a proxy.
"""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
# Read by the settings: the web process pools its database connections.
os.environ["WORKBENCH_PROCESS"] = "web"
# Django must be set up before anything imports models.
django.setup(set_prefix=False)

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from webapp.body_limit import BodySizeLimit  # noqa: E402
from webapp.origin import SameOriginWebsockets  # noqa: E402
from webapp.runs.routing import websocket_urlpatterns  # noqa: E402
from webapp.sync_http import SyncDjangoHTTP  # noqa: E402
from webapp.websocket_auth import websocket_auth_stack  # noqa: E402

# HTTP is Django's sync handler on a pool of threads (webapp.sync_http: one thread hop
# per request rather than about twenty); websockets are Channels' on the event loop.
application = ProtocolTypeRouter({
    "http": BodySizeLimit(SyncDjangoHTTP(threads=settings.HTTP_THREADS),
                          max_bytes=settings.UPLOAD_MAX_BYTES + 1024 * 1024),
    # Not channels' AllowedHostsOriginValidator: it ignores the port (see webapp/origin.py).
    "websocket": SameOriginWebsockets(
        websocket_auth_stack(URLRouter(websocket_urlpatterns))),
})
