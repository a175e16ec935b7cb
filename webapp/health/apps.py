from __future__ import annotations

from django.apps import AppConfig


class HealthConfig(AppConfig):
    name = "webapp.health"
    label = "health"

    def ready(self) -> None:
        # Connects the Celery signals and the control command: they act only inside a
        # worker, but every process loads them as Django starts.
        from webapp.health import worker  # noqa: F401
