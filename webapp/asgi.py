"""The ASGI application: Django for HTTP, Channels for websockets.

Run it with `uvicorn webapp.asgi:application` (or daphne) behind a proxy.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
# Django must be set up before anything imports models.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from webapp.body_limit import BodySizeLimit  # noqa: E402
from webapp.origin import SameOriginWebsockets  # noqa: E402
from webapp.runs.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter({
    "http": BodySizeLimit(django_asgi_app, max_bytes=settings.UPLOAD_MAX_BYTES + 1024 * 1024),
    # Not channels' AllowedHostsOriginValidator: it ignores the port (see webapp/origin.py).
    "websocket": SameOriginWebsockets(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
})
