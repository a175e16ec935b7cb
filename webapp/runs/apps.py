from __future__ import annotations

from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "webapp.runs"
    label = "runs"

    def ready(self) -> None:
        # Register the tasks in every process, the web server's too: work is sent by task
        # name (webapp.runs.messaging.dispatch), and Celery's autodiscovery is lazy.
        from webapp.runs.worker import tasks  # noqa: F401
