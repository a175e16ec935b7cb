from __future__ import annotations

from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "webapp.benchmarks"
    label = "benchmarks"

    def ready(self) -> None:
        # Registered in every process: the web server sends the task by name.
        from webapp.benchmarks import tasks  # noqa: F401
