from __future__ import annotations

from typing import TYPE_CHECKING

from django.urls import path

from webapp.runs.pages.consumers import RunConsumer

if TYPE_CHECKING:
    from channels.routing import URLRouter, _ExtendedURLPattern

# Typed as channels' URLRouter takes its routes. The ignore: django-stubs' path() takes views
# only and gives a plain URLPattern, though channels routes ASGI apps with it.
websocket_urlpatterns: list[_ExtendedURLPattern | URLRouter] = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),  # type: ignore[arg-type,list-item]
]
