"""The ASGI application: Django for HTTP, Channels for websockets.

Run it with `uvicorn webapp.asgi:application` (or daphne) behind a proxy.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
# Read by the settings: the web process pools its database connections.
os.environ["WORKBENCH_PROCESS"] = "web"
# Django must be set up before anything imports models.
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from webapp.body_limit import BodySizeLimit  # noqa: E402
from webapp.origin import SameOriginWebsockets  # noqa: E402
from webapp.runs.routing import websocket_urlpatterns  # noqa: E402
from webapp.websocket_auth import websocket_auth_stack  # noqa: E402

# The ignores: django-stubs give Django's handler a plain dict scope, channels' stubs give
# their apps asgiref's TypedDict scopes (or an ASGI 2 class), and our middlewares take a
# mutable mapping. Each is an ASGI 3 app all the same.
application = ProtocolTypeRouter({
    "http": BodySizeLimit(django_asgi_app,  # type: ignore[arg-type]
                          max_bytes=settings.UPLOAD_MAX_BYTES + 1024 * 1024),
    # Not channels' AllowedHostsOriginValidator: it ignores the port (see webapp/origin.py).
    "websocket": SameOriginWebsockets(
        websocket_auth_stack(URLRouter(websocket_urlpatterns))),
})
