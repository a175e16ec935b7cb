from __future__ import annotations

from django.apps import AppConfig


class DefectsConfig(AppConfig):
    name = "webapp.defects"
    label = "defects"

    def ready(self) -> None:
        # Registered in every process: the web server sends the task by name.
        from webapp.defects import tasks  # noqa: F401
