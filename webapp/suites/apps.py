from __future__ import annotations

from django.apps import AppConfig


class SuitesConfig(AppConfig):
    name = "webapp.suites"
    label = "suites"
    verbose_name = "Model suites"
